"""A submission's work, bounded: what one HTTP request hands the worker, its token budget, and when it stops.

One body holds the single inference worker for as long as its requests take, so its work is bounded before it
starts and while it runs:

- before: a JSON Lines body's records (`SEMIF_MAX_RECORDS`, counted by `wire` before any is parsed) and the
  prompt tokens they need together (`SEMIF_MAX_SUBMISSION_TOKENS`, `refuse_over_budget`: counted by preparing
  them, before anything is decoded), each a 413 for the whole body naming the limit;
- while: a submission whose client has gone, or that is past its answer deadline (its handler has answered
  503), stops between the engine's rounds (`Submission.stopped`, the engine's `stop`): its other requests get a
  `WorkStoppedError` instead of work. A round releases its leases before the next begins, so a stopped
  submission leaves nothing held and the KV books balance.

Nothing here knows HTTP: `resolve_submission` hands the results back to the event loop awaiting them.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..decision.responses import DecisionResponse
from ..decision.schema import DecisionRequest
from ..errors import PayloadTooLargeError, SemifError
from ..limits import refuse_limit

__all__ = ["Submission", "refuse_over_budget", "resolve_submission"]


@dataclass
class Submission:
    """One HTTP request's work: parsed requests (or their parse errors, passed through) and a future."""

    items: list[DecisionRequest | SemifError]
    mode: str | None
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future
    created: float = field(default_factory=time.monotonic)
    abandoned: bool = False  # the client went away or stopped waiting: drop it, do not compute it
    answered: bool = False  # the worker has handed it its results (it no longer counts as pending)
    session: str | None = None  # the stateful session its requests belong to (`sessions`): their states are held for it
    task: Callable[[Any], Any] | None = None  # instead of requests: `task(engine)`, run between requests (`run_task`)
    refusal: SemifError | None = None  # the whole body's error (over SEMIF_MAX_SUBMISSION_TOKENS), set before it is resolved
    scored: int = 0  # its requests answered so far, counted as their rounds end
    skipped: int = 0  # its requests stopped between rounds, never scored
    scored_when_abandoned: int | None = None  # `scored` when it was abandoned: what ran after is at most one round
    why: str = "its deadline passed"  # why it stops, for the log

    def abandon(self, why: str = "its client left") -> None:
        """Nobody waits for it any more (`why`): the worker drops it if it has not begun, and stops it between rounds if it has."""
        if not self.abandoned:
            self.scored_when_abandoned, self.why = self.scored, why
            self.abandoned = True

    def stopped(self, deadline_s: float) -> bool:
        """Whether to stop it before the next round: its client left, or it is past its answer deadline."""
        return self.abandoned or time.monotonic() - self.created > deadline_s


def resolve_submission(submission: Submission, results: list[DecisionResponse | SemifError]) -> None:
    """Hand `results` to the submission's future from any thread: the future belongs to the submission's event loop."""

    def deliver() -> None:
        if not submission.future.done():
            submission.future.set_result(results)

    try:
        submission.loop.call_soon_threadsafe(deliver)
    except RuntimeError:  # the loop is gone (forced shutdown): nobody is waiting any more
        pass


def refuse_over_budget(engine: Any, items: list[Any], limit: int) -> PayloadTooLargeError | None:
    """The 413 for a body whose requests need more than `limit` prompt tokens together; None when they fit.

    Counted in the worker, by preparing each request (rendering and tokenizing, no decode) and stopping once over,
    so counting costs at most the budget's tokens. One request alone is bounded by SEMIF_N_CTX and
    SEMIF_MAX_BRANCH_TOKENS: only bodies of several are counted. An engine without `prepare` (a test double) counts nothing.
    """
    requests = [item for item in items if isinstance(item, DecisionRequest)]
    prepare = getattr(engine, "prepare", None)
    if len(requests) < 2 or prepare is None:
        return None
    total = 0
    for request in requests:
        try:
            total += prepare(request).input_tokens
        except SemifError:
            continue  # scoring refuses it again, with the same error, in its own slot
        if total > limit:
            return refuse_limit("max_submission_tokens", limit, limit, field="body")
    return None
