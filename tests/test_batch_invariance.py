"""Batch-invariant mode on the real models: a question's probabilities depend only on its state and its question, bit for
bit (alone, among 20, reversed, cold, cached, beside plain requests), on both model families; the default mode's
deviation is measured beside it and reported (`semif bench invariance` writes it to a results file)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from semif_lib.jsonlines import read_records
from semif_lib.measurement.bench.invariance import format_invariance

from support.faults import walk_decode_faults
from support.paths import DATA, ROOT


def _workload_state(n: int = 20) -> tuple[str, list[tuple[str, dict]]]:
    record = read_records(DATA / "workload_37x21.jsonl")[0]
    return record["state"], list(record["questions"].items())[:n]


def _probabilities(response) -> dict[str, np.ndarray]:
    return {qid: np.array(list(a.probabilities.values())) for qid, a in response.answers.items()}


def _body(state: str, items, invariant: bool | None) -> dict:
    body = {"state": state, "questions": dict(items)}
    if invariant is not None:
        body["x_batch_invariant"] = invariant
    return body


def test_an_invariant_answer_is_the_same_bits_alone_among_twenty_reversed_cold_and_cached(family_engine):
    engine = family_engine
    state, items = _workload_state()
    engine.clear_cache()
    cold = [engine.ask(_body(state, [item], True)) for item in items[:1]][0]  # the first question alone, nothing cached
    among = engine.ask(_body(state, items, True))
    reversed_ = engine.ask(_body(state, items[::-1], True))
    engine.ask(_body(state, items, None))  # a plain request puts its own (non-canonical) copy of the state in the cache
    alone = engine.score_batch([engine.resolve(_body(state, [item], True)) for item in items[::-1]])  # each alone, cached, in a batch call
    reference = _probabilities(among)
    assert cold.usage.cached_tokens == 0 and alone[-1].usage.cached_tokens == among.timing["prefix_tokens"]
    assert np.array_equal(_probabilities(cold)[items[0][0]], reference[items[0][0]])
    for qid, probs in _probabilities(reversed_).items():
        assert np.array_equal(probs, reference[qid]), qid
    for response in alone:
        ((qid, probs),) = _probabilities(response).items()
        assert np.array_equal(probs, reference[qid]), qid
        assert response.timing["batch_invariant"] is True and response.timing["mode"] == "serial"
    engine.check_invariants()


def test_the_default_mode_moves_answers_with_their_neighbours_and_says_how_far(family_engine):
    """The deviation the mode removes is real on these models (numerics, not meaning: each answer keeps its decision)."""
    engine = family_engine
    state, items = _workload_state()
    engine.clear_cache()
    among, reversed_ = (_probabilities(engine.ask(_body(state, order, False))) for order in (items, items[::-1]))
    deviation = max(float(np.abs(among[qid] - reversed_[qid]).max()) for qid in among)
    assert 0 < deviation < 0.1, deviation
    assert all(np.argmax(among[q]) == np.argmax(reversed_[q]) or np.ptp(np.sort(among[q])[-2:]) < 0.05 for q in among)
    engine.check_invariants()


def test_the_server_default_makes_requests_invariant_and_one_opts_out(engine):
    state, items = _workload_state(2)
    plain = engine.settings
    engine.settings = plain.model_copy(update={"batch_invariant": True})
    try:
        by_default = engine.ask(_body(state, items, None))
        opted_out = engine.ask(_body(state, items, False))
    finally:
        engine.settings = plain
    assert by_default.timing["batch_invariant"] is True and by_default.timing["mode"] == "serial"
    assert "batch_invariant" not in opted_out.timing and opted_out.timing["mode"] == "parallel"
    engine.check_invariants()


@pytest.mark.parametrize("model", ["SmolLM2-135M-Instruct.Q4_1", "Qwen2.5-Coder-0.5B-Instruct-AWQ.Q4_K_M"])
def test_the_docs_quote_each_committed_invariance_file_as_the_benchmark_prints_it(model):
    """docs/decision-path.md's tables are `format_invariance` of the committed files, whose invariant arm is exact."""
    doc = json.loads((ROOT / "results" / "bench" / f"invariance-{model}.json").read_text(encoding="utf-8"))
    assert doc["invariant"]["identical"] == doc["invariant"]["comparisons"] > 0
    assert format_invariance(doc) in (ROOT / "docs" / "decision-path.md").read_text(encoding="utf-8")


def test_a_flag_that_is_not_a_boolean_is_a_422_naming_it():
    from semif_lib.decision.schema import parse_request
    from semif_lib.errors import RequestValidationError

    state, items = _workload_state(1)
    with pytest.raises(RequestValidationError) as info:
        parse_request({**_body(state, items, None), "x_batch_invariant": "yes"})
    assert info.value.status_code == 422 and "x_batch_invariant" in str(info.value)


@pytest.mark.model
def test_a_failed_decode_in_the_mode_leaves_the_books_balanced_and_the_next_answer_unchanged(settings):
    """Faults injected at each decode of an invariant request: the error leaves, the books balance, and the same request
    then answers with the bits a fault-free engine gives."""
    state, items = _workload_state(3)
    state = state[:state.rindex("\n", 0, 2800)]  # about 800 tokens: two prefill rounds of n_ubatch 512, a first and a last
    body = _body(state, items, True)
    walks = {cold: walk_decode_faults(settings, body, cold=cold) for cold in (True, False)}
    assert len(walks[True][1]) >= len(walks[False][1]) + 2  # a cold request prefills too, in more than one batch
    for cold, (reference, answers) in walks.items():
        for call, answer in answers:
            got, want = _probabilities(answer), _probabilities(reference)
            assert all(np.array_equal(got[q], want[q]) for q in want), (cold, call)


@pytest.mark.model
def test_the_invariance_benchmark_writes_both_modes_side_by_side(tmp_path):
    from semif_lib.cli import main

    out = tmp_path / "invariance.json"
    assert main(["bench", "invariance", "--states", "1", "--questions", "3", "--threads", "2", "--quiet", "--output", str(out)]) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["states"] == 1 and doc["questions_per_state"] == 3 and doc["cost_ratio"] > 0
    assert doc["invariant"]["identical"] == doc["invariant"]["comparisons"] == 6 and doc["invariant"]["decisions_changed"] == 0
    assert doc["default"]["comparisons"] == 6 and doc["default"]["seconds_together_cold"] > 0
    assert doc["command"] is None and doc["model"]["file"].endswith(".gguf")  # called as a function, not as `semif bench`
