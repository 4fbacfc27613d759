"""`semif serve` and `semif serve-text`'s command lines: their flags, declared without loading a server.

`semif --help` builds both parsers from here (settings' defaults and the twin's port only); FastAPI,
uvicorn and the engine load when a command runs. The top floor's `semif` and each server's own
`python -m semif_lib.serving.app | texttwin` add the parsers here and set the command that runs.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..arguments import add_engine_arguments
from ..settings import Settings

__all__ = ["TEXT_PORT", "add_serve_parser", "add_serve_text_parser"]

TEXT_PORT = 8081  # `semif serve-text`: next to the decision adapter's 8080, where the workshop expects it (SEMIF_LOCAL_TEXT_URL)


def _default(name: str) -> Any:
    """A setting's default, for help texts (the flags themselves default to None: the setting decides)."""
    return Settings.model_fields[name].default


def add_serve_parser(subparsers: Any) -> argparse.ArgumentParser:
    """`serve` (SageMaker passes it as the container argument); the caller sets its command."""
    parser = subparsers.add_parser(
        "serve", help="serve decisions over HTTP: SageMaker's /ping and /invocations, System One's /v1/systemone",
        description=f"Decision adapter. Binds SEMIF_HOST:SEMIF_PORT ({_default('host')}:{_default('port')}); "
                    "the container sets SEMIF_HOST=0.0.0.0.",
    )
    parser.add_argument("--host", help=f"bind address (SEMIF_HOST, default {_default('host')})")
    parser.add_argument("--port", type=int, help=f"port (SEMIF_PORT, default {_default('port')})")
    parser.add_argument("--queue-size", type=int, dest="queue_size", help="waiting requests before 503 (SEMIF_QUEUE_SIZE)")
    add_engine_arguments(parser)
    return parser


def add_serve_text_parser(subparsers: Any) -> argparse.ArgumentParser:
    """`serve-text`; the caller sets its command."""
    parser = subparsers.add_parser(
        "serve-text", help="local twin of AWS's llama.cpp DLC: /ping, /invocations and /v1/chat/completions (OpenAI)",
        description="OpenAI chat completions on the embedded model, configured by SM_LLAMA_CPP_* exactly like the DLC.",
    )
    parser.add_argument("--host", help=f"bind address (default SEMIF_HOST, {_default('host')})")
    parser.add_argument("--port", type=int, help=f"port (default SM_LLAMA_CPP_PORT, else {TEXT_PORT})")
    add_engine_arguments(parser)
    return parser
