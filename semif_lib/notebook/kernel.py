"""The first code cell of every workshop notebook: a kernel without `semif_lib` stops there, naming the fix.

In SageMaker Studio the notebooks open on Studio's own `python3` kernel, which lacks this package; without the
check, the first import fails with a bare `ModuleNotFoundError`. The cell cannot import `semif_lib` (that is what it
checks), so its source is `KERNEL_GUARD`, copied verbatim into each notebook: tests/test_notebooks.py checks that
every notebook's first code cell is exactly this text and runs it in a Python that has no `semif_lib`.
"""

from __future__ import annotations

__all__ = ["ENVIRONMENT_COMMAND", "ENVIRONMENT_LOG", "KERNEL_FIX", "KERNEL_GUARD"]

KERNEL_FIX = "Kernel → Change kernel → Python (semif-workshop)"

ENVIRONMENT_LOG = "~/.semif/environment.log"  # where an event team's lifecycle script reports building the environment

# The one command that makes the notebooks' environment in SageMaker Studio (the README's AWS step 3, docs/aws.md and
# docs/workshop.md quote it; the event team's lifecycle script runs the same with conda or mamba)
ENVIRONMENT_COMMAND = "CXXFLAGS=-U__AMX_INT8__ conda env create -p ~/.conda/envs/semif-workshop -f environment.yml"

KERNEL_GUARD = f'''# Kernel check: stops here, naming the fix, when this kernel cannot import semif_lib
import importlib.util

if importlib.util.find_spec("semif_lib") is None:
    raise ModuleNotFoundError(
        "this kernel has no semif_lib. In SageMaker Studio: {KERNEL_FIX}. Not in that list yet? "
        "In an event team's account the space is still building it (about 10 min after its first start: "
        "`tail {ENVIRONMENT_LOG}` in a terminal says when it is ready); elsewhere make it with the README's AWS step 3. "
        "Locally: open the notebooks with .venv/bin/jupyter lab notebooks/. Then run this notebook again from the top.")'''
