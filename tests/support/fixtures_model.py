"""The embedded model, loaded once per session (as llama.cpp's own server tests do), and the example requests.

`engine` is the one in-process `DecisionEngine` on the real GGUF that every module shares; a test that
needs other settings builds its own and says so with `@pytest.mark.model` (support/markers.py).
`family_engine` runs a test once per model family: SmolLM2 (`engine`) and Qwen2.5 0.5B (`qwen_engine`, its
GGUF assembled from PyPI by support/models.py, skipped with the one-line reason where it cannot be).
"""

from __future__ import annotations

import pytest

from support.models import qwen_gguf
from support.paths import DATA, ROOT

FAMILIES = ("smollm2", "qwen2.5")  # the model families `family_engine` runs a test on
_BASELINES: dict[tuple, dict] = {}  # the machine's baseline, per library it was measured on (`baseline_once`)


@pytest.fixture(scope="session")
def settings():
    from semif_lib.settings import Settings

    return Settings(n_ctx=4096, threads=2, cache_tokens=2048, model_dir=ROOT / "does-not-exist")


@pytest.fixture(scope="session")
def engine(settings):
    from semif_lib.decision.engine import DecisionEngine

    eng = DecisionEngine(settings)
    yield eng
    eng.close()


@pytest.fixture(scope="session")
def example_requests() -> list[dict]:
    from semif_lib.jsonlines import read_records

    return read_records(DATA / "examples.jsonl")


@pytest.fixture(scope="session")
def qwen_model_path():
    path, reason = qwen_gguf()
    if path is None:
        pytest.skip(reason)
    return path


@pytest.fixture(scope="session")
def qwen_engine(settings, qwen_model_path):
    from semif_lib.decision.engine import DecisionEngine

    eng = DecisionEngine(settings, model_path=qwen_model_path)
    yield eng
    eng.close()


@pytest.fixture(params=FAMILIES)
def family_engine(request):
    """The session engine of each model family in turn (both stay loaded: 0.1 + 0.5 GB of weights)."""
    return request.getfixturevalue("engine" if request.param == "smollm2" else "qwen_engine")


KEYED_API_KEY = "test-key"  # the key the session's keyed `semif serve` wants (`keyed_server`)


@pytest.fixture(scope="session")
def keyed_server():
    """One `semif serve` with `SEMIF_API_KEY` set, on the embedded model, for every module that talks to a keyed adapter
    (the HTTP wire, the SDKs): started once, stopped at the end of the session."""
    from support.servers import ADAPTER_COMMAND, free_port, running_server, server_env

    port = free_port()
    env = server_env(port, SEMIF_API_KEY=KEYED_API_KEY, SEMIF_ACCEPT_JSONLINES="true")  # JSON Lines read, as a transform job's
    with running_server(ADAPTER_COMMAND, env, port) as srv:
        yield srv


@pytest.fixture(autouse=True)
def baseline_once(request, monkeypatch):
    """In the model tier, each bench command's baseline (a subprocess that loads the embedded model: about 6 s) is
    measured once per session per library and handed to the next command as measured. A failed one is not kept;
    test_bench_conditions' own checks patch it themselves or change the key (the module they run)."""
    if request.node.get_closest_marker("model") is None:
        return
    import copy
    import os

    from semif_lib.measurement import conditions

    measure = conditions.measure_baseline

    def measure_once(threads, env=None, module=None):
        key = (threads, tuple(sorted((env or {}).items())), module, conditions.BASELINE_MODULE, os.environ.get("LLAMA_CPP_LIB_PATH"))
        if key not in _BASELINES:
            measured = measure(threads, env, module)
            if "error" in measured:
                return measured
            _BASELINES[key] = measured
        return copy.deepcopy(_BASELINES[key])

    monkeypatch.setattr(conditions, "measure_baseline", measure_once)
