"""The ipywidgets form of notebook 00: one request's state and each question's instructions and criteria,
editable, scored by a button into a table and a chart. ipywidgets, IPython and matplotlib are imported
inside the methods that need them."""

from __future__ import annotations

import html
import io
import json
from typing import Any, Callable, Mapping

from ..measurement.plots import plot_probabilities
from .tables import tabulate_answers

__all__ = ["CRITERIA_LABELS", "DecisionForm"]


# Per question type: what the form calls it, its criteria box's label, and the box's hint when empty (the notebook's
# prose above the form says the same: a yes/no's criteria are optional `true: ...` / `false: ...` lines)
CRITERIA_LABELS = {
    "noul": ("a yes/no question (noul)", "true/false", "optional: a 'true: ...' line and a 'false: ...' line"),
    "choice": ("a choice among options", "options", "one option per line: 'name: description' (or just 'name')"),
    "score": ("a score on ordered levels", "levels", "one level per line, lowest first"),
}


def _criteria_to_text(question: Mapping[str, Any]) -> str:
    criteria = question.get("criteria")
    if not criteria:
        return ""
    if isinstance(criteria, list):
        return "\n".join(str(level) for level in criteria)
    return "\n".join(f"{name}: {desc}" if desc else str(name) for name, desc in criteria.items())


def _text_to_criteria(qtype: str, text: str, qid: str) -> Any:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if qtype == "score":
        return lines
    pairs: dict[str, str | None] = {}
    for ln in lines:
        name, _, desc = ln.partition(":")
        pairs[name.strip()] = desc.strip() or None
    if qtype == "noul":
        unknown = set(pairs) - {"true", "false"}
        if unknown:
            raise ValueError(f"questions.{qid}.criteria: a yes/no question takes only 'true: ...' and 'false: ...' lines, "
                             f"not {sorted(unknown)}")
        return pairs or None
    return pairs


def _figure_png(make_figure: Callable[[], Any]) -> Any:
    """Build a chart out of pyplot's reach and return it as a PNG image.

    A widget callback runs while ipykernel handles other comm messages on subshell threads, and each
    of those fires IPython's post_execute hooks, which draw every open pyplot figure. A figure drawn by
    two threads at once comes out garbled (seen in the browser test), and one left open would be drawn
    again under the next cell that runs. So the figure is built with interactive mode off, taken out
    of pyplot at once, and drawn here only.
    """
    import matplotlib.pyplot as plt
    from IPython.display import Image

    with plt.ioff():
        figure = make_figure()
        plt.close(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight")
    return Image(data=buffer.getvalue(), format="png")


class DecisionForm:
    """An ipywidgets form over one request: the state, and each question's instructions and criteria.

    Criteria are edited as text, one option per line: `name: description` (or just `name`) for a
    choice, one level per line (low to high) for a score, optional `true: ...` / `false: ...` for a
    yes/no. `to_request()` builds the request from whatever the widgets hold now, so a notebook can
    score the form's values in a plain cell (and run non-interactively); the Score button calls
    `score(request)` and draws the answer below the form.
    """

    def __init__(self, request: Mapping[str, Any], score: Callable[[dict[str, Any]], Any] | None = None) -> None:
        import ipywidgets as w

        self._base = json.loads(json.dumps(dict(request)))
        self._score = score
        layout = w.Layout(width="98%")
        self.state = w.Textarea(value=str(self._base["state"]), description="state", layout=w.Layout(width="98%", height="7em"))
        self.questions: dict[str, tuple[Any, Any]] = {}
        rows = [self.state]
        for qid, question in self._base["questions"].items():
            kind = question.get("type", "noul")
            label, box, hint = CRITERIA_LABELS.get(kind, CRITERIA_LABELS["choice"])
            instructions = w.Text(value=str(question.get("instructions", "")), description="question", layout=layout)
            criteria = w.Textarea(value=_criteria_to_text(question), description=box, placeholder=hint,
                                  layout=w.Layout(width="98%", height="6em"))
            self.questions[qid] = (instructions, criteria)
            rows += [w.HTML(f"<b>{html.escape(qid)}</b>: {label}"), instructions, criteria]
        self.button = w.Button(description="Score", button_style="primary", icon="play")
        self.output = w.Output()
        self.button.on_click(lambda _: self._on_click())
        self.widget = w.VBox(rows + [self.button, self.output])

    def to_request(self) -> dict[str, Any]:
        """The request the form holds now (unchanged fields of the original request are kept)."""
        request = json.loads(json.dumps(self._base))
        request["state"] = self.state.value
        for qid, (instructions, criteria) in self.questions.items():
            question = request["questions"][qid]
            question["instructions"] = instructions.value
            parsed = _text_to_criteria(question.get("type", "noul"), criteria.value, qid)
            if parsed is None:
                question.pop("criteria", None)
            else:
                question["criteria"] = parsed
        return request

    def _on_click(self) -> None:
        from IPython.display import display

        self.output.clear_output()
        with self.output:
            if self._score is None:
                print("no scoring function given")
                return
            try:
                response = self._score(self.to_request())
            except Exception as exc:  # noqa: BLE001 - show the error in the form, keep the form usable
                print(f"{type(exc).__name__}: {exc}")
                return
            display(tabulate_answers(response))
            display(_figure_png(lambda: plot_probabilities(response)))

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)
