"""The server harness (`semif_lib.processes`): start, wait for /ping, SIGTERM then SIGKILL, exit code, output.

Model-free: the server is a few lines of `python -c` (http.server), so every case takes about a second.
"""

from __future__ import annotations

import signal
import sys
import time

import pytest

from semif_lib.processes import ServerProcess, ServerStartError, ServerStartTimeout, is_answering, start_server

from support.servers import free_port

# A /ping server: prints its environment's GREETING, exits 0 on SIGTERM unless IGNORE_TERM is set.
SERVER = """
import http.server, os, signal, sys
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        code = 200 if self.path in ("/ping", "/health") else 404
        self.send_response(code); self.end_headers(); self.wfile.write(b"ok")
    def log_message(self, *args):
        pass
signal.signal(signal.SIGTERM, signal.SIG_IGN if os.environ.get("IGNORE_TERM") else (lambda *_: sys.exit(0)))
print("greeting:", os.environ.get("GREETING"), flush=True)
print("to stderr", file=sys.stderr, flush=True)
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""


def server_argv(port: int) -> list[str]:
    return [sys.executable, "-c", SERVER, str(port)]


def test_a_started_server_answers_then_exits_0_on_sigterm_with_its_output_kept():
    port = free_port()
    with start_server(server_argv(port), f"http://127.0.0.1:{port}", env={"GREETING": "hello", "PATH": ""}) as server:
        assert is_answering(server.url)
        assert server.is_running() and server.poll() is None
    assert server.exit_code == 0
    assert "greeting: hello" in server.output() and "to stderr" in server.output()
    assert not server.log_path.exists()  # a temporary log is read back and removed
    assert not is_answering(server.url)


def test_a_server_that_ignores_sigterm_is_killed_after_the_grace_period():
    port = free_port()
    server = start_server(server_argv(port), f"http://127.0.0.1:{port}", env={"IGNORE_TERM": "1"})
    started = time.monotonic()
    assert server.stop(grace_s=1) == -signal.SIGKILL
    assert 1 <= time.monotonic() - started < 10


def test_a_server_that_exits_before_answering_is_an_error_with_its_exit_code_and_output():
    with pytest.raises(ServerStartError) as info:
        start_server([sys.executable, "-c", "print('cannot start'); raise SystemExit(3)"], "http://127.0.0.1:9")
    assert info.value.exit_code == 3
    assert "cannot start" in info.value.output
    assert "exited with code 3" in str(info.value)
    assert not isinstance(info.value, TimeoutError)


def test_a_server_that_never_answers_times_out_and_is_stopped():
    port = free_port()
    with pytest.raises(ServerStartTimeout) as info:
        start_server([sys.executable, "-c", "import time; print('waiting', flush=True); time.sleep(60)"],
                     f"http://127.0.0.1:{port}", startup_timeout_s=1)
    assert isinstance(info.value, TimeoutError) and info.value.exit_code is None
    assert "waiting" in info.value.output


def test_a_given_log_is_appended_to_and_output_is_this_run_only(tmp_path):
    log = tmp_path / "logs" / "server.log"
    log.parent.mkdir()
    log.write_text("an earlier run\n")
    port = free_port()
    with start_server(server_argv(port), f"http://127.0.0.1:{port}", env={"GREETING": "again"}, log_path=log,
                      ping_path="/health", cwd=tmp_path) as server:
        pass
    assert "an earlier run" in log.read_text() and "greeting: again" in log.read_text()
    assert "an earlier run" not in server.output() and "greeting: again" in server.output()


def test_a_server_started_without_waiting_can_be_waited_for_again():
    """The workshop's progress bar waits in short steps: a timeout leaves the server running."""
    port = free_port()
    server = ServerProcess(server_argv(port), f"http://127.0.0.1:{port}/").start()
    with server:
        for _ in range(100):
            try:
                server.wait_until_ready(0.05)
                break
            except ServerStartTimeout:
                assert server.is_running()
        assert is_answering(server.url)
        server.send_signal(signal.SIGTERM)
        assert server.wait(10) == 0
    assert server.exit_code == 0


# A stand-in llama-server: `--version` prints a build, `--fail` exits 1, otherwise it serves /health on --port.
FAKE_LLAMA_SERVER = f"""#!{sys.executable}
import os, sys
if "--version" in sys.argv:
    print("version: 10435 (e1f2a3b)")
    raise SystemExit(0)
if "--fail" in sys.argv:
    print("error: cannot load the model", flush=True)
    raise SystemExit(1)
port = sys.argv[sys.argv.index("--port") + 1]
os.execv(sys.executable, [sys.executable, "-c", {SERVER!r}, port])
"""


def test_the_native_text_server_runs_through_the_harness(tmp_path):
    """`containers.textserver.run_text_server(kind="native")`: llama-server started, /health awaited, SIGTERM on exit."""
    from semif_lib.containers.runtime import ContainerError
    from semif_lib.containers.textserver import run_text_server, start_native_text_server

    binary = tmp_path / "llama-server"
    binary.write_text(FAKE_LLAMA_SERVER)
    binary.chmod(0o755)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    from semif_lib.settings import Settings

    machine = Settings(_env_file=None, llama_server=binary)  # SEMIF_LLAMA_SERVER, handed down
    with run_text_server(model, {}, free_port(), machine, kind="native", log_dir=tmp_path) as server:
        assert server.kind == "native-llama-server" and server.build == 10435
        assert is_answering(server.base_url, path="/health")
    assert not is_answering(server.base_url, path="/health")
    with pytest.raises(ContainerError, match="(?s)llama-server did not start .*exited with code 1.*cannot load the model"):
        start_native_text_server(model, {"SM_LLAMA_CPP_FAIL": "1"}, free_port(), tmp_path / "failing.log", binary=binary)
