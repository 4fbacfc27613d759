"""The test tiers: every test gets markers from what it uses, so a tier is one `-m` expression.

    model      runs the real embedded GGUF: in this process, or in a server or container it starts
    server     starts a server process (`semif serve`, `semif serve-text`, llama-server, JupyterLab)
    container  needs docker or podman: builds or runs the images
    browser    drives chromium through Selenium
    notebook   executes notebooks in a Jupyter kernel
    aws        calls AWS APIs, on moto
    fast       set here on every test with none of model, container, browser: the model-free tier

Where a marker comes from, in order:

1. The test's own marks: `pytestmark` in a module whose every test needs something, a decorator on
   one test that builds it itself (`@pytest.mark.model` on a test that calls `DecisionEngine(...)`
   or `main(["score", ...])`), or `pytest.param(..., marks=...)` on a parametrized fixture.
2. The shared fixtures it uses, directly or through another fixture (`FIXTURE_MARKERS`): a test that
   asks for `engine` is a model test, one that asks for `container_runtime` (or an image built with
   it) a container test, one that asks for `aws` a moto test.
3. `MODULE_MARKERS`, for a module that cannot carry its own `pytestmark` yet.
"""

from __future__ import annotations

import pytest

TIERS = ("model", "server", "container", "browser", "notebook", "aws")  # registered in pyproject.toml, with `fast`
NOT_FAST = {"model", "container", "browser"}

# The shared fixtures (tests/support/fixtures_*.py) and what a test that uses one needs.
FIXTURE_MARKERS: dict[str, tuple[str, ...]] = {
    "engine": ("model",),                # the session's DecisionEngine on the embedded GGUF
    "keyed_server": ("model", "server"),  # the session's `semif serve` with SEMIF_API_KEY set
    "family_engine": ("model",),         # engine, then qwen_engine (the second model family)
    "qwen_engine": ("model",),           # the session's DecisionEngine on the Qwen2.5 0.5B GGUF
    "qwen_model_path": ("model",),       # that GGUF, assembled from its PyPI chunk packages
    "opt_ml_model": ("model",),          # the embedded GGUF as /opt/ml/model: its users serve it
    "packaged_model_dir": ("model",),    # the embedded GGUF's model.tar.gz, unpacked: its users serve it
    "container_runtime": ("container",),  # and so replica_image, adapter_image
    "aws_credentials": ("aws",),         # and so aws, state
}

# Modules that build what they use themselves and carry no `pytestmark` yet (file name -> markers).
MODULE_MARKERS: dict[str, tuple[str, ...]] = {}


def markers_for(item: pytest.Item) -> set[str]:
    """The tier markers `item` gets from its own marks, its fixtures and its module."""
    found = {mark.name for mark in item.iter_markers() if mark.name in TIERS}
    for name in getattr(item, "fixturenames", ()):
        found.update(FIXTURE_MARKERS.get(name, ()))
    found.update(MODULE_MARKERS.get(item.path.name, ()))
    if not found & NOT_FAST:
        found.add("fast")
    return found


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects anything
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        own = {mark.name for mark in item.iter_markers()}
        for name in sorted(markers_for(item) - own):
            item.add_marker(name)
