"""Notebook 05's reference: `mode=fresh`, every question's whole prompt, sized so no call outlives an invocation.

A SageMaker real-time endpoint gives one invocation 60 s, and the adapter's own deadline follows it
(`Settings.answer_deadline_s`). Fresh costs one whole prompt per question (8 questions of a long state took
71 s in one call on a 2-core machine), so the reference goes one question per call and the table sums the
server's times and tokens. Fresh evaluates every question on its own anyway, so the sum is the cost of one
fresh call of all questions, without the 60 s limit. Work longer than that belongs in Batch Transform
(`workshop.score_jsonlines` on AWS) or Asynchronous Inference, not in a real-time invocation.
"""

from __future__ import annotations

import sys
from typing import Any, Mapping

from .. import workshop
from ..registry import WorkshopState
from ..settings import Settings

__all__ = ["describe_reference", "draw_fork", "merge_fresh_responses", "score_fresh_reference", "tabulate_tokens"]


def merge_fresh_responses(parts: list[Mapping[str, Any]]) -> dict[str, Any]:
    """One response from one-question fresh responses: answers joined, usage and timings summed (the prefix
    length is each call's own, so it is kept, not summed; per-question counts are joined), `x_calls` the number of calls."""
    merged: dict[str, Any] = {"model": parts[0].get("model"), "answers": {}, "usage": {}, "x_timing": {}, "x_calls": len(parts)}
    for part in parts:
        merged["answers"].update(part.get("answers", {}))
        for field in ("usage", "x_timing"):
            for key, value in part.get(field, {}).items():
                if isinstance(value, (int, float)) and not isinstance(value, bool) and key != "prefix_tokens":
                    merged[field][key] = merged[field].get(key, 0) + value
                elif isinstance(value, dict):  # per-question counts (suffix_tokens): each call adds its question's
                    merged[field].setdefault(key, {}).update(value)
                else:
                    merged[field].setdefault(key, value)
    return merged


def score_fresh_reference(request: Mapping[str, Any], settings: Settings | None = None,
                          state: WorkshopState | None = None, progress: bool = True) -> dict[str, Any]:
    """The fresh reference for `request`, one question per call (see the module doc), with a `tqdm.auto` bar
    (a widget in JupyterLab) counting the calls: each can take seconds on a CPU."""
    from tqdm.auto import tqdm

    questions = tqdm(request["questions"].items(), total=len(request["questions"]), desc="fresh reference", unit="call",
                     file=sys.stderr, disable=not progress)
    parts = [workshop.invoke_decision({**request, "questions": {qid: question}}, settings=settings, state=state, mode="fresh")
             for qid, question in questions]
    return merge_fresh_responses(parts)


def describe_reference(fresh: Mapping[str, Any]) -> str:
    """The line notebook 05 prints under its table: how the reference was measured."""
    calls = fresh.get("x_calls", 1)
    return (f"fresh: {calls} calls of one question (server times and tokens summed; one call of every question could "
            "outlive a real-time endpoint's 60 s invocation limit)")


def tabulate_tokens(responses: Mapping[str, Mapping[str, Any]]) -> "Any":
    """Notebook 05's token arithmetic, one row per way of asking: the tokens each evaluated, the formula that predicts
    it from the prefix P (state and answer format) and the questions' suffixes S, and the server's seconds.

    fresh evaluates Q x P + sum(S) (every question's whole prompt), a fork P + sum(S) (the prefix once, then one branch
    per question), a fork on a cached prefix only sum(S)."""
    import pandas as pd

    rows = []
    for name, response in responses.items():
        timing, usage = response["x_timing"], response["usage"]
        prefix, suffix_sum = int(timing["prefix_tokens"]), sum(timing["suffix_tokens"].values())  # per question
        questions = len(response["answers"])
        calls, cached = int(response.get("x_calls", 1)), int(usage.get("x_cached_tokens", 0))
        predicted = (questions if calls > 1 else 1) * prefix + suffix_sum - cached
        formula = (f"Q x P + sum(S) = {questions} x {prefix} + {suffix_sum}" if calls > 1 else
                   f"P + sum(S) - cached = {prefix} + {suffix_sum} - {cached}")
        rows.append({"way": name, "mode": timing.get("mode"), "calls": calls, "evaluated_tokens": int(usage["input_tokens"]) - cached,
                     "formula": formula, "predicted": predicted, "server_s": round(float(timing["total_s"]), 3)})
    return pd.DataFrame(rows).set_index("way")


def draw_fork(response: Mapping[str, Any], ax: Any = None) -> Any:
    """The prefix and its branches, to scale in tokens: one bar prefilled once, one short branch per question from its end."""
    import matplotlib.pyplot as plt

    timing = response["x_timing"]
    prefix, suffixes = int(timing["prefix_tokens"]), dict(timing["suffix_tokens"])
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 0.45 * len(suffixes) + 1.2))
    middle = (len(suffixes) - 1) / 2
    ax.barh(middle, prefix, height=max(0.6, len(suffixes) - 0.4), color="#4878a8")  # as tall as the branches it serves
    ax.text(prefix / 2, middle, f"prefix: {prefix} tokens, prefilled once", ha="center", va="center", color="white")
    for row, (name, length) in enumerate(suffixes.items()):
        ax.plot([prefix, prefix + 0.02 * prefix], [middle, row], color="grey", linewidth=0.8)
        ax.barh(row, length, left=prefix + 0.02 * prefix, height=0.7, color="#e0a040")
        ax.text(prefix * 1.03 + length, row, f" {name} ({length})", va="center", fontsize=8)
    ax.set_xlabel("tokens")
    ax.set_yticks([])
    ax.set_xlim(0, prefix * 1.35 + max(suffixes.values(), default=0))
    ax.set_title(f"one request: {len(suffixes)} branches share the prefix's KV cells")
    return ax
