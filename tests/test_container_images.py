"""The images, built and run as SageMaker runs them: `run IMAGE serve`, port 8080 (published on a loopback
port), the packaged model.tar.gz unpacked read-only at /opt/ml/model, SIGTERM then SIGKILL after 30 s.

The decision image is container/Dockerfile, unchanged, FROM the DLC replica (container/replica/); the
replica's text path is tested with the same tests as `semif serve-text` in tests/test_texttwin.py.
Everything here skips with one line where no container runtime or no llama.cpp build is present;
CI sets both up (.ci/container_setup.sh) and runs it all.
"""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from support.answers import MAX_ABS_DIFF, flatten_probabilities, flatten_wire_probabilities
from support.paths import DATA
from support.servers import free_port


@pytest.fixture(scope="module")
def decision_container(container_runtime, adapter_image, packaged_model_dir):
    from semif_lib.containers.runtime import run_container

    container = run_container(container_runtime, adapter_image, packaged_model_dir, free_port(),
                              {"SEMIF_THREADS": "2", "SEMIF_N_CTX": "4096", "SEMIF_CACHE_TOKENS": "2048", "SEMIF_ACCEPT_JSONLINES": "true"},
                              startup_timeout_s=120)
    yield container
    container.stop()


def test_the_binding_check_passes_inside(container_runtime, adapter_image):
    """The startup check on the image's own llama.cpp: build read from llama-server, verified binding, backends loaded."""
    from semif_lib.containers.images import LLAMA_CPP_BUILD
    from semif_lib.llamabuilds import binding_for_build

    done = container_runtime.run("run", "--rm", adapter_image, "check", check=False, timeout_s=120)
    assert done.returncode == 0, done.stderr
    assert "binding ok" in done.stderr and f"'build': {LLAMA_CPP_BUILD}" in done.stderr
    assert f"'binding': '{binding_for_build(LLAMA_CPP_BUILD)}'" in done.stderr
    assert "'devices': 1" in done.stderr and "'lib_dir': '/opt/llama.cpp/bin'" in done.stderr
    # nothing compiled and no second libllama: the binding is the DLC's library's
    done = container_runtime.run("run", "--rm", "--entrypoint", "sh", adapter_image, "-c",
                                 "find /opt/semif/venv -name 'libllama*'; command -v gcc cc cmake || true", check=False)
    assert done.stdout.strip() == "", done.stdout


def test_ping_and_execution_parameters(decision_container):
    ping = httpx.get(decision_container.base_url + "/ping", timeout=10)
    assert ping.status_code == 200 and ping.json()["status"] == "ok"
    params = httpx.get(decision_container.base_url + "/execution-parameters", timeout=10)
    assert params.status_code == 200
    assert params.json()["BatchStrategy"] == "MULTI_RECORD" and params.json()["MaxPayloadInMB"] <= 6


def test_invocations_equal_the_in_process_engine(decision_container, engine, example_requests):
    """JSON and JSON Lines through the image agree with the engine in this process (its own llama.cpp build)."""
    from semif_lib.decision.schema import parse_request

    url = decision_container.base_url + "/invocations"
    for request in example_requests:
        got = httpx.post(url, json=request, timeout=120)
        assert got.status_code == 200, got.text
        want = flatten_probabilities(engine.ask(parse_request(request)))
        have = flatten_wire_probabilities(got.json())
        assert have.keys() == want.keys()
        worst = max(abs(have[k] - want[k]) for k in want)
        assert worst <= MAX_ABS_DIFF, f"{request['id']}: max |dp| {worst:.3f} between the image and the in-process engine"
    body = "".join(json.dumps(r) + "\n" for r in example_requests).encode()
    lines = httpx.post(url, content=body, headers={"Content-Type": "application/jsonlines", "Accept": "application/jsonlines"},
                       timeout=300)
    assert lines.status_code == 200, lines.text
    records = [json.loads(line) for line in lines.text.splitlines() if line]
    assert [r["id"] for r in records] == [r["id"] for r in example_requests]


def test_a_zstd_body_is_decoded_inside_the_image(decision_container, example_requests):
    """typesafe-sdk zstd-compresses bodies of 1 KiB or more: the image's own Python has the decoder (container/requirements.txt)."""
    from semif_lib.serving.bodies import load_zstd

    zstd = load_zstd()
    request = dict(example_requests[0], state=example_requests[0]["state"] + " " + "Background, repeated for size. " * 60)
    body = json.dumps(request).encode()
    assert len(body) > 1024
    url = decision_container.base_url + "/invocations"
    plain = httpx.post(url, content=body, headers={"Content-Type": "application/json"}, timeout=120)
    packed = httpx.post(url, content=zstd.compress(body), headers={"Content-Type": "application/json", "Content-Encoding": "zstd"},
                        timeout=120)
    assert plain.status_code == packed.status_code == 200, packed.text
    have, want = flatten_wire_probabilities(packed.json()), flatten_wire_probabilities(plain.json())
    assert have.keys() == want.keys() and max(abs(have[k] - want[k]) for k in want) <= MAX_ABS_DIFF


def test_bad_request_is_a_4xx_naming_the_field(decision_container):
    bad = httpx.post(decision_container.base_url + "/invocations", json={"state": "s", "questions": {"q": {"type": "choice"}}}, timeout=30)
    assert 400 <= bad.status_code < 500 and bad.headers["content-type"].startswith("application/json")
    assert "questions" in json.dumps(bad.json())
    wrong_type = httpx.post(decision_container.base_url + "/invocations", content=b"<xml/>", headers={"Content-Type": "text/xml"},
                            timeout=30)
    assert wrong_type.status_code == 415 and wrong_type.json()


def test_stop_drains_the_request_in_flight_and_exits_0(container_runtime, adapter_image, packaged_model_dir):
    """`docker stop -t 30` (SIGTERM) while a long request is computed: it is answered, then the container exits 0."""
    from semif_lib.containers.runtime import run_container

    with (DATA / "examples.jsonl").open() as fh:
        request = json.loads(fh.readline())
    request = {**request, "state": "\n".join([request["state"]] * 6)}  # fresh mode on a long state: seconds of work
    container = run_container(container_runtime, adapter_image, packaged_model_dir, free_port(), {"SEMIF_THREADS": "2"})
    result: dict = {}

    def call() -> None:
        result["response"] = httpx.post(container.base_url + "/invocations?mode=fresh", json=request, timeout=300)
        result["answered"] = time.monotonic()

    caller = threading.Thread(target=call)
    caller.start()
    try:
        deadline = time.monotonic() + 30
        while httpx.get(container.base_url + "/ping", timeout=5).json()["pending"] < 1:
            assert time.monotonic() < deadline, "the request never reached the worker"
            time.sleep(0.01)
        stopping = time.monotonic()
        exit_code = container.stop(timeout_s=30, remove=False)
    finally:
        caller.join(300)
        logs = container.logs()
        container.stop(timeout_s=5)
    assert result["response"].status_code == 200, f"{result['response'].text}\n{logs}"
    assert set(result["response"].json()["answers"]) == set(request["questions"])
    assert result["answered"] > stopping, "the request finished before the stop: the drain was not tested"
    assert exit_code == 0, logs


def test_the_replica_finds_the_model_as_the_dlc_does(container_runtime, replica_image, packaged_model_dir, tmp_path):
    """The first *.gguf up to two levels under /opt/ml/model. With none, the DLC's llama.cpp (b1043x) does not
    fail: llama-server starts in router mode with no model, /ping answers 200 (the endpoint would go InService)
    and every /invocations is a 400. Worth knowing before a deployment: check /v1/models lists the model."""
    from semif_lib.containers.runtime import run_container

    nested = tmp_path / "model"
    (nested / "weights").mkdir(parents=True)
    gguf = next(packaged_model_dir.glob("*.gguf"))
    (nested / "weights" / gguf.name).hardlink_to(gguf)
    container = run_container(container_runtime, replica_image, nested, free_port(), {"SM_LLAMA_CPP_CTX_SIZE": "1024"})
    try:
        assert f"auto-detected GGUF model /opt/ml/model/weights/{gguf.name}" in container.logs()
        assert httpx.get(container.base_url + "/props", timeout=10).json()["default_generation_settings"]["n_ctx"] == 1024
    finally:
        assert container.stop() == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    container = run_container(container_runtime, replica_image, empty, free_port(), startup_timeout_s=30)
    try:
        assert "WARNING: no *.gguf found under /opt/ml/model" in container.logs()
        assert httpx.get(container.base_url + "/v1/models", timeout=10).json()["data"] == []
        chat = httpx.post(container.base_url + "/invocations", json={"messages": [{"role": "user", "content": "hi"}]}, timeout=30)
        assert chat.status_code == 400 and "model" in chat.json()["error"]["message"]
    finally:
        container.stop()


def test_a_container_that_cannot_start_is_removed(container_runtime, replica_image, packaged_model_dir):
    """`run -d` creates the container before starting it: a start failure must not leave it behind."""
    from semif_lib.containers.runtime import ContainerError, run_container

    with pytest.raises(ContainerError, match="failed"):
        run_container(container_runtime, replica_image, packaged_model_dir, free_port(), name="semif-cannot-start",
                      extra_args=["--entrypoint", "/no/such/entrypoint"])
    assert container_runtime.run("container", "inspect", "semif-cannot-start", check=False).returncode != 0


def test_dlc_check_reads_the_build_from_the_images_own_llama_server(container_runtime, replica_image, capsys):
    """`semif dlc check --image IMAGE --run`: the drift check's reading, on the replica of today's DLC (no AWS call)."""
    from semif_lib.cli import main
    from semif_lib.containers.images import LLAMA_CPP_BUILD
    from semif_lib.llamabuilds import binding_for_build

    assert main(["dlc", "check", "--image", replica_image, "--run"]) == 0
    out = capsys.readouterr().out
    assert f"build    b{LLAMA_CPP_BUILD}, read from its llama-server --version" in out
    assert f"binding  llama-cpp-python {binding_for_build(LLAMA_CPP_BUILD)}" in out
