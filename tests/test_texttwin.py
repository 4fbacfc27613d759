"""The text path driven with the openai SDK: the twin (`semif serve-text`) as a real process and the DLC replica
image, with the same tests; plus the twin's flag mapping."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from typing import Iterator

import httpx
import pytest

from support.paths import ROOT
from support.servers import free_port, running_server, server_env

API_KEY = "twin-secret"
ALIAS = "smollm2-twin"
MESSAGES = [{"role": "user", "content": "Name one colour."}]


SM_ENV = dict(SM_LLAMA_CPP_CTX_SIZE="2048", SM_LLAMA_CPP_ALIAS=ALIAS, SM_LLAMA_CPP_API_KEY=API_KEY, SM_LLAMA_CPP_SEED="7",
              SM_LLAMA_CPP_PARALLEL="2", SM_LLAMA_CPP_JINJA="true", SM_LLAMA_CPP_MLOCK="false")


@dataclass
class TextEndpoint:
    url: str
    kind: str


@pytest.fixture(scope="module", params=[pytest.param("twin", marks=[pytest.mark.model, pytest.mark.server]),
                                        pytest.param("dlc-replica", marks=[pytest.mark.model, pytest.mark.container])])
def twin(request) -> Iterator[TextEndpoint]:
    """The text path, twice: `semif serve-text` as a process, and the DLC replica image (llama-server behind
    nginx) run as SageMaker runs it, both configured by the same SM_LLAMA_CPP_* variables."""
    port = free_port()
    if request.param == "twin":
        command = [sys.executable, "-m", "semif_lib.serving.texttwin", "serve-text", "--port", str(port)]
        with running_server(command, server_env(port, **SM_ENV), port) as server:
            yield TextEndpoint(server.url, "twin")
        return
    from semif_lib.containers.runtime import run_container

    runtime = request.getfixturevalue("container_runtime")
    image = request.getfixturevalue("replica_image")
    container = run_container(runtime, image, request.getfixturevalue("packaged_model_dir"), port, {**SM_ENV, "SM_LLAMA_CPP_THREADS": "2"})
    try:
        yield TextEndpoint(container.base_url, "dlc-replica")
    finally:
        container.stop()


@pytest.fixture(scope="module")
def openai_client(twin):
    from openai import OpenAI

    client = OpenAI(base_url=twin.url + "/v1", api_key=API_KEY, timeout=120, max_retries=0)
    yield client
    client.close()


def test_ping_and_models(twin, openai_client):
    assert httpx.get(twin.url + "/ping", timeout=10).json() == {"status": "ok"}
    assert [m.id for m in openai_client.models.list().data] == [ALIAS]  # SM_LLAMA_CPP_ALIAS -> --alias


def test_sm_settings_reach_llama_server(twin):
    """On the replica, SM_LLAMA_CPP_* became llama-server flags: the context and slot count it reports."""
    if twin.kind != "dlc-replica":
        pytest.skip("llama-cpp-python's server has no /props (its settings are checked in test_flags_map_onto_llama_cpp_python_settings)")
    props = httpx.get(twin.url + "/props", headers={"Authorization": f"Bearer {API_KEY}"}, timeout=10).json()
    # --ctx-size is the whole KV cache; with an explicit --parallel 2 (no unified KV) each slot gets half
    assert props["total_slots"] == 2 and props["default_generation_settings"]["n_ctx"] * 2 == 2048


def test_chat_completion_plain(openai_client):
    out = openai_client.chat.completions.create(model=ALIAS, messages=MESSAGES, max_tokens=8, temperature=0)
    assert out.choices[0].message.role == "assistant"
    assert out.choices[0].message.content.strip()
    assert out.usage.completion_tokens <= 8 and out.usage.prompt_tokens > 0


def test_chat_completion_streaming(openai_client):
    stream = openai_client.chat.completions.create(model=ALIAS, messages=MESSAGES, max_tokens=8, temperature=0, stream=True)
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.strip()
    assert chunks[-1].choices[0].finish_reason in ("length", "stop")
    plain = openai_client.chat.completions.create(model=ALIAS, messages=MESSAGES, max_tokens=8, temperature=0)
    assert plain.choices[0].message.content == text  # greedy: streaming and plain agree


def test_invocations_is_chat_completions(twin, openai_client):
    """SageMaker's /invocations takes the same body, plain and streaming (the SDK's client posts it)."""
    auth = {"Authorization": f"Bearer {API_KEY}"}
    body = {"messages": MESSAGES, "max_tokens": 8, "temperature": 0}
    plain = httpx.post(twin.url + "/invocations", json=body, headers=auth, timeout=120)
    assert plain.status_code == 200, plain.text
    reference = openai_client.chat.completions.create(model=ALIAS, messages=MESSAGES, max_tokens=8, temperature=0)
    assert plain.json()["choices"][0]["message"]["content"] == reference.choices[0].message.content

    events = []
    with httpx.stream("POST", twin.url + "/invocations", json={**body, "stream": True}, headers=auth, timeout=120) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if line.startswith("data: "):
                events.append(line[len("data: "):])
    assert events[-1] == "[DONE]"
    streamed = "".join(json.loads(e)["choices"][0]["delta"].get("content") or "" for e in events[:-1])
    assert streamed == reference.choices[0].message.content


def test_api_key_from_sm_environment(twin):
    from openai import AuthenticationError, OpenAI

    with OpenAI(base_url=twin.url + "/v1", api_key="wrong", max_retries=0, timeout=30) as bad:
        with pytest.raises(AuthenticationError):
            bad.chat.completions.create(model=ALIAS, messages=MESSAGES, max_tokens=2)
    assert httpx.post(twin.url + "/invocations", json={"messages": MESSAGES}, timeout=30).status_code == 401
    assert httpx.get(twin.url + "/ping", timeout=10).status_code == 200  # health needs no key, as on the DLC


# ----------------------------------------------------------------- configuration, no server
def test_flags_map_onto_llama_cpp_python_settings():
    from semif_lib.serving.texttwin import map_flags

    model, server, ignored = map_flags(["--ctx-size", "8192", "--n-gpu-layers", "999", "--flash-attn", "on", "--jinja",
                                        "--cache-type-k", "q8_0", "--load-mode", "none", "--api-key", "k", "--parallel", "4",
                                        "--hf-repo", "x/y", "--lazy-mode", "off"])
    assert model == {"n_ctx": 8192, "n_gpu_layers": 999, "flash_attn": True, "type_k": 8, "use_mmap": False, "use_mlock": False}
    assert server == {"api_key": "k"}
    assert ignored == ["--parallel 4", "--hf-repo x/y", "--lazy-mode off"]
    assert map_flags(["--load-mode", "mmap+mlock"])[0] == {"use_mmap": True, "use_mlock": True}
    with pytest.raises(ValueError, match="ctx-size"):
        map_flags(["--ctx-size", "big"])
    with pytest.raises(ValueError, match="--load-mode 'fast': unknown load mode"):
        map_flags(["--load-mode", "fast"])


@pytest.mark.parametrize("flag", ["--mlock", "--no-mmap", "--mmap", "--direct-io"])
def test_flags_todays_dlc_refuses_are_refused_with_its_reason(flag):
    """llama.cpp v0.4.1 (the DLC since 2026-09-25) removed them: the twin refuses what the DLC's llama-server refuses."""
    from semif_lib.serving.texttwin import map_flags

    with pytest.raises(ValueError, match=rf"^{flag} is removed upstream in llama.cpp v0.4.1.*Use --load-mode instead"):
        map_flags(["--ctx-size", "1024", flag])


def test_config_precedence_and_dlc_model_discovery(tmp_path):
    from semif_lib.llama_flags import build_sm_env
    from semif_lib.serving.cli import TEXT_PORT
    from semif_lib.serving.texttwin import build_text_config
    from semif_lib.settings import Settings

    nested = tmp_path / "model" / "inner"
    nested.mkdir(parents=True)
    gguf = nested / "tiny.gguf"
    gguf.write_bytes(b"GGUF")  # discovery only; nothing is loaded here
    settings = Settings(threads=3, n_ctx=8192, model_dir=ROOT / "does-not-exist")
    env = build_sm_env({"model_dir": str(tmp_path / "model"), "ctx_size": 1024, "threads": 2})
    config = build_text_config(settings, env)
    assert config.model_path == gguf and config.port == TEXT_PORT
    assert config.model["n_ctx"] == 1024 and config.model["n_threads"] == 2 and config.model["n_threads_batch"] == 3
    assert config.model["model_alias"] == "tiny"
    explicit = build_text_config(settings, {**env, "SM_LLAMA_CPP_PORT": "9000"}, n_ctx=512, threads=1, port=None)
    assert (explicit.model["n_ctx"], explicit.model["n_threads"], explicit.port) == (512, 1, 9000)


def _serve_text_exits(env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "semif_lib.cli", "serve-text"], env=env, capture_output=True, text=True, timeout=90)


@pytest.mark.server  # `semif serve-text` processes that must exit at startup (no model is loaded)
def test_bad_settings_and_missing_model_exit_non_zero(tmp_path):
    port = free_port()
    bad = _serve_text_exits(server_env(port, SM_LLAMA_CPP_CTX_SIZE="lots"))
    assert bad.returncode == 2 and "--ctx-size 'lots'" in bad.stderr
    removed = _serve_text_exits(server_env(port, SM_LLAMA_CPP_MLOCK="true"))
    assert removed.returncode == 2 and "--mlock is removed upstream" in removed.stderr and "SM_LLAMA_CPP_LOAD_MODE" in removed.stderr
    missing = _serve_text_exits(server_env(port, SM_LLAMA_CPP_MODEL=str(tmp_path / "gone.gguf")))
    assert missing.returncode == 2 and "gone.gguf does not exist" in missing.stderr
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\x00" * 64)
    corrupt = _serve_text_exits(server_env(port, SM_LLAMA_CPP_MODEL=str(broken)))
    assert corrupt.returncode == 2 and "could not load" in corrupt.stderr and "broken.gguf" in corrupt.stderr
