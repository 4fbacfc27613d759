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
        """JSON body `{"error": {"type", "message", "field"}}` sent to HTTP clients."""
        return {"error": {"type": self.error_type, "message": self.message, "field": self.field}}


class InvalidRequestError(SemifError):
    status_code = 400
    error_type = "invalid_request"


class UnauthorizedError(SemifError):
    status_code = 401
    error_type = "unauthorized"


class PayloadTooLargeError(SemifError):
    """Work over a limit (the body, questions, options, branch tokens, the context); built by `limits.refuse_limit`,
    so the message names the `SEMIF_*` variable and the value."""

    status_code = 413
    error_type = "payload_too_large"


class UnsupportedMediaTypeError(SemifError):
    status_code = 415
    error_type = "unsupported_media_type"


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


class DecodeError(ServiceBusyError):
    """llama.cpp could not decode a batch; the engine has released what the request held, so a retry can succeed."""

    error_type = "decode_failed"


class EngineStateError(SemifError):
    """The engine's KV bookkeeping disagrees with llama.cpp's memory: a bug, reported with what is off."""

    status_code = 500
    error_type = "engine_state"
