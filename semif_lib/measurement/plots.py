"""Charts for the workshop notebooks: option probabilities of a decision, and timings per path.

Both take plain response JSON (what `workshop.invoke_decision` returns) or a `DecisionResponse`
(read through `answers`), and return a matplotlib `Figure`; `save_figure` is how every results plot
is written. matplotlib is imported inside the functions.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from .answers import read_probabilities, read_response, top_option

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

    from matplotlib.figure import Figure

__all__ = ["plot_probabilities", "plot_timings", "save_figure"]

HIGHLIGHT = "#3b7dd8"
MUTED = "#bbbbbb"
ACCENT = "#d8533b"


def save_figure(fig: "Figure", path: "Path | str") -> "Path":
    """Write `fig` as a PNG (its folder made), then close it: the one way a results plot is saved."""
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_probabilities(response: Any, max_columns: int = 3, title: str | None = None) -> "Figure":
    """One horizontal bar chart per question: P(option), the chosen option highlighted.

    `option_mass` (the share of the full next-token distribution on the options) is shown in each
    panel's title: a low value means the model wanted to answer something that is not listed.
    """
    import matplotlib.pyplot as plt

    answers = read_response(response).get("answers", {})
    if not answers:
        raise ValueError("the response has no answers to plot")
    n = len(answers)
    cols = min(max_columns, n)
    rows = -(-n // cols)
    distributions = {qid: read_probabilities(answer) for qid, answer in answers.items()}
    heights = [len(probs) for probs in distributions.values()]
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, max(1.6, 0.35 * max(heights) + 1.0) * rows), squeeze=False)
    for ax, (qid, answer) in zip(axes.flat, answers.items(), strict=False):  # the grid may hold more panels than answers
        probs = distributions[qid]
        labels = list(probs)
        values = [float(probs[k]) for k in labels]
        best = top_option(probs)
        bars = ax.barh(labels, values, color=[HIGHLIGHT if k == best else MUTED for k in labels])
        ax.bar_label(bars, fmt="%.2f", padding=2, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, 1.15)
        mass = answer.get("x_option_mass")
        ax.set_title(f"{qid} ({answer.get('type', '?')})" + (f"\noption mass {mass:.2f}" if mass is not None else ""), fontsize=9)
        ax.tick_params(labelsize=8)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    fig.suptitle(title or f"P(option) from {read_response(response).get('model', 'the model')}", fontsize=10)
    fig.tight_layout()
    return fig


def plot_timings(responses: Mapping[str, Any], title: str | None = None) -> "Figure":
    """Stacked bars of prefill and branch seconds for each labelled response (`timing` field).

    Fresh mode has no shared prefill (every question evaluates its whole prompt), so its bar is all
    branches; a cached call's prefill is near zero. `usage.cached_tokens` is written on each bar.
    """
    import matplotlib.pyplot as plt

    labels = list(responses)
    docs = [read_response(responses[k]) for k in labels]
    prefill = [float(d.get("x_timing", {}).get("prefill_s", 0.0)) for d in docs]
    total = [float(d.get("x_timing", {}).get("total_s", 0.0)) for d in docs]
    rest = [max(0.0, t - p) for t, p in zip(total, prefill, strict=True)]
    fig, ax = plt.subplots(figsize=(7, 0.7 * len(labels) + 1.4))
    ax.barh(labels, prefill, color=ACCENT, label="shared prefill")
    bars = ax.barh(labels, rest, left=prefill, color=HIGHLIGHT, label="questions (branches / full prompts)")
    cached = [d.get("usage", {}).get("x_cached_tokens", 0) for d in docs]
    ax.bar_label(bars, labels=[f"{t:.2f} s, {c} cached tokens" for t, c in zip(total, cached, strict=True)], padding=3, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, max(total + [1e-3]) * 1.45)
    ax.set_xlabel("seconds on the server (response timing)")
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(title or "Fresh against forked", fontsize=10)
    fig.tight_layout()
    return fig
