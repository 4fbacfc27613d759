"""The stateful sessions open on this instance: opened, checked, closed and expired, within their limits.

`SESSIONS_EXPIRATION` fixes a session's lifetime (20 minutes by default) and `SEMIF_MAX_SESSIONS` how many are open
at once. Opening costs a client nothing, so opens alone must not hold that room for a lifetime (256 `NEW_SESSION`
bodies would lock every other client out for 20 minutes):

- a session that has answered no request ends `SEMIF_EMPTY_SESSION_S` after it opened (60 s by default): an
  empty session holds nothing, and not for long;
- `SEMIF_SESSIONS_PER_PEER` (0: off) caps the sessions one client address holds. It helps only where clients reach
  the server directly: SageMaker strips the caller's identity from InvokeEndpoint and every invocation comes from its
  router's address, so there one peer is every caller and the share stays off; the empty-session timeout is what
  protects an endpoint.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections import OrderedDict
from datetime import datetime, timezone
from typing import Any, Callable

from ..contract import CLOSE_SESSION, NEW_SESSION, SESSION_HEADER, SESSION_ID_PATTERN, SESSIONS_ENABLED_ENV, SESSIONS_EXPIRATION_ENV
from ..errors import SessionError, SessionLimitError
from ..settings import Settings

__all__ = ["STATE_KEYS", "SessionBook", "format_expiry"]

ENDED_KEPT = 1024  # ended sessions remembered, so a late request hears "closed" or "expired" rather than "unknown"
SESSION_ID = re.compile(SESSION_ID_PATTERN)
# What makes a body's state, per wire: a questions-only request in a session gets these keys from the session's last one.
STATE_KEYS = {"jev": ("state",), "openai": ("input", "prompt_cache_key")}


def format_expiry(expires: float) -> str:
    """The `Expires=` of the new-session header: UTC to the second, as botocore's NewSessionResponseHeader pattern wants."""
    return datetime.fromtimestamp(expires, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class SessionBook:
    """The sessions open on this instance (id -> expiry) and those that ended lately; thread-safe: the event loop opens and
    closes them, the worker asks whether one is still open before it holds a state for it."""

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.time) -> None:
        self.enabled = settings.stateful_sessions
        self.expiration_s = settings.sessions_expiration_s
        self.max_sessions = settings.max_sessions
        self.empty_s = settings.empty_session_s
        self.per_peer = settings.sessions_per_peer
        self.clock = clock
        self._open: dict[str, float] = {}
        self._opened: dict[str, tuple[float, str | None]] = {}  # id -> (when, the peer that opened it)
        self._used: set[str] = set()  # sessions that have answered a request: no longer empty
        self._states: dict[tuple[str, str], dict[str, Any]] = {}  # (session, wire) -> its last answered request's state keys
        self._ended: OrderedDict[str, str] = OrderedDict()  # id -> how it ended, for the 400's message
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._open)

    def is_open(self, session: str) -> bool:
        with self._lock:
            return session in self._open

    def open(self, peer: str | None = None) -> tuple[str, float]:
        """A new session for `peer` (the client's address): (id, expiry as a Unix time); 429 naming `SEMIF_MAX_SESSIONS`
        when that many are open, or `SEMIF_SESSIONS_PER_PEER` when the peer holds its share."""
        wait = (f'close one ({{"requestType": "{CLOSE_SESSION}"}}) or wait for one to expire ({SESSIONS_EXPIRATION_ENV}='
                f"{self.expiration_s} s; one that answers no request within SEMIF_EMPTY_SESSION_S={self.empty_s} s ends then)")
        with self._lock:
            if len(self._open) >= self.max_sessions:
                raise SessionLimitError(f"{len(self._open)} stateful sessions are open; the limit is {self.max_sessions} "
                                        f"(SEMIF_MAX_SESSIONS): {wait}", field="requestType")
            held = sum(by == peer for _, by in self._opened.values())
            if self.per_peer and held >= self.per_peer:
                raise SessionLimitError(f"this client holds {held} stateful sessions; the limit per client address is "
                                        f"{self.per_peer} (SEMIF_SESSIONS_PER_PEER): {wait}", field="requestType")
            session, now = str(uuid.uuid4()), self.clock()
            self._open[session] = now + self.expiration_s
            self._opened[session] = (now, peer)
            return session, self._open[session]

    def check(self, header: str | None) -> str | None:
        """The open session a request's header names; None for no header (or `NEW_SESSION`, which opens none); else a 400."""
        if header is None:
            return None
        if not self.enabled:
            raise SessionError(f"{SESSION_HEADER}: stateful sessions are not enabled on this endpoint ({SESSIONS_ENABLED_ENV}=true "
                               "turns them on); send the request without the header", field=SESSION_HEADER)
        if header == NEW_SESSION:
            return None
        if len(header) > 256 or not SESSION_ID.match(header):
            raise SessionError(f"{SESSION_HEADER}: {header[:64]!r} is not a session id (letters, digits and hyphens, at most 256)",
                               field=SESSION_HEADER)
        with self._lock:
            expires = self._open.get(header)
            if expires is not None and expires > self.clock():
                return header
            ended = self._ended.get(header) or (f"expired at {format_expiry(expires)}" if expires is not None else None)
        how = ended or "is not open on this instance (never opened here, or forgotten by a restart)"
        raise SessionError(f"{SESSION_HEADER}: session {header} {how}; open a new one with "
                           f'{{"requestType": "{NEW_SESSION}"}}', field=SESSION_HEADER)

    def close(self, header: str | None) -> str:
        """End the session the header names (400 as `check` when there is none open); returns its id."""
        session = self.check(header)
        if session is None:
            raise SessionError(f'{{"requestType": "{CLOSE_SESSION}"}} needs the session to close in {SESSION_HEADER}',
                               field=SESSION_HEADER)
        self._end([session], "was closed")
        return session

    def mark_used(self, session: str) -> None:
        """The session answered a request: it is no longer empty, and lives to its expiry."""
        with self._lock:
            if session in self._open:
                self._used.add(session)

    def remember(self, session: str, wire: str, state: dict[str, Any]) -> None:
        """The state keys of a request the session answered (and whose state it holds, so within SEMIF_SESSION_TOKENS)."""
        with self._lock:
            if session in self._open:
                self._states[(session, wire)] = state

    def recall(self, session: str, wire: str) -> dict[str, Any] | None:
        with self._lock:
            return self._states.get((session, wire))

    def sweep(self) -> list[str]:
        """End the sessions past their expiry, and the empty ones past SEMIF_EMPTY_SESSION_S; returns their ids, whose held
        states the caller releases."""
        now = self.clock()
        with self._lock:
            expired = [(s, f"expired at {format_expiry(e)} ({SESSIONS_EXPIRATION_ENV}={self.expiration_s} s)")
                       for s, e in self._open.items() if e <= now]
            expired += [(s, f"expired at {format_expiry(opened + self.empty_s)} without answering a request "
                            f"(SEMIF_EMPTY_SESSION_S={self.empty_s} s)")
                        for s, (opened, _) in self._opened.items()
                        if s not in self._used and opened + self.empty_s <= now and self._open[s] > now]
        for session, how in expired:
            self._end([session], how)
        return [session for session, _ in expired]

    def _end(self, sessions: list[str], how: str) -> None:
        with self._lock:
            for session in sessions:
                self._open.pop(session, None)
                self._opened.pop(session, None)
                self._used.discard(session)
                for wire in STATE_KEYS:
                    self._states.pop((session, wire), None)
                self._ended[session] = how
            while len(self._ended) > ENDED_KEPT:
                self._ended.popitem(last=False)
