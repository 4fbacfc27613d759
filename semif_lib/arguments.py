"""Command-line pieces every `semif` subcommand shares: the engine flags and the error-to-exit-code rule.

A leaf below the wings, so that a wing can register its own subcommand (`semif serve`,
`semif bench`, `semif eval`) without importing `cli`, which imports every wing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .errors import SemifError

__all__ = ["add_engine_arguments", "engine_overrides", "run_command"]


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags shared by every command that loads a model (each overrides its `SEMIF_*` variable)."""
    parser.add_argument("--model", type=Path, help="GGUF file or hub reference hf://org/repo/file.gguf[@revision] "
                        "(default: SEMIF_MODEL_PATH, SEMIF_MODEL_DIR, then the embedded SmolLM2)")
    parser.add_argument("--threads", type=int, help="llama.cpp threads (default: CPUs this process may use)")
    parser.add_argument("--n-ctx", type=int, dest="n_ctx", help="context size in tokens (SEMIF_N_CTX)")


def engine_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The engine flags as `load_settings` overrides (unset flags are `None` and ignored there)."""
    return {"model_path": args.model, "threads": args.threads, "n_ctx": args.n_ctx}


def run_command(args: argparse.Namespace, prog: str = "semif") -> int:
    """Run a parsed subcommand; a `SemifError` becomes one clear line on stderr and exit code 2."""
    try:
        return int(args.func(args) or 0)
    except SemifError as exc:
        print(f"{prog}: error: {exc.message}", file=sys.stderr)
        return 2
