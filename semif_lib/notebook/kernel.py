"""The first code cell of every workshop notebook: a kernel without `semif_lib` stops there, naming the fix.

In SageMaker Studio the notebooks open on Studio's own `python3` kernel, which lacks this package; without the
check, the first import fails with a bare `ModuleNotFoundError`. The cell cannot import `semif_lib` (that is what it
checks), so its source is `KERNEL_GUARD`, copied verbatim into each notebook: tests/test_notebooks.py checks that
every notebook's first code cell is exactly this text and runs it in a Python that has no `semif_lib`.
"""

from __future__ import annotations

__all__ = ["KERNEL_FIX", "KERNEL_GUARD"]

KERNEL_FIX = "Kernel → Change kernel → Python (semif-workshop)"

KERNEL_GUARD = f'''# Kernel check: stops here, naming the fix, when this kernel cannot import semif_lib
import importlib.util

if importlib.util.find_spec("semif_lib") is None:
    raise ModuleNotFoundError(
        "this kernel has no semif_lib. In SageMaker Studio: {KERNEL_FIX} "
        "(the README's Studio box makes that kernel). Locally: open the notebooks with "
        ".venv/bin/jupyter lab notebooks/. Then run this notebook again from the top.")'''
