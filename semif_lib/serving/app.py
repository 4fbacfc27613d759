"""`semif serve`: the decision engine behind SageMaker's container contract and System One's API.

Routes: `GET /ping`, `POST /invocations` (JSON, or JSON Lines for Batch Transform),
`GET /execution-parameters`, `POST /v1/systemone`, `GET /v1/models`, and the OpenAPI document
at `GET /openapi.json`, generated from the same pydantic models as the engine's wire format.

The handlers here only parse and validate (with `wire`), then hand the requests to the
`worker`, the one thread that owns the engine, and await its answer: the event loop never runs
inference, so `/ping` answers while a decision is being computed, and a full queue answers 503
with `Retry-After`. `runner` runs the app under uvicorn with SageMaker's SIGTERM drain.
`create_app` builds the app from route groups, one function each.

FastAPI and uvicorn are imported inside the functions that need them, so `semif --help` and
`import semif_lib` stay cheap.
"""

# No `from __future__ import annotations`: FastAPI reads the handlers' annotations (`Request`,
# imported lazily inside the route-group functions) at route creation, so they must be real objects.
import argparse
import asyncio
import hmac
import json
import logging
import sys
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ..arguments import add_engine_arguments, engine_overrides, run_command
from ..decision.schema import DecisionRequest, DecisionResponse
from ..errors import (
    InvalidRequestError,
    SemifError,
    ServiceBusyError,
    ShuttingDownError,
    UnauthorizedError,
    UnsupportedMediaTypeError,
)
from ..jsonlines import dump_records, error_record
from ..settings import MODES, Settings, load_settings
from .runner import Drain, serve_uvicorn
from .wire import (
    CUSTOM_ATTRIBUTES_HEADER,
    HTTP_ERROR_TYPES,
    JSON_TYPES,
    JSONLINES_TYPES,
    THREAD_PARSE_BYTES,
    ErrorBody,
    ExecutionParameters,
    ModelList,
    describe_model,
    dump_response,
    error_response,
    package_version,
    parse_json_body,
    parse_jsonlines_body,
    read_content_type,
    read_custom_mode,
    read_limited_body,
)
from .worker import InferenceWorker, Job

if TYPE_CHECKING:  # pragma: no cover
    from fastapi import FastAPI

__all__ = ["command_serve", "create_app", "load_engine", "main", "register_cli", "run_server"]

log = logging.getLogger("semif.adapter")
ANSWER_DEADLINE_FACTOR = 2  # a handler gives up after twice SEMIF_REQUEST_TIMEOUT (the worker answers well before)


def load_engine(settings: Settings) -> Any:
    """Default engine factory: the real `DecisionEngine` (imports llama_cpp)."""
    from ..decision.engine import DecisionEngine

    return DecisionEngine(settings)


# ----------------------------------------------------------------- the app
def create_app(
    settings: Settings | None = None,
    engine_factory: Callable[[Settings], Any] | None = None,
    on_load_error: Callable[[BaseException], None] | None = None,
    on_worker_death: Callable[[BaseException], None] | None = None,
) -> "FastAPI":
    """Build the ASGI app; the worker starts (and loads the model) in the app's lifespan.

    `engine_factory(settings)` runs in the worker thread; tests can pass a fake engine.
    `on_load_error` / `on_worker_death` are called (from that thread) if loading fails or the
    worker dies later; `run_server` uses them to exit non-zero.
    """
    from contextlib import asynccontextmanager

    from fastapi import FastAPI

    settings = settings or load_settings()
    worker = InferenceWorker(settings, engine_factory or load_engine, settings.queue_size, on_load_error, on_worker_death)
    drain = Drain(window_s=settings.drain_s)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        worker.start()
        try:
            yield
        finally:
            # uvicorn has already waited for in-flight requests (each answered, or a 503 once the drain window
            # closed); finish any queued job and close the engine. After SIGTERM, a decode whose request was
            # already answered 503 is not waited for beyond the window: the process exits well before SIGKILL.
            left = drain.left(drain.worker_budget_s)
            await asyncio.to_thread(worker.stop, 60.0 if left is None else max(0.5, left))

    app = FastAPI(
        title="semif decision adapter",
        version=package_version(),
        description="Decisions as probabilities over declared options. SageMaker container contract "
        "(/ping, /invocations, /execution-parameters) and System One compatible (/v1/systemone, /v1/models).",
        lifespan=lifespan,
        separate_input_output_schemas=False,
        redoc_url=None,
    )
    app.state.worker = worker
    app.state.drain = drain
    app.state.settings = settings
    # Registration order is the order of the paths in the OpenAPI document.
    _install_error_handlers(app)
    _add_sagemaker_routes(app, worker, settings)
    _add_invocation_routes(app, worker, settings)
    _add_systemone_routes(app, worker, settings)
    _install_openapi(app)
    return app


def _install_error_handlers(app: "FastAPI") -> None:
    """Every error answers `{"error": {...}}`: ours, Starlette's (404, 405), validation's, and bugs'."""
    from fastapi import Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException as StarletteHTTPException

    @app.exception_handler(SemifError)
    async def _semif_error(_: Request, exc: SemifError) -> Any:
        return error_response(exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException) -> Any:
        body = {"error": {"type": HTTP_ERROR_TYPES.get(exc.status_code, "http_error"), "message": str(exc.detail), "field": None}}
        return JSONResponse(body, status_code=exc.status_code, headers=getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, exc: RequestValidationError) -> Any:
        first = (exc.errors() or [{}])[0]
        field = ".".join(str(p) for p in first.get("loc", ())) or None
        return error_response(InvalidRequestError(f"{field}: {first.get('msg', 'invalid request')}", field=field))

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> Any:  # a bug: still JSON, and logged
        log.exception("unhandled error")
        return error_response(SemifError(f"internal error: {type(exc).__name__}"))


def _check_auth(request: Any, settings: Settings) -> None:
    """401 unless the request carries `Authorization: Bearer <SEMIF_API_KEY>` (no key set: anyone)."""
    if not settings.api_key:
        return
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), settings.api_key.encode()):
        raise UnauthorizedError("missing or wrong bearer token: send 'Authorization: Bearer <SEMIF_API_KEY>'", field="authorization")


def _add_sagemaker_routes(app: "FastAPI", worker: InferenceWorker, settings: Settings) -> None:
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


def _add_invocation_routes(app: "FastAPI", worker: InferenceWorker, settings: Settings) -> None:
    """`POST /invocations` (SageMaker) and `POST /v1/systemone` (System One): one handler, two paths."""
    from fastapi import Request
    from fastapi.responses import Response

    async def invoke(request: Request) -> Any:  # one flow, read top to bottom
        _check_auth(request, settings)
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


def _add_systemone_routes(app: "FastAPI", worker: InferenceWorker, settings: Settings) -> None:
    """System One's `GET /v1/models`: the loaded model's card."""
    from fastapi import Request

    @app.get("/v1/models", response_model=ModelList, summary="Loaded model (System One)",
             responses={401: {"model": ErrorBody}, 503: {"model": ErrorBody}})
    async def models(request: Request) -> Any:
        _check_auth(request, settings)
        error = worker.unavailable()
        if error is not None:
            raise error
        return ModelList(models=[describe_model(worker.engine)])


def _install_openapi(app: "FastAPI") -> None:
    """The OpenAPI document, with `DecisionRequest` (the JSON body read by hand) and its parts as components."""
    from fastapi.openapi.utils import get_openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            doc = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            components = doc.setdefault("components", {}).setdefault("schemas", {})
            schema = DecisionRequest.model_json_schema(ref_template="#/components/schemas/{model}")
            components.update(schema.pop("$defs", {}))
            components["DecisionRequest"] = schema
            app.openapi_schema = doc
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


# ----------------------------------------------------------------- running it
def run_server(settings: Settings, engine_factory: Callable[[Settings], Any] | None = None) -> int:
    """Serve until SIGTERM/SIGINT; return 0 after a graceful drain, 2 if the model could not load, 3 if the worker died.

    The model path is resolved before the port opens, so a missing model fails at once; a model
    that fails to load (corrupt, wrong format) stops the server and gives exit status 2.
    """
    if engine_factory is None:
        from ..modelfile import find_model_path

        find_model_path(settings.model_path, settings.model_dir)  # ModelNotFoundError -> exit 2 now
    failure: list[BaseException] = []
    death: list[BaseException] = []
    holder: dict[str, Any] = {}

    def stop_on(kind: list[BaseException]) -> Callable[[BaseException], None]:
        def record(exc: BaseException) -> None:
            kind.append(exc)
            server = holder.get("server")
            if server is not None:
                server.should_exit = True
        return record

    app = create_app(settings, engine_factory, on_load_error=stop_on(failure), on_worker_death=stop_on(death))
    server = serve_uvicorn(app, settings.host, settings.port, on_server=lambda srv: holder.__setitem__("server", srv),
                           drain=app.state.drain)
    if failure:
        exc = failure[0]
        print(f"semif serve: error: cannot load the model: {getattr(exc, 'message', exc)}", file=sys.stderr)
        return 2
    if death:
        print(f"semif serve: error: the inference worker died ({type(death[0]).__name__}: {death[0]}); exiting so that "
              "SageMaker replaces this container", file=sys.stderr)
        return 3
    return 0 if server.started else 1


def command_serve(args: argparse.Namespace) -> int:
    overrides = engine_overrides(args)
    overrides.update(host=args.host, port=args.port, queue_size=args.queue_size)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(name)s: %(message)s")
    return run_server(load_settings(**overrides))


def _default(name: str) -> Any:
    """A setting's default, for help texts (the flags themselves default to None: the setting decides)."""
    return Settings.model_fields[name].default


def register_cli(subparsers: Any) -> None:
    """Add `serve` (SageMaker passes it as the container argument)."""
    parser = subparsers.add_parser(
        "serve", help="serve decisions over HTTP: SageMaker's /ping and /invocations, System One's /v1/systemone",
        description=f"Decision adapter. Binds SEMIF_HOST:SEMIF_PORT ({_default('host')}:{_default('port')}); "
                    "the container sets SEMIF_HOST=0.0.0.0.",
    )
    parser.add_argument("--host", help=f"bind address (SEMIF_HOST, default {_default('host')})")
    parser.add_argument("--port", type=int, help=f"port (SEMIF_PORT, default {_default('port')})")
    parser.add_argument("--queue-size", type=int, dest="queue_size", help="waiting requests before 503 (SEMIF_QUEUE_SIZE)")
    add_engine_arguments(parser)
    parser.set_defaults(func=command_serve)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m semif_lib.serving.app serve`; with no arguments it serves, as SageMaker's `serve` does."""
    argv = list(sys.argv[1:] if argv is None else argv) or ["serve"]
    parser = argparse.ArgumentParser(prog="python -m semif_lib.serving.app")
    register_cli(parser.add_subparsers(dest="command", required=True))
    return run_command(parser.parse_args(argv), prog="semif serve")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
