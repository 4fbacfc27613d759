"""The helpers the notebooks call (semif_lib.notebook, semif_lib.measurement.plots), without a kernel or a model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

RESPONSE = {"model": "m", "answers": {
    "is_billing": {"type": "noul", "noul": 0.6, "x_probabilities": {"true": 0.6, "false": 0.4}, "x_option_mass": 0.2},
    "queue": {"type": "choice", "choice": "billing", "confidence": 0.5,
              "probabilities": {"billing": 0.5, "technical": 0.3, "shipping": 0.2}},
    "urgency": {"type": "score", "score": 1.2, "confidence": 0.6, "probabilities": {"0": 0.1, "1": 0.6, "2": 0.3}}},
    "usage": {"input_tokens": 10, "output_tokens": 0, "x_cached_tokens": 4},
    "x_timing": {"mode": "parallel", "prefill_s": 0.2, "branches_s": 0.1, "total_s": 0.3}}


def test_settings_are_anchored_at_the_repository_root(monkeypatch, tmp_path):
    from semif_lib import notebook

    monkeypatch.chdir(ROOT / "notebooks")
    monkeypatch.delenv("SEMIF_STATE_FILE", raising=False)
    monkeypatch.setenv("SEMIF_TARGET", "aws")
    settings = notebook.load_notebook_settings("local")
    assert settings.target == "local"  # the notebook's parameter wins over the environment
    assert notebook.find_repo_root() == ROOT
    assert settings.state_file == ROOT / ".semif" / "workshop_state.json"
    assert settings.results_dir == ROOT / "results"
    monkeypatch.setenv("SEMIF_STATE_FILE", str(tmp_path / "s.json"))
    assert notebook.load_notebook_settings("aws").state_file == tmp_path / "s.json"


def test_data_files_resolve_from_any_working_directory(monkeypatch, tmp_path):
    from semif_lib import notebook

    monkeypatch.chdir(tmp_path)
    examples = notebook.read_examples()
    assert examples[0]["id"] == "ticket-refund"
    row = notebook.load_workload_request(26, 3)
    assert len(row["questions"]) == 3 and len(row["state"]) > 3000


def test_form_round_trips_the_request_and_applies_edits():
    pytest.importorskip("ipywidgets")
    from semif_lib import notebook
    from semif_lib.decision.schema import parse_request

    request = notebook.read_examples()[0]
    form = notebook.DecisionForm(request)
    assert form.to_request() == request
    form.state.value = "Customer: my parcel never arrived."
    instructions, criteria = form.questions["queue"]
    criteria.value = "shipping: delivery problems\nbilling\n\n"
    form.questions["is_billing"][1].value = "true: about money\nfalse: anything else"
    edited = form.to_request()
    assert edited["state"] == "Customer: my parcel never arrived."
    assert edited["questions"]["queue"]["criteria"] == {"shipping": "delivery problems", "billing": None}
    assert edited["questions"]["is_billing"]["criteria"] == {"true": "about money", "false": "anything else"}
    assert edited["questions"]["urgency"]["criteria"] == request["questions"]["urgency"]["criteria"]
    parse_request(edited)  # still a valid request
    form.questions["is_billing"][1].value = "maybe: no"
    with pytest.raises(ValueError, match="is_billing"):
        form.to_request()


def test_form_button_scores_into_its_output():
    pytest.importorskip("ipywidgets")
    from semif_lib import notebook

    seen = []
    form = notebook.DecisionForm(notebook.read_examples()[0], score=lambda r: seen.append(r) or RESPONSE)
    form.button.click()
    assert seen and seen[0]["id"] == "ticket-refund"


def test_tables():
    from semif_lib import notebook

    table = notebook.tabulate_answers(RESPONSE)
    assert list(table.index) == ["is_billing", "queue", "urgency"]
    assert table.loc["queue", "answer"] == "billing" and table.loc["is_billing", "confidence"] == 0.6
    other = json.loads(json.dumps(RESPONSE))
    other["answers"]["queue"]["probabilities"] = {"billing": 0.2, "technical": 0.7, "shipping": 0.1}
    diff = notebook.compare_answers(RESPONSE, other)
    assert not diff.loc["queue", "same_argmax"] and diff.loc["queue", "max_abs_dp"] == pytest.approx(0.4)
    assert diff.loc["is_billing", "reference"] == "true" and diff.loc["is_billing", "max_abs_dp"] == 0.0  # a noul's x_probabilities
    other["answers"]["is_billing"]["x_probabilities"] = {"true": 0.3, "false": 0.7}
    flipped = notebook.compare_answers(RESPONSE, other).loc["is_billing"]
    assert (flipped["other"], flipped["same_argmax"], flipped["max_abs_dp"]) == ("false", False, pytest.approx(0.3))
    del other["answers"]["urgency"]
    with pytest.raises(ValueError, match="urgency"):  # a question left unanswered is not agreement
        notebook.compare_answers(RESPONSE, other)
    error_line = {"id": "b", "detail": {"error_type": "invalid_request", "message": "bad"}, "status": 400}
    records = notebook.tabulate_records([{"id": "a", **RESPONSE}, error_line])
    assert records.loc["a", "queue"] == "billing" and records.loc["b", "error"] == "bad"
    assert notebook.tabulate_records("s3://bucket/out.jsonl.out") == "s3://bucket/out.jsonl.out"


def test_plots_return_figures():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from semif_lib.measurement import plots

    fig = plots.plot_probabilities(RESPONSE)
    assert len([ax for ax in fig.axes if ax.get_visible()]) == 3
    fig2 = plots.plot_timings({"fresh": {**RESPONSE, "x_timing": {"prefill_s": 0, "total_s": 2.0}}, "cached": RESPONSE})
    assert fig2.axes[0].get_yticklabels()[0].get_text() == "fresh"
    plt.close("all")
    with pytest.raises(ValueError):
        plots.plot_probabilities({"answers": {}})


def test_build_context_is_complete():
    from semif_lib import notebook

    context = notebook.inspect_build_context()
    assert context["problems"] == [], context["checks"]
    assert "container/Dockerfile" in context["container_files"] and context["zip_bytes"] > 0


def test_stop_local_servers_keeps_the_other_values(tmp_path):
    import subprocess
    import sys

    from semif_lib import notebook
    from semif_lib.settings import Settings
    from semif_lib.workshop import load_state

    settings = Settings(target="local", state_file=tmp_path / "state.json", run_id="h3lp01")
    state = load_state(settings)
    state.set("model_package", {"sha256": "x"})
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    state.record("local_process", "decision-server", pid=proc.pid, url="http://127.0.0.1:1")
    assert notebook.stop_local_servers(settings, state) == [f"decision-server (pid {proc.pid})"]
    assert proc.wait(timeout=10) is not None
    again = load_state(settings)
    assert again.find("local_process") == [] and again.get("model_package") == {"sha256": "x"}
    assert notebook.stop_local_servers(settings, again) == []


def test_importing_the_helpers_stays_cheap():
    import subprocess
    import sys

    code = ("import sys, semif_lib.notebook, semif_lib.measurement.plots; "
            "print(sorted(m for m in ('pandas', 'matplotlib', 'ipywidgets', 'boto3', 'llama_cpp') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_build_context_check_finds_a_copy_source_missing_from_the_zip(tmp_path):
    """CodeBuild gets only the zip: a file the Dockerfile COPYs but the zip lacks is named before any build."""
    import shutil

    from semif_lib.notebook import inspect_build_context

    root = Path(__file__).resolve().parents[1]
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(root / name, tmp_path / name)
    shutil.copytree(root / "semif_lib", tmp_path / "semif_lib")
    shutil.copytree(root / "container", tmp_path / "container")
    assert inspect_build_context(tmp_path)["problems"] == []
    (tmp_path / "container" / "install_adapter.sh").unlink()
    report = inspect_build_context(tmp_path)
    assert "not in the zip: container/install_adapter.sh" in report["problems"]
