"""Calling a deployed endpoint through sagemaker-runtime: a decision request, a chat completion, a chat stream.

The bytes sent and the stream's parsing are the plumbing's (`semif_lib.invocation`), the same for a server on
this machine; here is only what SageMaker adds: `invoke_endpoint`, `CustomAttributes`, `SessionId` (stateful
sessions), and the response stream's `PayloadPart` events (`invoke_endpoint_with_response_stream`).
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Iterator, Mapping

from ..contract import NEW_SESSION
from ..invocation import SESSION_BODIES, iter_chat_deltas, iter_sse_events, read_new_session
from ..settings import Settings
from .clients import runtime_client

__all__ = ["close_endpoint_session", "invoke_chat_endpoint", "invoke_decision_endpoint", "iter_payload_parts", "open_endpoint_session",
           "stream_chat_endpoint"]


def invoke_chat_endpoint(endpoint: str, body: bytes, settings: Settings) -> dict[str, Any]:
    runtime = runtime_client(settings)
    resp = runtime.invoke_endpoint(EndpointName=endpoint, ContentType="application/json", Accept="application/json", Body=body)
    return json.loads(resp["Body"].read())


def invoke_decision_endpoint(endpoint: str, body: bytes, settings: Settings, mode: str | None = None,
                             session: str | None = None) -> dict[str, Any]:
    """POST a decision request to the adapter endpoint; `mode` rides in CustomAttributes (`mode=serial`), `session` in
    SessionId (SageMaker routes it to the instance that opened it and passes it on as X-Amzn-SageMaker-Session-Id)."""
    runtime = runtime_client(settings)
    kwargs: dict[str, Any] = {"EndpointName": endpoint, "ContentType": "application/json", "Accept": "application/json", "Body": body}
    if mode:
        kwargs["CustomAttributes"] = f"mode={mode}"
    if session:
        kwargs["SessionId"] = session
    resp = runtime.invoke_endpoint(**kwargs)
    return json.loads(resp["Body"].read())


def open_endpoint_session(endpoint: str, settings: Settings) -> tuple[str, str]:
    """A stateful session on the endpoint: `SessionId=NEW_SESSION` with the standard's opening body; its id and expiry."""
    runtime = runtime_client(settings)
    resp = runtime.invoke_endpoint(EndpointName=endpoint, ContentType="application/json", Accept="application/json",
                                   Body=SESSION_BODIES["open"], SessionId=NEW_SESSION)
    return read_new_session(resp.get("NewSessionId"))


def close_endpoint_session(endpoint: str, session: str, settings: Settings) -> str:
    """Close `session`; the id SageMaker reports closed (`ClosedSessionId`)."""
    runtime = runtime_client(settings)
    resp = runtime.invoke_endpoint(EndpointName=endpoint, ContentType="application/json", Accept="application/json",
                                   Body=SESSION_BODIES["close"], SessionId=session)
    return resp.get("ClosedSessionId") or session


def stream_chat_endpoint(endpoint: str, body: bytes, settings: Settings) -> Iterator[str]:
    """Text deltas from `invoke_endpoint_with_response_stream` (the DLC relays llama-server's SSE)."""
    runtime = runtime_client(settings)
    resp = runtime.invoke_endpoint_with_response_stream(
        EndpointName=endpoint, ContentType="application/json", Accept="text/event-stream", Body=body)
    yield from iter_chat_deltas(iter_sse_events(iter_payload_parts(resp["Body"])))


def iter_payload_parts(event_stream: Iterable[Mapping[str, Any]]) -> Iterator[bytes]:
    """The bytes of each `PayloadPart` of a botocore response EventStream; stream errors raise."""
    for event in event_stream:
        if "PayloadPart" in event:
            yield event["PayloadPart"]["Bytes"]
        for error_key in ("ModelStreamError", "InternalStreamFailure"):
            if error_key in event:
                err = event[error_key]
                raise RuntimeError(f"{error_key}: {err.get('ErrorCode', '')} {err.get('Message', '')}".strip())
