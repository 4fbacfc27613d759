"""What a calibration file keeps, on the committed reports' real decisions: only what helps out of fold, and why.

The committed `semif eval` reports store every raw decision's logits and the content-free priors, so
the rule is re-applied to them here without the model.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from semif_lib.cli import main
from semif_lib.decision.calibrator import KINDS, CalibrationError, load_calibration
from semif_lib.decision.conformal import predict_set
from semif_lib.decision.prompt import plan_question
from semif_lib.decision.schema import ChoiceQuestion
from semif_lib.measurement.quality.calibration import Decision, save_calibration
from semif_lib.measurement.quality.evaluate import evaluate_decisions, load_decisions, write_calibration
from semif_lib.measurement.quality.prediction_sets import served_probabilities
from semif_lib.measurement.quality.verdicts import MIN_DECISIONS, build_calibration, judge_calibration

ROOT = Path(__file__).resolve().parents[1]
REPORTS = sorted((ROOT / "results" / "eval").glob("**/report.json"))
SMOLLM2 = ROOT / "results" / "eval" / "smollm2-135m-all" / "report.json"
SMOLLM2_DEBIASED = ROOT / "results" / "eval" / "report.json"
QWEN_40 = ROOT / "results" / "eval" / "qwen2.5-coder-1.5b" / "report.json"  # 40 decisions: 24 noul, 12 choice, 4 score


def _stored(path):
    report = json.loads(path.read_text())
    decisions, priors = load_decisions(report)
    return report, decisions, priors


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: p.parent.name)
def test_what_is_kept_is_never_worse_than_raw_out_of_fold(path):
    report, decisions, priors = _stored(path)
    judgement = judge_calibration(decisions, priors, report["options"]["folds"], report["options"]["seed"])
    assert judgement.overall["kept"]["ece"] <= judgement.overall["raw"]["ece"]
    assert judgement.overall["kept"]["nll"] <= judgement.overall["raw"]["nll"]
    for kind, verdict in judgement.verdicts.items():
        kept = [step for step in ("prior", "temperature") if verdict.get(step, {}).get("kept")]
        assert verdict["n"] >= MIN_DECISIONS or not kept
        assert (judgement.temperatures[kind] != 1.0) == ("temperature" in kept)
        if kept:  # a kept step beat what came before it on both figures, so the type beats raw
            last = verdict[kept[-1]]["scores"]
            assert last["ece"] < verdict["raw"]["ece"] and last["nll"] < verdict["raw"]["nll"]


def test_committed_smollm2_workload_keeps_its_improvement():
    report, decisions, priors = _stored(SMOLLM2)
    judgement = judge_calibration(decisions, priors)
    assert all(judgement.verdicts[kind]["temperature"]["kept"] for kind in KINDS)
    assert judgement.overall["raw"]["ece"] == pytest.approx(0.137, abs=1e-3)
    assert judgement.overall["kept"]["ece"] < 0.05  # 0.137 -> 0.036 out of fold, as before the rule
    noul = judgement.verdicts["noul"]["temperature"]
    assert noul["folds_at_bound"] >= 1 and noul["spread"][1] == pytest.approx(20.0, rel=0.01)  # the bound, reported
    _, decisions, priors = _stored(SMOLLM2_DEBIASED)
    debiased = judge_calibration(decisions, priors)
    assert all(debiased.verdicts[kind]["prior"]["kept"] for kind in KINDS)
    assert debiased.overall["kept"]["ece"] < 0.06 and debiased.priors


def test_a_small_real_workload_leaves_its_thin_types_uncalibrated_with_a_warning(tmp_path, capsys):
    """Qwen2.5-Coder-1.5B on 40 decisions (`--sample 4`): 24 noul, 12 choice, 4 score; `semif calibrate` on the stored report."""
    out_path = tmp_path / "cal.json"
    assert main(["calibrate", str(QWEN_40), "--calibration-out", str(out_path), "--bootstrap", "0"]) == 0
    out = capsys.readouterr().out
    doc = json.loads(out_path.read_text())
    assert doc["temperatures"]["choice"] == doc["temperatures"]["score"] == 1.0
    for kind, n in (("choice", 12), ("score", 4)):
        for step in ("temperature", "prediction_set", "abstention"):
            verdict = doc["verdicts"][kind][step]
            assert verdict["kept"] is False and verdict["reason"] == f"{n} decisions, fewer than the {MIN_DECISIONS} a type needs"
    assert "warning: left uncalibrated" in out and "choice temperature" in out and "score temperature" in out
    noul = doc["verdicts"]["noul"]["temperature"]
    assert len(noul["folds"]) == 5 and noul["spread"][0] <= doc["temperatures"]["noul"] <= noul["spread"][1] + 0.5
    assert "folds" in out and "at the optimiser's bound 20" in out


def test_a_noisy_real_fit_stays_identity():
    """SmolLM2's debiased choice questions: a temperature that lowers ECE but raises NLL out of fold, folds 1.2 to 14."""
    _, decisions, priors = _stored(SMOLLM2_DEBIASED)
    verdict = judge_calibration(decisions, priors).verdicts["choice"]["temperature"]
    assert verdict["kept"] is False and verdict["value"] == 1.0 and "does not improve both" in verdict["reason"]
    assert verdict["scores"]["nll"] > verdict["base"]["nll"] and verdict["spread"][1] / verdict["spread"][0] > 5


def test_written_file_round_trips_and_serves_only_what_it_kept(tmp_path):
    report, decisions, priors = _stored(SMOLLM2_DEBIASED)
    refit = {**evaluate_decisions(decisions, calibrate=True, priors=priors, bootstrap=0), "model": report["model"],
             "options": report["options"]}
    path = write_calibration(decisions, refit, priors, tmp_path / "cal.json", ["committed"], (0.9, 0.2))
    doc = json.loads(path.read_text())
    cal = load_calibration(path, model_sha256=report["model"]["sha256"])
    assert cal.temperatures == pytest.approx(doc["temperatures"]) and cal.priors == doc["priors"]
    assert set(cal.prediction_sets) == {k for k in KINDS if doc["verdicts"][k]["prediction_set"]["kept"]}
    assert set(cal.abstention) == {k for k in KINDS if doc["verdicts"][k]["abstention"]["kept"]}
    assert save_calibration(doc, tmp_path / "again.json").read_text() == path.read_text()
    probs = served_probabilities(decisions, doc["temperatures"], doc["priors"])  # the rules reproduce on what the file serves
    for kind, rule in doc["prediction_sets"].items():
        rows = [i for i, d in enumerate(decisions) if d.kind == kind]
        covered = [decisions[i].label in predict_set(probs[i], kind, rule["q"]) for i in rows]
        assert sum(covered) / len(rows) >= rule["target_coverage"]
    choice = doc["temperatures"]["choice"]
    plan = plan_question("q", ChoiceQuestion(instructions="pick", criteria={"x": None, "y": None, "z": None}))
    answer = cal.apply(plan, np.array([2.0, 1.0, 0.0]), np.array([0.67, 0.24, 0.09]), 1.0)  # an unseen question: no prior
    assert answer.x_calibrated is (choice != 1.0) and answer.x_temperature == choice


def test_below_the_minimum_a_type_keeps_the_identity_whatever_it_fits():
    rows = [Decision(id=f"r{i}", group_id=f"s{i}", task="t", qid="q", kind="noul", keys=["true", "false"], label=i % 2,
                     logits=np.log([0.95, 0.05])) for i in range(MIN_DECISIONS - 1)]  # sure and right half the time: T wants 20
    doc = build_calibration(rows, model_sha256="a" * 64, model_file="m.gguf")
    assert doc["temperatures"]["noul"] == 1.0 and doc["min_decisions"] == MIN_DECISIONS
    assert doc["verdicts"]["noul"]["temperature"]["reason"] == f"{MIN_DECISIONS - 1} decisions, fewer than the {MIN_DECISIONS} a type needs"
    more = rows + [Decision(**{**rows[0].__dict__, "id": "x", "group_id": "sx", "label": 1})]
    assert build_calibration(more, model_sha256="a" * 64, model_file="m.gguf")["temperatures"]["noul"] > 1


def test_an_unchecked_v1_file_is_refused_with_the_command_that_refits_it(tmp_path):
    doc = {**build_calibration([], model_sha256="a" * 64, model_file="m.gguf"), "format": "semif-calibration-v1"}
    path = save_calibration(doc, tmp_path / "old.json")
    with pytest.raises(CalibrationError, match="without an out-of-fold check") as info:
        load_calibration(path, model_sha256="a" * 64)
    assert info.value.status_code == 503 and "semif calibrate" in info.value.message
