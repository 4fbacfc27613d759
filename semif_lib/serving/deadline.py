"""How long the adapter waits for a request's answer before its 503: one rule, read by the routes and by Batch Transform.

The worker answers a job that waited `SEMIF_REQUEST_TIMEOUT_S` for its turn with a 503 itself
(`worker._admit`); the handler's deadline also bounds a job that started in time and computes too long.
On a SageMaker real-time endpoint an invocation gets 60 s ("InvokeEndpoint: ... the model container must
respond within 60 seconds"), after which SageMaker has already answered the client with a ModelError and
the work is wasted; so while the request timeout is one a real-time endpoint allows (60 s or less, 55 s by
default), the deadline is twice it but never past 58 s. A longer timeout means a longer wait was chosen
on purpose: Batch Transform sets one through `CreateTransformJob.Environment` (`aws.scaling`), inside the
job's `InvocationsTimeoutInSeconds`, and it is the deadline itself. Work longer than 60 s belongs in Batch
Transform or Asynchronous Inference, never in a real-time invocation.
"""

from __future__ import annotations

__all__ = ["ANSWER_DEADLINE_FACTOR", "REALTIME_INVOCATION_S", "answer_deadline_s", "request_timeout_for"]

REALTIME_INVOCATION_S = 60.0  # a SageMaker real-time endpoint's invocation limit
REALTIME_MARGIN_S = 2.0       # the answer still has to travel back inside it
ANSWER_DEADLINE_FACTOR = 2    # a job admitted just before SEMIF_REQUEST_TIMEOUT_S still gets to compute


def answer_deadline_s(request_timeout_s: float) -> float:
    """The handler's deadline for a request under `SEMIF_REQUEST_TIMEOUT_S` (see the module doc)."""
    if request_timeout_s > REALTIME_INVOCATION_S:
        return request_timeout_s
    return min(ANSWER_DEADLINE_FACTOR * request_timeout_s, REALTIME_INVOCATION_S - REALTIME_MARGIN_S)


def request_timeout_for(deadline_s: float) -> float:
    """The `SEMIF_REQUEST_TIMEOUT_S` whose deadline is `deadline_s`, for a wait longer than a real-time invocation."""
    if deadline_s <= REALTIME_INVOCATION_S:
        raise ValueError(f"a deadline of {deadline_s:g} s fits a real-time endpoint: keep the default SEMIF_REQUEST_TIMEOUT_S")
    return deadline_s
