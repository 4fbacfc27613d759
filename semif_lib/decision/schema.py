"""Wire format: Jev / System One requests and responses, as pydantic models, to the letter of jevcompat's spec 0.1.

A request asks typed questions about one state. Strict System One clients see exactly the fields
they know; every extra is `x_`-prefixed (jevcompat `response.extensions`), so such clients ignore it:

- on each answer `x_option_mass` (share of the full next-token distribution on the option tokens)
  and, on choice and score, `x_top_probability` (the top-1 probability, what `confidence` was before);
- on a noul answer `x_probabilities` (`{"true": p, "false": 1 - p}`);
- `usage.x_cached_tokens` (prefix tokens served from the prefix cache), `x_timing`, `x_model_info`;
- with a calibration file, `x_raw_probabilities`, `x_calibrated`, `x_temperature`, `x_debiased`; with
  `include_logits`, `x_logits`.

The Python attributes keep their plain names (`answer.option_mass`, `response.timing`); only the
JSON says `x_` (`serialize_by_alias`), and both spellings validate.

`confidence` is Jev's reference formula (jevcompat `confidence.formula`): the normalised peak
`(m - 1/n) / (1 - 1/n)` for choice, `max(0, 1 - sum_i p_i |i - k| / D)` for score (k the top level,
D that spread under the uniform distribution). Both are conditional on the listed options, not a
calibrated chance of being right: fit a calibration file on your own workload before gating actions on it.

Instructions, option and level descriptions and noul criteria may be text or structured JSON
(jevcompat `request.structured-text`); `render_content` / `render_inline` turn them into prompt text
deterministically, and those tokens count against the limits like any text.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, Literal, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from ..errors import InvalidRequestError, RequestValidationError
from ..jsonlines import decode_utf8
from ..limits import check_limit, check_question_counts, hard_ceiling
from ..settings import Debias, Settings

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
MAX_NESTING = 64  # JSON depth of a whole request; a structured state rarely needs 10
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
                              "which is asked in a later wave on the same prefix (`decision.conditioning`).")

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

    The one internal request both wires map onto (`decision.openai_schema` builds one from an OpenAI
    Decisions body): besides the wire's fields it may carry a `conversation` (chat turns rendered
    through the model's chat template as the state) and a `cache_key` (a prefix-cache partition),
    set with `with_context` and never read from JSON.
    """

    model_config = ConfigDict(extra="ignore")

    model: str | None = Field(None, description=MODEL_FIELD_DOC)
    state: Content = Field(..., description="What every question is asked about.")
    questions: dict[str, Question] = Field(..., min_length=1, json_schema_extra={"maxProperties": MAX_QUESTIONS})
    _conversation: tuple[dict[str, str], ...] | None = PrivateAttr(None)
    _cache_key: str | None = PrivateAttr(None)

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


# Extensions are attributes with plain names and `x_` JSON names; both validate (a client can read a dump back).
_EXTENDED = ConfigDict(extra="allow", serialize_by_alias=True, validate_by_name=True, validate_by_alias=True)


class _Answer(BaseModel):
    model_config = _EXTENDED
    option_mass: float = Field(..., alias="x_option_mass", description="Share of the full next-token distribution on the option tokens.")


class NoulAnswer(_Answer):
    type: Literal["noul"] = "noul"
    noul: float = Field(..., description="P(true) over {true, false}.")
    probabilities: dict[str, float] = Field(..., alias="x_probabilities", description="{true: P(true), false: P(false)}.")


class ChoiceAnswer(_Answer):
    type: Literal["choice"] = "choice"
    choice: str
    confidence: float = Field(..., description="Jev's reference confidence, the normalised peak (m - 1/n) / (1 - 1/n).")
    probabilities: dict[str, float]
    top_probability: float = Field(..., alias="x_top_probability", description="Top-1 probability over the shown options, m.")


class ScoreAnswer(_Answer):
    type: Literal["score"] = "score"
    score: float = Field(..., description="Expected level, sum(i * p_i).")
    confidence: float = Field(..., description="Jev's reference confidence, max(0, 1 - sum_i p_i |i - k| / D).")
    legend: dict[str, str]
    probabilities: dict[str, float]
    top_probability: float = Field(..., alias="x_top_probability", description="Top-1 probability over the levels.")


Answer = Annotated[Union[NoulAnswer, ChoiceAnswer, ScoreAnswer], Field(discriminator="type")]


class Usage(BaseModel):
    model_config = _EXTENDED
    input_tokens: int
    output_tokens: int = 0
    cached_tokens: int = Field(0, alias="x_cached_tokens", description="Input tokens served from the prefix cache.")


class DecisionResponse(BaseModel):
    """System One response plus our extras (`x_timing`, `x_model_info`, `usage.x_cached_tokens`)."""

    model_config = _EXTENDED

    model: str
    answers: dict[str, Answer]
    usage: Usage
    timing: dict[str, Any] = Field(default_factory=dict, alias="x_timing", description="Where the time went, and the tokens.")
    model_info: dict[str, Any] = Field(default_factory=dict, alias="x_model_info", description="The loaded GGUF and its settings.")


_REQUEST_ADAPTER = TypeAdapter(DecisionRequest)


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise RequestValidationError(f"duplicate JSON key {key!r}", field=key, loc=[key], kind="json_invalid")
        out[key] = value
    return out


def _reject_constant(name: str) -> Any:
    raise RequestValidationError(f"{name} is not a JSON number (RFC 8259); send a string or a finite number", field="body",
                                 kind="json_invalid")


def parse_json_bytes(body: bytes | str) -> Any:
    """Parse JSON strictly: UTF-8 only, no duplicate keys (such as a repeated option), no NaN or
    Infinity, numbers Python can convert, and nesting no deeper than `MAX_NESTING`; every failure
    is a 422 naming the body (Jev's validation shape), never a crash."""
    if isinstance(body, bytes):
        try:
            body = decode_utf8(body)
        except InvalidRequestError as exc:
            raise RequestValidationError(exc.message, field="body", kind="json_invalid") from None
    try:
        data = json.loads(body, object_pairs_hook=_reject_duplicate_keys, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise RequestValidationError(f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", field="body",
                                     loc=[exc.pos], kind="json_invalid") from exc
    except RecursionError:
        raise RequestValidationError(f"JSON nested deeper than {MAX_NESTING} levels", field="body", kind="json_invalid") from None
    except ValueError as exc:  # e.g. an integer longer than Python's digit limit
        raise RequestValidationError(f"malformed JSON: {exc}", field="body", kind="json_invalid") from None
    check_json_value(data)
    return data


def check_json_value(data: Any) -> None:
    """Refuse what JSON parsing lets through but the engine cannot use: deep nesting, lone surrogates,
    non-finite floats (from a caller that built the dict itself). Iterative: depth cannot crash it."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if depth > MAX_NESTING:
            raise RequestValidationError(f"{path or 'body'}: JSON nested deeper than {MAX_NESTING} levels", field=path or "body")
        if isinstance(value, str):
            _check_text(value, path)
        elif isinstance(value, float) and not math.isfinite(value):
            raise RequestValidationError(f"{path or 'body'}: NaN and Infinity are not JSON numbers", field=path or "body")
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
        raise RequestValidationError(f"{where}: text holds a lone surrogate (U+{ord(text[exc.start]):04X}) that UTF-8 cannot encode",
                                     field=where) from None


_UNION_TAGS = ("noul", "choice", "score", "predicate")  # Jev's question types and the OpenAI wire's
_CONTENT_MEMBERS = ("str", "dict[str,any]", "list[any]")  # pydantic names a Content union's members in `loc`


def format_validation_error(exc: ValidationError) -> RequestValidationError:
    """First pydantic error as a 422 `RequestValidationError`, with its `loc`, a dotted field path and pydantic's limit text."""
    err = exc.errors()[0]
    raw = list(err["loc"])
    if len(raw) > 2 and raw[0] == "questions" and raw[2] in _UNION_TAGS:  # the discriminator's own step
        del raw[2]
    while raw and raw[-1] in _CONTENT_MEMBERS:
        raw.pop()
    loc = [str(part) for part in raw]
    field = ".".join(loc) or "body"
    message = err["msg"].removeprefix("Value error, ")
    if err["type"] == "union_tag_invalid":
        message = "unknown question type; expected one of 'noul', 'choice', 'score'"
    elif err["type"] == "union_tag_not_found":
        message = "question needs a 'type': one of 'noul', 'choice', 'score'"
    return RequestValidationError(f"{field}: {message}", field=field, loc=raw, kind=err["type"])


TEXT_ONLY = "this engine reads text only"


def check_text_only(data: dict[str, Any]) -> None:
    """Refuse by name what Jev 1.14 clients may send that is not text, rather than answer without it: image
    `assets` (inline `data_base64`, a URL, or a multipart part) and `box` questions, each a 400 naming the part."""
    assets = data.get("assets")
    if assets:  # null, {} and [] carry nothing
        name, asset = next(iter(assets.items())) if isinstance(assets, dict) else (None, assets)
        field = "assets" if name is None else f"assets.{name}"
        carried = [key for key in ("data_base64", "url", "part") if isinstance(asset, dict) and asset.get(key)]
        how = f" ({carried[0]})" if carried else ""
        raise InvalidRequestError(f"{field}: image assets{how} are not supported: {TEXT_ONLY}; send the state as text or JSON, "
                                  "describing the image in words", field=field)
    questions = data.get("questions")
    for qid, question in (questions.items() if isinstance(questions, dict) else ()):
        if isinstance(question, dict) and question.get("type") == "box":
            raise InvalidRequestError(f"questions.{qid}: box questions locate a region of an image, and {TEXT_ONLY}; ask a noul, "
                                      "choice or score question", field=f"questions.{qid}")


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
