"""The request on the Jev / System One wire, as pydantic models, to the letter of jevcompat's spec 0.1.

A request asks typed questions (noul, choice, score) about one state; extra keys are ignored. The
question and option counts are checked against their hard ceilings before any question is validated,
so an oversized request is a 413 naming the limit, not a slow 422.

Instructions, option and level descriptions and noul criteria may be text or structured JSON
(jevcompat `request.structured-text`); `render_content` / `render_inline` turn them into prompt text
deterministically, and those tokens count against the limits like any text.

`parse_request` is the one entry: strict JSON and the text-only rule (`validation`) first, then these models.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, TypeAdapter, ValidationError, field_validator, model_validator

from ..errors import RequestValidationError
from ..limits import MAX_NAME_CHARS, check_limit, check_name_lengths, check_question_counts, hard_ceiling
from ..settings import Debias, Settings
from .validation import check_json_value, check_text_only, format_validation_error, parse_json_bytes

# Work limits are `Settings` fields; the schema refuses what is over their hard ceiling with the
# same 413 the engine gives for the configured value (`limits`), before validating any question.
MAX_CHOICE_OPTIONS = hard_ceiling("max_options")
MAX_QUESTIONS = hard_ceiling("max_questions")
MIN_CHOICE_OPTIONS = 2
MIN_SCORE_LEVELS = 2
MAX_SCORE_LEVELS = 10
# x_debias "rotations": cyclic orders scored per choice question (at most one per option); the server's default and
# the ceiling are the `default_rotations` setting's (SEMIF_DEFAULT_ROTATIONS), so a request and the server share one bound.
DEFAULT_ROTATIONS: int = Settings.model_fields["default_rotations"].default
MAX_ROTATIONS = hard_ceiling("default_rotations")
NOUL_WITHOUT_INSTRUCTIONS = "Does the state match what Yes means?"  # a noul asked by its criteria alone

Content = Union[str, dict[str, Any], list[Any]]


def render_content(content: Content) -> str:
    """Deterministic text for a state or instructions given as a string or structured JSON (indented, keys in order)."""
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False, indent=2)


def render_inline(content: Content) -> str:
    """Deterministic one-line text for a description, a level or a criterion (compact JSON when structured)."""
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False, separators=(", ", ": "))


def _check_not_empty(value: Any, what: str) -> Any:
    if value is not None and not render_inline(value).strip():
        raise ValueError(f"{what} must not be empty")
    return value


class _Question(BaseModel):
    model_config = ConfigDict(extra="ignore")

    instructions: Content = Field(..., description="The question, as text or structured data (rendered as indented JSON).")
    readout: Literal["slot", "sequence"] = Field(
        "slot",
        description="`slot` reads one answer-token logit per option (default, one forward pass). "
        "`sequence` scores each option's own text as a sum of token log-probs; use it only when the "
        "option text itself carries meaning that a letter cannot (free-form labels, code identifiers).",
    )
    length_normalize: bool = Field(False, description="Sequence readout: divide each option's log-prob by its token count.")
    after: str | None = Field(None, alias="x_after",
                              description="Another question's id: its answer (the argmax) is stated in this question, "
                              "which is asked in a later stage on the same prefix (`decision.conditioning`).")

    @field_validator("instructions")
    @classmethod
    def _non_empty(cls, value: Content | None) -> Content | None:
        return _check_not_empty(value, "instructions")


class NoulCriteria(BaseModel):
    model_config = ConfigDict(extra="forbid")
    true: Content | None = Field(None, description="What a yes means (text or structured data).")
    false: Content | None = Field(None, description="What a no means (text or structured data).")


class NoulQuestion(_Question):
    """Yes/no: the answer is P(true). Instructions may be left out when the criteria say what is asked."""

    type: Literal["noul"] = "noul"
    instructions: Content | None = Field(None, description="The question; optional when criteria are given.")
    criteria: NoulCriteria | None = None

    @model_validator(mode="after")
    def _asks_something(self) -> "NoulQuestion":
        crit = self.criteria
        if self.instructions is None and (crit is None or (crit.true is None and crit.false is None)):
            raise ValueError("a noul question needs instructions, or criteria saying what true or false means")
        return self


class ChoiceQuestion(_Question):
    """One option out of 2 to 255, kept in insertion order; a description may be text, structured data or null."""

    type: Literal["choice"] = "choice"
    criteria: dict[str, Content | None] = Field(..., min_length=MIN_CHOICE_OPTIONS,
                                                json_schema_extra={"maxProperties": MAX_CHOICE_OPTIONS})
    debias: Debias | None = Field(
        None, alias="x_debias",
        description="`rotations`: also score cyclic rotations of the option order as extra branches on the same prefix and "
        "average each option's probability over them, so letter and position preferences cancel (costs branch tokens only); "
        "`prior`: divide out the model's preference for each displayed position, estimated once from rotations and stored "
        "in the calibration file per option count (no extra work; `semif bench debias`); "
        "`none`: the request's order only. Unset: the server's default (SEMIF_DEFAULT_DEBIAS, `none` unless set).")
    rotations: int | None = Field(None, alias="x_rotations", ge=2, le=MAX_ROTATIONS,
                                  description="How many cyclic orders `x_debias: rotations` scores (at most one per option); unset: "
                                  f"the server's SEMIF_DEFAULT_ROTATIONS (default {DEFAULT_ROTATIONS}).")

    def with_server_defaults(self, debias: Debias, rotations: int) -> "ChoiceQuestion":
        """This question with what it leaves unset taken from the server (SEMIF_DEFAULT_DEBIAS, SEMIF_DEFAULT_ROTATIONS).

        The one place a server default meets a question: the preparer calls it on every choice it plans.
        """
        if self.debias is not None and self.rotations is not None:
            return self
        return self.model_copy(update={"debias": self.debias or debias, "rotations": self.rotations or rotations})

    @field_validator("criteria", mode="before")
    @classmethod
    def _within_the_options_limit(cls, value: Any) -> Any:
        if isinstance(value, (dict, list)):
            check_limit("max_options", len(value), field="criteria")  # a 413, as in a request (which names the question)
        if isinstance(value, dict):
            check_name_lengths(value, field="criteria", what="an option name")
        return value

    @field_validator("criteria")
    @classmethod
    def _distinct_names(cls, value: dict[str, Content | None]) -> dict[str, Content | None]:
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
    """An ordered scale of 2 to 10 levels, low to high (text or structured data); the answer is the expected level."""

    type: Literal["score"] = "score"
    criteria: list[Content] = Field(..., min_length=MIN_SCORE_LEVELS, max_length=MAX_SCORE_LEVELS)

    @field_validator("criteria")
    @classmethod
    def _non_empty_levels(cls, value: list[Content]) -> list[Content]:
        if any(not render_inline(level).strip() for level in value):
            raise ValueError("score levels must not be empty")
        return value


Question = Annotated[Union[NoulQuestion, ChoiceQuestion, ScoreQuestion], Field(discriminator="type")]


# Both wires' `model` field, as the OpenAPI document says it; the rule itself is serving.modelnames.
MODEL_FIELD_DOC = ("The model to answer with; absent or null: the loaded one. Accepted: its id (GET /v1/models) or file name, "
                   "the hub reference it was loaded from or that repository, jev-latest, and SEMIF_MODEL_ALIASES ('*': any); "
                   "any other name is a 404.")


class DecisionRequest(BaseModel):
    """`{"model"?, "state", "questions": {QID: QUESTION}}`; extra keys (`id`, `labels`) are ignored.

    The parsed request both wires produce (`decision.openai_schema` builds one from an OpenAI Decisions body):
    besides the wire's fields it may carry a `conversation` (chat turns rendered through the model's chat template
    as the state) and a `cache_key` (a prefix-cache partition), set with `with_context` and never read from JSON.
    `decision.request.resolve_request` fills what it leaves to the server and gives the engine its one type.
    """

    model_config = ConfigDict(extra="ignore")

    model: str | None = Field(None, max_length=MAX_NAME_CHARS, description=MODEL_FIELD_DOC)
    state: Content = Field(..., description="What every question is asked about.")
    questions: dict[str, Question] = Field(..., min_length=1, json_schema_extra={"maxProperties": MAX_QUESTIONS})
    batch_invariant: bool | None = Field(
        None, alias="x_batch_invariant", strict=True,
        description="true: each question's probabilities depend only on the state and the question, bit for bit: decoded alone "
        "on the state's prefix at the canonical KV placement (asked alone, beside any others, in any order, cold or cached), "
        "at serial's cost. Unset: the server's SEMIF_BATCH_INVARIANT (false unless set).")
    preamble: bool | None = Field(
        None, alias="x_preamble", strict=True,
        description="true: where a slot question's most likely first token is not an option and the options are more likely "
        "after it than before it (a lead-in such as `**`), the options are also read after that token and the two readings "
        "added (a marginal readout; `x_preamble_token`, `x_preamble_mass`, `x_preamble_used` on each answer). One more branch "
        "token per question. Unset: the server's SEMIF_PREAMBLE_READOUT (false unless set).")
    _conversation: tuple[dict[str, str], ...] | None = PrivateAttr(None)
    _cache_key: str | None = PrivateAttr(None)

    @field_validator("questions", mode="before")
    @classmethod
    def _within_the_limits(cls, value: Any) -> Any:
        if isinstance(value, dict):
            check_question_counts(value)  # 413 naming SEMIF_MAX_QUESTIONS / SEMIF_MAX_OPTIONS, before any question is validated
            check_name_lengths(value, field="questions", what="a question id")  # 422, the id itself not echoed
            for qid, question in value.items():
                if isinstance(criteria := question.get("criteria") if isinstance(question, dict) else None, dict):
                    check_name_lengths(criteria, field=f"questions.{qid}.criteria", what="an option name")
        return value

    @field_validator("questions")
    @classmethod
    def _non_empty_ids(cls, value: dict[str, Any]) -> dict[str, Any]:
        if any(not qid.strip() for qid in value):
            raise ValueError("question ids must not be empty")
        return value

    @property
    def conversation(self) -> tuple[dict[str, str], ...] | None:
        """Chat turns (`{"role", "content"}`) that are the state, or None: the state is `state`."""
        return self._conversation

    @property
    def cache_key(self) -> str | None:
        """The prefix-cache partition (OpenAI's `prompt_cache_key`); None shares the default partition."""
        return self._cache_key

    def with_context(self, conversation: list[dict[str, str]] | None = None, cache_key: str | None = None) -> "DecisionRequest":
        """This request with a conversation as its state and a cache partition (the OpenAI wire's parser sets them)."""
        self._conversation = tuple(conversation) if conversation is not None else None
        self._cache_key = cache_key
        return self


_REQUEST_ADAPTER = TypeAdapter(DecisionRequest)


def parse_request(data: Any) -> DecisionRequest:
    """Validate a decoded JSON value (or raw bytes) into a `DecisionRequest`.

    Raises a 422 `RequestValidationError` naming the field, a 413 `PayloadTooLargeError` for more
    questions or options than their hard ceiling (`limits`), or a 400 for a part that is not text
    (`check_text_only`).
    """
    if isinstance(data, (bytes, str)):
        data = parse_json_bytes(data)  # checks the value as it parses it
    else:
        check_json_value(data)
    if not isinstance(data, dict):
        raise RequestValidationError("request must be a JSON object", field="body", kind="model_type")
    check_text_only(data)
    try:
        return _REQUEST_ADAPTER.validate_python(data)
    except ValidationError as exc:
        raise format_validation_error(exc) from exc
