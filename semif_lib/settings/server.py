"""The adapter server's settings (`semif serve`): where it listens, who may call it, its queue, body limit, drain,
deadline and sessions. Every variable's name is written here, literally, once."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings

from ..contract import KILL_AFTER_S, MAX_PAYLOAD_BYTES, PORT, SESSIONS_ENABLED_ENV, SESSIONS_EXPIRATION_ENV, SESSIONS_EXPIRATION_S
from .base import DRAIN_TAIL_S, SETTINGS_CONFIG


class ServerSettings(BaseSettings):
    """The adapter server (`semif serve`): where it listens, who may call it, its queue, body limit, drain and deadline."""

    model_config = SETTINGS_CONFIG

    host: str = Field("127.0.0.1", validation_alias="SEMIF_HOST", description="Bind address; the container sets 0.0.0.0.")
    port: int = Field(PORT, validation_alias="SEMIF_PORT", ge=1, le=65535, description="SageMaker's contract port.")
    api_key: str | None = Field(None, validation_alias="SEMIF_API_KEY", description="Bearer token checked when set (local use only).")
    model_aliases: str = Field(
        "", validation_alias="SEMIF_MODEL_ALIASES",
        description="More names a request's `model` may send, comma-separated ('*': any name); the model's id, file name, hub "
                    "reference and jev-latest are always accepted, any other name is a 404 (serving.modelnames).")
    queue_size: int = Field(64, validation_alias="SEMIF_QUEUE_SIZE",
                            ge=1, le=100000, description="Requests waiting for the worker before 503.")
    max_body_bytes: int = Field(MAX_PAYLOAD_BYTES, validation_alias="SEMIF_MAX_BODY_BYTES",
                                ge=1024, description="SageMaker's real-time payload limit.")
    drain_s: float = Field(
        25.0, validation_alias="SEMIF_DRAIN_S", gt=0, le=KILL_AFTER_S - DRAIN_TAIL_S - 1,
        description="After SIGTERM, a request still unanswered this long gets a 503 shutting_down "
                    "(SageMaker sends SIGKILL 30 s after SIGTERM).")
    request_timeout_s: float = Field(
        55.0, validation_alias="SEMIF_REQUEST_TIMEOUT_S",
        gt=0, le=3600, description="A request still waiting this long when its turn comes gets a 503 (SageMaker gives up at 60 s).")
    # The work one body may hold the single inference worker with (`limits`): a body over one is a 413 naming it.
    accept_jsonlines: bool = Field(
        False, validation_alias="SEMIF_ACCEPT_JSONLINES",
        description="Read application/jsonlines bodies on /invocations (one request per line): what a Batch Transform "
                    "job's Environment sets; otherwise such a body is a 415 naming this variable.")
    max_records: int = Field(1024, validation_alias="SEMIF_MAX_RECORDS", ge=1, le=100000, description="JSON Lines records in one body.")
    max_submission_tokens: int = Field(
        262144, validation_alias="SEMIF_MAX_SUBMISSION_TOKENS",
        ge=1024, le=1 << 24, description="Prompt tokens the records of one JSON Lines body may need together (one request "
                                         "is bounded by SEMIF_N_CTX and SEMIF_MAX_BRANCH_TOKENS).")
    # Stateful sessions: SageMaker's two variables (AWS's container standard), then the adapter's bounds on them.
    stateful_sessions: bool = Field(
        False, validation_alias=SESSIONS_ENABLED_ENV,
        description="Open SageMaker stateful sessions ({\"requestType\": \"NEW_SESSION\"}); a session keeps the states its "
                    "requests use cached on this instance until it closes or expires.")
    sessions_expiration_s: int = Field(
        SESSIONS_EXPIRATION_S, ge=1, validation_alias=SESSIONS_EXPIRATION_ENV,
        description="A session's lifetime in seconds, fixed when it opens (its Expires).")
    max_sessions: int = Field(256, validation_alias="SEMIF_MAX_SESSIONS",
                              ge=1, le=100000, description="Sessions open at once; one more is refused 429.")
    empty_session_s: int = Field(
        60, validation_alias="SEMIF_EMPTY_SESSION_S",
        ge=1, description="A session that has answered no request ends this long after it opened, so that opens alone cannot "
                          "hold SEMIF_MAX_SESSIONS for a session's lifetime.")
    sessions_per_peer: int = Field(
        0, validation_alias="SEMIF_SESSIONS_PER_PEER",
        ge=0, le=100000, description="Sessions one client address may hold open (0: no share). For a server clients reach "
                                     "directly: behind SageMaker every invocation comes from its router's address, so leave 0 there.")
    session_tokens: int = Field(
        2048, validation_alias="SEMIF_SESSION_TOKENS",
        ge=0, description="Tokens of cached states that open sessions keep from eviction together (at most the prefix cache's "
                          "budget, SEMIF_CACHE_TOKENS); a session request whose state would pass it is refused 429.")
