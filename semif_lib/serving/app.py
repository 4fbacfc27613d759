"""`semif serve`: the decision engine behind SageMaker's container contract and System One's API.

Routes: `GET /ping`, `POST /invocations` (JSON, or JSON Lines for Batch Transform; a Jev or an
OpenAI Decisions body), `GET /execution-parameters`, `POST /v1/systemone`, `GET /v1/models`,
`POST /v1/decisions` (OpenAI Decisions), and the OpenAPI document at `GET /openapi.json`, generated
from the same pydantic models as the engine's wire formats.

The handlers here only parse and validate (with `wire`), then hand the requests to the
`worker`, the one thread that owns the engine, and await its answer: the event loop never runs
inference, so `/ping` answers while a decision is being computed, and a full queue answers 503
with `Retry-After`. `runner` runs the app under uvicorn with SageMaker's SIGTERM drain.
`create_app` builds the app from route groups, one function each (`routes`).

FastAPI and uvicorn are imported inside the functions that need them, so `import semif_lib.serving.app`
stays cheap; `semif serve`'s flags are declared in `cli`, which `semif --help` reads without this module.
"""

# No `from __future__ import annotations`: FastAPI reads the handlers' annotations (`Request`,
# imported lazily inside the route-group functions) at route creation, so they must be real objects.
import argparse
import asyncio
import logging
import sys
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ..arguments import engine_overrides, run_command
from ..contract import explain_long_context
from ..decision.openai_schema import OpenAIRequest
from ..decision.schema import DecisionRequest
from ..errors import (
    RequestValidationError,
    SemifError,
)
from ..model.locate import find_model_path
from ..settings import Settings, load_settings
from .cli import add_serve_parser
from .routes import add_decisions_routes, add_invocation_routes, add_sagemaker_routes, add_systemone_routes
from .runner import Drain, serve_uvicorn
from .wire import (
    HTTP_ERROR_TYPES,
    OPENAI,
    SYSTEMONE,
    error_response,
    package_version,
)
from .worker import InferenceWorker

if TYPE_CHECKING:  # pragma: no cover
    from fastapi import FastAPI

__all__ = ["command_serve", "create_app", "load_engine", "main", "run_server"]

log = logging.getLogger("semif.adapter")


def load_engine(settings: Settings) -> Any:
    """Default engine factory: the real `DecisionEngine` (imports llama_cpp)."""
    from ..decision.engine import DecisionEngine

    return DecisionEngine(settings)


# ----------------------------------------------------------------- the app
def create_app(
    settings: Settings,
    engine_factory: Callable[[Settings], Any] | None = None,
    on_load_error: Callable[[BaseException], None] | None = None,
    on_worker_death: Callable[[BaseException], None] | None = None,
) -> "FastAPI":
    """Build the ASGI app; the worker starts (and loads the model) in the app's lifespan.

    `engine_factory(settings)` runs in the worker thread; tests can pass a fake engine.
    `on_load_error` / `on_worker_death` are called (from that thread) if loading fails or the
    worker dies later; `run_server` uses them to exit non-zero.
    """
    from fastapi import FastAPI

    worker = InferenceWorker(settings, engine_factory or load_engine, settings.queue_size, on_load_error, on_worker_death)
    drain = Drain(window_s=settings.drain_s)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        worker.start()
        try:
            yield
        finally:
            # uvicorn has already waited for in-flight requests (each answered, or a 503 once the drain window
            # closed); finish any queued submission and close the engine. After SIGTERM, a decode whose request was
            # already answered 503 is not waited for beyond the window: the process exits well before SIGKILL.
            left = drain.left(drain.worker_budget_s)
            await asyncio.to_thread(worker.stop, 60.0 if left is None else max(0.5, left))

    app = FastAPI(
        title="semif decision adapter",
        version=package_version(),
        description="Decisions as probabilities over declared options. SageMaker container contract "
        "(/ping, /invocations, /execution-parameters), Jev / System One compatible (/v1/systemone, /v1/models) "
        "and OpenAI Decisions (/v1/decisions, the openai SDK's client.decisions.create).",
        lifespan=lifespan,
        separate_input_output_schemas=False,
        redoc_url=None,
    )
    app.state.worker = worker
    app.state.drain = drain
    app.state.settings = settings
    # Registration order is the order of the paths in the OpenAPI document.
    _install_error_handlers(app)
    add_sagemaker_routes(app, worker, settings)
    add_invocation_routes(app, worker, settings)
    add_systemone_routes(app, worker, settings)
    add_decisions_routes(app, worker, settings)
    _install_openapi(app)
    return app


def _wire(request: Any) -> str:
    """The wire a request is answered on: OpenAI's once its route or body says so, else Jev's."""
    return getattr(request.state, "wire", None) or (OPENAI if request.url.path == "/v1/decisions" else SYSTEMONE)


def _install_error_handlers(app: "FastAPI") -> None:
    """Every error answers in its wire's shape (`wire.error_body`): ours, Starlette's (404, 405), validation's, and bugs'."""
    from fastapi import Request
    from fastapi.exceptions import RequestValidationError as FastAPIValidationError
    from starlette.exceptions import HTTPException as StarletteHTTPException

    @app.exception_handler(SemifError)
    async def _semif_error(request: Request, exc: SemifError) -> Any:
        if getattr(request.state, "long_context", False) and exc.status_code == 413 and exc.field == "state":
            exc = type(exc)(explain_long_context(exc.message), field=exc.field)  # the context's 413: the context is the bound
        return error_response(exc, _wire(request))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Any:
        error = SemifError(str(exc.detail))
        error.status_code, error.error_type = exc.status_code, HTTP_ERROR_TYPES.get(exc.status_code, "http_error")
        response = error_response(error, _wire(request))
        response.headers.update(getattr(exc, "headers", None) or {})
        return response

    @app.exception_handler(FastAPIValidationError)
    async def _validation_error(request: Request, exc: FastAPIValidationError) -> Any:
        first = (exc.errors() or [{}])[0]
        loc = [p for p in first.get("loc", ()) if p != "body"]
        field = ".".join(str(p) for p in loc) or None
        error = RequestValidationError(f"{field}: {first.get('msg', 'invalid request')}", field=field, loc=loc,
                                       kind=first.get("type", "value_error"))
        return error_response(error, _wire(request))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Any:  # a bug: still JSON, and logged
        log.exception("unhandled error")
        return error_response(SemifError(f"internal error: {type(exc).__name__}"), _wire(request))


def _install_openapi(app: "FastAPI") -> None:
    """The OpenAPI document, with `DecisionRequest` and `OpenAIRequest` (JSON bodies read by hand) and their parts as components."""
    from fastapi.openapi.utils import get_openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            doc = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            components = doc.setdefault("components", {}).setdefault("schemas", {})
            for model in (DecisionRequest, OpenAIRequest):
                schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
                components.update(schema.pop("$defs", {}))
                components[model.__name__] = schema
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
    """`semif serve`: the flags over the environment's settings, read here once (this command's top floor), then handed down."""
    overrides = engine_overrides(args)
    overrides.update(host=args.host, port=args.port, queue_size=args.queue_size)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(name)s: %(message)s")
    return run_server(load_settings(**overrides))


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m semif_lib.serving.app serve`; with no arguments it serves, as SageMaker's `serve` does."""
    argv = list(sys.argv[1:] if argv is None else argv) or ["serve"]
    parser = argparse.ArgumentParser(prog="python -m semif_lib.serving.app")
    add_serve_parser(parser.add_subparsers(dest="command", required=True)).set_defaults(func=command_serve)
    return run_command(parser.parse_args(argv), prog="semif serve")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
