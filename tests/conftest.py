"""Shared fixtures: the embedded model is loaded once per session (as llama.cpp's own server tests do)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"

# Paths that disagree by more than this are a bug; below it, quantized CPU noise (LLAMA_CPP_NOTES.md).
MAX_ABS_DIFF = 0.10
MEAN_ABS_DIFF = 0.03


def free_port() -> int:
    """A loopback port nobody listens on now (the servers under test bind it next)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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


def flatten_probabilities(response) -> dict[tuple[str, str], float]:
    """{(qid, option): p} over every answer of a response, for comparing paths."""
    out = {}
    for qid, answer in response.answers.items():
        for key, p in answer.probabilities.items():
            out[(qid, key)] = p
    return out


# ---------------------------------------------------------------- container images (issue: the containers, for real)
@pytest.fixture(scope="session")
def container_runtime():
    """The docker or podman CLI; tests that run images skip with one line where there is none."""
    from semif_lib.containers import find_container_runtime

    runtime = find_container_runtime()
    if runtime is None:
        pytest.skip("no docker or podman CLI answers `info` (CI installs podman with .ci/container_setup.sh)")

    def names() -> set[str]:
        return {n for n in runtime.run("ps", "-a", "--format", "{{.Names}}").stdout.split() if n.startswith("semif-")}

    before = names()
    yield runtime
    leaked = names() - before  # every container a test starts must be stopped and removed by it
    for name in leaked:
        runtime.run("rm", "-f", name, check=False)
    assert not leaked, f"tests left containers behind: {sorted(leaked)}"


@pytest.fixture(scope="session")
def replica_image(container_runtime, tmp_path_factory):
    """The DLC replica, built from this checkout on llama.cpp from container/build_libllama.sh (seconds once built)."""
    from semif_lib.containers import LLAMA_CPP_DIR, build_replica_image

    if not (LLAMA_CPP_DIR / "llama-server").is_file():
        pytest.skip(f"no llama-server in {LLAMA_CPP_DIR}: run container/build_libllama.sh (CI: .ci/container_setup.sh)")
    return build_replica_image(container_runtime, log_dir=tmp_path_factory.mktemp("replica-build"))


@pytest.fixture(scope="session")
def adapter_image(container_runtime, replica_image, tmp_path_factory):
    """container/Dockerfile, unchanged, FROM the replica through BASE_IMAGE (as CodeBuild passes the DLC's)."""
    from semif_lib.containers import build_adapter_image

    return build_adapter_image(container_runtime, replica_image, log_dir=tmp_path_factory.mktemp("adapter-build"))


@pytest.fixture(scope="session")
def packaged_model_dir(tmp_path_factory):
    """`workshop.package_model()`'s model.tar.gz, unpacked as SageMaker unpacks ModelDataUrl into /opt/ml/model."""
    from semif_lib.settings import Settings
    from semif_lib.workshop import extract_model_package, package_model

    root = tmp_path_factory.mktemp("packaged")
    info = package_model(settings=Settings(state_file=root / "state.json", target="local"), progress=False)
    return extract_model_package(info["tarball"], root / "opt-ml-model")
