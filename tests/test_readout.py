import math

import numpy as np
import pytest

from semif_lib.decision.preparer import pick_preamble_token
from semif_lib.decision.prompt import QuestionPlan
from semif_lib.decision.readout import (
    build_answer,
    read_marginal,
    read_sequence_scores,
    read_slot_logits,
    sum_sequence_logprobs,
)


def test_slot_readout_by_hand():
    row = np.array([0.0, math.log(3.0), 0.0, 0.0], dtype=np.float32)  # exp: 1, 3, 1, 1 -> Z = 6
    logits, probs, mass = read_slot_logits(row, [1, 2])
    assert probs == pytest.approx([0.75, 0.25])
    assert mass == pytest.approx(4 / 6)
    assert logits == pytest.approx([math.log(3.0), 0.0], abs=1e-6)


def test_the_marginal_readout_adds_the_options_read_after_the_preamble_by_hand():
    row = np.log(np.array([0.2, 0.1, 0.6, 0.1]))  # options 0 and 1 hold 0.3; token 2 (a lead-in) holds 0.6
    after = np.log(np.array([0.7, 0.2, 0.05, 0.05]))  # after it the options hold 0.9
    logits, probs, mass, info = read_marginal(row, [0, 1], 2, after, [0, 1])
    joint = np.array([0.2 + 0.6 * 0.7, 0.1 + 0.6 * 0.2])
    assert info == {"preamble_mass": pytest.approx(0.6), "preamble_used": True}
    assert mass == pytest.approx(joint.sum()) and probs == pytest.approx(joint / joint.sum())
    assert logits == pytest.approx(np.log(joint))
    # a lead-in after which the options are rarer than at the start ("The" -> " answer") leaves the plain reading
    rare = np.log(np.array([0.1, 0.1, 0.1, 0.7]))
    logits, probs, mass, info = read_marginal(row, [0, 1], 2, rare, [0, 1])
    assert info["preamble_used"] is False and mass == pytest.approx(0.3) and probs == pytest.approx([2 / 3, 1 / 3])


def test_the_preamble_candidate_is_the_likeliest_token_that_is_no_option_and_no_control():
    row = np.log(np.array([0.4, 0.3, 0.2, 0.1] + [1e-6] * 96))
    assert pick_preamble_token(row, [0], lambda t: False) == 1
    assert pick_preamble_token(row, [0], lambda t: t == 1) == 2  # an end of turn leads to no answer
    assert pick_preamble_token(row, [0, 1, 2, 3], lambda t: False) > 3


def test_sequence_readout_by_hand():
    rows = [np.log(np.array([0.5, 0.25, 0.25])), np.log(np.array([0.1, 0.1, 0.8]))]
    assert sum_sequence_logprobs(rows, [0, 2]) == pytest.approx(math.log(0.5 * 0.8))
    scores, probs, mass = read_sequence_scores([math.log(0.4), math.log(0.1)], [2, 1], length_normalize=False)
    assert probs == pytest.approx([0.8, 0.2])
    assert mass == pytest.approx(0.5)
    scores, _, _ = read_sequence_scores([math.log(0.4), math.log(0.1)], [2, 1], length_normalize=True)
    assert scores[0] == pytest.approx(math.log(0.4) / 2)


def test_answer_shapes():
    score_plan = QuestionPlan("s", "score", ["0", "1", "2"], ["0", "1", "2"], "", legend={"0": "lo", "1": "mid", "2": "hi"})
    ans = build_answer(score_plan, np.array([0.2, 0.3, 0.5]), 0.9)
    # Jev's reference confidence: 1 - sum p_i |i - 2| / D, D = 2/3 for three levels; the top probability rides as x_
    assert ans.score == pytest.approx(1.3) and ans.confidence == pytest.approx(max(0.0, 1 - 0.7 / (2 / 3)))
    assert ans.top_probability == pytest.approx(0.5)
    assert ans.legend["2"] == "hi" and isinstance(ans.probabilities["0"], float)
    noul_plan = QuestionPlan("n", "noul", ["true", "false"], ["Yes", "No"], "")
    ans = build_answer(noul_plan, np.array([0.7, 0.3]), 0.4)
    assert ans.noul == pytest.approx(0.7) and ans.option_mass == pytest.approx(0.4)
    dumped = ans.model_dump()
    assert set(dumped) >= {"type", "noul", "x_probabilities", "x_option_mass"}  # extensions are x_ on the wire
    choice_plan = QuestionPlan("c", "choice", ["x", "y"], ["A", "B"], "")
    ans = build_answer(choice_plan, np.array([0.1, 0.9]), 0.5)
    assert ans.choice == "y" and ans.confidence == pytest.approx((0.9 - 0.5) / (1 - 0.5)) and ans.top_probability == pytest.approx(0.9)
