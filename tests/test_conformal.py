"""The prediction-set and abstention rules (decision/conformal.py), model-free.

The guarantee rests on one property tying fitting to serving: a decision whose nonconformity is
at most the fitted threshold has its true option in the served set. The rest follows from
exchangeability, which the synthetic draws below have by construction.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semif_lib.decision.conformal import (
    fit_abstention,
    fit_threshold,
    inclusion_order,
    nonconformity,
    predict_set,
)

KINDS = ("choice", "noul", "score")

probabilities = st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=2, max_size=9).filter(lambda v: sum(v) > 1e-6).map(
    lambda v: (np.asarray(v) / sum(v)).tolist()
)


@settings(max_examples=300, deadline=None)
@given(probabilities, st.sampled_from(KINDS), st.floats(0.0, 1.0))
def test_a_set_always_holds_the_argmax_and_score_sets_are_ranges(probs, kind, q):
    chosen = predict_set(probs, kind, q)
    assert int(np.argmax(probs)) in chosen
    assert sorted(inclusion_order(probs, kind)) == list(range(len(probs)))
    if kind == "score":
        assert chosen == list(range(chosen[0], chosen[-1] + 1)), chosen


@settings(max_examples=300, deadline=None)
@given(probabilities, st.sampled_from(KINDS), st.floats(0.0, 1.0), st.data())
def test_a_label_within_the_threshold_is_in_the_set(probs, kind, q, data):
    label = data.draw(st.integers(0, len(probs) - 1))
    if nonconformity(probs, label, kind) <= q:
        assert label in predict_set(probs, kind, q)


def test_nonconformity_refuses_a_label_outside_the_options():
    with pytest.raises(ValueError, match="not an option index"):
        nonconformity([0.5, 0.5], 2, "choice")


def _draw(rng: np.random.Generator, n: int, k: int, kind: str) -> tuple[list[np.ndarray], list[int]]:
    """Decisions whose labels follow their own probabilities (an honest model, so the sets are tight)."""
    probs = [rng.dirichlet(np.full(k, 0.15)) for _ in range(n)]
    labels = [int(rng.choice(k, p=p)) for p in probs]
    return probs, labels


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("target", [0.8, 0.9])
def test_coverage_reaches_its_target_in_fold_and_out_of_fold(kind, target):
    rng = np.random.default_rng(7)
    k = 2 if kind == "noul" else 5
    fit_p, fit_y = _draw(rng, 600, k, kind)
    threshold = fit_threshold([nonconformity(p, y, kind) for p, y in zip(fit_p, fit_y, strict=True)], target, kind)
    in_fold = np.mean([y in predict_set(p, kind, threshold.q) for p, y in zip(fit_p, fit_y, strict=True)])
    assert in_fold >= target
    test_p, test_y = _draw(rng, 3000, k, kind)
    covered = np.mean([y in predict_set(p, kind, threshold.q) for p, y in zip(test_p, test_y, strict=True)])
    assert covered >= target - 0.03, (covered, threshold)  # 3000 draws: a standard error under 0.008
    sizes = np.mean([len(predict_set(p, kind, threshold.q)) for p in test_p])
    assert sizes < k  # an informative set, not every option


def test_too_few_decisions_give_every_option():
    threshold = fit_threshold([0.2, 0.4, 0.6], 0.9, "choice")  # ceil(4 * 0.9) = 4 > 3
    assert threshold.q == 1.0
    assert predict_set([0.7, 0.2, 0.1], "choice", threshold.q) == [0, 1, 2]
    with pytest.raises(ValueError, match="between 0 and 1"):
        fit_threshold([0.1], 1.0, "choice")


def test_abstention_reaches_its_target_error_on_the_data_it_was_fitted_on():
    rng = np.random.default_rng(3)
    probs, labels = _draw(rng, 800, 4, "choice")
    top = [float(np.max(p)) for p in probs]
    correct = [int(np.argmax(p)) == y for p, y in zip(probs, labels, strict=True)]
    overall_error = 1 - np.mean(correct)
    rule = fit_abstention(top, correct, 0.2, "choice")
    answered = [not rule.abstains(p) for p in probs]
    err = 1 - np.mean([c for c, a in zip(correct, answered, strict=True) if a])
    assert overall_error > 0.2  # the rule has to abstain to get there
    assert rule.guaranteed and err <= 0.2 and abs(err - rule.answered_error) < 1e-9
    assert 0 < rule.answered_share < 1 and abs(np.mean(answered) - rule.answered_share) < 1e-9
    assert fit_abstention(top, correct, 0.99, "choice").min_confidence == 0.0  # a loose target answers everything
    never = fit_abstention([0.9, 0.8], [False, False], 0.1, "choice")
    assert never.answered_share == 0.0 and never.abstains([0.999, 0.001]) and not never.guaranteed


def test_abstention_certifies_nothing_from_too_few_decisions():
    """At 90 % confidence an error of at most 0.2 needs 11 answered decisions without an error: 10 right ones promise nothing."""
    from semif_lib.decision.conformal import min_decisions_for

    assert min_decisions_for(0.2, 0.9) == 11
    assert not fit_abstention([0.95] * 10, [True] * 10, 0.2, "choice").guaranteed
    assert fit_abstention([0.95] * 11, [True] * 11, 0.2, "choice").guaranteed


def test_abstentions_guarantee_holds_over_fitting_samples():
    """Learn then Test's promise, checked by simulation: calibrated answers (right with their top probability, drawn
    uniformly in [0.25, 1]) err (1 - t) / 2 above threshold t, so any rule below 0.6 breaks a 0.2 target. Over many
    fitting samples, at most 1 - confidence of the fitted rules may break it."""
    rng = np.random.default_rng(11)
    broken, fits = 0, 200
    for _ in range(fits):
        top = rng.uniform(0.25, 1.0, 150)
        correct = rng.uniform(size=150) < top
        rule = fit_abstention(top, correct, 0.2, "choice", confidence=0.9)
        broken += rule.guaranteed and rule.min_confidence < 0.6
    assert broken / fits <= 0.1 + 0.04, broken  # 0.1 promised; the slack is the simulation's own noise


def test_semif_sets_refits_the_committed_report_without_a_model(tmp_path, capsys):
    """The command behind results/eval/prediction-sets.json reproduces it from the stored raw decisions."""
    import json

    from semif_lib.cli import main

    from support.paths import ROOT

    committed = json.loads((ROOT / "results/eval/prediction-sets.json").read_text())
    out = tmp_path / "sets.json"
    command, report, *flags = committed["command"].split()[1:]  # "semif sets REPORT FLAGS..."
    assert main([command, str(ROOT / report), *flags, "--output", str(out)]) == 0
    again = json.loads(out.read_text())
    assert again["by_kind"] == committed["by_kind"]
    assert out.with_suffix(".png").stat().st_size > 10_000
    table = capsys.readouterr().out
    assert "| choice |" in table and "coverage (95% CI)" in table
    for kind, m in again["by_kind"].items():  # a chance-level model: honest sets hold (nearly) every option
        assert m["coverage_ci95"][0] <= m["coverage"] <= m["coverage_ci95"][1]
        assert 1 <= m["mean_set_size"] <= m["mean_options"]


def test_the_abstention_curve_trades_answered_share_for_accuracy_on_it():
    """Each threshold answers the decisions whose top probability reaches it; accuracy is counted on those only."""
    from semif_lib.measurement.quality.prediction_sets import abstention_curve

    top = [0.95, 0.85, 0.72, 0.63, 0.41, 0.33]
    correct = [True, True, True, False, False, True]
    curve = abstention_curve(top, correct, points=11)
    at = {p["min_confidence"]: p for p in curve}
    assert at[0.0] == {"min_confidence": 0.0, "answered_share": 1.0, "accuracy_answered": pytest.approx(4 / 6)}
    assert (at[0.5]["answered_share"], at[0.5]["accuracy_answered"]) == (pytest.approx(4 / 6), pytest.approx(3 / 4))
    assert (at[0.8]["answered_share"], at[0.8]["accuracy_answered"]) == (pytest.approx(2 / 6), 1.0)
    assert (at[1.0]["answered_share"], at[1.0]["accuracy_answered"]) == (0.0, None)  # nothing answered: no accuracy to claim
    shares = [p["answered_share"] for p in curve]
    assert shares == sorted(shares, reverse=True)


def test_served_sets_are_read_from_the_wire_answers_and_drawn(tmp_path):
    """Labels meet the served option keys (noul true/false, choice names, score level indices), and the plot is written."""
    from semif_lib.measurement.quality.prediction_sets import plot_served_sets, served_examples

    request = {"state": "s", "questions": {
        "ok": {"type": "noul", "instructions": "Is it ok?"},
        "queue": {"type": "choice", "instructions": "Which queue?", "criteria": {"billing": None, "technical": None, "other": None}},
        "level": {"type": "score", "instructions": "How bad?", "criteria": ["low", "mid", "high"]}}}
    body = {"answers": {
        "ok": {"type": "noul", "noul": 0.3, "x_probabilities": {"true": 0.3, "false": 0.7}, "x_prediction_set": ["false", "true"]},
        "queue": {"type": "choice", "choice": "billing", "probabilities": {"billing": 0.6, "technical": 0.3, "other": 0.1},
                  "x_prediction_set": ["billing"], "x_abstain": False},
        "level": {"type": "score", "score": 1.1, "probabilities": {"0": 0.2, "1": 0.5, "2": 0.3}, "x_prediction_set": [1, 2],
                  "x_abstain": True}}}
    examples = served_examples(request, {"ok": False, "queue": "technical", "level": 2}, body, title="r1")
    assert [(name, label) for name, _, label in examples] == [("r1 ok", "false"), ("r1 queue", "technical"), ("r1 level", "2")]
    path = plot_served_sets(examples, tmp_path / "sets.png", title="synthetic")
    assert path.stat().st_size > 10_000


def test_the_abstention_panel_stars_every_fitted_threshold_even_one_that_answers_nothing():
    """Notebook 07 promises a star where each type's fitted threshold landed held out: drawn on the curve where the rule
    answers, and on the left edge, labelled and unclipped, where it answers nothing (no accuracy to plot)."""
    pytest.importorskip("matplotlib")
    import matplotlib
    import matplotlib.pyplot as plt

    from semif_lib.measurement.quality.prediction_sets import abstention_curve, draw_prediction_sets

    matplotlib.use("Agg")
    curve = abstention_curve([0.9, 0.8, 0.4], [True, True, False], points=11)
    answers = {"n": 3, "coverage": 1.0, "coverage_ci95": (0.4, 1.0), "mean_set_size": 1.5, "mean_options": 3.0,
               "answered_share": 2 / 3, "accuracy_answered": 1.0, "accuracy_all": 2 / 3, "abstention_curve": curve}
    silent = {**answers, "answered_share": 0.0, "accuracy_answered": None}
    fig = draw_prediction_sets({"target_coverage": 0.9, "max_error": 0.2, "folds": 5,
                                "by_kind": {"choice": answers, "noul": silent}})
    right = fig.axes[1]
    stars = [c for c in right.collections if len(c.get_offsets()) == 1]
    assert [tuple(c.get_offsets()[0]) for c in stars] == [pytest.approx((2 / 3, 1.0)), pytest.approx((0.0, 0.8))]
    assert all(not c.get_clip_on() for c in stars)
    assert [t.get_text() for t in right.texts] == ["noul: answers nothing"]
    plt.close(fig)
