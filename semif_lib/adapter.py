"""`semif serve`: the decision engine behind SageMaker's container contract and System One's API.

Routes: `GET /ping`, `POST /invocations` (JSON, or JSON Lines for Batch Transform),
`GET /execution-parameters`, `POST /v1/systemone`, `GET /v1/models`, and the OpenAPI document
at `GET /openapi.json`, generated from the same pydantic models as the engine's wire format.

The llama context is not thread-safe, so one worker thread loads it, owns it and closes it.
HTTP handlers only parse and validate, then hand requests to that worker through a bounded
queue and await a future: the event loop never runs inference, so `/ping` answers in
milliseconds while a decision is being computed. The worker drains everything queued at once
and scores it with `engine.score_batch` (branches of several requests decode in one batch);
a full queue answers 503 with `Retry-After` instead of letting clients time out.

FastAPI and uvicorn are imported inside the functions that need them, so `semif --help` and
`import semif_lib` stay cheap.
"""

# No `from __future__ import annotations`: FastAPI reads the handlers' annotations (`Request`,
# imported lazily inside `create_app`) at route creation, so they must be real objects.
import argparse
import asyncio
import hmac
import json
import logging
import signal
import sys
import threading
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable, Sequence

from pydantic import BaseModel, Field

from .errors import (
    InvalidRequestError,
    ModelLoadError,
    PayloadTooLargeError,
    SemifError,
    ServiceBusyError,
    UnauthorizedError,
    UnsupportedMediaTypeError,
)
from .schema import DecisionRequest, DecisionResponse, parse_json_bytes, parse_request
from .settings import Settings, load_settings

if TYPE_CHECKING:  # pragma: no cover
    from fastapi import FastAPI

__all__ = ["InferenceWorker", "create_app", "register_cli", "run_server"]

log = logging.getLogger("semif.adapter")

JSON_TYPES = frozenset({"application/json"})
JSONLINES_TYPES = frozenset({"application/jsonlines", "application/x-jsonlines", "application/jsonl", "application/x-ndjson"})
MODES = ("fresh", "serial", "parallel")
MAX_BATCH_REQUESTS = 8  # requests handed to one score_batch call; bounds the KV cells held at once
GRACEFUL_SHUTDOWN_S = 25  # SageMaker sends SIGKILL 30 s after SIGTERM
DISCARD_LIMIT_BYTES = 64 << 20  # past the body limit, read and drop this much so the client sees the 413
THREAD_PARSE_BYTES = 256 << 10  # bodies larger than this are parsed off the event loop


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


# ----------------------------------------------------------------- the inference worker
@dataclass
class Job:
    """One HTTP request's work: parsed requests (or their parse errors, passed through) and a future."""

    items: list[DecisionRequest | SemifError]
    mode: str | None
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future


def _resolve(job: Job, results: list[DecisionResponse | SemifError]) -> None:
    def deliver() -> None:
        if not job.future.done():
            job.future.set_result(results)

    try:
        job.loop.call_soon_threadsafe(deliver)
    except RuntimeError:  # the loop is gone (forced shutdown): nobody is waiting any more
        pass


class InferenceWorker:
    """One thread that loads, owns and closes the engine; jobs reach it through a bounded queue.

    `submit` never blocks: it raises 503 when `max_queue` jobs are already waiting, or while the
    model is not loaded. `stop` lets the worker finish every job already accepted before it
    closes the engine, so no accepted request is lost on shutdown.
    """

    def __init__(
        self,
        settings: Settings,
        engine_factory: Callable[[Settings], Any],
        max_queue: int,
        on_load_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        self.settings = settings
        self.engine_factory = engine_factory
        self.max_queue = max_queue
        self.on_load_error = on_load_error
        self.engine: Any = None
        self.load_error: BaseException | None = None
        self.ready = threading.Event()
        self._jobs: deque[Job] = deque()
        self._cond = threading.Condition()
        self._closing = False
        self._pending = 0  # accepted jobs not yet answered (queued or being scored)
        self._thread = threading.Thread(target=self._run, name="semif-inference", daemon=True)

    # --------------------------------------------------------------- called from the event loop
    def start(self) -> None:
        self._thread.start()

    def submit(self, job: Job) -> None:
        if not self.ready.is_set():
            if self.load_error is not None:
                raise ModelLoadError(f"the model failed to load: {self.load_error}")
            raise ServiceBusyError("the model is still loading; retry shortly", retry_after=2)
        with self._cond:
            if self._closing:
                raise ServiceBusyError("the server is shutting down", retry_after=5)
            if len(self._jobs) >= self.max_queue:
                raise ServiceBusyError(f"{len(self._jobs)} requests are already waiting (SEMIF_QUEUE_SIZE={self.max_queue}); retry shortly", retry_after=1)
            self._jobs.append(job)
            self._pending += 1
            self._cond.notify()

    @property
    def queued(self) -> int:
        return len(self._jobs)

    @property
    def pending(self) -> int:
        return self._pending

    def stop(self, timeout: float | None = None) -> None:
        """Finish the accepted jobs, then close the engine in the thread that owns it."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        if self._thread.is_alive():
            self._thread.join(timeout)

    # --------------------------------------------------------------- the worker thread
    def _run(self) -> None:
        try:
            engine = self.engine_factory(self.settings)
        except BaseException as exc:  # noqa: BLE001 - any load failure must end the server, not hang it
            self.load_error = exc
            log.error("cannot load the model: %s", getattr(exc, "message", exc))
            if self.on_load_error is not None:
                self.on_load_error(exc)
            return
        self.engine = engine
        self.ready.set()
        log.info("model %s loaded; serving", getattr(engine, "model_id", "?"))
        try:
            while True:
                with self._cond:
                    while not self._jobs and not self._closing:
                        self._cond.wait()
                    if not self._jobs:
                        break
                    jobs = list(self._jobs)
                    self._jobs.clear()
                try:
                    self._process(jobs)
                except Exception as exc:  # noqa: BLE001 - never leave a client waiting on a worker bug
                    log.exception("worker failed on %d jobs", len(jobs))
                    for job in jobs:
                        _resolve(job, [SemifError(f"internal error: {type(exc).__name__}")] * len(job.items))
                finally:
                    with self._cond:
                        self._pending -= len(jobs)
        finally:
            close = getattr(engine, "close", None)
            if close is not None:
                close()

    def _process(self, jobs: list[Job]) -> None:
        """Score every queued job; requests of the same mode share `score_batch` calls."""
        results: dict[int, list[Any]] = {id(job): list(job.items) for job in jobs}
        by_mode: dict[str | None, list[tuple[Job, int]]] = {}
        for job in jobs:
            for k, item in enumerate(job.items):
                if isinstance(item, DecisionRequest):
                    by_mode.setdefault(job.mode, []).append((job, k))
        for mode, slots in by_mode.items():
            for start in range(0, len(slots), MAX_BATCH_REQUESTS):
                chunk = slots[start:start + MAX_BATCH_REQUESTS]
                scored = self._score_chunk([job.items[k] for job, k in chunk], mode)
                for (job, k), out in zip(chunk, scored):
                    results[id(job)][k] = out
        for job in jobs:
            _resolve(job, results[id(job)])

    def _score_chunk(self, requests: list[DecisionRequest], mode: str | None) -> list[DecisionResponse | SemifError]:
        engine = self.engine
        out: list[Any] | None = None
        if len(requests) > 1 and hasattr(engine, "score_batch"):
            try:
                out = list(engine.score_batch(requests, mode=mode))
            except Exception:  # noqa: BLE001 - fall back to one request at a time
                log.exception("score_batch failed; scoring the %d requests one by one", len(requests))
                out = None
            if out is not None and len(out) != len(requests):
                out = None
        if out is None:
            out = [None] * len(requests)
        for i, request in enumerate(requests):
            # Server-side failures of a batch (e.g. no KV room for all prefixes at once) get a solo retry.
            if out[i] is None or (isinstance(out[i], SemifError) and out[i].status_code >= 500):
                out[i] = self._score_one(request, mode)
        return out

    def _score_one(self, request: DecisionRequest, mode: str | None) -> DecisionResponse | SemifError:
        try:
            return self.engine.score(request, mode=mode)
        except SemifError as exc:
            return exc
        except Exception as exc:  # noqa: BLE001 - a bug must answer 500 for this request, not kill the worker
            log.exception("engine.score failed")
            return SemifError(f"internal error while scoring: {type(exc).__name__}: {exc}")


# ----------------------------------------------------------------- request helpers
def _content_type(raw: str | None) -> str:
    return (raw or "").split(";", 1)[0].strip().lower()


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
        shown = declared if declared.isdigit() else f"more than {limit}"
        raise PayloadTooLargeError(f"body is {shown} bytes; the limit is {limit} bytes (SageMaker's real-time payload limit)", field="body")
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
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRequestError(f"body is not valid UTF-8 (byte {exc.start})", field="body") from exc
    items: list[DecisionRequest | SemifError] = []
    ids: list[Any] = []
    for number, line in enumerate(text.split("\n"), start=1):  # not splitlines(): U+2028 may sit inside a JSON string
        if not line.strip():
            continue
        record_id: Any = f"line-{number}"
        try:
            data = parse_json_bytes(line)
            if isinstance(data, dict) and "id" in data:
                record_id = data["id"]
            items.append(parse_request(data))
        except SemifError as exc:
            items.append(exc)
        ids.append(record_id)
    if not items:
        raise InvalidRequestError("no JSON Lines records in the body", field="body")
    return items, ids


def dump_response(response: DecisionResponse, record_id: Any = None) -> dict[str, Any]:
    body = response.model_dump(mode="json")
    return body if record_id is None else {"id": record_id, **body}


def dump_error_record(exc: SemifError, record_id: Any) -> dict[str, Any]:
    return {"id": record_id, **exc.to_body(), "status": exc.status_code}


def load_engine(settings: Settings) -> Any:
    """Default engine factory: the real `DecisionEngine` (imports llama_cpp)."""
    from .engine import DecisionEngine

    return DecisionEngine(settings)


def _error_response(exc: SemifError) -> Any:
    from fastapi.responses import JSONResponse

    headers: dict[str, str] = {}
    if isinstance(exc, ServiceBusyError):
        headers["Retry-After"] = str(exc.retry_after)
    if isinstance(exc, UnauthorizedError):
        headers["WWW-Authenticate"] = "Bearer"
    return JSONResponse(exc.to_body(), status_code=exc.status_code, headers=headers)


_HTTP_ERROR_TYPES = {404: "not_found", 405: "method_not_allowed", 400: "invalid_request", 413: "payload_too_large"}


# ----------------------------------------------------------------- the app
CUSTOM_ATTRIBUTES_HEADER = "X-Amzn-SageMaker-Custom-Attributes"


def read_custom_mode(header: str | None) -> str | None:
    """`mode=serial` from SageMaker's CustomAttributes header (the query string does not reach the container)."""
    for part in (header or "").split(";"):
        key, _, value = part.strip().partition("=")
        if key.strip() == "mode" and value.strip():
            return value.strip()
    return None


def create_app(
    settings: Settings | None = None,
    engine_factory: Callable[[Settings], Any] | None = None,
    on_load_error: Callable[[BaseException], None] | None = None,
) -> "FastAPI":
    """Build the ASGI app; the worker starts (and loads the model) in the app's lifespan.

    `engine_factory(settings)` runs in the worker thread; tests can pass a fake engine.
    `on_load_error` is called (from that thread) if loading fails; `run_server` uses it to exit.
    """
    from contextlib import asynccontextmanager

    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.openapi.utils import get_openapi
    from fastapi.responses import JSONResponse, Response
    from starlette.exceptions import HTTPException as StarletteHTTPException

    settings = settings or load_settings()
    worker = InferenceWorker(settings, engine_factory or load_engine, settings.queue_size, on_load_error)

    @asynccontextmanager
    async def lifespan(app: FastAPI):  # noqa: ANN202
        worker.start()
        try:
            yield
        finally:
            # uvicorn has already waited for in-flight requests; finish any queued job, close the engine.
            await asyncio.to_thread(worker.stop)

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
    app.state.settings = settings

    # ------------------------------------------------------------- errors: always {"error": {...}}
    @app.exception_handler(SemifError)
    async def _semif_error(_: Request, exc: SemifError) -> Any:
        return _error_response(exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException) -> Any:
        body = {"error": {"type": _HTTP_ERROR_TYPES.get(exc.status_code, "http_error"), "message": str(exc.detail), "field": None}}
        return JSONResponse(body, status_code=exc.status_code, headers=getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, exc: RequestValidationError) -> Any:
        first = (exc.errors() or [{}])[0]
        field = ".".join(str(p) for p in first.get("loc", ())) or None
        return _error_response(InvalidRequestError(f"{field}: {first.get('msg', 'invalid request')}", field=field))

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> Any:  # a bug: still JSON, and logged
        log.exception("unhandled error")
        return _error_response(SemifError(f"internal error: {type(exc).__name__}"))

    def check_auth(request: Request) -> None:
        if not settings.api_key:
            return
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), settings.api_key.encode()):
            raise UnauthorizedError("missing or wrong bearer token: send 'Authorization: Bearer <SEMIF_API_KEY>'", field="authorization")

    # ------------------------------------------------------------- SageMaker contract
    @app.get("/ping", summary="Health check: 200 once the model is loaded", responses={503: {"model": ErrorBody}})
    async def ping() -> Any:
        if worker.ready.is_set():
            return {"status": "ok", "model": getattr(worker.engine, "model_id", None), "queued": worker.queued, "pending": worker.pending}
        if worker.load_error is not None:
            return _error_response(ModelLoadError(f"the model failed to load: {getattr(worker.load_error, 'message', worker.load_error)}"))
        return JSONResponse({"status": "loading"}, status_code=503, headers={"Retry-After": "2"})

    @app.get("/execution-parameters", response_model=ExecutionParameters, summary="Batch Transform defaults")
    async def execution_parameters() -> Any:
        # One worker owns the model; a multi-record payload already batches inside it.
        return ExecutionParameters(MaxConcurrentTransforms=1, BatchStrategy="MULTI_RECORD",
                                   MaxPayloadInMB=max(1, settings.max_body_bytes // (1 << 20)))

    invocation_doc: dict[str, Any] = {
        "responses": {
            200: {"model": DecisionResponse, "description": "One response; for application/jsonlines, one response per line, each with its id.",
                  "content": {"application/jsonlines": {"schema": {"type": "string"}}}},
            400: {"model": ErrorBody, "description": "Malformed JSON, non-UTF-8 body, invalid request or options without distinct answer tokens."},
            401: {"model": ErrorBody, "description": "SEMIF_API_KEY is set and the bearer token is missing or wrong."},
            413: {"model": ErrorBody, "description": "Body over the payload limit, or a state longer than the context."},
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

    async def invoke(request: Request) -> Any:  # noqa: C901 - one flow, read top to bottom
        check_auth(request)
        ctype = _content_type(request.headers.get("content-type")) or "application/json"
        jsonlines = ctype in JSONLINES_TYPES
        if not jsonlines and ctype not in JSON_TYPES:
            raise UnsupportedMediaTypeError(f"content type {ctype!r} is not supported; send application/json, or application/jsonlines with one request per line", field="content-type")
        mode = request.query_params.get("mode") or read_custom_mode(request.headers.get(CUSTOM_ATTRIBUTES_HEADER)) or None
        if mode is not None and mode not in MODES:
            raise InvalidRequestError(f"mode must be one of {', '.join(MODES)}; got {mode!r}", field="mode")
        body = await read_limited_body(request, settings.max_body_bytes)
        parse = parse_jsonlines_body if jsonlines else parse_json_body
        items, ids = await asyncio.to_thread(parse, body) if len(body) > THREAD_PARSE_BYTES else parse(body)

        loop = asyncio.get_running_loop()
        job = Job(items=items, mode=mode, loop=loop, future=loop.create_future())
        worker.submit(job)
        results = await job.future
        if not jsonlines:
            if isinstance(results[0], SemifError):
                raise results[0]
            return Response(json.dumps(dump_response(results[0], ids), ensure_ascii=False), media_type="application/json")
        lines = [
            dump_error_record(out, rid) if isinstance(out, SemifError) else dump_response(out, rid)
            for out, rid in zip(results, ids)
        ]
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        return Response(text, media_type="application/jsonlines")

    app.add_api_route("/invocations", invoke, methods=["POST"], summary="Score a decision request (SageMaker)", **invocation_doc)
    # ------------------------------------------------------------- System One compatibility
    app.add_api_route("/v1/systemone", invoke, methods=["POST"], summary="Score a decision request (System One)", **invocation_doc)

    @app.get("/v1/models", response_model=ModelList, summary="Loaded model (System One)",
             responses={401: {"model": ErrorBody}, 503: {"model": ErrorBody}})
    async def models(request: Request) -> Any:
        check_auth(request)
        engine = worker.engine
        if engine is None:
            raise ServiceBusyError("the model is still loading; retry shortly", retry_after=2)
        return ModelList(models=[describe_model(engine)])

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
    return app


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


# ----------------------------------------------------------------- running it
def serve_uvicorn(app: Any, host: str, port: int, on_server: Callable[[Any], None] | None = None) -> Any:
    """Run `app` with uvicorn until SIGTERM/SIGINT, then drain in-flight requests; returns the server.

    uvicorn re-raises the signal it caught after its graceful shutdown; a no-op handler installed
    first turns that into a normal return, so SIGTERM ends the process with exit status 0.
    """
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level="info", access_log=False,
                            lifespan="on", timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S)
    server = uvicorn.Server(config)
    if on_server is not None:
        on_server(server)
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        server.run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return server


def run_server(settings: Settings, engine_factory: Callable[[Settings], Any] | None = None) -> int:
    """Serve until SIGTERM/SIGINT; return 0 after a graceful drain, 2 if the model could not load.

    The model path is resolved before the port opens, so a missing model fails at once; a model
    that fails to load (corrupt, wrong format) stops the server and gives exit status 2.
    """
    if engine_factory is None:
        from .modelfile import find_model_path

        find_model_path(settings.model_path, settings.model_dir)  # ModelNotFoundError -> exit 2 now
    failure: list[BaseException] = []
    holder: dict[str, Any] = {}

    def on_load_error(exc: BaseException) -> None:
        failure.append(exc)
        server = holder.get("server")
        if server is not None:
            server.should_exit = True

    app = create_app(settings, engine_factory, on_load_error=on_load_error)
    server = serve_uvicorn(app, settings.host, settings.port, on_server=lambda srv: holder.__setitem__("server", srv))
    if failure:
        exc = failure[0]
        print(f"semif serve: error: cannot load the model: {getattr(exc, 'message', exc)}", file=sys.stderr)
        return 2
    return 0 if server.started else 1


def command_serve(args: argparse.Namespace) -> int:
    from .cli import engine_overrides

    overrides = engine_overrides(args)
    overrides.update(host=args.host, port=args.port, queue_size=args.queue_size)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(name)s: %(message)s")
    return run_server(load_settings(**overrides))


def register_cli(subparsers: Any) -> None:
    """Add `serve` (SageMaker passes it as the container argument)."""
    from .cli import add_engine_arguments

    parser = subparsers.add_parser(
        "serve", help="serve decisions over HTTP: SageMaker's /ping and /invocations, System One's /v1/systemone",
        description="Decision adapter. Binds SEMIF_HOST:SEMIF_PORT (127.0.0.1:8080); the container sets SEMIF_HOST=0.0.0.0.",
    )
    parser.add_argument("--host", help="bind address (SEMIF_HOST, default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port (SEMIF_PORT, default 8080)")
    parser.add_argument("--queue-size", type=int, dest="queue_size", help="waiting requests before 503 (SEMIF_QUEUE_SIZE)")
    add_engine_arguments(parser)
    parser.set_defaults(func=command_serve)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m semif_lib.adapter serve`; with no arguments it serves, as SageMaker's `serve` does."""
    argv = list(sys.argv[1:] if argv is None else argv) or ["serve"]
    parser = argparse.ArgumentParser(prog="python -m semif_lib.adapter")
    register_cli(parser.add_subparsers(dest="command", required=True))
    from .cli import run_command

    return run_command(parser.parse_args(argv), prog="semif serve")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
