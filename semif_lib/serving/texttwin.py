"""`semif serve-text`: a local twin of AWS's llama.cpp DLC text path, on the embedded model.

The DLC puts nginx in front of `llama-server`: `GET /ping` -> `/health`, `POST /invocations` ->
`/v1/chat/completions` (with `"stream": true` as server-sent events), everything else passed
through (`/v1/chat/completions`, `/v1/completions`, `/v1/models`). The twin serves the same
routes from llama-cpp-python's own OpenAI-compatible server, in one process, with no AWS.

Configuration comes from the same `SM_LLAMA_CPP_*` variables as the DLC: `llama_flags.translate_sm_env`
turns them into `llama-server` flags with the DLC's rules, and `map_flags` maps those flags onto
llama-cpp-python's settings. Flags llama-cpp-python cannot honour (`--parallel`, `--hf-repo`, ...)
are listed at startup, never silently dropped. The model is resolved as the DLC does: `--model`,
`SM_LLAMA_CPP_MODEL`, `SEMIF_MODEL_PATH`, then the first `*.gguf` two levels under
`SM_LLAMA_CPP_MODEL_DIR` or `SEMIF_MODEL_DIR`, then the embedded SmolLM2.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from ..arguments import run_command
from ..errors import ModelLoadError, SemifError
from ..llama_flags import SM_PREFIX, parse_flags, refuse_removed_flags, translate_sm_env
from ..model.locate import find_model_path
from ..settings import Settings, load_settings
from .cli import TEXT_PORT, add_serve_text_parser
from .runner import DEFAULT_DRAIN_S, Drain, serve_uvicorn

if TYPE_CHECKING:  # pragma: no cover
    from fastapi import FastAPI

__all__ = ["TextTwinConfig", "build_text_config", "command_serve_text", "create_text_app", "map_flags", "run_text_server"]

log = logging.getLogger("semif.texttwin")

TEXT_N_CTX = 4096  # llama-cpp-python keeps logits for every context cell (logprobs need them): 4096 x 49k floats
_GGML_TYPES = {"f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q5_0": 6, "q5_1": 7, "q8_0": 8, "iq4_nl": 20, "bf16": 30}


def _on_off(value: str | bool) -> bool:
    """llama-server's `--flash-attn [on|off|auto]` and boolean-ish values; `auto` is off here (CPU)."""
    return value is True or str(value).lower() in ("on", "true", "1", "yes", "enabled")


def _ggml_type(value: str | bool) -> int:
    try:
        return _GGML_TYPES[str(value).lower()]
    except KeyError:
        raise ValueError(f"unknown KV cache type {value!r}; one of {', '.join(_GGML_TYPES)}") from None


# --load-mode (llama.cpp v0.4.1; replaces --mmap/--mlock/--direct-io) -> llama-cpp-python's two switches. llama-cpp-python
# has no direct I/O: `dio` reads the file without mmap, which is what direct I/O avoids too.
LOAD_MODES = {"auto": {"use_mmap": True, "use_mlock": False}, "none": {"use_mmap": False, "use_mlock": False},
              "mmap": {"use_mmap": True, "use_mlock": False}, "mlock": {"use_mmap": False, "use_mlock": True},
              "mmap+mlock": {"use_mmap": True, "use_mlock": True}, "dio": {"use_mmap": False, "use_mlock": False}}


def _load_mode(value: str | bool) -> dict[str, bool]:
    try:
        return LOAD_MODES[str(value).lower()]
    except KeyError:
        raise ValueError(f"unknown load mode; one of {', '.join(LOAD_MODES)}") from None


# llama-server flag (long and short names, `-` as `_`) -> (settings group, llama-cpp-python field, converter);
# the field `*` takes the converter's dict of fields.
FLAG_MAP: dict[str, tuple[str, str, Callable[[Any], Any]]] = {}
for _names, _target in {
    ("ctx_size", "c"): ("model", "n_ctx", int),
    ("n_gpu_layers", "ngl", "gpu_layers"): ("model", "n_gpu_layers", int),
    ("threads", "t"): ("model", "n_threads", int),
    ("threads_batch", "tb"): ("model", "n_threads_batch", int),
    ("batch_size", "b"): ("model", "n_batch", int),
    ("ubatch_size", "ub"): ("model", "n_ubatch", int),
    ("flash_attn", "fa"): ("model", "flash_attn", _on_off),
    ("seed", "s"): ("model", "seed", int),
    ("alias", "a"): ("model", "model_alias", str),
    ("load_mode", "lm"): ("model", "*", _load_mode),
    ("rope_freq_base",): ("model", "rope_freq_base", float),
    ("rope_freq_scale",): ("model", "rope_freq_scale", float),
    ("cache_type_k", "ctk"): ("model", "type_k", _ggml_type),
    ("cache_type_v", "ctv"): ("model", "type_v", _ggml_type),
    ("verbose", "v"): ("model", "verbose", lambda v: True),
    ("api_key",): ("server", "api_key", str),
}.items():
    for _name in _names:
        FLAG_MAP[_name] = _target
# llama-server behaviour that llama-cpp-python already has, so the flag changes nothing here.
IMPLICIT_FLAGS = frozenset({"jinja", "cont_batching", "no_webui", "metrics"})


@dataclass
class TextTwinConfig:
    """Everything `create_text_app` needs: llama-cpp-python settings plus what was not honoured."""

    model_path: Path
    host: str
    port: int
    model: dict[str, Any]
    server: dict[str, Any]
    flags: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    drain_s: float = DEFAULT_DRAIN_S  # SEMIF_DRAIN_S, as `semif serve` drains


def map_flags(flags: Sequence[str]) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """`llama-server` flags -> (ModelSettings fields, ServerSettings fields, flags not honoured).

    A flag today's llama-server refuses (`--mlock`, `--no-mmap`, ...) is refused here too, with the DLC's reason:
    the twin accepts what the DLC accepts."""
    refuse_removed_flags(flags)
    model: dict[str, Any] = {}
    server: dict[str, Any] = {}
    ignored: list[str] = []
    for name, value in parse_flags(flags).items():
        if name in FLAG_MAP:
            group, key, convert = FLAG_MAP[name]
            try:
                converted = convert(value)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"--{name.replace('_', '-')} {value!r}: {exc}") from None
            target = model if group == "model" else server
            target.update(converted if key == "*" else {key: converted})
        elif name not in IMPLICIT_FLAGS:
            ignored.append(f"--{name.replace('_', '-')}" + ("" if value is True else f" {value}"))
    return model, server, ignored


def build_text_config(settings: Settings, env: Mapping[str, str], model: Path | None = None,
                      host: str | None = None, port: int | None = None, n_ctx: int | None = None,
                      threads: int | None = None) -> TextTwinConfig:
    """Resolve the model and settings: CLI arguments > `SM_LLAMA_CPP_*` > `SEMIF_*` > defaults."""
    model_path = find_model_path(
        model or env.get(SM_PREFIX + "MODEL") or settings.model_path,
        env.get(SM_PREFIX + "MODEL_DIR") or settings.model_dir,
    )
    flags = translate_sm_env(env)
    try:
        model_fields, server_fields, ignored = map_flags(flags)
    except ValueError as exc:
        raise SemifError(f"SM_LLAMA_CPP_* settings: {exc}", field="environment") from exc
    base = {"n_ctx": TEXT_N_CTX, "n_threads": settings.threads, "n_threads_batch": settings.threads,
            "n_batch": min(settings.n_batch, 2048), "n_ubatch": settings.n_ubatch,
            "n_gpu_layers": settings.n_gpu_layers, "flash_attn": settings.flash_attn == "on",
            "model_alias": model_path.name.removesuffix(".gguf"), "verbose": settings.verbose}
    explicit = {k: v for k, v in {"n_ctx": n_ctx, "n_threads": threads, "n_threads_batch": threads}.items() if v is not None}
    model_settings = {**base, **model_fields, **explicit, "model": str(model_path), "logits_all": True}
    server_settings = {"api_key": settings.api_key, **server_fields}
    sm_port = env.get(SM_PREFIX + "PORT")
    if sm_port and not (sm_port.isdigit() and 1 <= int(sm_port) <= 65535):
        raise SemifError(f"{SM_PREFIX}PORT={sm_port!r}: a port is a number from 1 to 65535", field="environment")
    return TextTwinConfig(
        model_path=model_path,
        host=host or settings.host,
        port=port or (int(sm_port) if sm_port else TEXT_PORT),
        model=model_settings,
        server=server_settings,
        flags=flags,
        ignored=ignored,
        drain_s=settings.drain_s,
    )


def create_text_app(config: TextTwinConfig) -> "FastAPI":
    """llama-cpp-python's OpenAI server plus the DLC's `/ping` and `/invocations` routes.

    Loads the model before returning (llama-cpp-python does), so the server is healthy as soon
    as it listens. llama-cpp-python keeps the app in module globals: one app per process.
    """
    from fastapi import Depends
    from llama_cpp.server import app as llama_app
    from llama_cpp.server.errors import RouteErrorHandler
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    server_settings = ServerSettings(host=config.host, port=config.port, interrupt_requests=False, **config.server)
    model_settings = ModelSettings(**config.model)
    try:
        app = llama_app.create_app(server_settings=server_settings, model_settings=[model_settings])
    except (ValueError, RuntimeError, OSError) as exc:
        raise ModelLoadError(f"llama.cpp could not load {config.model_path}: {exc}", field="model_path") from exc
    app.title = "semif text twin (llama.cpp DLC contract)"

    async def ping() -> dict[str, str]:
        """The DLC's health check (nginx maps it to llama-server's /health)."""
        return {"status": "ok"}

    app.add_api_route("/ping", ping, methods=["GET"], summary="Health check (SageMaker)")
    app.add_api_route("/health", ping, methods=["GET"], summary="Health check (llama-server)")
    # Same handler, auth and error formatting as /v1/chat/completions, as the DLC's nginx routes it.
    app.router.add_api_route(
        "/invocations", llama_app.create_chat_completion, methods=["POST"], summary="Chat completion (SageMaker)",
        dependencies=[Depends(llama_app.authenticate)], route_class_override=RouteErrorHandler,
    )
    return app


def run_text_server(config: TextTwinConfig) -> int:
    """Serve until SIGTERM/SIGINT; exit status 0 after a graceful drain."""
    if config.ignored:
        log.warning("llama-server flags the twin cannot honour (ignored): %s", " ".join(config.ignored))
    log.info("model %s, flags from SM_LLAMA_CPP_*: %s", config.model_path, " ".join(config.flags) or "(none)")
    app = create_text_app(config)
    server = serve_uvicorn(app, config.host, config.port, drain=Drain(window_s=config.drain_s))
    return 0 if server.started else 1


def command_serve_text(args: argparse.Namespace) -> int:
    """`semif serve-text`: the settings read here once (this command's top floor), then handed down."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(name)s: %(message)s")
    config = build_text_config(load_settings(), os.environ, model=args.model, host=args.host, port=args.port,
                               n_ctx=args.n_ctx, threads=args.threads)
    return run_text_server(config)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m semif_lib.serving.texttwin`: the same as `semif serve-text`."""
    parser = argparse.ArgumentParser(prog="python -m semif_lib.serving.texttwin")
    add_serve_text_parser(parser.add_subparsers(dest="command", required=True)).set_defaults(func=command_serve_text)
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv) or ["serve-text"])
    return run_command(args, prog="semif serve-text")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
