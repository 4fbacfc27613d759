"""SageMaker's stateful sessions: a session keeps the decision states its requests use cached on this instance.

The wire is AWS's container standard's (aws/model-hosting-container-standards, `sagemaker/sessions`): the body
`{"requestType": "NEW_SESSION"}` opens a session, answered with `X-Amzn-SageMaker-New-Session-Id: <id>; Expires=<UTC>`;
requests carrying `X-Amzn-SageMaker-Session-Id` belong to it (SageMaker routes them to this instance); `{"requestType":
"CLOSE"}` with that header closes it (`X-Amzn-SageMaker-Closed-Session-Id`). `SAGEMAKER_ENABLE_STATEFUL_SESSIONS` turns
sessions on and `SAGEMAKER_SESSIONS_EXPIRATION` fixes their lifetime. As the standard does: a session body or header while
sessions are off is a 400, an unknown session is a 400, `NEW_SESSION` as a decision request's header is no session.
Unlike its default manager (which treats an expired session as none), an expired or closed one is a 400 that says so,
never an answer from another state, and the errors are this adapter's JSON naming the header.

The package itself is not used: it reads the body before the adapter's size limit and content coding, keeps a
process-wide manager built from the environment at import, stores sessions as files, and has no hook that pins KV.

What a session buys: a request in a session may send only its questions (no `state` on Jev's wire, no `input` on
OpenAI's): the state comes from the session's last answered request on that wire (`fill_session_state`). And after
each of its answered requests the worker has the decision wing hold that request's prefix (`DecisionWing.hold_session_state`,
the KV store's `hold`): spilled between
requests as any prefix, but never evicted by the LRU until the session closes or expires (`release_holder`). Holds are
bounded by `SEMIF_SESSION_TOKENS` (within the cache budget) and the sessions by `SEMIF_MAX_SESSIONS`, each refused
429; the book of open sessions (`sessionbook`) ends one that answers no request within `SEMIF_EMPTY_SESSION_S`, so
opens alone cannot hold that room. Sessions live in this process: a restart forgets them (their next request is a 400
unknown session, and the client opens a new one).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from ..contract import CLOSE_SESSION, CLOSED_SESSION_HEADER, NEW_SESSION, NEW_SESSION_HEADER, SESSION_HEADER, SESSIONS_ENABLED_ENV
from ..errors import SemifError, SessionError
from .sessionbook import STATE_KEYS, SessionBook, format_expiry

__all__ = ["SessionBook", "answer_session_request", "fill_session_state", "read_request_session", "read_session_request",
           "remember_session_state", "run_release", "session_headers"]

REQUEST_TYPES = (NEW_SESSION, CLOSE_SESSION)


def session_headers(opened: tuple[str, float] | None = None, closed: str | None = None) -> dict[str, str]:
    """The response headers SageMaker reads: a session opened (`<id>; Expires=<UTC>`) or closed (`<id>`)."""
    if opened is not None:
        return {NEW_SESSION_HEADER: f"{opened[0]}; Expires={format_expiry(opened[1])}"}
    return {CLOSED_SESSION_HEADER: closed} if closed else {}


def read_session_request(data: Any) -> str | None:
    """`NEW_SESSION` or `CLOSE` when the decoded JSON body is a session request, None when it is something else (a decision).

    The standard's rule: a body with `requestType` is a session request, and then it is exactly `{"requestType": <type>}`.
    """
    if not isinstance(data, dict) or "requestType" not in data:
        return None
    kind = data["requestType"]
    if kind not in REQUEST_TYPES or len(data) != 1:
        raise SessionError(f'a session request is exactly {{"requestType": "{NEW_SESSION}"}} or {{"requestType": "{CLOSE_SESSION}"}}; '
                           f"got {json.dumps(data)[:200]}", field="requestType")
    return kind


def _wire_of(data: Any, openai: bool) -> str | None:
    """Which wire a decoded body speaks when its state may be missing: OpenAI's asks a list of questions, Jev's a map."""
    if not isinstance(data, dict) or "questions" not in data:
        return None
    return "openai" if openai or isinstance(data["questions"], list) else "jev"


def fill_session_state(data: Any, session: str | None, book: SessionBook, openai: bool) -> Any:
    """A session's questions-only request (decoded) with the state of the session's last answered request on its wire; any
    other body unchanged. A session with no state on that wire yet is a 400 naming the missing key."""
    if session is None:
        return data
    wire = _wire_of(data, openai)
    if wire is None or STATE_KEYS[wire][0] in data:
        return data
    state = book.recall(session, wire)
    if state is None:
        key = STATE_KEYS[wire][0]
        raise SessionError(f"{key}: missing, and session {session} has answered no request with a {key} on this wire yet; "
                           f"send the {key} once in the session, then only questions", field=key)
    return {**state, **data}


def remember_session_state(data: Any, session: str | None, book: SessionBook, openai: bool) -> None:
    """After a session's request (decoded) is answered: its state keys become the session's, for its questions-only requests."""
    if session is None:
        return
    book.mark_used(session)  # it answered a request: no longer an empty session
    wire = _wire_of(data, openai)
    if wire is not None and STATE_KEYS[wire][0] in data:
        book.remember(session, wire, {key: data[key] for key in STATE_KEYS[wire] if key in data})


# ----------------------------------------------------------------- the HTTP side (the event loop)
async def run_release(worker: Any, sessions: list[str], check: bool, wait_s: float | None) -> None:
    """Release what `sessions` held, in the worker thread between requests; `wait_s`: await it that long (None: do not)."""
    if not sessions:
        return
    future = worker.run_task(lambda engine: engine.release_sessions(sessions, check))
    if wait_s is None:
        return
    try:
        results = await asyncio.wait_for(asyncio.shield(future), wait_s)
    except asyncio.TimeoutError:
        return  # the worker is busy: the release runs after the requests ahead of it (the sessions are already closed)
    if results and isinstance(results[0], SemifError):
        raise results[0]


async def read_request_session(request: Any, book: SessionBook, worker: Any) -> str | None:
    """The open session a decision request names (None: none); expired sessions are swept (their holds released) first."""
    if book.enabled:
        await run_release(worker, book.sweep(), worker.settings.check_invariants, None)
    return book.check(request.headers.get(SESSION_HEADER))


async def answer_session_request(kind: str, request: Any, book: SessionBook, worker: Any, wait_s: float) -> Any:
    """Open (`NEW_SESSION`) or close (`CLOSE`) a session: its header, and the same in a small JSON body."""
    from fastapi.responses import JSONResponse

    if not book.enabled:
        raise SessionError(f'{{"requestType": "{kind}"}}: stateful sessions are not enabled on this endpoint '
                           f"({SESSIONS_ENABLED_ENV}=true turns them on)", field="requestType")
    check = worker.settings.check_invariants
    await run_release(worker, book.sweep(), check, None)
    if kind == NEW_SESSION:
        opened = book.open(request.client.host if request.client else None)  # the peer, for SEMIF_SESSIONS_PER_PEER
        return JSONResponse({"session_id": opened[0], "expires": format_expiry(opened[1])}, headers=session_headers(opened))
    session = book.close(request.headers.get(SESSION_HEADER))
    await run_release(worker, [session], check, wait_s)
    return JSONResponse({"session_id": session, "closed": True}, headers=session_headers(closed=session))
