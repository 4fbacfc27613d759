"""x_debias "rotations": cyclic option orders as extra branches on one prefix, averaged (real model).

The embedded SmolLM2 prefers a letter position over the options' content, which is exactly the
bias rotations are for: on a question whose options say nothing apart, the plain answer follows
the position and the rotated one does not.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pytest

STATE = "The customer writes: I was charged twice for my subscription this month and want my money back."
OPTIONS = {"billing": "payments, refunds", "technical": "bugs and outages", "sales": "new plans", "legal": "contracts"}


def _choice(criteria, **extra):
    return {"type": "choice", "instructions": "Which team should handle this ticket?", "criteria": criteria, **extra}


def _rotated(criteria, shift):
    items = list(criteria.items())
    return dict(items[shift:] + items[:shift])


def test_rotations_on_one_prefix_average_the_orders_scored_apart(engine):
    """The debiased answer is the mean of the four orders, each as if sent alone (within llama.cpp's tolerance)."""
    debiased = engine.ask({"state": STATE, "questions": {"queue": _choice(OPTIONS, x_debias="rotations")}})
    engine.check_invariants()
    answer = debiased.answers["queue"]
    extra = answer.model_extra or {}
    apart = [engine.ask({"state": STATE, "questions": {"queue": _choice(_rotated(OPTIONS, k))}}).answers["queue"] for k in range(4)]
    for name in OPTIONS:
        mean = np.mean([a.probabilities[name] for a in apart])
        assert answer.probabilities[name] == pytest.approx(mean, abs=0.02)
    assert extra["x_debias"] == "rotations"
    assert extra["x_rotation_choices"] == [a.choice for a in apart]
    assert extra["x_rotation_agreement"] == sum(a.choice == answer.choice for a in apart) / 4
    assert list(answer.probabilities) == list(OPTIONS)  # reported in the request's order
    assert sum(answer.probabilities.values()) == pytest.approx(1.0)
    dumped = debiased.model_dump(mode="json", by_alias=True)
    assert dumped["answers"]["queue"]["x_debias"] == "rotations"
    # The four branches share the question's stem in the token tree: decoded once, not once per order.

    branches = [branch.tokens for branch in engine.prepare(engine.resolve({"state": STATE, "questions": {
        "queue": _choice(OPTIONS, x_debias="rotations")}})).branches]
    stem = next(i for i in range(min(map(len, branches))) if len({tokens[i] for tokens in branches}) > 1)
    assert stem > 5 and debiased.timing["branch_tokens"] == sum(map(len, branches)) - 3 * stem


def test_rotations_move_a_position_bias_off_the_answer(engine):
    """Options that say nothing apart: the plain answer follows a position, the rotated one spreads evenly."""
    blank = {name: "a team" for name in ("north", "south", "east", "west")}
    plain = engine.ask({"state": STATE, "questions": {"q": _choice(blank)}}).answers["q"]
    rotated = engine.ask({"state": STATE, "questions": {"q": _choice(blank, x_debias="rotations")}}).answers["q"]
    votes = rotated.model_extra["x_rotation_choices"]
    positions = [list(_rotated(blank, k)).index(v) for k, v in enumerate(votes)]
    assert len(set(positions)) == 1, positions  # every order's answer sits at the same position...
    assert len(set(votes)) == 4  # ...so it names a different option each time
    spread = lambda a: max(a.probabilities.values()) - min(a.probabilities.values())
    assert spread(rotated) < spread(plain) / 2, (plain.probabilities, rotated.probabilities)


def test_rotations_are_validated_and_counted_as_branches(engine):
    from semif_lib.decision.schema import MAX_ROTATIONS
    from semif_lib.errors import SemifError

    with pytest.raises(SemifError) as bad:
        engine.ask({"state": STATE, "questions": {"q": _choice(OPTIONS, x_debias="rotations", x_rotations=MAX_ROTATIONS + 1)}})
    assert bad.value.status_code == 422 and "x_rotations" in str(bad.value)  # a validation error, as Jev shapes it
    with pytest.raises(SemifError):
        engine.ask({"state": STATE, "questions": {"q": _choice(OPTIONS, x_debias="shuffle")}})
    two = engine.ask({"state": STATE, "questions": {"q": _choice({"yes": None, "no": None}, x_debias="rotations")}}).answers["q"]
    assert len(two.model_extra["x_rotation_choices"]) == 2  # at most one order per option
    engine.check_invariants()


def test_bench_rotations_counts_flips_and_accuracy_on_labeled_requests(engine):
    """The benchmark's books on two labeled requests (its timings are the results file's business, not a test's)."""
    from semif_lib.measurement.bench.rotations import run_rotations
    from semif_lib.measurement.quality.labeled import read_labeled

    from support.paths import DATA

    items = read_labeled([DATA / "labeled" / "routing.jsonl"], limit=2)
    summary = run_rotations(engine, items, rotations=4, progress=False)
    assert summary["requests"] == 2 and summary["choice_questions"] == 2
    for variant in ("plain", "rotations"):
        assert summary["flip_rate"][variant] in (0.0, 0.5, 1.0)
        assert summary["accuracy"][variant] in (0.0, 0.5, 1.0)
        assert summary["seconds"][variant] > 0
    assert summary["tokens_decoded"]["plain"] < summary["tokens_decoded"]["rotations"] < 4 * summary["tokens_decoded"]["plain"]
    assert summary["token_ratio"] == pytest.approx(summary["tokens_decoded"]["rotations"] / summary["tokens_decoded"]["plain"], abs=1e-3)
    right = sum(engine.ask(item.request).answers["queue"].choice == item.labels["queue"] for item in items)
    assert summary["accuracy"]["plain"] == pytest.approx(right / 2)  # the plain variant is the request as labeled
    engine.check_invariants()


def test_docs_quote_the_committed_rotations_run():
    """docs/quality.md's rotation table and command are the committed results file's, so a rerun moves both."""
    import json

    from semif_lib.measurement.bench.rotations import format_rotations

    from support.paths import ROOT

    doc = json.loads((ROOT / "results" / "bench" / "rotations.json").read_text())
    quality = (ROOT / "docs" / "quality.md").read_text()
    assert format_rotations(doc) in quality
    assert doc["command"] and doc["command"].split(" --output")[0] in quality
    assert doc["token_ratio"] and doc["long_states"]["token_ratio"]  # the work ratio beside the time ratio


@contextmanager
def server_defaults(engine, **values):
    """The session engine as a server started with those settings (SEMIF_DEFAULT_DEBIAS, ...); its own ones afterwards."""
    before = engine.settings
    engine.settings = before.model_copy(update=values)
    try:
        yield engine
    finally:
        engine.settings = before


def _mixed_request(**spelled):
    """Choice questions that leave x_debias unset, opt out, or set only x_rotations; a noul and a score no default touches.

    `spelled` writes x_ fields into the choice questions by id: the same request with a server's defaults spelled out.
    """
    questions = {
        "default": _choice(OPTIONS), "opt_out": _choice(OPTIONS, x_debias="none"), "two": _choice(OPTIONS, x_rotations=2),
        "upset": {"type": "noul", "instructions": "Is the customer upset?"},
        "urgency": {"type": "score", "instructions": "How urgent is it?", "criteria": ["low", "medium", "high"]}}
    return {"state": STATE, "questions": {qid: {**q, **spelled.get(qid, {})} for qid, q in questions.items()}}


SPELLED = {"default": {"x_debias": "rotations", "x_rotations": 3}, "two": {"x_debias": "rotations"}}  # SEMIF_DEFAULT_*, written in


def _check_server_default(answers, expected, same_path):
    """Wire `answers` from a server with SEMIF_DEFAULT_DEBIAS=rotations, SEMIF_DEFAULT_ROTATIONS=3, against `expected`: the
    same request with those defaults spelled out, answered by a server without them. On the same path (one engine) the
    numbers are the same; across processes they differ by quantized CPU noise (support.answers' bounds)."""
    from support.answers import MAX_ABS_DIFF, MEAN_ABS_DIFF

    assert answers["default"]["x_debias"] == "rotations" and len(answers["default"]["x_rotation_choices"]) == 3
    assert len(answers["two"]["x_rotation_choices"]) == 2  # a question's own x_rotations wins over SEMIF_DEFAULT_ROTATIONS
    for qid in ("opt_out", "upset", "urgency"):
        assert "x_debias" not in answers[qid] and "x_rotation_choices" not in answers[qid], qid
    gaps = [abs(answers[qid]["probabilities"][name] - expected[qid]["probabilities"][name])
            for qid in ("default", "opt_out", "two") for name in OPTIONS]
    if same_path:
        assert max(gaps) < 1e-4 and all(answers[q].get("x_rotation_choices") == expected[q].get("x_rotation_choices") for q in answers)
    else:
        assert max(gaps) <= MAX_ABS_DIFF and sum(gaps) / len(gaps) <= MEAN_ABS_DIFF, gaps


def _wire_answers(response):
    return response.model_dump(mode="json", by_alias=True, exclude_none=True)["answers"]


def test_a_server_default_rotates_the_choices_that_leave_x_debias_unset_and_a_request_opts_out(engine):
    """SEMIF_DEFAULT_DEBIAS=rotations answers a request as if its defaults were written in; without it nothing rotates."""
    expected = _wire_answers(engine.ask(_mixed_request(**SPELLED)))
    with server_defaults(engine, default_debias="rotations", default_rotations=3):
        answers = _wire_answers(engine.ask(_mixed_request()))
        engine.check_invariants()
    _check_server_default(answers, expected, same_path=True)  # the same branches in the same batch: the same numbers
    unset = _wire_answers(engine.ask(_mixed_request()))  # the shipped default, none: x_rotations alone only tunes a rotation
    assert "x_debias" not in unset["default"] and "x_debias" not in unset["two"]


def test_the_rotation_settings_are_validated_where_they_are_read(monkeypatch):
    """A bad SEMIF_DEFAULT_DEBIAS or SEMIF_DEFAULT_ROTATIONS stops the server with the variable and the rule, not a traceback."""
    from semif_lib.errors import SemifError
    from semif_lib.settings import load_settings

    monkeypatch.setenv("SEMIF_DEFAULT_DEBIAS", "shuffle")
    with pytest.raises(SemifError, match="SEMIF_DEFAULT_DEBIAS"):
        load_settings()
    monkeypatch.setenv("SEMIF_DEFAULT_DEBIAS", "rotations")
    monkeypatch.setenv("SEMIF_DEFAULT_ROTATIONS", "9")
    with pytest.raises(SemifError, match="SEMIF_DEFAULT_ROTATIONS.*8"):
        load_settings()
    monkeypatch.setenv("SEMIF_DEFAULT_ROTATIONS", "3")
    assert (load_settings().default_debias, load_settings().default_rotations) == ("rotations", 3)


@pytest.mark.model
@pytest.mark.server
def test_semif_serve_with_semif_default_debias_serves_the_default_and_the_opt_out(engine):
    """The same through `semif serve` reading SEMIF_DEFAULT_DEBIAS / SEMIF_DEFAULT_ROTATIONS from its environment, on /invocations."""
    import httpx

    from support.servers import SEMIF_SERVE, free_port, running_server, server_env

    expected = _wire_answers(engine.ask(_mixed_request(**SPELLED)))
    port = free_port()
    with running_server(SEMIF_SERVE, server_env(port, SEMIF_DEFAULT_DEBIAS="rotations", SEMIF_DEFAULT_ROTATIONS="3"), port) as server:
        response = httpx.post(server.url + "/invocations", json=_mixed_request(), timeout=120)
    assert response.status_code == 200, response.text
    _check_server_default(response.json()["answers"], expected, same_path=False)  # another process and context size
