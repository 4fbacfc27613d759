"""Answers as tables: one row per question, per request, or per question of two responses side by side;
and notebook 01's permission check. pandas is imported inside each function."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Mapping

from ..errors import read_error
from ..measurement.agreement import compare_question
from ..measurement.answers import read_probabilities, read_response

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["compare_answers", "decision_of", "format_typed_answer", "tabulate_answers", "tabulate_permissions", "tabulate_ratios",
           "tabulate_records", "whole_table"]


@functools.cache
def _whole_table_class() -> type:
    """A DataFrame that a notebook shows whole (built on first use: pandas is imported lazily)."""
    import pandas as pd

    class WholeTable(pd.DataFrame):
        """Shown in a notebook without pandas' cuts (50 characters a cell) and with an empty cell, not `NaN`, where a
        value does not exist (a yes/no's `confidence`); numbers to 3 decimals. The data stay as they are."""

        @property
        def _constructor(self) -> type:
            return WholeTable

        def _repr_html_(self) -> str:
            with pd.option_context("display.max_colwidth", None):
                return self.to_html(na_rep="", notebook=True, float_format="{:.3f}".format)

    return WholeTable


def whole_table(frame: "pd.DataFrame") -> "pd.DataFrame":
    """`frame`, shown whole in a notebook: no cut cells, no `NaN` (`_whole_table_class`)."""
    return _whole_table_class()(frame)


def _answers(response: Any) -> dict[str, Any]:
    return read_response(response).get("answers", {})


def decision_of(answer: Mapping[str, Any]) -> Any:
    """The decision an answer carries: P(yes) for a yes/no, the option for a choice, the expected level for a score."""
    return {"noul": answer.get("noul"), "choice": answer.get("choice"), "score": answer.get("score")}.get(answer.get("type"))


def tabulate_answers(response: Any) -> "pd.DataFrame":
    """One row per question: the decision, Jev's `confidence` (choice and score; a yes/no has none, so the cell is
    empty), `x_top_probability` (the top option's probability, any type: a yes/no's is max(P(true), P(false))), the
    option mass, and every P(option). The two are different numbers: confidence is the top probability normalised
    so that uniform is 0 and certain is 1. Shown whole (`whole_table`): no `NaN`, no cut probabilities."""
    import pandas as pd

    rows = []
    for qid, answer in _answers(response).items():
        probs = read_probabilities(answer)
        rows.append({"question": qid, "type": answer.get("type"), "answer": decision_of(answer),
                     "confidence": answer.get("confidence"),
                     "x_top_probability": answer.get("x_top_probability", max(probs.values())),
                     "option_mass": answer.get("x_option_mass"),
                     "probabilities": ", ".join(f"{k}={v:.3f}" for k, v in probs.items())})
    return whole_table(pd.DataFrame(rows).set_index("question") if rows else pd.DataFrame(rows))


def format_typed_answer(answer: Any) -> str:
    """One line for one of the `openai` SDK's typed Decisions answers (notebook 04): its name and type, then what it
    decided: P(yes) for a predicate, the choice or the score with Jev's confidence and each option's probability."""
    head = f"{answer.name or '?'} ({answer.type}):"
    if answer.type == "predicate":
        return f"{head} P(yes) = {answer.probability:.3f}"
    if answer.type == "refusal":
        return f"{head} declined (the server abstained: its top probability is below the calibrated threshold)"
    options = ", ".join(f"{getattr(p, 'label', None) or p.value} {p.probability:.3f}" for p in answer.probabilities)
    decided = f"choice {answer.choice!r}" if answer.type == "choice" else f"score {answer.score:.2f}"
    return f"{head} {decided}, confidence {answer.confidence:.3f} | {options}"


# What each benchmark ratio compares, in an attendee's words (results/bench/modes.json and peer*.json name them)
RATIO_LABELS = {
    "best_fork_vs_fresh": "decisions per second: the best fork over fresh (every prompt whole)",
    "oneshot_vs_best_fork": "decisions per second: one pass for all questions (the bound) over the best fork",
    "best_fork_vs_naive_user": "decisions per second: the best fork over one OpenAI-style call per question",
    "cached_fraction_of_bound": "share of the cached-prefix bound the cached fork reaches",
    "cold_vs_best_server": "decisions per second, cold: the decision path over llama-server's best path",
    "cached_vs_best_server": "decisions per second, prefix cached: the decision path over llama-server's best path",
    "concurrent_clients": "p95 latency with 8 clients at once: llama-server's over the decision path's",
    "readout_vs_server_json": "decisions per second: reading logits over llama-server writing JSON",
}


def tabulate_ratios(targets: Mapping[str, Any]) -> "pd.DataFrame":
    """A benchmark file's ratios as an attendee reads them: what each compares, and the measured ratio. The targets the
    project set itself and whether they were met stay in the file and in docs/benchmarks.md."""
    import pandas as pd

    rows = [{"ratio": name, "what it compares": RATIO_LABELS.get(name, name.replace("_", " ")), "measured": f"{value['ratio']:.2f}x"}
            for name, value in targets.items() if isinstance(value, Mapping) and "ratio" in value]
    return whole_table(pd.DataFrame(rows).set_index("ratio"))


def tabulate_records(records: Any) -> "pd.DataFrame | str":
    """Responses of a JSON Lines run as one row per request id and one column per question
    (the decision); an S3 URI (what Batch Transform returns) is passed through."""
    import pandas as pd

    if isinstance(records, str):
        return records
    rows = {}
    for record in records:
        if "detail" in record:  # an error line (`jsonlines.error_record`)
            rows[record.get("id")] = {"error": read_error(record)["message"]}
        else:
            rows[record.get("id")] = {qid: decision_of(a) for qid, a in record.get("answers", {}).items()}
    return pd.DataFrame.from_dict(rows, orient="index")


def compare_answers(reference: Any, other: Any) -> "pd.DataFrame":
    """Per question: both argmaxes, whether they agree, and max |Δp| between the two responses
    (`measurement.agreement.compare_question`, the rule the benchmarks use; a yes/no's probabilities read
    from its `x_probabilities`). A question the other response did not answer is refused by name."""
    import pandas as pd

    ref, oth = _answers(reference), _answers(other)
    rows = []
    for qid, answer in ref.items():
        if qid not in oth:
            raise ValueError(f"question {qid!r}: the other response has no answer to compare")
        result = compare_question(read_probabilities(answer), read_probabilities(oth[qid]))
        rows.append({"question": qid, "reference": result.reference, "other": result.other,
                     "same_argmax": result.same_argmax, "max_abs_dp": round(result.max_abs_dp, 4)})
    return pd.DataFrame(rows).set_index("question") if rows else pd.DataFrame(rows)


def tabulate_permissions(check: Any) -> "pd.DataFrame | None":
    """Notebook 01's permission check (`aws.preflight.PermissionCheck`) as one table: step, action,
    resource, allowed (yes / NO / ?; `no, optional` where the step goes on without it), how it was checked,
    and the container/iam/ file that grants it. The rows that need a look come first (in step order), so a
    table longer than pandas shows never hides a denial in its cut middle. None in local mode."""
    if check is None:
        return None
    import pandas as pd

    mark = {True: "yes", False: "NO", None: "?"}
    rows = [{**row, "allowed": "no, optional" if row.get("optional") and row["allowed"] is False else mark[row["allowed"]],
             "policy": f"{row['policy']}.json" if row.get("policy") else ""} for row in check.rows]
    rows.sort(key=lambda row: row["allowed"] == "yes")  # stable: denials and unknowns first, each group in step order
    return pd.DataFrame(rows, columns=["step", "action", "allowed", "how", "resource", "policy"])
