"""Exceptions that carry an HTTP status, so the adapter can map any of them to a response.

The engine and CLI raise these too: a caller of the library sees the same message
a client of the server would, naming the field and the limit.
"""

from __future__ import annotations


class SemifError(Exception):
    """Base error: `status_code`, a machine-readable `error_type` and the offending `field`."""

    status_code: int = 500
    error_type: str = "internal_error"

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field

    def to_body(self) -> dict:
        """Jev's error body `{"detail": {"error_type", "message", "field"}}` (jevcompat `errors.shape`)."""
        return {"detail": {"error_type": self.error_type, "message": self.message, "field": self.field}}


def read_error(body: dict) -> dict:
    """`{"type", "message", "field"}` of an error body in either of Jev's shapes (`detail` an object, or a
    validation error's list), for readers of responses and of `semif score` error lines."""
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(detail, list) and detail and isinstance(detail[0], dict):
        first = detail[0]
        return {"type": "validation_error", "message": first.get("msg"), "field": first.get("field")}
    if isinstance(detail, dict):
        return {"type": detail.get("error_type"), "message": detail.get("message"), "field": detail.get("field")}
    return {"type": None, "message": str(body), "field": None}


class InvalidRequestError(SemifError):
    status_code = 400
    error_type = "invalid_request"


class RequestValidationError(InvalidRequestError):
    """The body is not a valid request (malformed JSON, a missing or wrong field): 422 with Jev's (FastAPI's)
    `{"detail": [{"loc": ["body", ...], "msg", "type"}]}` (jevcompat `errors.validation-shape`).

    `loc` is the offending field's path; `msg` names the field and the limit, as every message does.
    """

    status_code = 422
    error_type = "validation_error"

    def __init__(self, message: str, *, field: str | None = None, loc: tuple | list | None = None, kind: str = "value_error") -> None:
        super().__init__(message, field=field)
        if loc is None:
            loc = [part for part in field.split(".") if part] if field and field != "body" else []
        self.loc = ["body", *loc]
        self.kind = kind

    def to_body(self) -> dict:
        return {"detail": [{"loc": self.loc, "msg": self.message, "type": self.kind, "field": self.field}]}


class SessionError(InvalidRequestError):
    """A stateful session the request names is unknown, closed or expired, or sessions are off: 400 naming the header, as AWS's
    container standard answers (SageMaker relays it; the client opens a new session)."""

    error_type = "invalid_session"


class SessionLimitError(SemifError):
    """Opening one more session, or keeping one more state cached for sessions, would pass a limit: 429 naming it."""

    status_code = 429
    error_type = "session_limit"


class UnauthorizedError(SemifError):
    status_code = 401
    error_type = "authentication_error"


class PayloadTooLargeError(SemifError):
    """Work over a limit (the body, questions, options, branch tokens, the context); built by `limits.refuse_limit`,
    so the message names the `SEMIF_*` variable and the value."""

    status_code = 413
    error_type = "payload_too_large"


class WorkStoppedError(SemifError):
    """A request not scored because its submission stopped between rounds: the client left, or the deadline passed (its
    handler has answered 503). Nobody reads it; 499 (nginx's "client closed request"), never retried as a server failure."""

    status_code = 499
    error_type = "stopped"

    def __init__(self, message: str = "not scored: its submission stopped between rounds (the client left, or the deadline "
                                      "passed)") -> None:
        super().__init__(message)


class UnsupportedMediaTypeError(SemifError):
    status_code = 415
    error_type = "unsupported_media_type"


class UnsupportedEncodingError(UnsupportedMediaTypeError):
    """A `Content-Encoding` the server cannot decode: 415 naming it, answered with `Accept-Encoding` listing the
    codings it can (RFC 9110, 15.5.16)."""

    def __init__(self, message: str, *, accepted: tuple[str, ...], field: str | None = "content-encoding") -> None:
        super().__init__(message, field=field)
        self.accepted = accepted


class ServiceBusyError(SemifError):
    """The inference queue is full; clients should retry after `retry_after` seconds."""

    status_code = 503
    error_type = "service_busy"

    def __init__(self, message: str, *, retry_after: int = 1) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ShuttingDownError(ServiceBusyError):
    """SIGTERM arrived and this request could not be answered within the drain window; another instance can."""

    error_type = "shutting_down"


class ModelNotFoundError(SemifError):
    """No GGUF could be located; the message says how to get one."""

    status_code = 503
    error_type = "model_not_found"


class ModelLoadError(SemifError):
    """A GGUF was found but llama.cpp could not load it (corrupt, wrong format, ABI mismatch)."""

    status_code = 503
    error_type = "model_load_failed"


class InsufficientStorageError(SemifError):
    """Not enough free disk for what was asked (packaging a model); the message names the size needed and the way out."""

    status_code = 507
    error_type = "insufficient_storage"


class DecodeError(ServiceBusyError):
    """llama.cpp could not decode a batch; the engine has released what the request held, so a retry can succeed."""

    error_type = "decode_failed"


class EngineStateError(SemifError):
    """The engine's KV bookkeeping disagrees with llama.cpp's memory: a bug, reported with what is off."""

    status_code = 500
    error_type = "engine_state"
