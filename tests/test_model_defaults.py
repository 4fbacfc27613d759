"""The model each target serves when none is named (`model.defaults`), and the one line every notebook prints about it
(`notebook.describe_model`): on aws the measured Qwen2.5-Coder-1.5B, elsewhere the embedded SmolLM2 (issue 45, item 2)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from semif_lib.model import package
from semif_lib.model.chunks import CHUNKED_MODELS
from semif_lib.model.defaults import AWS_MODEL, model_for, target_model
from semif_lib.notebook import describe_model
from semif_lib.registry import WorkshopState
from semif_lib.settings import load_settings

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    for key in ("SEMIF_MODEL_PATH", "SEMIF_TARGET", "SEMIF_MODEL_DIR"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("SEMIF_MODEL_DIR", str(tmp_path / "no-model-here"))
    return tmp_path


def test_the_aws_default_is_the_file_measured_here():
    """Qwen's own GGUF repository, and the digest and size of the 1.5B that results/eval/ measured (chunks.py)."""
    measured = CHUNKED_MODELS["qwen2.5-coder-1.5b"]
    assert AWS_MODEL.reference == "hf://Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert (AWS_MODEL.sha256, AWS_MODEL.size) == (measured.sha256, measured.size)
    report = json.loads((ROOT / "results" / "eval" / "comparison.json").read_text())
    assert any(row["model"]["id"] == AWS_MODEL.measured_as for row in report["models"])
    assert target_model("local") is None and target_model("container") is None


def test_aws_packages_the_default_and_a_named_model_wins(clean_env, monkeypatch):
    assert model_for(load_settings(target="aws")) == AWS_MODEL.reference
    assert model_for(load_settings(target="local")) is None and model_for(load_settings(target="container")) is None
    named = clean_env / "mine.gguf"
    named.write_bytes(b"GGUF")
    assert model_for(load_settings(target="aws", model_path=named)) == named
    monkeypatch.setenv("SEMIF_MODEL_DIR", str(clean_env))  # SageMaker's /opt/ml/model holding a GGUF: that one is served
    assert model_for(load_settings(target="aws")) is None


def test_packaging_on_aws_without_a_model_fetches_the_default(clean_env, monkeypatch):
    """Step 01 asks the hub for the default reference (the download itself is tests/test_model_hub.py's)."""
    asked = []

    def refuse(reference):
        asked.append(reference)
        raise RuntimeError("offline")

    monkeypatch.setattr(package, "download_hub_model", refuse)
    with pytest.raises(RuntimeError, match="offline"):
        package.resolve_model_files(None, load_settings(target="aws"))
    assert asked == [AWS_MODEL.reference]


def test_the_model_line_names_the_model_and_its_measured_quality(clean_env):
    line = describe_model(load_settings(target="aws"))
    assert line.startswith(f"model on target aws: {AWS_MODEL.measured_as} (hf://Qwen/") and "readout accuracy 0.58" in line
    assert "\n" not in line
    local = describe_model(load_settings(target="aws"), local_only=True)
    assert local.startswith("model in this kernel: SmolLM2-135M-Instruct.Q4_1 (embedded") and "0.28" in local
    packaged = {"model_package": {"sha256": "0" * 64, "gguf_name": "other.gguf"}}
    state = WorkshopState(path=clean_env / "state.json", run_id="t", values=packaged)
    assert describe_model(load_settings(target="aws"), state).startswith("model on target aws: other (packaged by 01")
    assert "not measured" in describe_model(load_settings(target="aws"), state)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_notebook_prints_its_model_line_under_its_target(path):
    """One call, in the cell that prints the target; no notebook types its model's quality itself."""
    code = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    lines = code[2].source.splitlines()
    target = next(i for i, line in enumerate(lines) if "notebook.show_target(" in line)
    assert lines[target + 1].startswith("notebook.show_model(settings"), f"{path.name}: show_model right after show_target"
    assert sum("show_model(" in c.source or "describe_measured_quality" in c.source for c in code) == 1


def test_the_default_models_budget_is_computed_from_its_measurements_and_quoted():
    """Same instance, same bill; notebook 05's calls come from the model's own measured run; docs/quality.md quotes it."""
    from semif_lib.notebook import budget

    figures = budget.estimate_model_budget()
    assert figures["instance"] == AWS_MODEL.instance and figures["run_usd"] == budget.estimate_run_cost()["total_usd"]
    assert set(figures["request_s"]) == set(budget.NOTEBOOK_05_QUESTIONS) and figures["prefill_tokens_per_s"] > 0
    assert len(figures["measured_s"]) == 3 and all(s > 0 for s in figures["measured_s"].values())
    assert figures["rates_command"].startswith("semif bench modes --states 1")
    assert AWS_MODEL.measured_as.lower()[:12] in figures["rates_command"].lower()
    assert budget.format_model_budget(figures) in (ROOT / "docs" / "quality.md").read_text()
