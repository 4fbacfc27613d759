"""The decision adapter's HTTP wire: content types, body reading and parsing, response and error bodies.

Everything a route needs between the socket and the worker, kept apart from the routes so each
piece can be read (and tested) without building an app: the body limit and its 413, JSON and
JSON Lines parsing (a bad line answers for itself, never for the whole body), the
`{"error": {...}}` body every non-2xx answer carries, and the pydantic models the OpenAPI
document is generated from. FastAPI is imported only inside `error_response`.
"""

# No `from __future__ import annotations`: pydantic builds the OpenAPI models below from real annotations.
from datetime import datetime, timezone
from typing import Any

from pydantic import BaseModel, Field

from ..decision.schema import DecisionRequest, DecisionResponse, parse_json_bytes, parse_request
from ..errors import InvalidRequestError, SemifError, ServiceBusyError, UnauthorizedError
from ..jsonlines import decode_utf8, iter_records, split_lines
from ..limits import refuse_limit

__all__ = [
    "CUSTOM_ATTRIBUTES_HEADER",
    "DISCARD_LIMIT_BYTES",
    "HTTP_ERROR_TYPES",
    "JSONLINES_TYPES",
    "JSON_TYPES",
    "THREAD_PARSE_BYTES",
    "ErrorBody",
    "ErrorDetail",
    "ExecutionParameters",
    "ModelCard",
    "ModelList",
    "describe_model",
    "dump_response",
    "error_response",
    "package_version",
    "parse_json_body",
    "parse_jsonlines_body",
    "read_content_type",
    "read_custom_mode",
    "read_limited_body",
]

JSON_TYPES = frozenset({"application/json"})
JSONLINES_TYPES = frozenset({"application/jsonlines", "application/x-jsonlines", "application/jsonl", "application/x-ndjson"})
DISCARD_LIMIT_BYTES = 64 << 20  # past the body limit, read and drop this much so the client sees the 413
THREAD_PARSE_BYTES = 256 << 10  # bodies larger than this are parsed off the event loop
CUSTOM_ATTRIBUTES_HEADER = "X-Amzn-SageMaker-Custom-Attributes"
HTTP_ERROR_TYPES = {404: "not_found", 405: "method_not_allowed", 400: "invalid_request", 413: "payload_too_large"}


# ----------------------------------------------------------------- wire models (OpenAPI)
class ErrorDetail(BaseModel):
    type: str = Field(..., description="Machine-readable error class, e.g. invalid_request.")
    message: str = Field(..., description="What is wrong, naming the field and the limit.")
    field: str | None = Field(None, description="Dotted path of the offending field, when there is one.")


class ErrorBody(BaseModel):
    """Every non-2xx answer: `{"error": {"type", "message", "field"}}`."""

    error: ErrorDetail


class ExecutionParameters(BaseModel):
    """What Batch Transform reads from `GET /execution-parameters`."""

    MaxConcurrentTransforms: int
    BatchStrategy: str
    MaxPayloadInMB: int


class ModelCard(BaseModel):
    name: str
    description: str
    release_date: str = Field(..., description="ISO date of the model file (its modification time).")


class ModelList(BaseModel):
    """System One's `GET /v1/models` answer."""

    models: list[ModelCard]


# ----------------------------------------------------------------- request headers and bodies
def read_content_type(raw: str | None) -> str:
    """The media type of a Content-Type header, lower-cased and without parameters (`; charset=...`)."""
    return (raw or "").split(";", 1)[0].strip().lower()


def read_custom_mode(header: str | None) -> str | None:
    """`mode=serial` from SageMaker's CustomAttributes header (the query string does not reach the container)."""
    for part in (header or "").split(";"):
        key, _, value = part.strip().partition("=")
        if key.strip() == "mode" and value.strip():
            return value.strip()
    return None


async def read_limited_body(request: Any, limit: int) -> bytes:
    """The request body, or 413 as soon as it is known to exceed `limit` bytes.

    The rest of an oversized body is read and dropped (up to `DISCARD_LIMIT_BYTES`) so that the
    client, still sending, receives the 413 instead of a reset connection.
    """
    declared = request.headers.get("content-length", "")
    too_large = declared.isdigit() and int(declared) > limit
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            too_large = True
        if too_large:
            if size > DISCARD_LIMIT_BYTES:
                break
            continue
        chunks.append(chunk)
    if too_large:
        raise refuse_limit("max_body_bytes", declared if declared.isdigit() else f"more than {limit}", limit, field="body")
    return b"".join(chunks)


def parse_json_body(body: bytes) -> tuple[list[DecisionRequest | SemifError], Any]:
    """A single JSON request: validated, or raise its 400. Returns ([request], id or None)."""
    if not body.strip():
        raise InvalidRequestError("empty body; send one decision request as JSON", field="body")
    data = parse_json_bytes(body)
    request = parse_request(data)
    record_id = data.get("id") if isinstance(data, dict) else None
    return [request], record_id


def parse_jsonlines_body(body: bytes) -> tuple[list[DecisionRequest | SemifError], list[Any]]:
    """One request per non-empty line; a bad line becomes that line's error, never the whole body's."""
    records = list(iter_records(split_lines(decode_utf8(body)), parse_json_bytes, parse_request))
    if not records:
        raise InvalidRequestError("no JSON Lines records in the body", field="body")
    return [item for _, item in records], [rid for rid, _ in records]


# ----------------------------------------------------------------- response and error bodies
def dump_response(response: DecisionResponse, record_id: Any = None) -> dict[str, Any]:
    """A response as JSON data; with a record id (JSON Lines, or a request that sent one) the id comes first."""
    body = response.model_dump(mode="json")
    return body if record_id is None else {"id": record_id, **body}


def error_response(exc: SemifError) -> Any:
    """The JSON response for `exc`, with `Retry-After` on a retryable 503 and `WWW-Authenticate` on 401."""
    from fastapi.responses import JSONResponse

    headers: dict[str, str] = {}
    if isinstance(exc, ServiceBusyError):  # the queue, shutdown, a dead worker, a failed decode: worth retrying
        headers["Retry-After"] = str(exc.retry_after)
    if isinstance(exc, UnauthorizedError):
        headers["WWW-Authenticate"] = "Bearer"
    return JSONResponse(exc.to_body(), status_code=exc.status_code, headers=headers)


# ----------------------------------------------------------------- model card and version
def package_version() -> str:
    """The installed distribution's version (metadata, so it works however the package was installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("semif-workshop")
    except PackageNotFoundError:
        return "0+unknown"


def describe_model(engine: Any) -> ModelCard:
    """System One's model card for the loaded GGUF."""
    path = getattr(engine, "model_path", None)
    try:
        released = datetime.fromtimestamp(path.stat().st_mtime, tz=timezone.utc).date().isoformat()
    except (AttributeError, OSError):
        released = datetime.now(tz=timezone.utc).date().isoformat()
    info = getattr(engine, "model_info", {}) or {}
    description = f"{info.get('name', engine.model_id)} (GGUF, n_ctx={info.get('n_ctx', '?')}): option probabilities from one forward pass"
    return ModelCard(name=engine.model_id, description=description, release_date=released)
