"""Questions conditioned on earlier answers: `x_after: "queue"` appends that question's answer to this one's.

A request whose questions name others is scored in stages on the same prefix: the questions that
depend on nothing first, then those whose named question has been answered, and so on. Every stage
after the first finds the state's prefix in the cache, so it costs its branches only. The answer
appended is the argmax (the option's name, "yes"/"no", or the level's text), stated as a given in
the question's own suffix; the conditioned answer carries `x_after` saying what it was given.

Unknown names, a question naming itself and cycles are refused with a 400 naming the questions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..errors import InvalidRequestError
from .responses import DecisionResponse, Usage
from .schema import ChoiceQuestion, NoulQuestion, render_content

if TYPE_CHECKING:
    from .request import InternalRequest
    from .schema import Question

__all__ = ["order_stages", "score_in_stages"]


def order_stages(questions: dict[str, "Question"]) -> list[list[str]]:
    """Question ids in stages: each question after the one it names (`x_after`); one stage when none names another."""
    after = {qid: q.after for qid, q in questions.items() if q.after is not None}
    for qid, named in after.items():
        if named not in questions:
            raise InvalidRequestError(f"questions.{qid}.x_after names {named!r}, which is not a question of this request",
                                      field=f"questions.{qid}.x_after")
        if named == qid:
            raise InvalidRequestError(f"questions.{qid}.x_after names the question itself", field=f"questions.{qid}.x_after")
    stages: list[list[str]] = []
    placed: set[str] = set()
    while len(placed) < len(questions):
        stage = [qid for qid in questions if qid not in placed and (qid not in after or after[qid] in placed)]
        if not stage:
            cycle = sorted(qid for qid in questions if qid not in placed)
            raise InvalidRequestError(f"questions {', '.join(cycle)}: x_after forms a cycle, so none of them can be asked first",
                                      field=f"questions.{cycle[0]}.x_after")
        stages.append(stage)
        placed.update(stage)
    return stages


def describe_answer(question: "Question", answer: Any) -> str:
    """The argmax as text: the option's name, yes/no, or the level's text."""
    if isinstance(question, ChoiceQuestion):
        return str(answer.choice)
    if isinstance(question, NoulQuestion):
        return "yes" if answer.noul >= 0.5 else "no"
    top = max(range(len(question.criteria)), key=lambda i: answer.probabilities.get(str(i), 0.0))
    return render_content(question.criteria[top]).strip()


def _conditioned(question: "Question", named: str, given: str) -> "Question":
    text = render_content(question.instructions).strip() if question.instructions is not None else ""
    line = f"Given: the answer to {named!r} is {given!r}."
    return question.model_copy(update={"instructions": f"{line}\n{text}" if text else line})


def score_in_stages(score_one: Callable[["InternalRequest"], DecisionResponse], request: "InternalRequest",
                    stages: list[list[str]]) -> DecisionResponse:
    """Score `request` stage by stage with `score_one` (one engine pass each, the prefix cached after the first)."""
    answers: dict[str, Any] = {}
    responses: list[DecisionResponse] = []
    for stage in stages:
        given = {qid: describe_answer(request.questions[q.after], answers[q.after])
                 for qid in stage if (q := request.questions[qid]).after is not None}
        questions = {qid: _conditioned(request.questions[qid], request.questions[qid].after, given[qid]) if qid in given
                     else request.questions[qid] for qid in stage}
        response = score_one(request.with_questions(questions))
        for qid in stage:
            answers[qid] = response.answers[qid]
            if qid in given:
                answers[qid].x_after = {"question": request.questions[qid].after, "answer": given[qid]}
        responses.append(response)
    first = responses[0]
    usage = Usage(input_tokens=sum(r.usage.input_tokens for r in responses), output_tokens=0,
                  cached_tokens=sum(r.usage.cached_tokens for r in responses))
    timing = {"mode": first.timing.get("mode"), "waves": [r.timing for r in responses]}  # x_timing's public name for the stages
    return DecisionResponse(model=first.model, answers={qid: answers[qid] for qid in request.questions}, usage=usage,
                            timing=timing, model_info=first.model_info)
