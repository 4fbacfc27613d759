"""The adapter's route groups: SageMaker's (`/ping`, `/execution-parameters`), the invoke routes
(`POST /invocations` and `POST /v1/systemone`, one handler; `POST /v1/decisions`, OpenAI Decisions)
and System One's `/v1/models`.

`/invocations` reads either wire's body (an OpenAI Decisions body has `input` and a list of
`questions`) and answers on the wire it was asked on; `/v1/systemone` reads Jev's, `/v1/decisions`
OpenAI's. All three hand the same internal requests to the same worker.

Handlers only check auth, parse and validate (with `wire`), then hand the requests to the worker
and await its answer (`await_submission`): the event loop never runs inference. `app.create_app` adds
these groups to one FastAPI app.
"""

# No `from __future__ import annotations`: FastAPI reads the handlers' annotations (`Request`,
# imported lazily inside the route-group functions) at route creation, so they must be real objects.
import asyncio
import functools
import hmac
import json
from typing import TYPE_CHECKING, Any

from ..contract import CUSTOM_ATTRIBUTES_HEADER, LONG_CONTEXT_HEADER, SESSION_HEADER, answer_deadline_s, read_long_context
from ..decision.request import InternalRequest, ServerDefaults, resolve_request
from ..decision.responses import DecisionResponse
from ..errors import (
    InvalidRequestError,
    SemifError,
    ServiceBusyError,
    ShuttingDownError,
    UnauthorizedError,
)
from ..jsonlines import dump_records, error_record
from ..settings import MODES, Settings
from .bodies import read_limited_body
from .modelnames import model_names
from .runner import Drain
from .sessions import (
    answer_session_request,
    fill_session_state,
    read_request_session,
    read_session_request,
    remember_session_state,
)
from .wire import (
    JSON_TYPES,
    JSONLINES_TYPES,
    OPENAI,
    THREAD_PARSE_BYTES,
    ErrorBody,
    ExecutionParameters,
    ModelList,
    OpenAIErrorBody,
    ValidationErrorBody,
    decode_json_body,
    describe_model,
    dump_answer,
    error_response,
    parse_json_data,
    parse_jsonlines_body,
    read_content_type,
    read_custom_mode,
    refuse_content_type,
    refuse_jsonlines,
)
from .worker import InferenceWorker, Submission

if TYPE_CHECKING:  # pragma: no cover
    from fastapi import FastAPI

__all__ = ["add_decisions_routes", "add_invocation_routes", "add_sagemaker_routes", "add_systemone_routes", "await_submission",
           "check_auth"]



def check_auth(request: Any, settings: Settings) -> None:
    """401 unless the request carries `Authorization: Bearer <SEMIF_API_KEY>` (no key set: anyone)."""
    if not settings.api_key:
        return
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), settings.api_key.encode()):
        raise UnauthorizedError("missing or wrong bearer token: send 'Authorization: Bearer <SEMIF_API_KEY>'", field="authorization")


def add_sagemaker_routes(app: "FastAPI", worker: InferenceWorker, settings: Settings) -> None:
    """SageMaker's health check and Batch Transform's defaults (`/invocations` is shared with System One)."""
    from fastapi.responses import JSONResponse

    @app.get("/ping", summary="Health check: 200 once the model is loaded", responses={503: {"model": ErrorBody}})
    async def ping() -> Any:
        if worker.loading:
            return JSONResponse({"status": "loading"}, status_code=503, headers={"Retry-After": "2"})
        error = worker.unavailable()  # the worker died, or the model failed to load: the worker's own words
        if error is not None:
            return error_response(error)
        # scored: requests answered; stopped: bodies stopped between rounds (client gone, deadline passed); skipped: theirs unscored
        model = worker.engine.model_id if worker.engine is not None else None
        return {"status": "ok", "model": model, "queued": worker.queued, "pending": worker.pending,
                "scored": worker.scored, "stopped": worker.stopped, "skipped": worker.skipped}

    @app.get("/execution-parameters", response_model=ExecutionParameters, summary="Batch Transform defaults")
    async def execution_parameters() -> Any:
        # One worker owns the model; a multi-record payload already batches inside it.
        return ExecutionParameters(MaxConcurrentTransforms=1, BatchStrategy="MULTI_RECORD",
                                   MaxPayloadInMB=max(1, settings.max_body_bytes // (1 << 20)))


def _invocation_doc(openai: bool = False) -> dict[str, Any]:
    """OpenAPI extras of the invoke routes: JSON or JSON Lines bodies, the `mode` parameter, every error status.

    Built afresh for each app, as the routes' OpenAPI pieces were before: no two apps share these dicts.
    `openai`: `POST /v1/decisions`, one OpenAI Decisions body in JSON, errors in OpenAI's shape.
    """
    error = OpenAIErrorBody if openai else ErrorBody
    body = {"application/json": {"schema": {"$ref": "#/components/schemas/OpenAIRequest"}}} if openai else {
        "application/json": {"schema": {"anyOf": [{"$ref": "#/components/schemas/DecisionRequest"},
                                                  {"$ref": "#/components/schemas/OpenAIRequest"}]}},
        "application/jsonlines": {"schema": {"type": "string", "description": "One DecisionRequest (with an id) per line, at most "
                                                                             "SEMIF_MAX_RECORDS; read only with SEMIF_ACCEPT_JSONLINES."}},
    }
    responses: dict[int, Any] = {
            200: {"model": DecisionResponse,
                  "description": "One response; for application/jsonlines, one response per line, each with its id. "
                                 "An OpenAI Decisions body is answered with the openai SDK's Decision.",
                  "content": {"application/jsonlines": {"schema": {"type": "string"}}}},
            400: {"model": error,
                  "description": "Options without distinct answer tokens, a part that is not text (an image part, image assets, a "
                                 "box question), a body that is not what its Content-Encoding says, a bad mode"
                                 + ("; and on this wire a body that fails validation." if openai else ".")},
            401: {"model": error, "description": "SEMIF_API_KEY is set and the bearer token is missing or wrong (authentication_error)."},
            404: {"model": error,
                  "description": "`model` names a model this server does not serve. Accepted: none (absent or null), the loaded "
                                 "model's id (GET /v1/models) or file name, the hub reference it was loaded from (with or without "
                                 "its revision) or that repository, jev-latest, and SEMIF_MODEL_ALIASES ('*': any name); the "
                                 "message lists them" + (" (type invalid_request_error, code model_not_found, as OpenAI's)."
                                                         if openai else " (error_type not_found).")},
            413: {"model": ErrorBody,
                  "description": "Over a limit, named in the message: the body, as sent or decoded (SEMIF_MAX_BODY_BYTES), questions "
                                 "(SEMIF_MAX_QUESTIONS), options (SEMIF_MAX_OPTIONS), branch tokens (SEMIF_MAX_BRANCH_TOKENS), the "
                                 "context (SEMIF_N_CTX), a JSON Lines body's records (SEMIF_MAX_RECORDS) or their prompt tokens "
                                 "together (SEMIF_MAX_SUBMISSION_TOKENS)."},
            415: {"model": error, "description": "Content type other than application/json or application/jsonlines (multipart/"
                                                   "form-data carries image assets), application/jsonlines without "
                                                   "SEMIF_ACCEPT_JSONLINES, or a Content-Encoding other than zstd, gzip or "
                                                   "identity (answered with Accept-Encoding)."},
            429: {"model": error, "description": "Stateful sessions: one more would pass SEMIF_MAX_SESSIONS, or this request's state "
                                                   "would take the sessions' holds past SEMIF_SESSION_TOKENS (session_limit)."},
            503: {"model": error, "description": "Queue full or model loading; retry after Retry-After seconds."},
    }
    if openai:
        responses[200] = {"description": "The openai SDK's Decision: answers in question order, usage with cached_tokens."}
    else:
        responses[422] = {"model": ValidationErrorBody, "description": "The body fails validation (malformed JSON included)."}
    for status in (413, 415, 429, 503):
        responses[status]["model"] = error
    return {
        "responses": responses,
        "openapi_extra": {
            "parameters": [{"name": "mode", "in": "query", "required": False,
                            "schema": {"type": "string", "enum": list(MODES)}, "description": "Execution mode (default SEMIF_MODE)."},
                           {"name": SESSION_HEADER, "in": "header", "required": False, "schema": {"type": "string"},
                            "description": "A stateful session opened with {\"requestType\": \"NEW_SESSION\"}: its states stay cached "
                                           "here; unknown, closed or expired: 400 invalid_session."}],
            "requestBody": {"required": True, "content": body},
        },
    }


async def _read_body(request: Any, settings: Settings, wire: str | None) -> tuple[bytes, bool, str | None]:
    """Auth, content type and mode of an invoke request, and its body (limited and decoded): (body, JSON Lines?, mode)."""
    check_auth(request, settings)
    try:  # TypeSafe-Danger-Zone-Long-Context: honoured within the context; the app's 413 then says so (contract)
        request.state.long_context = read_long_context(request.headers.get(LONG_CONTEXT_HEADER))
    except ValueError as exc:
        raise InvalidRequestError(str(exc), field=LONG_CONTEXT_HEADER) from None
    ctype = read_content_type(request.headers.get("content-type")) or "application/json"
    jsonlines = ctype in JSONLINES_TYPES and wire is None
    if jsonlines and not settings.accept_jsonlines:
        raise refuse_jsonlines(ctype)  # before a byte of the body is read
    if not jsonlines and ctype not in JSON_TYPES:
        raise refuse_content_type(ctype, wire, settings.accept_jsonlines)
    mode = request.query_params.get("mode") or read_custom_mode(request.headers.get(CUSTOM_ATTRIBUTES_HEADER)) or None
    if mode is not None and mode not in MODES:
        raise InvalidRequestError(f"mode must be one of {', '.join(MODES)}; got {mode!r}", field="mode")
    return await read_limited_body(request, settings.max_body_bytes), jsonlines, mode


async def _decode(body: bytes) -> Any:
    """The single JSON body decoded, once: off the event loop when it is large."""
    return await asyncio.to_thread(decode_json_body, body) if len(body) > THREAD_PARSE_BYTES else decode_json_body(body)


async def _read_invocation(request: Any, worker: InferenceWorker, settings: Settings, wire: str | None, body: bytes | Any,
                           jsonlines: bool, mode: str | None) -> tuple[list[InternalRequest | SemifError], Any, list[Any]]:
    """An invoke request's body (JSON Lines bytes, or a single body's decoded value) parsed on `wire` (None: either, per
    body), its `model` names checked (`modelnames`: a JSON Lines record naming another model answers 404 for itself), and
    each request resolved against the server's defaults (`resolve_request`), once."""
    if jsonlines:
        parse = functools.partial(parse_jsonlines_body, max_records=settings.max_records)
        parsed = await asyncio.to_thread(parse, body) if len(body) > THREAD_PARSE_BYTES else parse(body)
    else:
        parsed = parse_json_data(body, wire)
    items, ids, decisions = parsed
    if not jsonlines and decisions[0] is not None:
        request.state.wire = OPENAI  # errors from here on answer in OpenAI's shape
    if worker.engine is not None:  # else the worker answers 503 (loading, or failed) whatever the name
        names = model_names(worker.engine, settings)
        items = [item if isinstance(item, SemifError) else names.refusal(item.model) or item for item in items]
        if not jsonlines and isinstance(items[0], SemifError):
            raise items[0]
    defaults = ServerDefaults.of(settings)
    return [item if isinstance(item, SemifError) else resolve_request(item, defaults, mode) for item in items], ids, decisions


async def _answer(request: Any, worker: InferenceWorker, settings: Settings, items: list[InternalRequest | SemifError],
                  session: str | None) -> list[Any] | None:
    """Hand the resolved requests to the worker and await their results (None: the client has gone); the stateful session
    its header names (`sessions`) rides with them, so the worker holds their states for it."""
    loop = asyncio.get_running_loop()
    submission = Submission(items=items, loop=loop, future=loop.create_future(), session=session)
    worker.submit(submission)
    results = await await_submission(request, submission, answer_deadline_s(settings.request_timeout_s), request.app.state.drain)
    if submission.refusal is not None:  # the whole body's (over SEMIF_MAX_SUBMISSION_TOKENS), not one record's
        raise submission.refusal
    return results


def add_invocation_routes(app: "FastAPI", worker: InferenceWorker, settings: Settings) -> None:
    """`POST /invocations` (SageMaker, either wire) and `POST /v1/systemone` (System One): one handler, two paths."""
    from fastapi import Request
    from fastapi.responses import Response

    async def invoke(request: Request) -> Any:  # one flow, read top to bottom
        body, jsonlines, mode = await _read_body(request, settings, None)
        data = None if jsonlines else await _decode(body)  # a single body is decoded here, once
        kind = None if jsonlines else read_session_request(data)  # {"requestType": "NEW_SESSION" | "CLOSE"}
        if kind is not None:
            return await answer_session_request(kind, request, worker.sessions, worker, answer_deadline_s(settings.request_timeout_s))
        session = await read_request_session(request, worker.sessions, worker)
        if not jsonlines:
            data = fill_session_state(data, session, worker.sessions, openai=False)  # questions only: the session's state
        items, ids, decisions = await _read_invocation(request, worker, settings, None, body if jsonlines else data, jsonlines, mode)
        results = await _answer(request, worker, settings, items, session)
        if results is None:  # the client has gone: nobody reads an answer
            return Response(status_code=499)
        if not jsonlines:
            if isinstance(results[0], SemifError):
                raise results[0]
            remember_session_state(data, session, worker.sessions, openai=False)
            return Response(json.dumps(dump_answer(results[0], ids, decisions[0]), ensure_ascii=False), media_type="application/json")
        lines = [
            error_record(out, rid) if isinstance(out, SemifError) else dump_answer(out, rid, extra)
            for out, rid, extra in zip(results, ids, decisions, strict=True)
        ]
        return Response(dump_records(lines), media_type="application/jsonlines")

    doc = _invocation_doc()
    app.add_api_route("/invocations", invoke, methods=["POST"], summary="Score a decision request (SageMaker; either wire)", **doc)
    app.add_api_route("/v1/systemone", invoke, methods=["POST"], summary="Score a decision request (System One)", **doc)


def add_decisions_routes(app: "FastAPI", worker: InferenceWorker, settings: Settings) -> None:
    """`POST /v1/decisions`: OpenAI Decisions, what the `openai` SDK's `client.decisions.create(...)` calls."""
    from fastapi import Request
    from fastapi.responses import Response

    async def decide(request: Request) -> Any:
        request.state.wire = OPENAI
        body, _, mode = await _read_body(request, settings, OPENAI)
        session = await read_request_session(request, worker.sessions, worker)
        data = fill_session_state(await _decode(body), session, worker.sessions, openai=True)
        items, _, decisions = await _read_invocation(request, worker, settings, OPENAI, data, False, mode)
        results = await _answer(request, worker, settings, items, session)
        if results is None:
            return Response(status_code=499)
        if isinstance(results[0], SemifError):
            raise results[0]
        remember_session_state(data, session, worker.sessions, openai=True)
        return Response(json.dumps(dump_answer(results[0], None, decisions[0]), ensure_ascii=False), media_type="application/json")

    app.add_api_route("/v1/decisions", decide, methods=["POST"], summary="Score a decision request (OpenAI Decisions)",
                      **_invocation_doc(openai=True))


async def wait_for_disconnect(request: Any) -> None:
    """Return when the client closes its connection (the body is already read, so only that can arrive)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def await_submission(request: Any, submission: Submission, deadline_s: float, drain: Drain | None = None) -> list[Any] | None:
    """The submission's results; None if the client left first (the worker then drops the submission); 503 past the deadline.

    The worker answers any submission it takes within `SEMIF_REQUEST_TIMEOUT` or with a 503, and a dead
    worker answers all at once, so the deadline is a last guard: no request waits forever. After
    SIGTERM, a submission still unanswered when the drain window closes gets a 503 `shutting_down`.
    """
    watch = asyncio.ensure_future(wait_for_disconnect(request))
    deadline = asyncio.get_running_loop().time() + deadline_s
    try:
        while True:
            left = deadline - asyncio.get_running_loop().time()
            draining = drain.left(drain.window_s) if drain is not None else None
            if left <= 0 or (draining is not None and draining <= 0):
                break
            step = min(left, 0.25 if draining is None else max(0.01, min(draining, 0.25)))
            done, _ = await asyncio.wait({submission.future, watch}, timeout=step, return_when=asyncio.FIRST_COMPLETED)
            if done:
                break
    finally:
        watch.cancel()
    if submission.future.done():
        return submission.future.result()
    gone, drained = watch.done() and not watch.cancelled(), drain is not None and drain.started is not None
    # the worker drops it, or stops it before its next round
    submission.abandon("its client left" if gone else "the drain window closed" if drained else "its deadline passed")
    if gone:
        return None
    if drained:
        raise ShuttingDownError(f"the server received SIGTERM and this request was not answered within SEMIF_DRAIN_S="
                                f"{drain.window_s:g} s; retry (another instance will answer)", retry_after=1)
    raise ServiceBusyError(f"no answer within {deadline_s:.0f} s; retry", retry_after=5)


def add_systemone_routes(app: "FastAPI", worker: InferenceWorker, settings: Settings) -> None:
    """`GET /v1/models`: the loaded model, as System One's card and as OpenAI's model list (one body)."""
    from fastapi import Request

    @app.get("/v1/models", response_model=ModelList, summary="Loaded model (System One and OpenAI)",
             responses={401: {"model": ErrorBody}, 503: {"model": ErrorBody}})
    async def models(request: Request) -> Any:
        check_auth(request, settings)
        error = worker.unavailable()
        if error is not None:
            raise error
        return describe_model(worker.engine)
