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

__all__ = ["describe_reference", "merge_fresh_responses", "score_fresh_reference"]


def merge_fresh_responses(parts: list[Mapping[str, Any]]) -> dict[str, Any]:
    """One response from one-question fresh responses: answers joined, usage and timings summed (the prefix
    length is each call's own, so it is kept, not summed), `x_calls` the number of calls."""
    merged: dict[str, Any] = {"model": parts[0].get("model"), "answers": {}, "usage": {}, "x_timing": {}, "x_calls": len(parts)}
    for part in parts:
        merged["answers"].update(part.get("answers", {}))
        for field in ("usage", "x_timing"):
            for key, value in part.get(field, {}).items():
                if isinstance(value, (int, float)) and not isinstance(value, bool) and key != "prefix_tokens":
                    merged[field][key] = merged[field].get(key, 0) + value
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
