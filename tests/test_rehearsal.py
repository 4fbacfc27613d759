"""An event team's rehearsal (`semif workshop rehearse`) on moto: the results file's shape, and the budget preferring it.

moto starts every endpoint at once and runs no build, so nothing here measures AWS's minutes: the walk's steps run
in-process on moto (as tests/test_workshop.py runs them) in place of the notebooks, and the test checks what the
rehearsal records and bills from them, and that `budget` states the file's minutes and bill once it exists.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def _walk_on_moto(settings, gguf, tmp_path):
    """Stands in for running each notebook with nbclient: the workshop calls the notebook makes, on moto."""
    from semif_lib import workshop
    from semif_lib.workshop import load_state

    def run(path: Path, env: dict[str, str]) -> None:
        run_settings = settings.model_copy(update={"state_file": Path(env["SEMIF_STATE_FILE"])})
        assert env["SEMIF_TARGET"] == "aws"
        state = load_state(run_settings)
        name = path.name[:2]
        if name == "01":
            workshop.package_model(gguf, settings=run_settings, state=state, progress=False)
        elif name == "02":
            workshop.deploy_text_model(settings=run_settings, state=state)
        elif name == "03":
            workshop.build_adapter_image(settings=run_settings, state=state, log=lambda _: None)
        elif name == "04":
            workshop.deploy_decision_model(settings=run_settings, state=state)
            requests = tmp_path / "requests.jsonl"
            requests.write_text('{"id": "a", "state": "x", "questions": {"q": {"type": "noul", "instructions": "y?"}}}\n')
            workshop.score_jsonlines(requests, settings=run_settings, state=state, wait=False)
        elif name == "99":
            assert not workshop.cleanup(settings=run_settings, state=state).failed

    return run


def test_the_rehearsal_records_minutes_resources_and_billed_hours(aws, aws_settings, fake_gguf, tmp_path):
    from semif_lib.notebook import rehearsal

    results = rehearsal.run_rehearsal(aws_settings, run=_walk_on_moto(aws_settings, fake_gguf, tmp_path), progress=False)
    assert results["command"] == "semif workshop rehearse" and results["region"] == aws_settings.aws_region
    assert list(results["minutes"]) == list(rehearsal.REHEARSAL_ORDER) and all(m >= 0 for m in results["minutes"].values())
    kinds = [r["kind"] for r in results["resources"]]
    assert kinds.count("sagemaker_endpoint") == 2 and {"transform_job", "codebuild_project", "s3_object"} <= set(kinds)
    billed = results["billed"]
    assert sorted(billed["endpoints"]) == ["semif-decision-t3st01", "semif-text-t3st01"]
    assert 0 <= billed["hours"]["endpoint"] < 0.5  # two endpoints, seconds apart on moto
    assert all(billed["hours"][item] is None or billed["hours"][item] >= 0 for item in ("transform", "codebuild"))
    written = rehearsal.write_rehearsal(results, tmp_path / "rehearsal.json")
    assert rehearsal.read_rehearsal(written) == json.loads(json.dumps(results))


def test_the_budget_prefers_a_rehearsal_over_its_estimates(monkeypatch, tmp_path):
    """With no file the notebooks state the estimates; with one, its minutes (rounded up) and its billed hours, marked
    as rehearsed, in the clock line, the AWS run's minutes and the bill."""
    from semif_lib.notebook import budget, rehearsal

    path = tmp_path / "rehearsal.json"
    monkeypatch.setattr(budget, "rehearsal_path", lambda: path)
    estimated = budget.estimate_run_cost()
    assert budget.aws_minutes("02") == (budget.CLOCKS["02"].aws_min, False) and not estimated["measured"]
    assert "(rehearsed)" not in budget.format_clock("02")
    minutes = {"00": 0.8, "01": 1.5, "02": 7.2, "03": 13.9, "04": 16.1, "05": 2.4, "99": 2.2}
    rehearsal.write_rehearsal({"minutes": minutes, "billed": {"hours": {"endpoint": 1.1, "transform": 0.1, "codebuild": None}}}, path)
    assert budget.aws_minutes("02") == (8, True) and budget.aws_minutes("06") == (budget.CLOCKS["06"].aws_min, False)
    assert "8 min with the aws target (rehearsed)" in budget.format_clock("02")
    assert budget.aws_run_minutes() == 1 + 2 + 8 + 14 + 17 + 3 + 3
    measured = budget.estimate_run_cost()
    rows = {row["what"]: row for row in measured["rows"]}
    assert measured["measured"] and rows["both endpoints, rehearsed"]["quantity"] == 1.1
    assert rows["transform job, 04, rehearsed"]["quantity"] == 0.1
    assert rows["image build, 03"]["quantity"] == budget.BUILD_MIN  # not timed by AWS: the estimate stays, unmarked


def test_the_rehearse_command_asks_before_it_creates_anything(capsys):
    from semif_lib.cli import main

    assert main(["workshop", "rehearse"]) == 2
    assert "--yes" in capsys.readouterr().out


@pytest.mark.parametrize("page", ["README.md", "docs/aws.md"])
def test_the_docs_say_the_aws_figures_are_estimates_until_a_rehearsal(page):
    from support.paths import ROOT

    text = (ROOT / page).read_text(encoding="utf-8")
    assert "semif workshop rehearse" in text and "estimates until" in text
