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
