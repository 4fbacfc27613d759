"""x_debias "prior": the model's preference for each displayed position, estimated once from rotations (PriDe) and divided
out of every choice question's slot logits, seen or not, at the price of one request."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pytest

STATE = "A short note from the facilities team about the building's opening hours next week."
CALIBRATION_STATE = "The report lists what the committee decided at its last meeting."


def _choice(criteria, instructions="Which one applies?", **extra):
    return {"type": "choice", "instructions": instructions, "criteria": criteria, **extra}


def test_the_estimate_recovers_a_known_position_prior():
    """Answers made as prior(position) x content(option), every option in every position once: the prior comes back."""
    from semif_lib.decision.position_prior import estimate_position_prior

    rng = np.random.default_rng(0)
    prior = np.array([0.5, 0.25, 0.15, 0.1])
    questions = []
    for _ in range(5):
        content = rng.dirichlet(np.ones(4))
        orders = []
        for shift in range(4):
            shown = np.roll(content, -shift)  # the options in this order: position j holds option (j + shift) % n
            p = prior * shown
            orders.append(p / p.sum())
        questions.append(orders)
    assert estimate_position_prior(questions) == pytest.approx(prior.tolist(), abs=1e-9)
    with pytest.raises(ValueError, match="all 4 cyclic orders"):
        estimate_position_prior([questions[0][:3]])


def test_the_calibration_file_carries_position_priors_in_its_one_format(tmp_path):
    """An optional key of the v2 file: a file without it loads as before; a malformed one is refused naming the key."""
    import json

    from semif_lib.decision.calibrator import CALIBRATION_FORMAT, CalibrationError, load_calibration
    from semif_lib.decision.prompt import PROMPT_VERSION

    doc = {"format": CALIBRATION_FORMAT, "model_sha256": "abc", "prompt_version": PROMPT_VERSION, "temperatures": {"choice": 1.0}}
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    assert load_calibration(path, model_sha256="abc").position_priors == {}
    path.write_text(json.dumps({**doc, "position_priors": {"3": [0.5, 0.3, 0.2]}}))
    assert load_calibration(path, model_sha256="abc").position_priors == {3: [0.5, 0.3, 0.2]}
    for bad in ({"3": [0.5, 0.5]}, {"1": [1.0]}, {"3": [0.5, 0.6, -0.1]}, [0.5, 0.5]):
        path.write_text(json.dumps({**doc, "position_priors": bad}))
        with pytest.raises(CalibrationError, match="position_priors"):
            load_calibration(path, model_sha256="abc")


@contextmanager
def position_priors(engine, priors):
    """The session engine as if SEMIF_CALIBRATION named a file with these priors; its own calibration afterwards."""
    from semif_lib.decision.calibrator import Calibrator

    before = engine.calibration
    engine.calibration = Calibrator(temperatures={}, position_priors=priors)
    try:
        yield engine
    finally:
        engine.calibration = before


def _estimate_on_other_questions(engine) -> dict[int, list[float]]:
    """The prior for four options from two calibration questions (all four orders of each), none of them the one asked later."""
    from semif_lib.decision.position_prior import estimate_position_priors
    from semif_lib.decision.prompt import rotate_criteria

    calibration = [_choice({"red": None, "green": None, "blue": None, "grey": None}, "Which colour is the report's cover?"),
                   _choice({"march": None, "june": None, "july": None, "october": None}, "When was the meeting?")]
    samples = []
    for q in calibration:
        questions = {f"q@{k}": {**q, "criteria": rotate_criteria(q["criteria"], k), "x_debias": "none"} for k in range(4)}
        answers = engine.ask({"state": CALIBRATION_STATE, "questions": questions}).answers
        samples.append([list(answers[f"q@{k}"].probabilities.values()) for k in range(4)])
    return estimate_position_priors({4: samples})


def test_the_prior_moves_an_unseen_question_off_the_favoured_position(family_engine):
    """Options that say nothing apart, on a question the prior never saw: the plain answer follows a position, the
    prior's answer spreads (at no extra branch), and says so; each family estimates its own prior."""
    engine = family_engine
    blank = {name: "a room" for name in ("north", "south", "east", "west")}
    priors = _estimate_on_other_questions(engine)
    plain = engine.ask({"state": STATE, "questions": {"q": _choice(blank, "Which room is meant?")}})
    with position_priors(engine, priors):
        debiased = engine.ask({"state": STATE, "questions": {"q": _choice(blank, "Which room is meant?", x_debias="prior")}})
    before, after = plain.answers["q"], debiased.answers["q"]
    favoured = max(before.probabilities, key=before.probabilities.get)
    spread = lambda a: max(a.probabilities.values()) - min(a.probabilities.values())
    assert after.probabilities[favoured] < before.probabilities[favoured], (before.probabilities, after.probabilities)
    assert spread(after) < spread(before), (before.probabilities, after.probabilities)
    assert after.model_extra["x_debias"] == "prior" and after.model_extra["x_raw_probabilities"] == pytest.approx(before.probabilities)
    assert debiased.timing["branch_tokens"] == plain.timing["branch_tokens"]  # one request's work
    engine.check_invariants()


def test_a_prior_the_file_lacks_is_a_400_when_asked_and_named_when_defaulted(engine):
    from semif_lib.errors import SemifError

    three = _choice({"a": None, "b": None, "c": None})
    with pytest.raises(SemifError) as missing:
        engine.ask({"state": STATE, "questions": {"q": {**three, "x_debias": "prior"}}})
    assert missing.value.status_code == 400 and missing.value.field == "questions.q.x_debias"
    assert "no position prior is loaded" in str(missing.value)
    with position_priors(engine, {4: [0.4, 0.3, 0.2, 0.1]}):
        with pytest.raises(SemifError, match=r"priors for \[4\] options"):
            engine.ask({"state": STATE, "questions": {"q": {**three, "x_debias": "prior"}}})
        before = engine.settings
        engine.settings = before.model_copy(update={"default_debias": "prior"})  # a server default, not the request's ask
        try:
            answer = engine.ask({"state": STATE, "questions": {"q": three}}).answers["q"]
        finally:
            engine.settings = before
    assert answer.model_extra["x_debias"] == "none" and "no position prior for 3 options" in answer.model_extra["x_debias_missing"]


def test_an_engine_defaulting_to_the_prior_without_one_refuses_to_start():
    from semif_lib.decision.calibrator import CalibrationError
    from semif_lib.decision.engine import DecisionEngine
    from semif_lib.settings import Settings

    with pytest.raises(CalibrationError, match="SEMIF_DEFAULT_DEBIAS=prior"):
        DecisionEngine(Settings(default_debias="prior", threads=2, n_ctx=2048))


def test_bench_debias_keeps_the_books_of_its_four_arms(engine):
    """The benchmark on two labeled requests: every arm answers every choice question, the content-free arm's division
    stays a distribution, and the target is judged from the file's own numbers (timings are the results file's business)."""
    from semif_lib.measurement.quality.debias import ARMS, estimate_priors, judge_target, run_debias, split_items
    from semif_lib.measurement.quality.labeled import read_labeled

    from support.paths import DATA

    calibration, evaluation = split_items(read_labeled([DATA / "labeled" / "code_search.jsonl"])[:4])
    priors, counts = estimate_priors(engine, calibration, progress=False)
    assert set(priors) == set(counts) == {4} and counts[4] >= 2 and sum(priors[4]) == pytest.approx(1.0)
    with position_priors(engine, priors):
        summary = run_debias(engine, evaluation, progress=False)
    assert summary["choice_questions"] >= 2 and set(summary["flip_rate"]) == set(ARMS)
    assert all(0 <= summary[k][a] <= 1 for k in ("flip_rate", "accuracy", "ece") for a in ARMS)
    assert summary["time_ratio"]["none"] == 1.0
    made_up = {"flip_rate": {"none": 1.0, "prior": 0.7, "rotations": 0.5}, "time_ratio": {"prior": 1.05}}
    assert judge_target(made_up)["met"] and judge_target(made_up)["flip_share"] == 0.6
    assert not judge_target({**made_up, "time_ratio": {"prior": 1.2}})["met"]


@pytest.mark.parametrize("name", ["debias-SmolLM2-135M-Instruct.Q4_1.json", "debias-Qwen2.5-Coder-0.5B-Instruct-AWQ.Q4_K_M.json"])
def test_docs_quote_the_committed_debias_runs(name):
    """docs/quality.md quotes each model's four-arm table as `format_debias` prints the committed file; the prior it
    fitted is in that model's committed calibration file."""
    import json

    from semif_lib.measurement.quality.debias import format_debias

    from support.paths import ROOT

    summary = json.loads((ROOT / "results" / "bench" / name).read_text(encoding="utf-8"))
    assert format_debias(summary) in (ROOT / "docs" / "quality.md").read_text(encoding="utf-8")
    folder = "smollm2-135m" if "SmolLM2" in name else "qwen2.5-coder-0.5b"
    calibration = json.loads((ROOT / "results" / "eval" / folder / "calibration.json").read_text(encoding="utf-8"))
    assert calibration["model_sha256"] == summary["model"]["sha256"]
    assert calibration["position_priors"] == summary["prior"]["position_priors"]


def test_refitting_a_calibration_file_keeps_its_position_priors(tmp_path):
    """`semif calibrate` rewrites the temperatures and rules from a report; the prior `semif bench debias` fitted stays."""
    import json

    from semif_lib.measurement.quality.calibration import Decision
    from semif_lib.measurement.quality.calibration_file import write_calibration

    from support.paths import ROOT

    report = json.loads((ROOT / "results" / "eval" / "smollm2-135m" / "report.json").read_text(encoding="utf-8"))
    decisions = [Decision.from_json(row) for row in report["decisions"]]
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({"model_sha256": report["model"]["sha256"], "position_priors": {"2": [0.6, 0.4]}}))
    write_calibration(decisions, report, report.get("priors"), path)
    assert json.loads(path.read_text())["position_priors"] == {"2": [0.6, 0.4]}
    path.write_text(json.dumps({"model_sha256": "another model", "position_priors": {"2": [0.6, 0.4]}}))
    write_calibration(decisions, report, report.get("priors"), path)
    assert "position_priors" not in json.loads(path.read_text())
