"""The typed seam between serving and the decision wing: all a server may ask of an engine, and nothing else.

The worker thread owns one `DecisionWing`: it scores a batch and reports each request as its round finishes, tells
what a body's requests need in prompt tokens before anything is decoded, holds and releases a stateful session's
prefixes, and closes. Serving keeps the session book, the headers and the HTTP answers; the KV store stays the decision
wing's (`SessionHolds` is how `DecisionEngine` meets the seam's session part). Every test double implements the same
protocol, so the worker never probes an engine for what it can do.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from ..contract import CLOSE_SESSION, SESSION_HEADER
from ..errors import EngineStateError, SemifError, SessionLimitError, WorkStoppedError
from .request import InternalRequest
from .responses import DecisionResponse

__all__ = ["DecisionWing", "HeldState", "OnDone", "Result", "SessionHolds", "Stop", "mark_stopped", "missing_members", "score_each"]

Result = DecisionResponse | SemifError
OnDone = Callable[[list[int], list[Any]], None]  # (indices finished, the results so far): called after each round
Stop = Callable[[int], bool]  # request i's submission has stopped (its client left, its deadline passed)


@dataclass(frozen=True)
class HeldState:
    """What a session keeps cached of one answered request: its prefix tokens in its cache partition."""

    partition: str | None
    prefix: list[int]


@runtime_checkable
class DecisionWing(Protocol):
    """What serving asks of the decision wing (the worker checks an engine against it when it loads)."""

    model_id: str
    model_path: Path | None
    model_info: dict[str, Any]

    def score_batch(self, requests: Sequence[InternalRequest], on_done: OnDone | None = None, stop: Stop | None = None) -> list[Result]:
        """Each request's answer or error, in order, each in its own mode; `on_done` as rounds finish; a stopped one gets
        `WorkStoppedError`."""

    def count_prompt_tokens(self, request: InternalRequest) -> int:
        """The prompt tokens `request` needs (rendered and tokenized, nothing decoded); its refusal raises."""

    def admit_session(self, requests: list[InternalRequest | SemifError], session: str, session_tokens: int) -> dict[int, HeldState]:
        """Each of a session's requests' state, to hold once answered; a request whose state would take the sessions' holds
        past `session_tokens` (the server's SEMIF_SESSION_TOKENS, within the cache) gets a 429 in its slot instead."""

    def hold_session_state(self, session: str, state: HeldState) -> bool:
        """Keep `state` cached for `session` until it is released (False: nothing held)."""

    def release_sessions(self, sessions: Sequence[str], check: bool) -> int:
        """Let the LRU have what `sessions` held; `check`: the KV books must balance after it."""

    def close(self) -> None:
        """Free the model; the wing answers nothing after it."""


def score_each(score: Callable[[InternalRequest], Result], requests: Sequence[InternalRequest], on_done: OnDone | None,
               stop: Stop | None) -> list[Result]:
    """Requests scored one at a time by `score`, each reported as it finishes: a request whose submission stopped gets a
    `WorkStoppedError`, a refusal its error, in its slot (the engine's serial and fresh batches, and a double's)."""
    out: list[Result] = []
    for i, request in enumerate(requests):
        try:
            if stop is not None and stop(i):
                raise WorkStoppedError()
            out.append(score(request))
        except SemifError as exc:
            out.append(exc)
        if on_done is not None:
            on_done([i], out)
    return out


def mark_stopped(indices: Sequence[int], results: list[Any], stop: Stop | None) -> None:
    """Between rounds: each of `indices` whose submission has stopped gets a `WorkStoppedError` in its slot."""
    for i in indices:
        if stop is not None and stop(i):
            results[i] = WorkStoppedError()


def missing_members(engine: Any) -> list[str]:
    """What `engine` lacks of the seam (empty: it is a `DecisionWing`), for the worker's one-line refusal."""
    members = [*DecisionWing.__annotations__, *(n for n, v in vars(DecisionWing).items() if callable(v) and not n.startswith("_"))]
    return [m for m in members if not hasattr(engine, m)]


class SessionHolds:
    """`DecisionEngine`'s side of the seam's session part: a session's states held in the KV store (`KVStore.hold`),
    never evicted by the LRU until the session closes or expires, within `SEMIF_SESSION_TOKENS`."""

    store: Any  # the engine's KV store and its `prepare`
    prepare: Callable[[InternalRequest], Any]

    def count_prompt_tokens(self, request: InternalRequest) -> int:
        return int(self.prepare(request).input_tokens)

    def admit_session(self, requests: list[InternalRequest | SemifError], session: str, session_tokens: int) -> dict[int, HeldState]:
        """Each state's size, from the request's one preparation (scoring reuses it): known before any decode."""
        cache = self.store.cache
        limit = min(session_tokens, cache.budget_tokens)
        held, states = cache.held_tokens(), {}
        for k, item in enumerate(requests):
            if not isinstance(item, InternalRequest):
                continue
            try:
                prep = self.prepare(item)
            except SemifError:
                continue  # scoring refuses it again, with the same error
            if (entry := cache.find(prep.prefix, prep.partition)) is None or not entry.holders:
                if held + len(prep.prefix) > limit:
                    requests[k] = SessionLimitError(
                        f"session {session}: keeping this state ({len(prep.prefix)} tokens) would make the open sessions hold "
                        f"{held + len(prep.prefix)} tokens; the limit is {limit} (SEMIF_SESSION_TOKENS={session_tokens}, "
                        f'within SEMIF_CACHE_TOKENS): close a session ({{"requestType": "{CLOSE_SESSION}"}}) or send this request '
                        f"without {SESSION_HEADER}", field=SESSION_HEADER)
                    continue
                held += len(prep.prefix)
            states[k] = HeldState(prep.partition, prep.prefix)
        return states

    def hold_session_state(self, session: str, state: HeldState) -> bool:
        return bool(self.store.hold(state.prefix, state.partition, session))

    def release_sessions(self, sessions: Sequence[str], check: bool) -> int:
        released = sum(self.store.release_holder(session) for session in sessions)
        if check:
            try:
                self.store.check_invariants(idle=True)
            except EngineStateError:
                self.store.recover()  # logged; the cache starts clean
                raise
        return released
