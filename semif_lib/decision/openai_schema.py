"""The OpenAI Decisions wire (`client.decisions.create(...)` of the `openai` SDK): its parser and its answer builder.

The request and answer shapes are those of the SDK's own types (`openai/types/decision_create_params.py`,
`openai/types/decision.py`). A body is parsed here into the one internal request the engine scores,
`schema.DecisionRequest`, exactly as a Jev body is, so the prefix cache, batching, limits and errors
behave the same whichever wire a client speaks:

- `input` text is the state; a list of messages (system, developer, user, assistant, function and
  custom tool calls and their outputs) becomes the request's `conversation`, rendered through the
  model's chat template (`prompt.build_messages`), so an agent's conversation is the state;
- `questions[i]` becomes question `"i"`: `predicate` a noul, `choice` a choice over its typed values
  (a boolean shows as `true` / `false`), `score` a score over its labelled levels;
- `prompt_cache_key` becomes the request's prefix-cache partition;
- `x_batch_invariant` and `x_preamble` are the Jev wire's flags of the same names.

Parts the engine cannot read (images) are a 400 naming them. `build_decision` turns the engine's
answers back into the SDK's `Decision`: answers in question order, each with its `name` (or null),
`usage.input_tokens_details.cached_tokens` from the prefix cache, and the same `x_` extensions as the
Jev wire (`schema`). A `refusal` answer is never invented: it is returned only where the loaded calibration file's
abstention rule (`decision.conformal`, fitted by `semif eval --calibrate`) says to abstain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, StrictBool, StrictStr, Tag, TypeAdapter, ValidationError, field_validator

from ..errors import InvalidRequestError, RequestValidationError
from ..limits import MAX_NAME_CHARS, check_limit
from .responses import DecisionResponse
from .schema import (
    MAX_SCORE_LEVELS,
    MIN_CHOICE_OPTIONS,
    MIN_SCORE_LEVELS,
    MODEL_FIELD_DOC,
    ChoiceQuestion,
    DecisionRequest,
    NoulQuestion,
    ScoreQuestion,
    render_content,
)
from .validation import TEXT_ONLY, check_json_value, format_validation_error

__all__ = ["DecisionsBody", "OpenAIRequest", "build_decision", "is_decisions_body", "parse_decisions_request"]


class _Part(BaseModel):
    model_config = ConfigDict(extra="ignore")


class InputText(_Part):
    type: Literal["input_text"]
    text: str


class OutputText(_Part):
    type: Literal["output_text"]
    text: str


class Refusal(_Part):
    type: Literal["refusal"]
    refusal: str


class InputJSON(_Part):
    type: Literal["input_json"]
    data: Union[dict[str, Any], list[dict[str, Any]]]


class InputImage(_Part):
    """Accepted by the schema only to be refused by name: the engine reads text. `image_url` is the
    Chat Completions spelling of an image part (`{"type": "image_url", "image_url": {"url"}}`)."""

    type: Literal["input_image", "image_url"]
    image_url: Any = None


Part = Annotated[Union[InputText, OutputText, Refusal, InputJSON, InputImage], Field(discriminator="type")]
Contents = Union[str, list[Part]]


class Message(_Part):
    type: Literal["message"] = "message"
    role: Literal["user", "developer", "system", "assistant"]
    content: Contents


Name = Annotated[str, Field(max_length=MAX_NAME_CHARS)]  # a name, never content: bounded (`limits.MAX_NAME_CHARS`)


class FunctionCall(_Part):
    type: Literal["function_call"]
    call_id: Name
    name: Name
    arguments: str
    namespace: Name | None = None


class CustomToolCall(_Part):
    type: Literal["custom_tool_call"]
    call_id: Name
    name: Name
    input: str
    namespace: Name | None = None


class CallOutput(_Part):
    type: Literal["function_call_output", "custom_tool_call_output"]
    call_id: Name
    output: Contents


def _item_kind(value: Any) -> str:
    kind = value.get("type", "message") if isinstance(value, dict) else getattr(value, "type", "message")
    return "output" if kind in ("function_call_output", "custom_tool_call_output") else kind


InputItem = Annotated[Union[Annotated[Message, Tag("message")], Annotated[FunctionCall, Tag("function_call")],
                            Annotated[CustomToolCall, Tag("custom_tool_call")], Annotated[CallOutput, Tag("output")]],
                      Discriminator(_item_kind)]
Instructions = Union[str, list[Part]]


class _Ask(_Part):
    instructions: Instructions
    name: Name | None = None


class Predicate(_Ask):
    type: Literal["predicate"]


class ChoiceOption(_Part):
    value: Union[StrictStr, StrictBool] = Field(..., description="Typed: a string and a boolean with the same text are distinct.")
    description: str | None = None

    @field_validator("value")
    @classmethod
    def _bounded(cls, value: str | bool) -> str | bool:
        if isinstance(value, str) and len(value) > MAX_NAME_CHARS:
            raise ValueError(f"String should have at most {MAX_NAME_CHARS} characters")
        return value


class Choice(_Ask):
    type: Literal["choice"]
    choices: list[ChoiceOption] = Field(..., min_length=MIN_CHOICE_OPTIONS)

    @field_validator("choices", mode="before")
    @classmethod
    def _within_the_options_limit(cls, value: Any) -> Any:
        if isinstance(value, list):
            check_limit("max_options", len(value), field="choices")  # the same 413 as a Jev choice
        return value

    @field_validator("choices")
    @classmethod
    def _distinct_values(cls, value: list[ChoiceOption]) -> list[ChoiceOption]:
        seen: set[str] = set()
        for option in value:
            key = _choice_key(option.value).strip().casefold()
            if not key or key in seen:
                raise ValueError(f"choice value {option.value!r} is empty or repeats another as the prompt shows it "
                                 "(case-insensitive; a boolean shows as true / false)")
            seen.add(key)
        return value


class Level(_Part):
    label: Name
    description: str | None = None


class Score(_Ask):
    type: Literal["score"]
    levels: list[Level] = Field(..., min_length=MIN_SCORE_LEVELS, max_length=MAX_SCORE_LEVELS)


OpenAIQuestion = Annotated[Union[Predicate, Choice, Score], Field(discriminator="type")]


class OpenAIRequest(BaseModel):
    """`{"model", "input", "questions": [...], "prompt_cache_key"?}`; `prompt_cache_options` and `safety_identifier`
    are accepted and have no effect here (the prefix cache has one implicit breakpoint, the end of the state)."""

    model_config = ConfigDict(extra="ignore")

    model: str | None = Field(None, max_length=MAX_NAME_CHARS, description=MODEL_FIELD_DOC)
    input: Union[str, list[InputItem]]
    questions: list[OpenAIQuestion] = Field(..., min_length=1)
    prompt_cache_key: Name | None = Field(None, description="The prefix-cache partition this request's state is cached in.")
    prompt_cache_options: dict[str, Any] | None = None
    safety_identifier: Name | None = None
    x_batch_invariant: StrictBool | None = Field(None, description="As on the Jev wire (`schema.DecisionRequest`).")
    x_preamble: StrictBool | None = Field(None, description="As on the Jev wire (`schema.DecisionRequest`).")

    @field_validator("questions", mode="before")
    @classmethod
    def _within_the_questions_limit(cls, value: Any) -> Any:
        if isinstance(value, list):
            check_limit("max_questions", len(value), field="questions")
        return value


_ADAPTER = TypeAdapter(OpenAIRequest)


@dataclass(frozen=True)
class DecisionsBody:
    """What the answer builder needs of the request: the questions as asked (names, typed values, labels)."""

    questions: tuple[Predicate | Choice | Score, ...]


def is_decisions_body(data: Any) -> bool:
    """Whether a decoded body on `/invocations` is an OpenAI Decisions request (`input`, and `questions` a list)."""
    return isinstance(data, dict) and "input" in data and isinstance(data.get("questions"), list)


# ----------------------------------------------------------------- parsing
def _text_of(content: Contents, where: str) -> str:
    """A message's or output's text; an image part is refused by its path."""
    if isinstance(content, str):
        return content
    texts = []
    for k, part in enumerate(content):
        if isinstance(part, InputImage):
            raise InvalidRequestError(f"{where}[{k}]: {part.type} parts are not supported: {TEXT_ONLY}; "
                                      "describe the image in an input_text part", field=f"{where}[{k}]")
        texts.append(render_content(part.data) if isinstance(part, InputJSON) else
                     f"(refused: {part.refusal})" if isinstance(part, Refusal) else part.text)
    return "\n\n".join(texts)


def _conversation(items: list[Any]) -> list[dict[str, str]]:
    """The input items as chat turns; every tool output must answer a call made before it."""
    turns: list[dict[str, str]] = []
    calls: dict[str, str] = {}  # call_id -> the function or tool it called
    for i, item in enumerate(items):
        where = f"input[{i}]"
        if isinstance(item, Message):
            role = "system" if item.role == "developer" else item.role
            turns.append({"role": role, "content": _text_of(item.content, f"{where}.content")})
        elif isinstance(item, (FunctionCall, CustomToolCall)):
            name = f"{item.namespace}.{item.name}" if item.namespace else item.name
            calls[item.call_id] = name
            what = f"with arguments {item.arguments}" if isinstance(item, FunctionCall) else f"with input {item.input}"
            turns.append({"role": "assistant", "content": f"Called {name} (call {item.call_id}) {what}"})
        else:
            if item.call_id not in calls:
                raise RequestValidationError(f"{where}.call_id: {item.call_id!r} matches no function or tool call before it",
                                             field=f"{where}.call_id", loc=["input", i, "call_id"])
            output = _text_of(item.output, f"{where}.output")
            turns.append({"role": "tool", "content": f"Output of {calls[item.call_id]} (call {item.call_id}):\n{output}"})
    return turns


def _choice_key(value: str | bool) -> str:
    """How a typed value is shown in the prompt and keyed inside: a boolean as JSON spells it."""
    return ("true" if value else "false") if isinstance(value, bool) else value


def _internal_question(question: Predicate | Choice | Score, where: str) -> NoulQuestion | ChoiceQuestion | ScoreQuestion:
    instructions = _text_of(question.instructions, f"{where}.instructions")
    if isinstance(question, Predicate):
        return NoulQuestion(instructions=instructions)
    if isinstance(question, Choice):
        return ChoiceQuestion(instructions=instructions, criteria={_choice_key(c.value): c.description for c in question.choices})
    return ScoreQuestion(instructions=instructions,
                         criteria=[f"{lv.label}: {lv.description}" if lv.description else lv.label for lv in question.levels])


def parse_decisions_request(data: Any) -> tuple[DecisionRequest, DecisionsBody]:
    """An OpenAI Decisions body as the internal request, and what its answers need.

    422 `RequestValidationError` naming the field for a malformed body (rendered as OpenAI's 400 on
    that wire), 413 over a limit, 400 for an image part.
    """
    check_json_value(data)
    if not isinstance(data, dict):
        raise RequestValidationError("request must be a JSON object", field="body", kind="model_type")
    try:
        body = _ADAPTER.validate_python(data)
        questions = {str(i): _internal_question(q, f"questions[{i}]") for i, q in enumerate(body.questions)}
        conversation = None if isinstance(body.input, str) else _conversation(body.input)
        request = DecisionRequest(model=body.model, state=body.input if isinstance(body.input, str) else "", questions=questions,
                                  x_batch_invariant=body.x_batch_invariant, x_preamble=body.x_preamble)
    except ValidationError as exc:
        raise format_validation_error(exc) from exc
    if conversation is not None and not conversation:
        raise RequestValidationError("input: an empty list; send text or at least one message", field="input", loc=["input"])
    return request.with_context(conversation, body.prompt_cache_key), DecisionsBody(tuple(body.questions))


# ----------------------------------------------------------------- answers
def _extensions(answer: Any) -> dict[str, Any]:
    """The internal answer's `x_` fields (option mass, top probability, calibration), but not the noul's own probabilities."""
    return {k: v for k, v in answer.model_dump(mode="json").items() if k.startswith("x_") and k != "x_probabilities"}


def _predicate(question: Predicate, answer: Any) -> dict[str, Any]:
    return {"type": "predicate", "name": question.name, "probability": answer.noul, **_extensions(answer)}


def _choice(question: Choice, answer: Any) -> dict[str, Any]:
    values = {_choice_key(c.value): c.value for c in question.choices}
    return {"type": "choice", "name": question.name, "choice": values[answer.choice], "confidence": answer.confidence,
            "probabilities": [{"value": v, "probability": answer.probabilities[k]} for k, v in values.items()], **_extensions(answer)}


def _score(question: Score, answer: Any) -> dict[str, Any]:
    return {"type": "score", "name": question.name, "score": answer.score, "confidence": answer.confidence,
            "probabilities": [{"value": i, "label": lv.label, "probability": answer.probabilities[str(i)]}
                              for i, lv in enumerate(question.levels)], **_extensions(answer)}


# One builder per question type.
_ANSWER_BUILDERS = {"predicate": _predicate, "choice": _choice, "score": _score}


def _build_answer(question: Predicate | Choice | Score, answer: Any) -> dict[str, Any]:
    """The question's answer, or a `refusal` where the loaded calibration file's abstention rule says to abstain.

    The refusal keeps the `x_` fields (the probabilities behind it, the prediction set), so it can be audited.
    """
    if (answer.model_extra or {}).get("x_abstain") is True:
        return {"type": "refusal", "name": question.name, **_extensions(answer)}
    return _ANSWER_BUILDERS[question.type](question, answer)


def build_decision(response: DecisionResponse, body: DecisionsBody) -> dict[str, Any]:
    """The SDK's `Decision`: answers in question order, usage with the prefix cache's hits, and the `x_` extensions."""
    answers = [_build_answer(q, response.answers[str(i)]) for i, q in enumerate(body.questions)]
    usage = response.usage
    timing = response.timing
    cached = usage.cached_tokens
    written = max(0, int(timing.get("prefix_tokens", 0)) - cached) if timing.get("mode") in ("serial", "parallel") else 0
    return {
        "model": response.model,
        "answers": answers,
        "usage": {"input_tokens": usage.input_tokens,
                  "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": written},
                  "output_tokens": usage.output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
                  "total_tokens": usage.input_tokens + usage.output_tokens},
        "x_timing": timing,
        "x_model_info": response.model_info,
    }
