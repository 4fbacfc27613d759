"""The uvicorn runner both servers share: serve until SIGTERM, drain in-flight requests, exit 0.

SageMaker stops a container with SIGTERM and sends SIGKILL 30 s later; `semif serve` and
`semif serve-text` both need the same graceful drain inside that window, so it lives here once.
uvicorn is imported inside `serve_uvicorn`, so importing this module stays cheap.
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass
from typing import Any, Callable

from ..contract import KILL_AFTER_S
from ..settings import DRAIN_TAIL_S, Settings

__all__ = ["DEFAULT_DRAIN_S", "Drain", "serve_uvicorn"]

DEFAULT_DRAIN_S: float = Settings.model_fields["drain_s"].default  # SEMIF_DRAIN_S's default, for a server without settings


@dataclass
class Drain:
    """When SIGTERM arrived, so that each step of the shutdown fits before SageMaker's SIGKILL.

    Handlers answer a request still unanswered `window_s` after the signal with a JSON 503
    `shutting_down` (uvicorn itself, at its own timeout, would cancel it into a plain-text 500);
    uvicorn's own timeout is `DRAIN_TAIL_S` later (`server_timeout_s`), and the worker is given
    only what is left of the 30 s to finish its current decode (`worker_budget_s`). The bound on
    `SEMIF_DRAIN_S` (`Settings.drain_s`) keeps all three a second before SIGKILL.
    """

    window_s: float = DEFAULT_DRAIN_S
    started: float | None = None

    @property
    def server_timeout_s(self) -> int:
        """uvicorn's graceful-shutdown timeout: past the window, so the app's 503s go out first."""
        return int(self.window_s + DRAIN_TAIL_S)

    @property
    def worker_budget_s(self) -> float:
        """Seconds after SIGTERM the worker may still use to finish and close the engine."""
        return min(self.window_s + DRAIN_TAIL_S, KILL_AFTER_S - 1)

    def left(self, budget_s: float) -> float | None:
        """Seconds left of `budget_s` after SIGTERM; None while no SIGTERM has arrived."""
        return None if self.started is None else self.started + budget_s - time.monotonic()


def serve_uvicorn(app: Any, host: str, port: int, on_server: Callable[[Any], None] | None = None,
                  drain: Drain | None = None) -> Any:
    """Run `app` with uvicorn until SIGTERM/SIGINT, then drain in-flight requests; returns the server.

    uvicorn re-raises the signal it caught after its graceful shutdown; a no-op handler installed
    first turns that into a normal return, so SIGTERM ends the process with exit status 0. The
    signal's time goes into `drain`; uvicorn's own timeout is `drain.server_timeout_s`.
    """
    import uvicorn

    drain = drain or Drain()

    class DrainingServer(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            if drain.started is None:
                drain.started = time.monotonic()
            super().handle_exit(sig, frame)

    config = uvicorn.Config(app, host=host, port=port, log_level="info", access_log=False,
                            lifespan="on", timeout_graceful_shutdown=drain.server_timeout_s)
    server = DrainingServer(config)
    if on_server is not None:
        on_server(server)
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        server.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return server
