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

`score_requests` scores a drain's requests through the seam (`decision.seam.DecisionWing.score_batch`), delivering each
as soon as it is final; a server-side failure inside a batch is retried alone. Nothing here knows HTTP:
`resolve_submission` hands the results back to the event loop awaiting them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..decision.request import InternalRequest
from ..decision.responses import DecisionResponse
from ..decision.seam import DecisionWing
from ..errors import PayloadTooLargeError, SemifError, WorkStoppedError
from ..limits import refuse_limit

log = logging.getLogger("semif.adapter")  # the adapter's logger, shared with `worker` and `app`

__all__ = ["Submission", "refuse_over_budget", "resolve_submission"]


@dataclass
class Submission:
    """One HTTP request's work: resolved requests (or their parse errors, passed through) and a future."""

    items: list[InternalRequest | SemifError]
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


def refuse_over_budget(engine: DecisionWing, items: list[Any], limit: int) -> PayloadTooLargeError | None:
    """The 413 for a body whose requests need more than `limit` prompt tokens together; None when they fit.

    Counted in the worker, by preparing each request (rendering and tokenizing, no decode; scoring reuses that
    preparation) and stopping once over, so counting costs at most the budget's tokens. One request alone is bounded by SEMIF_N_CTX and
    SEMIF_MAX_BRANCH_TOKENS: only bodies of several are counted.
    """
    requests = [item for item in items if isinstance(item, InternalRequest)]
    if len(requests) < 2:
        return None
    total = 0
    for request in requests:
        try:
            total += engine.count_prompt_tokens(request)
        except SemifError:
            continue  # scoring refuses it again, with the same error, in its own slot
        if total > limit:
            return refuse_limit("max_submission_tokens", limit, limit, field="body")
    return None


def score_requests(engine: DecisionWing, requests: list[InternalRequest], deliver: Callable[[int, Any], None],
                   stop: Callable[[int], bool]) -> None:
    """Score `requests` and `deliver(i, result)` each as soon as it is final; `stop(i)`: request i's submission stopped.

    A server-side failure inside a batch (5xx, e.g. no KV room for all prefixes at once) is not final: that request
    gets a solo retry after the batch (unless its submission has stopped).
    """
    out: list[Any] | None = None
    delivered: set[int] = set()

    def on_done(indices: list[int], results: list[Any]) -> None:
        for i in indices:
            r = results[i]
            if i not in delivered and r is not None and not (isinstance(r, SemifError) and r.status_code >= 500):
                delivered.add(i)
                deliver(i, r)

    if len(requests) > 1:
        try:
            out = list(engine.score_batch(requests, on_done=on_done, stop=stop))
        except Exception:  # fall back to one request at a time
            log.exception("score_batch failed; scoring the %d requests one by one", len(requests))
            out = None
        if out is not None and len(out) != len(requests):
            out = None
    if out is None:
        out = [None] * len(requests)
    for i, request in enumerate(requests):
        if i in delivered:
            continue
        if out[i] is None or (isinstance(out[i], SemifError) and out[i].status_code >= 500):
            out[i] = WorkStoppedError() if stop(i) else score_one(engine, request)
        delivered.add(i)
        deliver(i, out[i])


def score_one(engine: DecisionWing, request: InternalRequest) -> DecisionResponse | SemifError:
    try:
        return engine.score_batch([request])[0]
    except SemifError as exc:
        return exc
    except Exception as exc:  # a bug must answer 500 for this request, not kill the worker
        log.exception("scoring one request failed")  # the exception's text goes to the log, not to the client
        return SemifError(f"internal error while scoring ({type(exc).__name__})")
