"""x_after: questions conditioned on an earlier answer, asked in a later stage on the same prefix."""

from __future__ import annotations

import pytest

from semif_lib.decision.conditioning import order_stages
from semif_lib.decision.schema import parse_request
from semif_lib.errors import InvalidRequestError

STATE = "The customer writes: I was charged twice for my subscription this month and want my money back."
QUEUE = {"type": "choice", "instructions": "Which team should handle this ticket?",
         "criteria": {"billing": "payments, refunds", "technical": "bugs", "sales": "new plans"}}
URGENT = {"type": "noul", "instructions": "Is this urgent for the team that handles it?"}


def _noul(after=None):
    return {"type": "noul", "instructions": "q", **({"x_after": after} if after else {})}


def test_stages_follow_the_names_and_refuse_what_cannot_be_ordered():
    req = parse_request({"state": "s", "questions": {"c": _noul("b"), "b": _noul("a"), "a": _noul(), "d": _noul()}})
    assert order_stages(req.questions) == [["a", "d"], ["b"], ["c"]]
    assert order_stages(parse_request({"state": "s", "questions": {"a": _noul(), "b": _noul()}}).questions) == [["a", "b"]]
    cases = {
        "unknown": ({"a": _noul("zz")}, "questions.a.x_after", "'zz', which is not a question"),
        "itself": ({"a": _noul("a")}, "questions.a.x_after", "the question itself"),
        "cycle": ({"a": _noul("b"), "b": _noul("c"), "c": _noul("a"), "d": _noul()}, "questions.a.x_after", "questions a, b, c"),
    }
    for name, (questions, field, message) in cases.items():
        with pytest.raises(InvalidRequestError) as err:
            order_stages(parse_request({"state": "s", "questions": questions}).questions)
        assert err.value.status_code == 400 and err.value.field == field and message in str(err.value), name


@pytest.mark.model
def test_a_conditioned_question_is_asked_with_the_answer_it_names(engine):
    """The second stage equals the question asked by hand with the given stated; its prefix comes from the cache."""
    engine.clear_cache()
    response = engine.ask({"state": STATE, "questions": {"urgent": {**URGENT, "x_after": "queue"}, "queue": QUEUE}})
    engine.check_invariants()
    assert list(response.answers) == ["urgent", "queue"]  # the request's order, whatever the stages
    chosen = response.answers["queue"].choice
    urgent = response.answers["urgent"]
    assert urgent.model_extra["x_after"] == {"question": "queue", "answer": chosen}
    by_hand = {**URGENT, "instructions": f"Given: the answer to 'queue' is {chosen!r}.\n{URGENT['instructions']}"}
    alone = engine.ask({"state": STATE, "questions": {"urgent": by_hand}}).answers["urgent"]
    assert urgent.noul == pytest.approx(alone.noul, abs=0.02)
    stages = response.timing["waves"]  # x_timing's public name for the stages
    assert len(stages) == 2 and response.usage.cached_tokens >= stages[1]["prefix_tokens"] > 0  # stage 2 hit the prefix
    conditioned = {"state": STATE, "questions": {"urgent": {**URGENT, "x_after": "queue"}, "queue": QUEUE}}
    [batched] = engine.score_batch([engine.resolve(conditioned)])
    assert batched.answers["urgent"].model_extra["x_after"]["answer"] == chosen
    assert batched.answers["urgent"].noul == pytest.approx(urgent.noul, abs=0.02)
    engine.check_invariants()
