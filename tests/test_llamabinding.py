"""How the startup check binds a newer llama-cpp-python to a library without some of its functions (no model, no build).

A stand-in `llama_cpp` package declares functions against the C library through llama-cpp-python's own
`_ctypes_extensions.py` (copied from the installed binding): a function the library exports, one the pair lists
as absent, and, in the failing case, one it does not list.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PACKAGE = textwrap.dedent('''
    import ctypes
    from llama_cpp._ctypes_extensions import ctypes_function_for_shared_library

    _lib = ctypes.CDLL(None)
    ctypes_function = ctypes_function_for_shared_library(_lib)

    @ctypes_function("strlen", [ctypes.c_char_p], ctypes.c_size_t)
    def strlen(s: bytes) -> int: ...

    @ctypes_function("{absent}", [], ctypes.c_bool)
    def {absent}() -> bool:
        """Declared by a newer binding."""
''')


def run_with_stand_in(tmp_path: Path, declared: str, absent: list[str]) -> subprocess.CompletedProcess:
    import importlib.util

    real = Path(importlib.util.find_spec("llama_cpp").origin).parent  # type: ignore[union-attr]
    package = tmp_path / "llama_cpp"
    package.mkdir()
    shutil.copy(real / "_ctypes_extensions.py", package / "_ctypes_extensions.py")
    (package / "__init__.py").write_text(PACKAGE.format(absent=declared))
    code = textwrap.dedent(f'''
        from semif_lib.serving.llamabinding import BindingPair, tolerate_absent_functions
        tolerate_absent_functions(BindingPair(range(1, 2), "0.3.36", frozenset({absent!r}), {{}}, ""))
        import llama_cpp
        print("strlen", llama_cpp.strlen(b"abcd"))
        try:
            llama_cpp.{declared}()
        except NotImplementedError as exc:
            print("raised:", exc)
    ''')
    root = Path(__file__).resolve().parents[1]
    return subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": f"{tmp_path}:{root}", "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=60)


def test_a_listed_absent_function_becomes_a_stub_that_raises(tmp_path):
    done = run_with_stand_in(tmp_path, "llama_process", ["llama_process"])
    assert done.returncode == 0, done.stderr
    assert "strlen 4" in done.stdout  # the exported function is bound as usual
    assert "raised: llama_process is not exported by this llama.cpp build" in done.stdout


@pytest.mark.parametrize("absent", [[], ["llama_batch_ext_init"]])
def test_any_other_missing_function_still_fails_the_import(tmp_path, absent):
    done = run_with_stand_in(tmp_path, "llama_process", absent)
    assert done.returncode != 0 and "AttributeError" in done.stderr and "llama_process" in done.stderr


def test_the_table_names_only_functions_the_newer_binding_declares():
    """Every `absent` name is a declaration of the pair's binding, and the pairs do not overlap."""
    import importlib.util
    import re

    from semif_lib.serving.llamabinding import VERIFIED_BINDINGS, binding_version

    source = Path(importlib.util.find_spec("llama_cpp").origin).with_name("llama_cpp.py").read_text()  # type: ignore[union-attr]
    declared = set(re.findall(r'@ctypes_function\(\s*"(\w+)"', source))
    for pair in VERIFIED_BINDINGS:
        if pair.binding == binding_version():
            assert pair.absent <= declared, sorted(pair.absent - declared)
    builds = sorted(b for pair in VERIFIED_BINDINGS for b in pair.builds)
    assert len(builds) == len(set(builds))
