"""What a request cost, told in its response: when each phase ended, the tokens it used and found cached.

`score` and `score_batch` measure the same phases the same way (a batched request reports its round's
times and branch tokens), so the engine's scoring loop only stamps `Timings` and hands them here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from .preparer import PreparedRequest
from .responses import DecisionResponse, Usage


@dataclass
class Timings:
    """When each phase of a request (or of the round it ran in) ended, on `time.perf_counter`."""

    start: float
    prepared: float = 0.0
    prefilled: float = 0.0  # the shared prefix was ready (== prepared when a mode has none)
    branched: float = 0.0

    @classmethod
    def begin(cls) -> "Timings":
        return cls(time.perf_counter())

    def fields(self) -> dict[str, float]:
        """The response's `timing` seconds; `score` and `score_batch` report the same fields, measured the same way."""
        return {
            "prepare_s": round(self.prepared - self.start, 6),
            "prefill_s": round(self.prefilled - self.prepared, 6),
            "branches_s": round(self.branched - self.prefilled, 6),
            "total_s": round(time.perf_counter() - self.start, 6),
        }


def build_response(prep: PreparedRequest, answers: dict[str, Any], *, model: str, model_info: dict[str, Any], mode: str,
                   cached: int, timings: Timings, branch_tokens: int, batched: int | None = None) -> DecisionResponse:
    """The response: answers, usage (input and cached tokens) and `x_timing` (phases, prefix, suffix and branch tokens).

    `branch_tokens` are those decoded after the prefix for this request (its round's, when batched), shared tokens once.
    """
    timing: dict[str, Any] = {"mode": mode}
    if prep.invariant:
        timing["batch_invariant"] = True  # decoded alone at the canonical placement: the same bits with any neighbours
    if batched is not None:
        timing["batched_requests"] = batched
    timing.update(timings.fields())
    timing.update({"prefix_tokens": len(prep.prefix), "suffix_tokens": prep.suffix_lengths, "branch_tokens": branch_tokens})
    return DecisionResponse(
        model=model,
        answers=answers,
        usage=Usage(input_tokens=prep.input_tokens, output_tokens=0, cached_tokens=cached),
        timing=timing,
        model_info=model_info,
    )
