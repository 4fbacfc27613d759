"""Shared fixtures: the embedded model is loaded once per session (as llama.cpp's own server tests do)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"

# Paths that disagree by more than this are a bug; below it, quantized CPU noise (LLAMA_CPP_NOTES.md).
MAX_ABS_DIFF = 0.10
MEAN_ABS_DIFF = 0.03


@pytest.fixture(scope="session")
def settings():
    from semif_lib.settings import Settings

    return Settings(n_ctx=4096, threads=2, cache_tokens=2048, model_dir=ROOT / "does-not-exist")


@pytest.fixture(scope="session")
def engine(settings):
    from semif_lib.engine import DecisionEngine

    eng = DecisionEngine(settings)
    yield eng
    eng.close()


@pytest.fixture(scope="session")
def example_requests() -> list[dict]:
    with (DATA / "examples.jsonl").open() as fh:
        return [json.loads(line) for line in fh if line.strip()]


def flatten_probabilities(response) -> dict[tuple[str, str], float]:
    """{(qid, option): p} over every answer of a response, for comparing paths."""
    out = {}
    for qid, answer in response.answers.items():
        for key, p in answer.probabilities.items():
            out[(qid, key)] = p
    return out
