"""The embedded model, loaded once per session (as llama.cpp's own server tests do), and the example requests.

`engine` is the one in-process `DecisionEngine` on the real GGUF that every module shares; a test that
needs other settings builds its own and says so with `@pytest.mark.model` (support/markers.py).
"""

from __future__ import annotations

import pytest

from support.paths import DATA, ROOT


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
