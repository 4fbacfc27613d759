"""A router in front of N `semif serve` processes on loopback, behaving as a SageMaker endpoint's does: the harness of
`semif bench scale` and tests/test_sessions_router.py, not a product (the real router is AWS's).

Strategies are `ProductionVariant.RoutingConfig.RoutingStrategy`'s: `RANDOM` (seeded) and `LEAST_OUTSTANDING_REQUESTS`
(the instance with the fewest requests in flight; ties to the lowest index). Stateful sessions come first, as SageMaker's
do: a request carrying `X-Amzn-SageMaker-Session-Id` goes to the instance that answered its `X-Amzn-SageMaker-New-Session-Id`,
and a `X-Amzn-SageMaker-Closed-Session-Id` answer forgets it. A session id the router never saw goes by the strategy (the
instance it reaches answers the 400). `routed` records which instance took each request, for the assertions and the figures.

    with EndpointRouter([a.url, b.url, c.url], "RANDOM", seed=1) as router:
        httpx.post(router.url + "/invocations", json=...)
"""

from __future__ import annotations

import http.client
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal
from urllib.parse import urlsplit

from semif_lib.contract import CLOSED_SESSION_HEADER, NEW_SESSION, NEW_SESSION_HEADER, SESSION_HEADER

Strategy = Literal["RANDOM", "LEAST_OUTSTANDING_REQUESTS"]
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "host", "content-length", "date", "server"}


class EndpointRouter:
    """Routes each request to one of `backends` (base URLs); thread-safe, one thread per request."""

    def __init__(self, backends: list[str], strategy: Strategy, seed: int = 0) -> None:
        self.backends = [urlsplit(url) for url in backends]
        self.strategy = strategy
        self.outstanding = [0] * len(backends)
        self.sessions: dict[str, int] = {}  # session id -> the instance that opened it
        self.routed: list[int] = []  # the instance each request went to, in order
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, name="endpoint-router", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "EndpointRouter":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def pick(self, session: str | None) -> int:
        """The instance for a request: its session's, else the strategy's; counted as outstanding until `done`."""
        with self._lock:
            if session is not None and session != NEW_SESSION and session in self.sessions:
                index = self.sessions[session]
            elif self.strategy == "RANDOM":
                index = self._random.randrange(len(self.backends))
            else:
                index = min(range(len(self.backends)), key=lambda i: self.outstanding[i])
            self.outstanding[index] += 1
            self.routed.append(index)
            return index

    def done(self, index: int, headers: dict[str, str]) -> None:
        """A response came back from `index`: learn a session it opened, forget one it closed."""
        with self._lock:
            self.outstanding[index] -= 1
            if (opened := headers.get(NEW_SESSION_HEADER.lower())) is not None:
                self.sessions[opened.split(";")[0].strip()] = index
            if (closed := headers.get(CLOSED_SESSION_HEADER.lower())) is not None:
                self.sessions.pop(closed.strip(), None)

    def forward(self, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        index = self.pick(headers.get(SESSION_HEADER.lower()))
        target = self.backends[index]
        answer: dict[str, str] = {}
        try:
            conn = http.client.HTTPConnection(target.hostname, target.port, timeout=120)
            conn.request(method, path, body=body or None, headers={k: v for k, v in headers.items() if k not in HOP_BY_HOP})
            resp = conn.getresponse()
            data = resp.read()
            answer = {k.lower(): v for k, v in resp.getheaders()}
            conn.close()
            return resp.status, answer, data
        finally:
            self.done(index, answer)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        router = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _relay(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                status, headers, data = router.forward(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                self.send_response(status)
                for key, value in headers.items():
                    if key not in HOP_BY_HOP:
                        self.send_header(key, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _relay

            def log_message(self, *args: object) -> None:  # quiet: the callers read `routed`
                pass

        return Handler
