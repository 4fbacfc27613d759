"""The uvicorn runner both servers share: serve until SIGTERM, drain in-flight requests, exit 0.

SageMaker stops a container with SIGTERM and sends SIGKILL 30 s later; `semif serve` and
`semif serve-text` both need the same graceful drain inside that window, so it lives here once.
uvicorn is imported inside `serve_uvicorn`, so importing this module stays cheap.
"""

from __future__ import annotations

import signal
from typing import Any, Callable

__all__ = ["GRACEFUL_SHUTDOWN_S", "serve_uvicorn"]

GRACEFUL_SHUTDOWN_S = 25  # SageMaker sends SIGKILL 30 s after SIGTERM


def serve_uvicorn(app: Any, host: str, port: int, on_server: Callable[[Any], None] | None = None) -> Any:
    """Run `app` with uvicorn until SIGTERM/SIGINT, then drain in-flight requests; returns the server.

    uvicorn re-raises the signal it caught after its graceful shutdown; a no-op handler installed
    first turns that into a normal return, so SIGTERM ends the process with exit status 0.
    """
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level="info", access_log=False,
                            lifespan="on", timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S)
    server = uvicorn.Server(config)
    if on_server is not None:
        on_server(server)
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        server.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return server
