"""Run llama-cpp-python on a llama.cpp that someone else compiled: the DLC's `/opt/llama.cpp/bin`.

The AWS llama.cpp DLC ships `libllama.so` and `libggml*.so` built with `GGML_BACKEND_DL=ON` and
`GGML_CPU_ALL_VARIANTS=ON`: the CPU (and CUDA) backends are separate modules that a process must
load itself. llama-cpp-python is installed *without* its own llama.cpp and pointed at that
directory through `LLAMA_CPP_LIB_PATH`. Before the adapter loads a model we

1. check the binding version is the one verified for the library's build (`llama_bindings.json`, read
   from `llama-server --version` beside the library: the DLC's tags move to newer builds),
2. import `llama_cpp`: a symbol the library lacks fails the import (reported with the fix), except the
   functions the pair lists as `absent` (declared by a newer binding, never called here), which
   become stubs that raise,
3. load the backends with `ggml_backend_load_all_from_path(<lib dir>)` and require at least one
   device,
4. compare the default parameter structs with the values llama.cpp defines: a struct layout that
   drifted between binding and library shows up as garbage here instead of as a crash later,
5. with GPU layers requested (`SEMIF_N_GPU_LAYERS` not 0), require a GPU device (`decision.backend.require_gpu_device`):
   ggml would otherwise run every layer on the CPU without a word.

Any failure raises `BindingMismatchError` with both versions in the message, and the container
exits before `/ping` ever answers 200.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import os
import re
import runpy
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Sequence

from ..errors import SemifError
from ..llamabuilds import (
    BINDING_VERSION,
    VERIFIED_BINDINGS,
    BindingMismatchError,
    BindingPair,
    binding_for_build,
    pair_for_build,
    read_library_build,
)
from ..settings import load_settings
from .app import main as serve_main

__all__ = ["BINDING_VERSION", "DLC_LIB_DIR", "VERIFIED_BINDINGS", "BindingMismatchError", "BindingPair",
           "binding_for_build", "load_backends", "pair_for_build", "prepare_binding", "read_library_build"]

DLC_LIB_DIR = Path("/opt/llama.cpp/bin")


def lib_dir() -> Path | None:
    """Where llama-cpp-python takes libllama from: `LLAMA_CPP_LIB_PATH`, else the DLC's dir if present."""
    configured = os.environ.get("LLAMA_CPP_LIB_PATH")
    if configured:
        return Path(configured)
    return DLC_LIB_DIR if DLC_LIB_DIR.is_dir() else None


def binding_version() -> str:
    """`llama_cpp.__version__` of the package that `import llama_cpp` would load, read without importing it."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.origin:
        raise BindingMismatchError("llama-cpp-python is not installed")
    match = re.search(r"""^__version__\s*=\s*["']([^"']+)["']""", Path(spec.origin).read_text(), re.MULTILINE)
    if match:
        return match.group(1)
    return metadata.version("llama_cpp_python")


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


def check_defaults(llama_cpp: Any, pair: BindingPair) -> None:
    """Read the default parameter structs through the binding and compare with the values the pair's builds set.

    The fields sit on both sides of each struct's changes, so a layout drift between binding and library
    reads as wrong values here instead of as a crash later."""
    structs = {"model": llama_cpp.llama_model_default_params(), "context": llama_cpp.llama_context_default_params()}
    wrong = {}
    for struct, fields in pair.defaults.items():
        for name, want in fields.items():
            got = getattr(structs[struct], name, "<no such field>")
            if got != want:
                wrong[f"{struct}.{name}"] = got
    if wrong:
        raise BindingMismatchError(f"llama.cpp's default parameters read wrongly through llama-cpp-python: {wrong}; "
                                   "the ctypes structs do not match this libllama")


def tolerate_absent_functions(pair: BindingPair) -> None:
    """Before `import llama_cpp`: let the binding declare the pair's `absent` functions on a library without them.

    llama-cpp-python binds every declaration at import (`getattr(lib, name)`), so one function a build does
    not export fails the whole import. For the names the pair lists, and only when the library really lacks
    them, the declaration becomes a stub that raises if ever called; any other missing symbol still fails
    the import. Done by loading the binding's own `_ctypes_extensions` first, with its decorator wrapped.
    """
    if not pair.absent or "llama_cpp" in sys.modules:
        return
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return
    path = Path(next(iter(spec.submodule_search_locations))) / "_ctypes_extensions.py"
    ext_spec = importlib.util.spec_from_file_location("llama_cpp._ctypes_extensions", path)
    if ext_spec is None or ext_spec.loader is None:
        raise BindingMismatchError(f"llama-cpp-python {pair.binding} has no {path}: cannot bind a library without {sorted(pair.absent)}")
    module = importlib.util.module_from_spec(ext_spec)
    ext_spec.loader.exec_module(module)
    make_decorator = module.ctypes_function_for_shared_library

    def ctypes_function_for_shared_library(lib: ctypes.CDLL) -> Any:
        declare = make_decorator(lib)

        def ctypes_function(name: str, argtypes: list[Any], restype: Any, enabled: bool = True) -> Any:
            if name in pair.absent and not hasattr(lib, name):
                return functools.partial(stub_absent, name)
            return declare(name, argtypes, restype, enabled)

        return ctypes_function

    module.ctypes_function_for_shared_library = ctypes_function_for_shared_library
    sys.modules["llama_cpp._ctypes_extensions"] = module


def stub_absent(name: str, declared: Any) -> Any:
    @functools.wraps(declared)
    def absent(*_args: Any, **_kwargs: Any) -> Any:
        raise NotImplementedError(f"{name} is not exported by this llama.cpp build (semif_lib/llama_bindings.json: absent)")

    return absent


def prepare_binding(require_backends: bool = True, *, n_gpu_layers: int) -> dict[str, Any]:
    """Check and initialise llama-cpp-python on an external libllama (see the module docstring).

    Does nothing special when llama-cpp-python uses its own bundled library (no `LLAMA_CPP_LIB_PATH`
    and no `/opt/llama.cpp/bin`). Returns what it found, for logs.
    """
    directory = lib_dir()
    info: dict[str, Any] = {"lib_dir": str(directory) if directory else None}
    version = binding_version()
    info["binding"] = version
    if directory is None:
        return info
    os.environ["LLAMA_CPP_LIB_PATH"] = str(directory)
    build = read_library_build(directory)
    info["build"] = build
    if not (directory / "libllama.so").is_file():
        raise BindingMismatchError(f"LLAMA_CPP_LIB_PATH={directory} has no libllama.so")
    if build is None:
        raise BindingMismatchError(f"cannot read the llama.cpp build of {directory}: no llama-server there, no BUILD_NUMBER file "
                                   "and no LLAMA_CPP_BUILD; the binding is chosen by build")
    pair = pair_for_build(build)
    if version != pair.binding:
        raise BindingMismatchError(f"llama-cpp-python {version} is installed but {pair.binding} is the version whose bindings "
                                   f"match llama.cpp b{build} in {directory}; pip install llama-cpp-python=={pair.binding}")
    if require_backends:
        info["devices"] = load_backends(directory)
        if info["devices"] < 1:
            raise BindingMismatchError(f"ggml_backend_load_all_from_path({directory}) registered no device: "
                                       "no libggml-cpu*.so there matches this CPU")
    tolerate_absent_functions(pair)
    try:
        import llama_cpp
    except (AttributeError, OSError, RuntimeError) as exc:  # a missing symbol fails the ctypes declarations
        raise BindingMismatchError(f"llama-cpp-python {version} cannot bind {directory}/libllama.so (llama.cpp b{build}): {exc}") from exc
    loaded = Path(llama_cpp.llama_cpp._lib._name).resolve().parent  # type: ignore[attr-defined]
    if loaded != directory.resolve():
        raise BindingMismatchError(f"llama_cpp was imported before LLAMA_CPP_LIB_PATH was set: it uses {loaded}, not {directory}")
    check_defaults(llama_cpp, pair)
    from ..decision.backend import require_gpu_device

    info["gpu_offload"] = bool(llama_cpp.llama_supports_gpu_offload())
    require_gpu_device(n_gpu_layers, llama_cpp)
    info["system_info"] = llama_cpp.llama_print_system_info().decode("utf-8", "replace").strip()
    return info


def print_binding_for(argv: Sequence[str]) -> int:
    """`binding-for [BUILD]`: print the verified binding for BUILD, or for the library dir's own build."""
    try:
        if argv:
            build: int | None = int(argv[0].lstrip("b"))
        else:
            directory = lib_dir()
            if directory is None:
                raise BindingMismatchError(f"no llama.cpp library: set LLAMA_CPP_LIB_PATH (the DLC's is {DLC_LIB_DIR})")
            build = read_library_build(directory)
            if build is None:
                raise BindingMismatchError(f"cannot read the llama.cpp build of {directory}: no llama-server there and no LLAMA_CPP_BUILD")
        print(binding_for_build(build))
        return 0
    except (BindingMismatchError, ValueError) as exc:
        print(f"semif: FATAL: {exc}", file=sys.stderr, flush=True)
        return 3


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m semif_lib.serving.llamabinding [check | serve ... | run MODULE ... | binding-for [BUILD]]`.

    Checks the binding, then serves (`semif serve`) or runs a module (`run pytest tests/test_engine.py`)
    in this same process, where the backends are now loaded.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "binding-for":
        return print_binding_for(argv[1:])
    try:
        # this process's top floor: SEMIF_N_GPU_LAYERS as the adapter it serves will read it (environment and settings file)
        info = prepare_binding(n_gpu_layers=load_settings().n_gpu_layers)
    except (BindingMismatchError, SemifError) as exc:  # SemifError: decision.backend.NoGpuDeviceError
        print(f"semif: FATAL: {exc}", file=sys.stderr, flush=True)
        return 3
    print(f"semif: llama.cpp binding ok: {info}", file=sys.stderr, flush=True)
    if not argv or argv[0] == "check":
        return 0
    if argv[0] == "run" and len(argv) > 1:
        sys.argv = [argv[1], *argv[2:]]
        try:
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        except SystemExit as exc:
            return int(exc.code or 0) if not isinstance(exc.code, str) else 1
        return 0
    if argv[0] != "serve":
        print(f"semif: unknown command {argv[0]!r}: use check, serve or run MODULE", file=sys.stderr)
        return 2

    return serve_main(argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
