"""What the workshop's endpoints are sent and answer, the same wherever they run.

A server on this machine (`target=local`, `target=container`) and a SageMaker endpoint get the same
bytes (`encode_payload`, held to SageMaker's real-time payload limit) and stream chat the same way
(llama-server's server-sent events, parsed by `iter_sse_events` and `iter_chat_deltas`). The text
endpoint starts from the same llama-server settings everywhere (`text_settings`: the DLC variant's
defaults, updated with a notebook's own); the decision server from the same environment (`decision_env`: stateful
sessions on), and a Batch Transform job's container with `transform_env` on top (JSON Lines bodies read). A stateful
session is opened and closed with the same bodies everywhere (`SESSION_BODIES`), and the
container's answer to an opening is read by `read_new_session`.

This is plumbing: pure functions, standard library only. The targets on this machine and the AWS
wing (`aws.deployment`, `aws.invocations`) both call them.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Iterator, Mapping, Sequence

from .contract import CLOSE_SESSION, MAX_PAYLOAD_BYTES, NEW_SESSION, SESSIONS_ENABLED_ENV

__all__ = [
    "SESSION_BODIES",
    "build_chat_request",
    "decision_env",
    "default_text_settings",
    "encode_payload",
    "iter_chat_deltas",
    "iter_sse_events",
    "read_new_session",
    "text_settings",
    "transform_env",
]



# ====================================================================== request bytes
def encode_payload(payload: Mapping[str, Any] | str | bytes) -> bytes:
    """The exact bytes sent to an endpoint, local or AWS: compact UTF-8 JSON (bytes pass through)."""
    if isinstance(payload, bytes):
        body = payload
    elif isinstance(payload, str):
        body = payload.encode("utf-8")
    else:
        body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if len(body) > MAX_PAYLOAD_BYTES:
        raise ValueError(f"payload is {len(body)} bytes; SageMaker real-time endpoints accept {MAX_PAYLOAD_BYTES}")
    return body


def build_chat_request(messages: Sequence[Mapping[str, Any]] | str, stream: bool = False, **params: Any) -> dict[str, Any]:
    """OpenAI chat-completions body; a plain string becomes one user message."""
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    body: dict[str, Any] = {"messages": [dict(m) for m in messages], "max_tokens": params.pop("max_tokens", 256)}
    body.update(params)
    if stream:
        body["stream"] = True
    return body


# ====================================================================== the chat stream
def iter_sse_events(chunks: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    """Server-sent events -> JSON objects, whatever the chunk boundaries; stops at `data: [DONE]`.

    Payload parts split lines anywhere (even inside a UTF-8 character), so bytes are buffered
    until a newline. Lines other than `data:` (comments, `event:`) are skipped.
    """
    buffer = b""
    for chunk in chunks:
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            event = _sse_line(line)
            if event is _DONE:
                return
            if event is not None:
                yield event
    event = _sse_line(buffer)
    if event is not None and event is not _DONE:
        yield event


_DONE = object()


def _sse_line(line: bytes) -> Any:
    line = line.strip()
    if not line.startswith(b"data:"):
        return None
    data = line[5:].strip()
    if data == b"[DONE]":
        return _DONE
    if not data:
        return None
    return json.loads(data)


def iter_chat_deltas(events: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """`choices[0].delta.content` of each chat-completion chunk (empty deltas skipped)."""
    for event in events:
        if "error" in event:
            raise RuntimeError(f"stream error: {event['error']}")
        for choice in event.get("choices", [])[:1]:
            text = (choice.get("delta") or {}).get("content")
            if text:
                yield text


# ====================================================================== the text endpoint's settings
def default_text_settings(variant: str = "cpu") -> dict[str, Any]:
    """llama-server settings for the text endpoint: modest context, Jinja chat template, all layers on a GPU."""
    settings: dict[str, Any] = {"ctx_size": 4096, "jinja": True}
    if variant == "cuda":
        settings["n_gpu_layers"] = 999
    return settings


def text_settings(variant: str, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The text endpoint's llama-server settings: the variant's defaults updated with `overrides`
    (a notebook's own settings keep the GPU offload on cuda); a `None` value drops a default."""
    merged = {**default_text_settings(variant), **dict(overrides or {})}
    return {k: v for k, v in merged.items() if v is not None}


def decision_env(variant: str, mode: str, sessions: bool = True) -> dict[str, str]:
    """The decision server's environment beyond its image defaults, on SageMaker and on this machine alike: its default
    mode, stateful sessions on (a session's states stay cached on the instance its requests stick to; an async endpoint
    routes from its queue and has none), GPU offload on cuda."""
    env = {"SEMIF_MODE": mode}
    if sessions:
        env[SESSIONS_ENABLED_ENV] = "true"
    if variant == "cuda":
        env["SEMIF_N_GPU_LAYERS"] = "999"
    return env


def transform_env() -> dict[str, str]:
    """What a Batch Transform job's container needs beyond the decision model's environment: JSON Lines bodies read (one
    request per line; a real-time endpoint refuses them, 415). A job's mini-batch is up to 6 MB of the attendee's own
    file, not a stranger's body, so its record cap and token budget are the settings' ceilings; the job's deadline (one
    hour a mini-batch) still stops it between rounds. The AWS wing adds it to CreateTransformJob's Environment; a server
    on this machine, which stands in for both the endpoint and the job, runs with it."""
    from .limits import hard_ceiling

    return {"SEMIF_ACCEPT_JSONLINES": "true", "SEMIF_MAX_RECORDS": str(hard_ceiling("max_records")),
            "SEMIF_MAX_SUBMISSION_TOKENS": str(hard_ceiling("max_submission_tokens"))}


# ====================================================================== stateful sessions, the client's side
SESSION_BODIES = {"open": encode_payload({"requestType": NEW_SESSION}), "close": encode_payload({"requestType": CLOSE_SESSION})}


def read_new_session(value: str | None) -> tuple[str, str]:
    """The session id and its expiry (UTC, as the container wrote it) from `X-Amzn-SageMaker-New-Session-Id: <id>;
    Expires=<UTC>` (SageMaker's `NewSessionId` carries the same value); a missing value means the endpoint opened none."""
    if not value:
        raise ValueError("the endpoint opened no session: its container runs without stateful sessions "
                         f"({SESSIONS_ENABLED_ENV}=true turns them on)")
    session, _, rest = value.partition(";")
    expires = rest.strip().removeprefix("Expires=") if rest.strip().startswith("Expires=") else ""
    return session.strip(), expires
