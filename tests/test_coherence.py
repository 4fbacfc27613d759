"""`semif bench coherence`: a yes/no question asked as a noul and as a two-option choice, on the embedded model."""
from __future__ import annotations

import json

import pytest

from semif_lib.measurement.bench.coherence import RENDERINGS, format_coherence, run_coherence

from support.paths import ROOT


def test_every_rendering_is_asked_and_each_pair_compared(engine):
    state = "Customer: I was charged twice for my subscription this month and I want the extra charge refunded."
    questions = {"refund": {"type": "noul", "instructions": "Is the customer asking for a refund?"},
                 "angry": {"type": "noul", "criteria": {"true": "the customer is angry", "false": "the customer is calm"}}}
    summary = run_coherence(engine, [(state, questions, {"refund": True})], progress=False)
    assert summary["questions"] == 2 and summary["labeled"] == 1
    assert set(summary["mean_p_yes"]) == set(RENDERINGS) and all(0 < p < 1 for p in summary["mean_p_yes"].values())
    assert set(summary["gaps"]) == {"noul vs choice", "noul vs choice, swapped", "choice vs choice, swapped", "noul vs choice, both orders"}
    assert all(0 <= g["mean"] <= g["max"] <= 1 and 0 <= g["disagree"] <= 2 for g in summary["gaps"].values())
    assert summary["gaps"]["noul vs choice"]["max"] > 0  # two slot formats: the model reads them differently
    assert "| noul |" in format_coherence(summary)


@pytest.mark.parametrize("model", ["SmolLM2-135M-Instruct.Q4_1", "Qwen2.5-Coder-0.5B-Instruct-AWQ.Q4_K_M"])
def test_the_docs_quote_each_committed_coherence_file_as_the_benchmark_prints_it(model):
    doc = json.loads((ROOT / "results" / "bench" / f"coherence-{model}.json").read_text(encoding="utf-8"))
    assert format_coherence(doc) in (ROOT / "docs" / "quality.md").read_text(encoding="utf-8")
