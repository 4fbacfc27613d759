"""A stand-in for the local adapter and the text twin over HTTP, without a model: it records every POST and answers as they do.

`running_stub_adapter()` serves on a free loopback port and yields the running `StubAdapter`: its `url`,
and `seen`, every request as (path with query, Content-Type, body) in order. A JSON body gets
`{"answers": {}}`, a JSON Lines body one `{"id", "answers": {}}` line per request line, and a request
that accepts `text/event-stream` two server-sent chat deltas, "he" and "llo", then `[DONE]` (with
`streams=False` it gets the JSON answer instead, as a server that does not stream does). Standard library
only, so a kernel or a subprocess that puts `tests/` on `sys.path` can serve it too.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["StubAdapter", "running_stub_adapter"]

STREAM = b"".join(b"data: " + json.dumps({"choices": [{"delta": {"content": p}}]}).encode() + b"\n\n" for p in ("he", "llo")) \
    + b"data: [DONE]\n\n"


@dataclass
class StubAdapter:
    url: str
    streams: bool = True
    seen: list[tuple[str, str, bytes]] = field(default_factory=list)

    def answer(self, path: str, content_type: str, accept: str, body: bytes) -> tuple[bytes, str]:
        """Record one POST; (response body, its Content-Type)."""
        self.seen.append((path, content_type, body))
        if self.streams and accept == "text/event-stream":
            return STREAM, "text/event-stream"
        if content_type == "application/jsonlines":
            lines = [json.dumps({"id": json.loads(line)["id"], "answers": {}}).encode() + b"\n" for line in body.splitlines()]
            return b"".join(lines), "application/jsonlines"
        return b'{"answers": {}}', "application/json"


@contextmanager
def running_stub_adapter(streams: bool = True) -> Iterator[StubAdapter]:
    """The stand-in on a free loopback port for the `with` block; stopped on the way out."""
    stub: StubAdapter

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            out, kind = stub.answer(self.path, self.headers.get("Content-Type", ""), self.headers.get("Accept", ""), body)
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    stub = StubAdapter(f"http://127.0.0.1:{server.server_address[1]}", streams)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
