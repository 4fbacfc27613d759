"""`semif eval` end to end on a small labeled subset with the real embedded model, and the report logic without one."""

import json
from pathlib import Path

import numpy as np
import pytest

from semif_lib.cli import main
from semif_lib.errors import InvalidRequestError
from semif_lib.measurement.quality.calibration import Decision
from semif_lib.measurement.quality.evaluate import evaluate_decisions, load_decisions
from semif_lib.measurement.quality.labeled import read_labeled
from semif_lib.measurement.quality.report import format_report
from semif_lib.measurement.quality.scoring import rotate_options

from support.paths import DATA, ROOT

LABELED = DATA / "labeled"


def test_read_labeled_checks_every_label(tmp_path):
    items = read_labeled(sorted(LABELED.glob("*.jsonl")))
    assert sum(len(it.labels) for it in items) == 174
    bad = tmp_path / "bad.jsonl"
    line = json.loads((LABELED / "routing.jsonl").read_text().splitlines()[0])
    line["labels"] = {"queue": "no-such-queue"}
    bad.write_text(json.dumps(line) + "\n")
    with pytest.raises(InvalidRequestError, match="bad.jsonl:1"):
        read_labeled([bad])


def test_sample_keeps_each_workloads_label_shares_and_the_input_order():
    from collections import Counter

    from semif_lib.measurement.quality.labeled import stratified_subset

    items = read_labeled(sorted(LABELED.glob("*.jsonl")))
    sub = stratified_subset(items, 12, seed=0)
    assert Counter(it.task for it in sub) == {"code_search": 12, "routing": 12, "severity": 12, "tools": 12, "policy": 8}
    by_label = Counter((it.task, json.dumps(it.labels)) for it in sub)
    assert {n for (task, _), n in by_label.items() if task == "routing"} == {2}  # 7 of each queue -> 2 of each
    assert {n for (task, _), n in by_label.items() if task == "severity"} == {3}  # 8/7/8/7 per level -> 3 each
    assert sorted(by_label[k] for k in by_label if k[0] == "tools") == [1, 1, 2, 2, 2, 2, 2]
    order = [items.index(it) for it in sub]
    assert order == sorted(order)
    assert [it.id for it in stratified_subset(items, 12, seed=0)] == [it.id for it in sub]
    assert [it.id for it in stratified_subset(items, 12, seed=1)] != [it.id for it in sub]
    assert stratified_subset(items, 50) == items
    with pytest.raises(InvalidRequestError, match="at least 1 line per workload"):
        stratified_subset(items, 0)


def test_first_lines_that_miss_answers_are_named_and_a_stratified_sample_is_not():
    """The labeled files are grouped by answer: `--limit 10` of tools holds 2 of its 7 tools (a debiased accuracy of
    0.00 there measured that mix, not the model), and the warning says so and points at --sample."""
    from semif_lib.measurement.quality.labeled import describe_missing_labels, read_labeled_limited, stratified_subset

    inputs = [LABELED / "tools.jsonl", LABELED / "policy.jsonl"]
    full = read_labeled(inputs)
    kept, warning = read_labeled_limited(inputs, 10)
    assert [item.id for item in kept] == [item.id for item in read_labeled(inputs, limit=10)]
    assert warning == describe_missing_labels(kept, full) and read_labeled_limited(inputs, None)[1] is None
    assert warning is not None and "tools 2 of 7" in warning and "--sample N" in warning and "policy" not in warning
    assert describe_missing_labels(stratified_subset(full, 10), full) is None
    assert describe_missing_labels(full, full) is None


def test_comparison_reads_each_report_and_says_what_to_expect(tmp_path, capsys):
    """`semif eval-compare` on the committed SmolLM2 report, twice under two labels; the line notebook 00 prints."""
    from semif_lib.measurement.quality.comparison import describe_measured_quality

    report = ROOT / "results" / "eval" / "report.json"
    out_json, out_md = tmp_path / "comparison.json", tmp_path / "comparison.md"
    assert main(["eval-compare", f"a={report}", f"b={report}", "--output", str(out_json), "--markdown", str(out_md)]) == 0
    comparison = json.loads(out_json.read_text())
    a, b = comparison["models"]
    assert a["label"] == "a" and b["label"] == "b" and a["decisions"] == 174
    assert a["accuracy"]["value"] == pytest.approx(json.loads(report.read_text())["overall"]["raw"]["accuracy"])
    lo, hi = a["json_generation"]["ci95"]
    assert lo <= a["json_generation"]["accuracy"] <= hi and a["rotation"]["orders"] == 3
    text = out_md.read_text()
    assert capsys.readouterr().out.startswith(text)
    stored = json.loads(report.read_text())  # the table and the line show the report's own numbers, rounded as printed
    acc, (lo, hi) = stored["overall"]["raw"]["accuracy"], stored["overall"]["raw"]["ci95"]["accuracy"]
    policy = stored["tasks"]["policy"]["raw"]["accuracy"]
    assert f"| a | 135 / 174 | 0.28 | {acc:.2f} [{lo:.2f}, {hi:.2f}] |" in text
    assert f"| policy | {policy:.2f} | 0.00 | {policy:.2f} | 0.00 |" in text
    line = describe_measured_quality(a["model"]["id"], out_json)
    assert line.startswith(f"SmolLM2-135M-Instruct.Q4_1: readout accuracy {acc:.2f} [95% CI {lo:.2f}-{hi:.2f}] on 174")
    assert "(chance 0.28)" in line
    assert "not measured" in describe_measured_quality("other-model", out_json)


def test_committed_comparison_is_its_command_on_the_committed_reports():
    """results/eval/comparison.json and .md are `semif eval-compare` on the committed reports, and docs/quality.md quotes the table."""
    from semif_lib.measurement.quality.comparison import compare_reports, format_comparison

    committed = (ROOT / "results" / "eval" / "comparison.json").read_text()
    comparison = json.loads(committed)
    again = compare_reports([(m["label"], ROOT / m["report"]) for m in comparison["models"]])
    for row in again["models"]:
        row["report"] = str(Path(row["report"]).relative_to(ROOT))
    assert json.dumps({**again, "command": comparison["command"]}, indent=2) + "\n" == committed
    markdown = (ROOT / "results" / "eval" / "comparison.md").read_text()
    assert markdown == format_comparison(comparison)
    assert markdown.split("\n\n")[0] in (ROOT / "docs" / "quality.md").read_text()
    assert {m["model"]["id"] for m in comparison["models"]} >= {"SmolLM2-135M-Instruct.Q4_1", "Qwen2.5-Coder-0.5B-Instruct-AWQ.Q4_K_M"}


def test_rotate_options_keeps_every_option():
    assert list(rotate_options({"a": 1, "b": 2, "c": 3}, 1)) == ["b", "c", "a"]
    assert rotate_options({"a": 1, "b": 2}, 2) == {"a": 1, "b": 2}


def test_report_without_a_model_has_every_variant():
    rng = np.random.default_rng(0)
    rows = []
    for i in range(40):
        z = rng.normal(0, 2, 3)
        rows.append(Decision(id=f"r{i}", group_id=f"s{i // 2}", task="code_search" if i % 2 else "routing", qid="q", kind="choice",
                             keys=["a", "b", "c"], label=int(rng.integers(0, 3)), logits=z, option_mass=0.5, question_hash="h"))
    permuted = {(d.id, d.qid): [d.probabilities, d.probabilities[::-1].copy()] for d in rows}
    report = evaluate_decisions(rows, calibrate=True, folds=4, priors={"h": [0.5, 0.3, 0.2]}, permuted=permuted, bootstrap=20)
    assert set(report["overall"]) == {"raw", "debiased", "calibrated_oof", "permuted_mean"}
    assert report["tasks"]["code_search"]["raw"]["recall_at_1"] == report["tasks"]["code_search"]["raw"]["accuracy"]
    assert report["argmax_unchanged_by_temperature"] is True
    assert 0 <= report["permutation"]["flip_rate"] <= 1
    lo, hi = report["overall"]["raw"]["ci95"]["accuracy"]
    assert lo <= report["overall"]["raw"]["accuracy"] <= hi
    assert "calibrated_oof" in format_report(report)


@pytest.mark.model
def test_semif_eval_on_a_small_subset_with_the_real_model(tmp_path, capsys):
    """Every flag at once, on 9 requests (`--sample 3` of three workloads); then the engine serves the file it wrote, calibrated.

    One thread: on a shared 2-core machine OpenMP spin-waits make 2 threads several times slower.
    """
    from semif_lib.measurement.quality.labeled import stratified_subset

    inputs = [LABELED / f"{name}.jsonl" for name in ("routing", "severity", "code_search")]
    lines = [json.dumps({**it.request, "id": it.id}) for it in stratified_subset(read_labeled(inputs), 3)]
    report_path, cal_path = tmp_path / "report.json", tmp_path / "cal.json"
    rc = main(["eval", *map(str, inputs), "--sample", "3", "--calibrate", "--folds", "2", "--permute", "2", "--debias", "--bootstrap", "20",
               "--coverage", "0.5", "--max-error", "0.5", "--output", str(report_path), "--calibration-out", str(cal_path),
               "--threads", "1", "--n-ctx", "2048", "--quiet"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "calibrated_oof" in out and "json_generation" in out and "flip rate" in out
    report = json.loads(report_path.read_text())
    assert report["counts"] == {"requests": 9, "decisions": 9, "states": 9, "lines_read": 92}
    assert report["options"]["sample"] == 3 and "--sample 3" in report["command"]
    assert sorted(d["id"] for d in report["decisions"]) == sorted(json.loads(line)["id"] for line in lines)
    assert set(report["tasks"]) == {"routing", "severity", "code_search"}
    assert "recall_at_1" in report["tasks"]["code_search"]["raw"]
    assert 0 <= report["json_baseline"]["all"]["invalid_json_rate"] <= 1
    assert report["command"].startswith("semif eval") and "--calibrate" in report["command"]
    assert report_path.with_suffix(".png").stat().st_size > 10_000
    decisions, priors = load_decisions(report)  # the report alone reproduces the metrics, no model needed
    again = evaluate_decisions(decisions, priors=priors, bootstrap=0)
    assert again["overall"]["raw"]["accuracy"] == pytest.approx(report["overall"]["raw"]["accuracy"])
    assert again["overall"]["debiased"]["nll"] == pytest.approx(report["overall"]["debiased"]["nll"], abs=1e-3)

    from semif_lib.decision.engine import DecisionEngine
    from semif_lib.settings import Settings

    doc = json.loads(cal_path.read_text())
    _check_too_small_stays_uncalibrated(report, doc, out)
    settings = Settings(n_ctx=2048, threads=1, calibration=cal_path, model_dir=tmp_path)
    with DecisionEngine(settings) as engine:
        request = json.loads(lines[0])
        answer = engine.ask(request).answers["queue"]
    assert set(answer.x_raw_probabilities) == set(answer.probabilities)
    assert answer.x_calibrated is False and answer.x_temperature == 1.0  # nothing kept, so nothing applied
    assert answer.probabilities == pytest.approx(answer.x_raw_probabilities)
    extra = answer.model_extra or {}
    assert "x_prediction_set" not in extra and "x_abstain" not in extra


def _check_too_small_stays_uncalibrated(report, doc, out):
    """Nine decisions, at most three a type: the file keeps nothing, says why per type, and the report warns."""
    from semif_lib.measurement.quality.verdicts import MIN_DECISIONS

    assert doc["model_sha256"] == report["model"]["sha256"] and report["priors"]
    assert doc["temperatures"] == {"noul": 1.0, "choice": 1.0, "score": 1.0} and doc["priors"] == {}
    assert doc["prediction_sets"] == {} and doc["abstention"] == {}
    assert set(report["prediction_sets"]["by_kind"]) == {"choice", "score"}
    for kind in ("choice", "score"):
        for step in ("prior", "temperature", "prediction_set", "abstention"):
            verdict = doc["verdicts"][kind][step]
            assert verdict["kept"] is False and f"fewer than the {MIN_DECISIONS}" in verdict["reason"]
    assert "warning: left uncalibrated" in out
    assert any("left uncalibrated" in w for w in report["warnings"])


@pytest.mark.model  # DecisionEngine on the embedded GGUF, refused after hashing it
def test_engine_refuses_a_calibration_file_for_another_model(tmp_path):
    from semif_lib.decision.calibrator import CalibrationMismatchError
    from semif_lib.decision.engine import DecisionEngine
    from semif_lib.measurement.quality.calibration import save_calibration
    from semif_lib.measurement.quality.verdicts import build_calibration
    from semif_lib.settings import Settings

    path = save_calibration(build_calibration([], model_sha256="f" * 64, model_file="bigger-model.gguf"), tmp_path / "cal.json")
    with pytest.raises(CalibrationMismatchError, match="bigger-model.gguf"):
        DecisionEngine(Settings(n_ctx=1024, threads=1, calibration=path, model_dir=tmp_path))
