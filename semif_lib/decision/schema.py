"""Wire format: Jev / System One compatible requests and responses, as pydantic models.

A request asks typed questions about one state. Strict System One clients see exactly
the fields they know; our extras (`probabilities` on noul, `option_mass`, `usage.cached_tokens`,
`timing`, `model_info`) ride in keys such clients ignore.

`confidence` (choice and score) is the top-1 probability over the shown options,
`max_i p_i`. It is conditional on the listed options, not a calibrated chance of being
right: fit a calibration file on your own workload before gating actions on it.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
)

from ..errors import InvalidRequestError
from ..jsonlines import decode_utf8
from ..limits import check_limit, check_question_counts, hard_ceiling

# Work limits are `Settings` fields; the schema refuses what is over their hard ceiling with the
# same 413 the engine gives for the configured value (`limits`), before validating any question.
MAX_CHOICE_OPTIONS = hard_ceiling("max_options")
MAX_QUESTIONS = hard_ceiling("max_questions")
MIN_CHOICE_OPTIONS = 2
MIN_SCORE_LEVELS = 2
MAX_SCORE_LEVELS = 10
MAX_NESTING = 64  # JSON depth of a whole request; a structured state rarely needs 10

Content = Union[str, dict[str, Any], list[Any]]


def render_content(content: Content) -> str:
    """Deterministic text for a state or instructions given as a string or structured JSON."""
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False, indent=2)


class _Question(BaseModel):
    model_config = ConfigDict(extra="ignore")

    instructions: Content = Field(..., description="The question, as text or structured data.")
    readout: Literal["slot", "sequence"] = Field(
        "slot",
        description="`slot` reads one answer-token logit per option (default, one forward pass). "
        "`sequence` scores each option's own text as a sum of token log-probs; use it only when the "
        "option text itself carries meaning that a letter cannot (free-form labels, code identifiers).",
    )
    length_normalize: bool = Field(False, description="Sequence readout: divide each option's log-prob by its token count.")

    @field_validator("instructions")
    @classmethod
    def _non_empty(cls, value: Content) -> Content:
        if not render_content(value).strip():
            raise ValueError("instructions must not be empty")
        return value


class NoulCriteria(BaseModel):
    model_config = ConfigDict(extra="forbid")
    true: str | None = Field(None, description="What a yes means.")
    false: str | None = Field(None, description="What a no means.")


class NoulQuestion(_Question):
    """Yes/no: the answer is P(true)."""

    type: Literal["noul"] = "noul"
    criteria: NoulCriteria | None = None


class ChoiceQuestion(_Question):
    """One option out of 2 to 255, kept in insertion order."""

    type: Literal["choice"] = "choice"
    criteria: dict[str, str | None] = Field(..., min_length=MIN_CHOICE_OPTIONS, json_schema_extra={"maxProperties": MAX_CHOICE_OPTIONS})

    @field_validator("criteria", mode="before")
    @classmethod
    def _within_the_options_limit(cls, value: Any) -> Any:
        if isinstance(value, (dict, list)):
            check_limit("max_options", len(value), field="criteria")  # a 413, as in a request (which names the question)
        return value

    @field_validator("criteria")
    @classmethod
    def _distinct_names(cls, value: dict[str, str | None]) -> dict[str, str | None]:
        seen: set[str] = set()
        for name in value:
            key = name.strip().casefold()
            if not key:
                raise ValueError("option names must not be empty")
            if key in seen:
                raise ValueError(f"duplicate option name {name!r}")
            seen.add(key)
        return value


class ScoreQuestion(_Question):
    """An ordered scale of 2 to 10 levels, low to high; the answer is the expected level."""

    type: Literal["score"] = "score"
    criteria: list[str] = Field(..., min_length=MIN_SCORE_LEVELS, max_length=MAX_SCORE_LEVELS)

    @field_validator("criteria")
    @classmethod
    def _non_empty_levels(cls, value: list[str]) -> list[str]:
        if any(not level.strip() for level in value):
            raise ValueError("score levels must not be empty")
        return value


Question = Annotated[Union[NoulQuestion, ChoiceQuestion, ScoreQuestion], Field(discriminator="type")]


class DecisionRequest(BaseModel):
    """`{"model"?, "state", "questions": {QID: QUESTION}}`; extra keys (`id`, `labels`) are ignored."""

    model_config = ConfigDict(extra="ignore")

    model: str | None = Field(None, description="Accepted for compatibility; the server answers with its loaded model.")
    state: Content = Field(..., description="What every question is asked about.")
    questions: dict[str, Question] = Field(..., min_length=1, json_schema_extra={"maxProperties": MAX_QUESTIONS})

    @field_validator("questions", mode="before")
    @classmethod
    def _within_the_limits(cls, value: Any) -> Any:
        if isinstance(value, dict):
            check_question_counts(value)  # 413 naming SEMIF_MAX_QUESTIONS / SEMIF_MAX_OPTIONS, before any question is validated
        return value

    @field_validator("questions")
    @classmethod
    def _non_empty_ids(cls, value: dict[str, Any]) -> dict[str, Any]:
        if any(not qid.strip() for qid in value):
            raise ValueError("question ids must not be empty")
        return value


class _Answer(BaseModel):
    model_config = ConfigDict(extra="allow")
    option_mass: float = Field(..., description="Share of the full next-token distribution on the option tokens.")


class NoulAnswer(_Answer):
    type: Literal["noul"] = "noul"
    noul: float = Field(..., description="P(true) over {true, false}.")
    probabilities: dict[str, float]


class ChoiceAnswer(_Answer):
    type: Literal["choice"] = "choice"
    choice: str
    confidence: float = Field(..., description="Top-1 probability over the shown options.")
    probabilities: dict[str, float]


class ScoreAnswer(_Answer):
    type: Literal["score"] = "score"
    score: float = Field(..., description="Expected level, sum(i * p_i).")
    confidence: float = Field(..., description="Top-1 probability over the levels.")
    legend: dict[str, str]
    probabilities: dict[str, float]


Answer = Annotated[Union[NoulAnswer, ChoiceAnswer, ScoreAnswer], Field(discriminator="type")]


class Usage(BaseModel):
    input_tokens: int
    output_tokens: int = 0
    cached_tokens: int = 0


class DecisionResponse(BaseModel):
    """System One response plus our extras (`timing`, `model_info`, `usage.cached_tokens`)."""

    model_config = ConfigDict(extra="allow")

    model: str
    answers: dict[str, Answer]
    usage: Usage
    timing: dict[str, Any] = Field(default_factory=dict)
    model_info: dict[str, Any] = Field(default_factory=dict)


_REQUEST_ADAPTER = TypeAdapter(DecisionRequest)


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise InvalidRequestError(f"duplicate JSON key {key!r}", field=key)
        out[key] = value
    return out


def _reject_constant(name: str) -> Any:
    raise InvalidRequestError(f"{name} is not a JSON number (RFC 8259); send a string or a finite number", field="body")


def parse_json_bytes(body: bytes | str) -> Any:
    """Parse JSON strictly: UTF-8 only, no duplicate keys (such as a repeated option), no NaN or
    Infinity, numbers Python can convert, and nesting no deeper than `MAX_NESTING`; every failure
    is a 400 naming the body, never a crash."""
    if isinstance(body, bytes):
        body = decode_utf8(body)
    try:
        data = json.loads(body, object_pairs_hook=_reject_duplicate_keys, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InvalidRequestError(f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", field="body") from exc
    except RecursionError:
        raise InvalidRequestError(f"JSON nested deeper than {MAX_NESTING} levels", field="body") from None
    except ValueError as exc:  # e.g. an integer longer than Python's digit limit
        raise InvalidRequestError(f"malformed JSON: {exc}", field="body") from None
    check_json_value(data)
    return data


def check_json_value(data: Any) -> None:
    """Refuse what JSON parsing lets through but the engine cannot use: deep nesting, lone surrogates,
    non-finite floats (from a caller that built the dict itself). Iterative: depth cannot crash it."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if depth > MAX_NESTING:
            raise InvalidRequestError(f"{path or 'body'}: JSON nested deeper than {MAX_NESTING} levels", field=path or "body")
        if isinstance(value, str):
            _check_text(value, path)
        elif isinstance(value, float) and not math.isfinite(value):
            raise InvalidRequestError(f"{path or 'body'}: NaN and Infinity are not JSON numbers", field=path or "body")
        elif isinstance(value, dict):
            for key, item in value.items():
                shown = str(key).encode("utf-8", "backslashreplace").decode("utf-8")  # a bad key must not break the error body
                sub = f"{path}.{shown}" if path else shown
                _check_text(str(key), sub)
                stack.append((item, sub, depth + 1))
        elif isinstance(value, list):
            stack.extend((item, f"{path}[{k}]", depth + 1) for k, item in enumerate(value))


def _check_text(text: str, path: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        where = path or "body"
        raise InvalidRequestError(f"{where}: text holds a lone surrogate (U+{ord(text[exc.start]):04X}) that UTF-8 cannot encode",
                                  field=where) from None


def format_validation_error(exc: ValidationError) -> InvalidRequestError:
    """First pydantic error as `InvalidRequestError`, with a dotted field path and pydantic's limit text."""
    err = exc.errors()[0]
    loc = [str(part) for part in err["loc"] if part not in ("noul", "choice", "score")]
    field = ".".join(loc) or "body"
    message = err["msg"].removeprefix("Value error, ")
    if err["type"] == "union_tag_invalid":
        message = "unknown question type; expected one of 'noul', 'choice', 'score'"
    elif err["type"] == "union_tag_not_found":
        message = "question needs a 'type': one of 'noul', 'choice', 'score'"
    return InvalidRequestError(f"{field}: {message}", field=field)


def parse_request(data: Any) -> DecisionRequest:
    """Validate a decoded JSON value (or raw bytes) into a `DecisionRequest`.

    Raises a 400 `InvalidRequestError` naming the field, or a 413 `PayloadTooLargeError` for
    more questions or options than their hard ceiling (`limits`).
    """
    if isinstance(data, (bytes, str)):
        data = parse_json_bytes(data)  # checks the value as it parses it
    else:
        check_json_value(data)
    if not isinstance(data, dict):
        raise InvalidRequestError("request must be a JSON object", field="body")
    try:
        return _REQUEST_ADAPTER.validate_python(data)
    except ValidationError as exc:
        raise format_validation_error(exc) from exc
