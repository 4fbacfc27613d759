"""Calibration arithmetic without a model: metrics by hand, temperature recovery, grouped splits, file keying."""

import math

import numpy as np
import pytest

from semif_lib.decision.calibrator import (
    CalibrationError,
    CalibrationMismatchError,
    Calibrator,
    apply_temperature,
    load_calibration,
    remove_prior,
)
from semif_lib.decision.prompt import PROMPT_VERSION, plan_question
from semif_lib.decision.schema import ChoiceQuestion
from semif_lib.measurement.quality.calibration import (
    Decision,
    fit_temperature,
    predict_out_of_fold,
    save_calibration,
    split_groups,
)
from semif_lib.measurement.quality.metrics import (
    compute_balanced_accuracy,
    compute_brier,
    compute_ece,
    compute_metrics,
    compute_nll,
)
from semif_lib.measurement.quality.verdicts import build_calibration


def make_decision(logits, label, group="g", kind="choice", mass=1.0, task="t"):
    return Decision(id=group, group_id=group, task=task, qid="q", kind=kind, keys=[str(i) for i in range(len(logits))],
                    label=label, logits=np.asarray(logits, dtype=float), option_mass=mass)


def test_ece_by_hand():
    # bins (0.8, 0.9] holds two at 0.9 with 1 of 2 right; (0.5, 0.6] two at 0.6, both right
    assert compute_ece([0.9, 0.9, 0.6, 0.6], [True, False, True, True]) == pytest.approx(0.5 * 0.4 + 0.5 * 0.4)
    assert compute_ece([0.75, 0.75, 0.75, 0.75], [True, True, True, False]) == pytest.approx(0.0)
    assert compute_ece([1.0], [False]) == pytest.approx(1.0)  # 1.0 falls in the last bin


def test_brier_and_nll_by_hand():
    probs = [np.array([0.7, 0.2, 0.1]), np.array([0.5, 0.5])]
    assert compute_brier(probs, [0, 1]) == pytest.approx((0.09 + 0.04 + 0.01 + 0.25 + 0.25) / 2)
    assert compute_nll(probs, [0, 1]) == pytest.approx((-math.log(0.7) - math.log(0.5)) / 2)


def test_balanced_accuracy_punishes_always_the_same_answer():
    assert compute_balanced_accuracy(["a", "a", "a", "a"], ["a", "a", "a", "b"]) == pytest.approx(0.5)
    assert compute_balanced_accuracy(["a", "b", "b"], ["a", "b", "a"]) == pytest.approx((0.5 + 1.0) / 2)


def test_compute_metrics_counts_confident_errors_and_mass():
    rows = [
        make_decision(np.log([0.95, 0.05]), 1, "a", mass=0.2),  # confident and wrong
        make_decision(np.log([0.95, 0.05]), 0, "b", mass=0.4),  # confident and right
        make_decision(np.log([0.6, 0.4]), 1, "c", mass=0.9),  # wrong, not confident
        make_decision(np.log([0.3, 0.7]), 1, "d", mass=1.0),
    ]
    m = compute_metrics(rows)
    assert m["n"] == 4
    assert m["accuracy"] == pytest.approx(0.5)
    assert m["confident_error_rate"] == pytest.approx(0.25)
    assert m["option_mass_mean"] == pytest.approx(0.625)
    assert m["option_mass_below_0_5"] == pytest.approx(0.5)
    assert m["chance"] == pytest.approx(0.5)
    assert m["top_share"] == pytest.approx(0.75)  # three of four picked slot 0


def test_temperature_recovers_a_known_temperature_and_keeps_argmax():
    rng = np.random.default_rng(1)
    true_logits = rng.normal(0, 2.0, size=(4000, 4))
    labels = [int(rng.choice(4, p=apply_temperature(z, 1.0))) for z in true_logits]
    for t_true in (0.5, 2.5):
        seen = true_logits * t_true  # a model t_true times too sharp (or too flat)
        fitted = fit_temperature(list(seen), labels)
        assert fitted == pytest.approx(t_true, rel=0.08)
        for z in seen[:50]:
            assert np.argmax(apply_temperature(z, fitted)) == np.argmax(z)


def test_temperature_fit_handles_mixed_option_counts():
    rng = np.random.default_rng(2)
    logits, labels = [], []
    for _ in range(3000):
        z = rng.normal(0, 2.0, size=int(rng.integers(2, 7)))
        labels.append(int(rng.choice(len(z), p=apply_temperature(z, 1.0))))
        logits.append(z / 3.0)  # a model three times too flat
    assert fit_temperature(logits, labels) == pytest.approx(1 / 3.0, rel=0.1)


def test_grouped_splits_never_share_a_state():
    rng = np.random.default_rng(3)
    groups = [f"s{int(g)}" for g in rng.integers(0, 23, size=200)]
    splits = split_groups(groups, folds=5, seed=7)
    assert len(splits) == 5
    tested = []
    for train, test in splits:
        assert {groups[i] for i in train}.isdisjoint({groups[i] for i in test})
        assert sorted(train + test) == list(range(len(groups)))
        tested += test
    assert sorted(tested) == list(range(len(groups)))  # each row is tested exactly once


def test_out_of_fold_predictions_use_temperatures_fitted_without_the_state():
    rng = np.random.default_rng(4)
    rows = [make_decision(rng.normal(0, 3, 3), int(rng.integers(0, 3)), group=f"s{i // 3}") for i in range(60)]
    probs, temps = predict_out_of_fold(rows, folds=4)
    assert len(probs) == len(rows) and len(temps) == 4
    for p, d in zip(probs, rows, strict=True):
        assert np.argmax(p) == np.argmax(d.logits)
        assert p.sum() == pytest.approx(1.0)


def test_contextual_prior_is_divided_out():
    raw = np.log([0.6, 0.3, 0.1])
    out = apply_temperature(remove_prior(raw, [0.6, 0.3, 0.1]), 1.0)
    assert out == pytest.approx([1 / 3] * 3)


def test_calibration_file_round_trip_and_refusal(tmp_path):
    rows = [make_decision(np.log([0.9, 0.1]), i % 2, f"s{i}", kind="noul") for i in range(20)]
    doc = build_calibration(rows, model_sha256="a" * 64, model_file="m.gguf")
    assert doc["prompt_version"] == PROMPT_VERSION and doc["temperatures"]["noul"] > 1  # overconfident: soften
    path = save_calibration(doc, tmp_path / "cal.json")
    cal = load_calibration(path, model_sha256="a" * 64)
    assert isinstance(cal, Calibrator) and cal.temperatures["noul"] == pytest.approx(doc["temperatures"]["noul"])
    with pytest.raises(CalibrationMismatchError, match="not the loaded model"):
        load_calibration(path, model_sha256="b" * 64)


def test_calibration_file_refused_for_a_different_model_file(tmp_path):
    model_path = tmp_path / "other.gguf"
    model_path.write_bytes(b"not the model the file was fitted on")
    path = save_calibration(build_calibration([], model_sha256="a" * 64, model_file="m.gguf"), tmp_path / "cal.json")
    with pytest.raises(CalibrationMismatchError) as info:
        load_calibration(path, model_path)
    assert info.value.field == "calibration" and "other.gguf" in info.value.message and "m.gguf" in info.value.message


def test_calibration_file_refused_for_another_prompt_version_or_bad_shape(tmp_path):
    doc = build_calibration([], model_sha256="a" * 64, model_file="m.gguf")
    path = save_calibration({**doc, "prompt_version": "semif-prompt-v0"}, tmp_path / "old.json")
    with pytest.raises(CalibrationMismatchError, match="prompt"):
        load_calibration(path, model_sha256="a" * 64)
    bad = save_calibration({**doc, "temperatures": {"noul": -1}}, tmp_path / "bad.json")
    with pytest.raises(CalibrationError, match="positive"):
        load_calibration(bad, model_sha256="a" * 64)
    with pytest.raises(CalibrationError, match="does not exist"):
        load_calibration(tmp_path / "missing.json", model_sha256="a" * 64)


def test_calibrator_answers_carry_raw_and_calibrated_probabilities():
    plan = plan_question("q", ChoiceQuestion(instructions="pick", criteria={"x": None, "y": None, "z": None}))
    logits = np.array([2.0, 1.0, 0.0])
    answer = Calibrator({"choice": 2.0}).apply(plan, logits, apply_temperature(logits, 1.0), 0.5)
    assert answer.x_calibrated is True and answer.x_temperature == 2.0
    assert answer.choice == "x"
    assert answer.x_raw_probabilities["x"] == pytest.approx(apply_temperature(logits, 1.0)[0])
    assert answer.top_probability == pytest.approx(apply_temperature(logits, 2.0)[0])
    dumped = answer.model_dump()
    assert dumped["x_raw_probabilities"] and dumped["probabilities"]["x"] < dumped["x_raw_probabilities"]["x"]
