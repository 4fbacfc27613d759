"""The adapter's route groups: SageMaker's (`/ping`, `/execution-parameters`), the invoke routes
(`POST /invocations` and `POST /v1/systemone`, one handler) and System One's `/v1/models`.

Handlers only check auth, parse and validate (with `wire`), then hand the requests to the worker
and await its answer (`await_job`): the event loop never runs inference. `app.create_app` adds
these groups to one FastAPI app.
"""

# No `from __future__ import annotations`: FastAPI reads the handlers' annotations (`Request`,
# imported lazily inside the route-group functions) at route creation, so they must be real objects.
import asyncio
import hmac
import json
from typing import TYPE_CHECKING, Any

from ..decision.schema import DecisionResponse
from ..errors import (
    InvalidRequestError,
    SemifError,
    ServiceBusyError,
    ShuttingDownError,
    UnauthorizedError,
    UnsupportedMediaTypeError,
)
from ..jsonlines import dump_records, error_record
from ..settings import MODES, Settings
from .runner import Drain
from .wire import (
    CUSTOM_ATTRIBUTES_HEADER,
    JSON_TYPES,
    JSONLINES_TYPES,
    THREAD_PARSE_BYTES,
    ErrorBody,
    ExecutionParameters,
    ModelList,
    describe_model,
    dump_response,
    error_response,
    parse_json_body,
    parse_jsonlines_body,
    read_content_type,
    read_custom_mode,
    read_limited_body,
)
from .worker import InferenceWorker, Job

if TYPE_CHECKING:  # pragma: no cover
    from fastapi import FastAPI

__all__ = ["add_invocation_routes", "add_sagemaker_routes", "add_systemone_routes", "await_job", "check_auth"]

ANSWER_DEADLINE_FACTOR = 2  # a handler gives up after twice SEMIF_REQUEST_TIMEOUT (the worker answers well before)


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
        return {"status": "ok", "model": getattr(worker.engine, "model_id", None), "queued": worker.queued, "pending": worker.pending}

    @app.get("/execution-parameters", response_model=ExecutionParameters, summary="Batch Transform defaults")
    async def execution_parameters() -> Any:
        # One worker owns the model; a multi-record payload already batches inside it.
        return ExecutionParameters(MaxConcurrentTransforms=1, BatchStrategy="MULTI_RECORD",
                                   MaxPayloadInMB=max(1, settings.max_body_bytes // (1 << 20)))


def _invocation_doc() -> dict[str, Any]:
    """OpenAPI extras of the invoke routes: JSON or JSON Lines bodies, the `mode` parameter, every error status.

    Built afresh for each app, as the routes' OpenAPI pieces were before: no two apps share these dicts.
    """
    return {
        "responses": {
            200: {"model": DecisionResponse,
                  "description": "One response; for application/jsonlines, one response per line, each with its id.",
                  "content": {"application/jsonlines": {"schema": {"type": "string"}}}},
            400: {"model": ErrorBody,
                  "description": "Malformed JSON, non-UTF-8 body, invalid request or options without distinct answer tokens."},
            401: {"model": ErrorBody, "description": "SEMIF_API_KEY is set and the bearer token is missing or wrong."},
            413: {"model": ErrorBody,
                  "description": "Over a limit, named in the message: the body (SEMIF_MAX_BODY_BYTES), questions (SEMIF_MAX_QUESTIONS), "
                                 "options (SEMIF_MAX_OPTIONS), branch tokens (SEMIF_MAX_BRANCH_TOKENS) or the context (SEMIF_N_CTX)."},
            415: {"model": ErrorBody, "description": "Content type other than application/json or application/jsonlines."},
            503: {"model": ErrorBody, "description": "Queue full or model loading; retry after Retry-After seconds."},
        },
        "openapi_extra": {
            "parameters": [{"name": "mode", "in": "query", "required": False,
                            "schema": {"type": "string", "enum": list(MODES)}, "description": "Execution mode (default SEMIF_MODE)."}],
            "requestBody": {"required": True, "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/DecisionRequest"}},
                "application/jsonlines": {"schema": {"type": "string", "description": "One DecisionRequest (with an id) per line."}},
            }},
        },
    }


def add_invocation_routes(app: "FastAPI", worker: InferenceWorker, settings: Settings) -> None:
    """`POST /invocations` (SageMaker) and `POST /v1/systemone` (System One): one handler, two paths."""
    from fastapi import Request
    from fastapi.responses import Response

    async def invoke(request: Request) -> Any:  # one flow, read top to bottom
        check_auth(request, settings)
        ctype = read_content_type(request.headers.get("content-type")) or "application/json"
        jsonlines = ctype in JSONLINES_TYPES
        if not jsonlines and ctype not in JSON_TYPES:
            raise UnsupportedMediaTypeError(f"content type {ctype!r} is not supported; send application/json, "
                                            "or application/jsonlines with one request per line", field="content-type")
        mode = request.query_params.get("mode") or read_custom_mode(request.headers.get(CUSTOM_ATTRIBUTES_HEADER)) or None
        if mode is not None and mode not in MODES:
            raise InvalidRequestError(f"mode must be one of {', '.join(MODES)}; got {mode!r}", field="mode")
        body = await read_limited_body(request, settings.max_body_bytes)
        parse = parse_jsonlines_body if jsonlines else parse_json_body
        items, ids = await asyncio.to_thread(parse, body) if len(body) > THREAD_PARSE_BYTES else parse(body)

        loop = asyncio.get_running_loop()
        job = Job(items=items, mode=mode, loop=loop, future=loop.create_future())
        worker.submit(job)
        results = await await_job(request, job, ANSWER_DEADLINE_FACTOR * settings.request_timeout_s, request.app.state.drain)
        if results is None:  # the client has gone: nobody reads an answer
            return Response(status_code=499)
        if not jsonlines:
            if isinstance(results[0], SemifError):
                raise results[0]
            return Response(json.dumps(dump_response(results[0], ids), ensure_ascii=False), media_type="application/json")
        lines = [
            error_record(out, rid) if isinstance(out, SemifError) else dump_response(out, rid)
            for out, rid in zip(results, ids)
        ]
        return Response(dump_records(lines), media_type="application/jsonlines")

    doc = _invocation_doc()
    app.add_api_route("/invocations", invoke, methods=["POST"], summary="Score a decision request (SageMaker)", **doc)
    app.add_api_route("/v1/systemone", invoke, methods=["POST"], summary="Score a decision request (System One)", **doc)


async def wait_for_disconnect(request: Any) -> None:
    """Return when the client closes its connection (the body is already read, so only that can arrive)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def await_job(request: Any, job: Job, deadline_s: float, drain: Drain | None = None) -> list[Any] | None:
    """The job's results; None if the client left first (the worker then drops the job); 503 past the deadline.

    The worker answers any job it takes within `SEMIF_REQUEST_TIMEOUT` or with a 503, and a dead
    worker answers all at once, so the deadline is a last guard: no request waits forever. After
    SIGTERM, a job still unanswered when the drain window closes gets a 503 `shutting_down`.
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
            done, _ = await asyncio.wait({job.future, watch}, timeout=step, return_when=asyncio.FIRST_COMPLETED)
            if done:
                break
    finally:
        watch.cancel()
    if job.future.done():
        return job.future.result()
    job.abandoned = True
    if watch.done() and not watch.cancelled():
        return None
    if drain is not None and drain.started is not None:
        raise ShuttingDownError(f"the server received SIGTERM and this request was not answered within SEMIF_DRAIN_S="
                                f"{drain.window_s:g} s; retry (another instance will answer)", retry_after=1)
    raise ServiceBusyError(f"no answer within {deadline_s:.0f} s; retry", retry_after=5)


def add_systemone_routes(app: "FastAPI", worker: InferenceWorker, settings: Settings) -> None:
    """System One's `GET /v1/models`: the loaded model's card."""
    from fastapi import Request

    @app.get("/v1/models", response_model=ModelList, summary="Loaded model (System One)",
             responses={401: {"model": ErrorBody}, 503: {"model": ErrorBody}})
    async def models(request: Request) -> Any:
        check_auth(request, settings)
        error = worker.unavailable()
        if error is not None:
            raise error
        return ModelList(models=[describe_model(worker.engine)])
