"""The decision adapter's HTTP wire: content types, body parsing, response and error bodies.

Everything a route needs between the socket and the worker, kept apart from the routes so each
piece can be read (and tested) without building an app: the content types read and the 415 for
the others (`bodies` reads the body: its limit, its 413 and its content coding), JSON and
JSON Lines parsing (a bad line answers for itself, never for the whole body), which wire a body
speaks (Jev / System One, or OpenAI Decisions: `decision.openai_schema`), the error bodies of each
wire, and the pydantic models the OpenAPI document is generated from. FastAPI is imported only
inside `error_response`.

Error bodies, by wire (the status is the same on both, except a validation failure):

- Jev: `{"detail": {"error_type", "message", "field"}}`; a body that fails validation (malformed
  JSON included) is 422 `{"detail": [{"loc": ["body", ...], "msg", "type", "field"}]}`;
- OpenAI: `{"error": {"message", "type", "param", "code"}}`, a validation failure 400.

A `model` the server does not serve is a 404 on both wires (`modelnames`). The message names the
field and the limit; 413 (size), 415 (media type, or content coding: with `Accept-Encoding`) and 503 with
`Retry-After` (overload) stay what SageMaker and the SDKs rely on.
"""

# No `from __future__ import annotations`: pydantic builds the OpenAPI models below from real annotations.
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..decision.openai_schema import DecisionsBody, build_decision, is_decisions_body, parse_decisions_request
from ..decision.responses import DecisionResponse
from ..decision.schema import DecisionRequest, parse_request
from ..decision.seam import DecisionWing
from ..decision.validation import TEXT_ONLY, parse_json_bytes
from ..errors import (
    InvalidRequestError,
    RequestValidationError,
    SemifError,
    ServiceBusyError,
    UnauthorizedError,
    UnsupportedEncodingError,
    UnsupportedMediaTypeError,
)
from ..jsonlines import decode_utf8, iter_records, split_lines
from ..limits import check_limit, check_record_id, setting_variable

__all__ = [
    "HTTP_ERROR_TYPES",
    "JSONLINES_TYPES",
    "JSON_TYPES",
    "THREAD_PARSE_BYTES",
    "OPENAI",
    "SYSTEMONE",
    "ErrorBody",
    "ErrorDetail",
    "OpenAIErrorBody",
    "ValidationErrorBody",
    "ExecutionParameters",
    "ModelCard",
    "ModelList",
    "OpenAIModel",
    "describe_model",
    "dump_answer",
    "dump_response",
    "error_body",
    "error_response",
    "package_version",
    "decode_json_body",
    "parse_json_data",
    "parse_jsonlines_body",
    "read_content_type",
    "read_custom_mode",
    "refuse_content_type",
    "refuse_jsonlines",
]

JSON_TYPES = frozenset({"application/json"})
JSONLINES_TYPES = frozenset({"application/jsonlines", "application/x-jsonlines", "application/jsonl", "application/x-ndjson"})
THREAD_PARSE_BYTES = 256 << 10  # bodies larger than this are parsed off the event loop
HTTP_ERROR_TYPES = {404: "not_found", 405: "method_not_allowed", 400: "invalid_request", 413: "payload_too_large"}
SYSTEMONE, OPENAI = "systemone", "openai"  # the two wires: Jev / System One, OpenAI Decisions
OPENAI_ERROR_TYPES = {401: "authentication_error", 403: "permission_error", 404: "not_found_error"}  # else by class


# ----------------------------------------------------------------- wire models (OpenAPI)
class ErrorDetail(BaseModel):
    error_type: str = Field(..., description="Machine-readable error class, e.g. invalid_request, authentication_error.")
    message: str = Field(..., description="What is wrong, naming the field and the limit.")
    field: str | None = Field(None, description="Dotted path of the offending field, when there is one.")


class ErrorBody(BaseModel):
    """A Jev error: `{"detail": {"error_type", "message", "field"}}`."""

    detail: ErrorDetail


class ValidationItem(BaseModel):
    loc: list[str | int] = Field(..., description="Path of the offending field, from \"body\".")
    msg: str = Field(..., description="What is wrong, naming the field and the limit.")
    type: str = Field(..., description="pydantic's error type, e.g. missing, too_short, json_invalid.")
    field: str | None = Field(None, description="The same path, dotted.")


class ValidationErrorBody(BaseModel):
    """A Jev validation error (422): `{"detail": [{"loc", "msg", "type", "field"}]}`."""

    detail: list[ValidationItem]


class OpenAIErrorDetail(BaseModel):
    message: str
    type: str = Field(..., description="invalid_request_error, authentication_error or server_error.")
    param: str | None = Field(None, description="The offending field, when there is one.")
    code: str | None = Field(None, description="The server's own error class (as Jev's error_type).")


class OpenAIErrorBody(BaseModel):
    """An error on the OpenAI Decisions wire: `{"error": {"message", "type", "param", "code"}}`."""

    error: OpenAIErrorDetail


class ExecutionParameters(BaseModel):
    """What Batch Transform reads from `GET /execution-parameters`."""

    MaxConcurrentTransforms: int
    BatchStrategy: str
    MaxPayloadInMB: int


class ModelCard(BaseModel):
    name: str
    description: str
    release_date: str = Field(..., description="ISO date of the model file (its modification time).")


class OpenAIModel(BaseModel):
    """One entry of the OpenAI `GET /v1/models` list (what `client.models.list()` parses)."""

    id: str
    object: Literal["model"] = "model"
    created: int = Field(..., description="Unix time of the model file (its modification time).")
    owned_by: str = "semif-workshop"


class ModelList(BaseModel):
    """`GET /v1/models` for both wires in one body: System One's `models` cards, and OpenAI's `object`/`data`
    list, so the `openai` SDK's `models.list()` finds the id that `decisions.create` takes (each client ignores
    the other's keys: typesafe-sdk and jevcompat read `models`, the OpenAI SDK reads `data`)."""

    models: list[ModelCard]
    object: Literal["list"] = "list"
    data: list[OpenAIModel]


# ----------------------------------------------------------------- request headers and bodies
def read_content_type(raw: str | None) -> str:
    """The media type of a Content-Type header, lower-cased and without parameters (`; charset=...`)."""
    return (raw or "").split(";", 1)[0].strip().lower()


def refuse_content_type(ctype: str, wire: str | None, jsonlines: bool = True) -> UnsupportedMediaTypeError:
    """The 415 for a content type an invoke route does not read (`wire` None: `/invocations`, which reads JSON Lines too
    when `jsonlines`: SEMIF_ACCEPT_JSONLINES is set).

    `multipart/form-data` is how typesafe-sdk sends image assets: its message says so, and why.
    """
    also = "" if wire or not jsonlines else ", or application/jsonlines with one request per line"
    if ctype == "multipart/form-data":
        return UnsupportedMediaTypeError(
            "content type 'multipart/form-data' is not supported: it carries image assets (typesafe-sdk sends one for a request "
            f"with assets), and {TEXT_ONLY}; send application/json{also}, with the state as text or JSON",
            field="content-type")
    return UnsupportedMediaTypeError(f"content type {ctype!r} is not supported; send application/json{also}", field="content-type")


def refuse_jsonlines(ctype: str) -> UnsupportedMediaTypeError:
    """The 415 for a JSON Lines body where none is read: one body of many requests would hold the one inference worker
    for all of them, so only a server that serves Batch Transform reads them (its job's Environment sets the variable)."""
    return UnsupportedMediaTypeError(
        f"content type {ctype!r} (one request per line) is read only where {setting_variable('accept_jsonlines')}=true, as a "
        "Batch Transform job's Environment sets it; send one request per body as application/json", field="content-type")


def read_custom_mode(header: str | None) -> str | None:
    """`mode=serial` from SageMaker's CustomAttributes header (the query string does not reach the container)."""
    for part in (header or "").split(";"):
        key, _, value = part.strip().partition("=")
        if key.strip() == "mode" and value.strip():
            return value.strip()
    return None


Parsed = tuple[list[DecisionRequest | SemifError], Any, list[DecisionsBody | None]]


def parse_any(data: Any) -> tuple[DecisionRequest, DecisionsBody | None]:
    """A decoded body on either wire: an OpenAI Decisions body (`input`, `questions` a list) or a Jev one.

    The second value is what the OpenAI answer builder needs (None: answer on the Jev wire).
    """
    if is_decisions_body(data):
        return parse_decisions_request(data)
    return parse_request(data), None


def decode_json_body(body: bytes) -> Any:
    """A single JSON body, decoded once (a 422 for an empty or malformed one): sessions and the parser read this value."""
    if not body.strip():
        raise RequestValidationError("empty body; send one decision request as JSON", field="body", kind="missing")
    return parse_json_bytes(body)


def parse_json_data(data: Any, wire: str | None = None) -> Parsed:
    """A single decoded JSON request: validated, or raise its error. Returns ([request], id or None, [decisions body or None]).

    `wire` OPENAI reads the OpenAI Decisions shape only (`POST /v1/decisions`); None reads either (`/invocations`).
    """
    request, decisions = parse_decisions_request(data) if wire == OPENAI else parse_any(data)
    record_id = data.get("id") if isinstance(data, dict) and decisions is None else None
    check_record_id(record_id)  # echoed in the answer: bounded as a name
    return [request], record_id, [decisions]


def parse_jsonlines_body(body: bytes, wire: str | None = None, max_records: int | None = None) -> Parsed:
    """One request per non-empty line, on either wire; a bad line becomes that line's error, never the whole body's.

    More than `max_records` lines (SEMIF_MAX_RECORDS) is the whole body's 413, counted before any line is parsed.
    """
    decisions: list[DecisionsBody | None] = []

    def validate(data: Any) -> DecisionRequest:
        request, extra = parse_any(data)
        decisions.append(extra)
        return request

    lines = list(split_lines(decode_utf8(body)))
    if max_records is not None:
        check_limit("max_records", len(lines), max_records, field="body")
    records = []
    for rid, item in iter_records(lines, parse_json_bytes, validate):
        if isinstance(item, SemifError):
            decisions.append(None)
        records.append((rid, item))
    if not records:
        raise InvalidRequestError("no JSON Lines records in the body", field="body")
    return [item for _, item in records], [rid for rid, _ in records], decisions


# ----------------------------------------------------------------- response and error bodies
def dump_response(response: DecisionResponse, record_id: Any = None) -> dict[str, Any]:
    """A response as JSON data; with a record id (JSON Lines, or a request that sent one) the id comes first."""
    body = response.model_dump(mode="json")
    return body if record_id is None else {"id": record_id, **body}


def dump_answer(response: DecisionResponse, record_id: Any = None, decisions: DecisionsBody | None = None) -> dict[str, Any]:
    """A response on its request's wire: Jev's (`dump_response`) or the OpenAI Decisions `Decision`."""
    if decisions is None:
        return dump_response(response, record_id)
    out = build_decision(response, decisions)
    return out if record_id is None else {"id": record_id, **out}


def error_body(exc: SemifError, wire: str = SYSTEMONE) -> tuple[int, dict[str, Any]]:
    """(status, body) of `exc` on `wire`: Jev's `detail` shapes, or OpenAI's `error` (a validation failure is its 400)."""
    if wire != OPENAI:
        return exc.status_code, exc.to_body()
    status = 400 if isinstance(exc, RequestValidationError) else exc.status_code
    kind = (getattr(exc, "openai_type", None) or OPENAI_ERROR_TYPES.get(status)
            or ("server_error" if status >= 500 else "invalid_request_error"))
    code = getattr(exc, "openai_code", None) or exc.error_type  # where OpenAI has its own (model_not_found), that one
    return status, {"error": {"message": exc.message, "type": kind, "param": exc.field, "code": code}}


def error_response(exc: SemifError, wire: str = SYSTEMONE) -> Any:
    """The JSON response for `exc` on `wire`, with `Retry-After` on a retryable 503 and `WWW-Authenticate` on 401."""
    from fastapi.responses import JSONResponse

    headers: dict[str, str] = {}
    if isinstance(exc, ServiceBusyError):  # the queue, shutdown, a dead worker, a failed decode: worth retrying
        headers["Retry-After"] = str(exc.retry_after)
    if isinstance(exc, UnauthorizedError):
        headers["WWW-Authenticate"] = "Bearer"
    if isinstance(exc, UnsupportedEncodingError):  # the codings a retry may use (RFC 9110, 15.5.16)
        headers["Accept-Encoding"] = ", ".join(exc.accepted)
    status, body = error_body(exc, wire)
    return JSONResponse(body, status_code=status, headers=headers)


# ----------------------------------------------------------------- model card and version
def package_version() -> str:
    """The installed distribution's version (metadata, so it works however the package was installed)."""
    try:
        return version("semif-workshop")
    except PackageNotFoundError:
        return "0+unknown"


def describe_model(engine: DecisionWing) -> ModelList:
    """The loaded GGUF as both wires list it: System One's card and OpenAI's model entry, one id."""
    try:
        modified = datetime.fromtimestamp(engine.model_path.stat().st_mtime, tz=timezone.utc)  # type: ignore[union-attr]
    except (AttributeError, OSError):  # no file (a test double's None), or it went away
        modified = datetime.now(tz=timezone.utc)
    info = engine.model_info or {}
    description = f"{info.get('name', engine.model_id)} (GGUF, n_ctx={info.get('n_ctx', '?')}): option probabilities from one forward pass"
    card = ModelCard(name=engine.model_id, description=description, release_date=modified.date().isoformat())
    return ModelList(models=[card], data=[OpenAIModel(id=engine.model_id, created=int(modified.timestamp()))])
