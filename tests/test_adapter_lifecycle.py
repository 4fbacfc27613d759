"""The adapter's process lifecycle: SIGTERM drains, startup failures exit non-zero (the full queue: test_adapter_supervision.py)."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time

import httpx
import pytest

from support.paths import DATA
from support.servers import ADAPTER_COMMAND, SEMIF_SERVE, free_port, running_server, server_env


@pytest.mark.model
@pytest.mark.server
def test_sigterm_during_a_request_completes_it_and_exits_0():
    port = free_port()
    with (DATA / "examples.jsonl").open() as fh:
        request = json.loads(fh.readline())
    # A long state in fresh mode: every question re-reads ~1,500 tokens, so the request is still
    # being computed when the signal arrives (checked below), and the drain is really tested.
    request = {**request, "state": "\n".join([request["state"]] * 12)}
    with running_server(SEMIF_SERVE, server_env(port), port) as server:
        result: dict = {}

        def call() -> None:
            result["response"] = httpx.post(server.url + "/invocations?mode=fresh", json=request, timeout=300)
            result["answered"] = time.monotonic()

        caller = threading.Thread(target=call)
        caller.start()
        deadline = time.monotonic() + 30
        while httpx.get(server.url + "/ping", timeout=5).json()["pending"] < 1:
            assert time.monotonic() < deadline, "the request never reached the worker"
            time.sleep(0.01)
        signalled = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        caller.join(300)
        status = server.proc.wait(60)
        response = result["response"]
        assert response.status_code == 200, response.text
        assert set(response.json()["answers"]) == set(request["questions"])
        assert result["answered"] > signalled + 0.5, "the request finished before SIGTERM: the drain was not tested"
        assert status == 0, server.log()
        assert "Shutting down" in server.log()


def _run_until_exit(command: list[str], env: dict, timeout: float = 90) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:  # a hang is a failure, and the child is killed by run()
        raise AssertionError(f"server did not exit within {timeout} s: {exc.stderr}") from exc


@pytest.mark.server  # a server process that must exit at startup (no model is loaded)
def test_missing_model_is_a_clear_error_and_non_zero_exit(tmp_path):
    port = free_port()
    done = _run_until_exit(ADAPTER_COMMAND + ["--model", str(tmp_path / "nope.gguf")], server_env(port))
    assert done.returncode == 2
    assert "nope.gguf does not exist" in done.stderr and "SEMIF_MODEL_PATH" in done.stderr


@pytest.mark.server  # a server process that must exit at startup (no model is loaded)
def test_corrupt_model_found_in_model_dir_fails_at_startup(tmp_path):
    (tmp_path / "sub").mkdir()
    broken = tmp_path / "sub" / "broken.gguf"  # two levels under SEMIF_MODEL_DIR, as the DLC searches
    broken.write_bytes(b"GGUF" + b"\x00garbage" * 64)
    port = free_port()
    done = _run_until_exit(SEMIF_SERVE, server_env(port, SEMIF_MODEL_DIR=str(tmp_path)))
    assert done.returncode == 2, done.stderr
    assert "cannot load the model" in done.stderr and "broken.gguf" in done.stderr


