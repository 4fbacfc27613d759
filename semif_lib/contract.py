"""SageMaker's contract with a hosting container, written once: standard library only, imported by every side.

The numbers and names a container lives by on SageMaker AI ("Use your own inference code with hosting services",
InvokeEndpoint's reference, "Stateful sessions"; as aws/sagemaker-inference-toolkit's `parameters.py` keeps them):
the port, where the model is unpacked, the payload and invocation limits, the stop grace, the headers, and the
stateful sessions' wire and environment as AWS's container standard (aws/model-hosting-container-standards) has
them. The adapter, the text twin, the image runners, the AWS wing and the benchmarks read them from here. One value is
written next door: the model directory is `llama_flags.DLC_MODEL_DIR`, because the DLC replica image runs that file alone
(standard library only, without this package), and it is imported here as `MODEL_DIR`.

Jev's request headers live here too: `TypeSafe-Danger-Zone-Long-Context: true` (Jev 1.14, experimental) asks for a
262,144-token request instead of Jev's default limits (64,000 tokens a request, 32,000 for the state and the longest
question). This server has no limit of its own below its context, so the header is honoured within the model's context:
every request that fits `SEMIF_N_CTX` is answered, with or without it, and one that does not is the usual 413 naming
`SEMIF_N_CTX`, which with the header also says that the context, not the header, is the bound (`explain_long_context`,
applied by the app's error handler to the context's 413, field `state`). A value other than true or false is a 400
naming the header (`read_long_context`'s ValueError, raised as one by the route). SageMaker's InvokeEndpoint forwards
no such header, so it matters where clients reach the server directly (`/v1/systemone`).

The answer deadline lives here too, as the rule it is: while `SEMIF_REQUEST_TIMEOUT_S` is one a real-time endpoint
allows (60 s or less), the handler's deadline is twice it but never past 58 s, since SageMaker has already answered
the client with a ModelError at 60 s; a longer timeout means a longer wait was chosen on purpose (Batch Transform sets
one through `CreateTransformJob.Environment`, inside the job's `InvocationsTimeoutInSeconds`), and it is the deadline.
"""

from __future__ import annotations

from semif_lib.llama_flags import DLC_MODEL_DIR as MODEL_DIR  # where SageMaker unpacks ModelDataUrl (or copies an S3 prefix)

__all__ = ["ANSWER_DEADLINE_FACTOR", "CLOSED_SESSION_HEADER", "CLOSE_SESSION", "CUSTOM_ATTRIBUTES_HEADER", "KILL_AFTER_S",
           "LONG_CONTEXT_HEADER", "LONG_CONTEXT_TOKENS", "MAX_PAYLOAD_BYTES", "MODEL_DIR", "NEW_SESSION", "NEW_SESSION_HEADER", "PORT",
           "REALTIME_INVOCATION_S", "SESSION_HEADER", "SESSION_ID_PATTERN", "SESSIONS_ENABLED_ENV", "SESSIONS_EXPIRATION_ENV",
           "SESSIONS_EXPIRATION_S", "answer_deadline_s", "explain_long_context", "read_long_context", "request_timeout_for"]

PORT = 8080  # the container answers GET /ping and POST /invocations here
MAX_PAYLOAD_BYTES = 6_291_456  # a real-time invocation's body: 6 MB
REALTIME_INVOCATION_S = 60.0  # a real-time endpoint's container must answer within this
KILL_AFTER_S = 30.0  # `docker stop`: SIGTERM, then SIGKILL this long after
CUSTOM_ATTRIBUTES_HEADER = "X-Amzn-SageMaker-Custom-Attributes"  # InvokeEndpoint's CustomAttributes, passed through
SESSION_HEADER = "X-Amzn-SageMaker-Session-Id"  # stateful sessions: the session a request belongs to
NEW_SESSION_HEADER = "X-Amzn-SageMaker-New-Session-Id"  # the container's answer opening one (`<id>; Expires=<UTC>`)
CLOSED_SESSION_HEADER = "X-Amzn-SageMaker-Closed-Session-Id"  # the container's answer closing one
NEW_SESSION = "NEW_SESSION"  # InvokeEndpoint's SessionId opening a session, and the body's {"requestType": ...} doing so
CLOSE_SESSION = "CLOSE"  # the body's {"requestType": ...} closing the session its header names
SESSION_ID_PATTERN = r"^[a-zA-Z0-9](-*[a-zA-Z0-9])*$"  # botocore's SessionIdHeader (at most 256 characters)
# AWS's container standard (model-hosting-container-standards) reads these two; SageMaker's names, not SEMIF_*.
SESSIONS_ENABLED_ENV = "SAGEMAKER_ENABLE_STATEFUL_SESSIONS"  # "true": the container opens sessions (default off)
SESSIONS_EXPIRATION_ENV = "SAGEMAKER_SESSIONS_EXPIRATION"  # a session's lifetime in seconds, fixed at opening
SESSIONS_EXPIRATION_S = 1200
LONG_CONTEXT_HEADER = "TypeSafe-Danger-Zone-Long-Context"  # Jev 1.14's experimental opt-in to long requests (`true`)
LONG_CONTEXT_TOKENS = 262_144  # what Jev allows a request, and a question, with it

REALTIME_MARGIN_S = 2.0  # the answer still has to travel back inside the invocation limit
ANSWER_DEADLINE_FACTOR = 2  # a job admitted just before SEMIF_REQUEST_TIMEOUT_S still gets to compute


def answer_deadline_s(request_timeout_s: float) -> float:
    """The handler's deadline for a request under `SEMIF_REQUEST_TIMEOUT_S` (see the module doc)."""
    if request_timeout_s > REALTIME_INVOCATION_S:
        return request_timeout_s
    return min(ANSWER_DEADLINE_FACTOR * request_timeout_s, REALTIME_INVOCATION_S - REALTIME_MARGIN_S)


def request_timeout_for(deadline_s: float) -> float:
    """The `SEMIF_REQUEST_TIMEOUT_S` whose deadline is `deadline_s`, for a wait longer than a real-time invocation."""
    if deadline_s <= REALTIME_INVOCATION_S:
        raise ValueError(f"a deadline of {deadline_s:g} s fits a real-time endpoint: keep the default SEMIF_REQUEST_TIMEOUT_S")
    return deadline_s


def read_long_context(value: str | None) -> bool:
    """Whether a request's `TypeSafe-Danger-Zone-Long-Context` asks for long context (absent: no); a `ValueError` whose
    message names the header unless it is true or false (the route answers it as a 400)."""
    if value is None or value.strip().lower() == "false":
        return False
    if value.strip().lower() == "true":
        return True
    raise ValueError(f"{LONG_CONTEXT_HEADER} must be true or false, not {value.strip()[:32]!r}")


def explain_long_context(message: str) -> str:
    """The context's 413 to a request that asked for long context, saying that the server's context is the bound."""
    return (f"{message}; {LONG_CONTEXT_HEADER} is honoured within this server's context, which is the bound here, not Jev's "
            f"{LONG_CONTEXT_TOKENS:,} tokens")
