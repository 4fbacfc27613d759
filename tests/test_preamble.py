"""The preamble read, not lost (`x_preamble`), on the real models: where Qwen2.5-Coder-0.5B, asked to answer in bold,
puts its first token on `**`, the options read after it are added back and the option mass rises; where the lead-in
leads nowhere (SmolLM2's "The" -> " customer"), the answer is the plain one, bit for bit, and says so."""
from __future__ import annotations

import json

import numpy as np
import pytest

from semif_lib.decision.backend import mark_rows
from semif_lib.decision.readout import logsumexp
from semif_lib.decision.schema import parse_request
from semif_lib.measurement.bench.preamble import format_preamble

from support.faults import walk_decode_faults
from support.paths import DATA, ROOT

STATE = "Customer: I was charged twice for my subscription this month and I want the extra charge refunded."
BOLD = "Is the customer asking for a refund? Answer in bold markdown, like **Yes**."


def _body(preamble: bool | None, instructions: str = BOLD) -> dict:
    body = {"state": STATE, "questions": {"refund": {"type": "noul", "instructions": instructions},
                                          "team": {"type": "choice", "instructions": "Which team should take this?",
                                                   "criteria": {"billing": None, "technical": None, "sales": None}}}}
    if preamble is not None:
        body["x_preamble"] = preamble
    return body


def _decode_by_hand(engine, tokens: list[int], lead: int) -> tuple[np.ndarray, np.ndarray]:
    """The prompt's last row, then the row after `lead` decoded right after it: the arithmetic outside the modes."""
    seq, n = engine.store.scratch_seq, len(tokens)
    try:
        first = engine.backend.decode(tokens, range(n), [(seq,)] * n, mark_rows(n, [n - 1]))[0]
        return first, engine.backend.decode([lead], [n], [(seq,)], [True])[0]
    finally:
        engine.store.clear_scratch()


def test_a_model_that_leads_with_bold_gets_its_option_mass_back(qwen_engine):
    engine = qwen_engine
    plain = engine.ask(_body(False), mode="fresh").answers["refund"]
    read = engine.ask(_body(True), mode="fresh").answers["refund"]
    extra = read.model_extra
    assert extra["x_preamble_token"] == "**" and extra["x_preamble_used"] is True and extra["x_preamble_mass"] > 0.2
    assert read.option_mass > plain.option_mass + 0.2 and read.option_mass > 0.9
    # by hand: P(o) + P(**) P(o | **), renormalised over the options
    prep = engine.prepare(engine.resolve(_body(False)))
    branch = next(b for b in prep.branches if prep.plans[b.plan_index].qid == "refund")
    slots = prep.slot_tokens[branch.plan_index]
    bold = engine.backend.tokenize("**")
    assert len(bold) == 1
    first, then = _decode_by_hand(engine, prep.prefix + branch.tokens, bold[0])
    joint = np.exp(first[slots] - logsumexp(first)) + np.exp(first[bold[0]] - logsumexp(first)) * np.exp(then[slots] - logsumexp(then))
    assert read.probabilities["true"] == pytest.approx(joint[0] / joint.sum(), abs=1e-6)
    assert read.option_mass == pytest.approx(joint.sum(), abs=1e-6)
    engine.check_invariants()


@pytest.mark.parametrize("mode", ["parallel", "serial", "fresh"])
def test_every_mode_reads_the_preamble_alike(qwen_engine, mode):
    engine = qwen_engine
    reference = engine.ask(_body(True), mode="fresh").answers["refund"]
    got = engine.ask(_body(True), mode=mode).answers["refund"]
    assert got.model_extra["x_preamble_used"] is True
    assert got.probabilities["true"] == pytest.approx(reference.probabilities["true"], abs=0.05)
    engine.check_invariants()


def test_a_lead_in_the_options_do_not_follow_leaves_the_plain_answer_bit_for_bit(engine):
    plain = engine.ask(_body(False, "Is the customer asking for a refund?"))
    read = engine.ask(_body(True, "Is the customer asking for a refund?"))
    for qid, answer in read.answers.items():
        assert answer.model_extra["x_preamble_used"] is False, qid
        assert answer.probabilities == plain.answers[qid].probabilities and answer.option_mass == plain.answers[qid].option_mass
    assert "x_preamble_used" not in plain.answers["refund"].model_extra
    assert read.answers["refund"].model_extra["x_preamble_token"] == "The"  # the lead-in read, and why it was left out
    engine.check_invariants()


def test_the_server_default_reads_preambles_and_a_request_opts_out(qwen_engine):
    engine = qwen_engine
    plain = engine.settings
    engine.settings = plain.model_copy(update={"preamble_readout": True})  # the setter hands them to the preparer too
    try:
        by_default = engine.ask(_body(None)).answers["refund"]
        opted_out = engine.ask(_body(False)).answers["refund"]
    finally:
        engine.settings = plain
    assert by_default.model_extra["x_preamble_used"] is True and "x_preamble_used" not in opted_out.model_extra


def test_the_flag_rides_both_wires_and_a_non_boolean_is_refused_by_name():
    from semif_lib.decision.openai_schema import parse_decisions_request
    from semif_lib.errors import RequestValidationError

    request, _ = parse_decisions_request({"model": "m", "input": STATE, "x_preamble": True,
                                          "questions": [{"type": "predicate", "instructions": BOLD}]})
    assert request.preamble is True and parse_request(_body(None)).preamble is None
    with pytest.raises(RequestValidationError) as info:
        parse_request({**_body(None), "x_preamble": 1})
    assert info.value.status_code == 422 and "x_preamble" in str(info.value)


@pytest.mark.model
def test_a_failed_preamble_decode_leaves_the_books_balanced_and_the_next_answer_unchanged(settings, qwen_model_path):
    """A fault injected at every decode of a request that reads a preamble, the lead-in's own decode included."""
    reference, answers = walk_decode_faults(settings, _body(True), cold=False, model_path=qwen_model_path)
    for call, response in answers:
        got = response.answers["refund"]
        assert got.model_extra["x_preamble_used"] is True
        assert got.probabilities["true"] == pytest.approx(reference.answers["refund"].probabilities["true"], abs=0.02), call


@pytest.mark.model
def test_the_preamble_benchmark_writes_every_style_and_arm(tmp_path):
    from semif_lib.cli import main

    out = tmp_path / "preamble.json"
    assert main(["bench", "preamble", str(DATA / "labeled" / "severity.jsonl"), "--limit", "2", "--threads", "2", "--quiet",
                 "--output", str(out)]) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["requests"] == 2 and set(doc["styles"]) == {"as written", "asked in bold"}
    for style in doc["styles"].values():
        plain, read = style["plain"], style["preamble"]
        assert plain["preamble_used"] == 0 and plain["questions"] == read["questions"] == 2
        assert read["option_mass"] >= plain["option_mass"]  # the same first rows; a used lead-in only adds mass
        assert style["cost_ratio"] > 0


@pytest.mark.parametrize("model", ["SmolLM2-135M-Instruct.Q4_1", "Qwen2.5-Coder-0.5B-Instruct-AWQ.Q4_K_M"])
def test_the_docs_quote_each_committed_preamble_file_as_the_benchmark_prints_it(model):
    doc = json.loads((ROOT / "results" / "bench" / f"preamble-{model}.json").read_text(encoding="utf-8"))
    assert format_preamble(doc) in (ROOT / "docs" / "quality.md").read_text(encoding="utf-8")
