"""semif_lib: decisions as probabilities over declared options, from one llama.cpp forward pass.

The house has four wings with one-way doors (see the README's repository map):

* `decision/`: the wire format, prompt, readout and the engine (the only llama_cpp user);
* `serving/`: `semif serve` and `semif serve-text` behind SageMaker's container contract;
* `aws/`: what a workshop run creates in an AWS account, and its cleanup (boto3, lazily);
* `measurement/`: benchmarks (`bench/`), evaluation and calibration fitting (`quality/`), plots;

on plumbing they all share (`contract`, `settings`, `errors`, `limits`, `paths`, `prices`, `arguments`, `jsonlines`,
`processes`, `containers`, `llama_flags`, `llamabuilds`, `registry`, `invocation`, `model`),
under a top floor that only the notebooks and the shell use (`workshop`, `notebook`, `targets`, `cli`).
docs/architecture.md says what each module holds;
tests/test_architecture.py holds this list, that map and every package's docstring to the modules on disk.

Importing the package is cheap: llama_cpp, boto3 and the SageMaker SDK load only when a
function that needs them runs. `DecisionEngine` and `open_engine` are resolved on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .decision.responses import DecisionResponse
from .decision.schema import DecisionRequest, parse_request
from .errors import SemifError
from .settings import Settings, load_settings

if TYPE_CHECKING:  # pragma: no cover
    from .decision.engine import DecisionEngine, open_engine

__all__ = [
    "DecisionEngine",
    "DecisionRequest",
    "DecisionResponse",
    "SemifError",
    "Settings",
    "load_settings",
    "open_engine",
    "parse_request",
]
__version__ = "0.1.0"

_LAZY = {"DecisionEngine", "open_engine"}


def __getattr__(name: str) -> Any:
    """`semif_lib.DecisionEngine` and `semif_lib.open_engine` import the engine (and llama_cpp) on first use."""
    if name in _LAZY:
        from .decision import engine

        return getattr(engine, name)
    raise AttributeError(f"module 'semif_lib' has no attribute {name!r}")
