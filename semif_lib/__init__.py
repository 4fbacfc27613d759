"""semif_lib: decisions as probabilities over declared options, from one llama.cpp forward pass.

Importing the package is cheap: llama_cpp, boto3 and the SageMaker SDK load only when
a function that needs them runs.
"""

from .errors import SemifError
from .schema import DecisionRequest, DecisionResponse, parse_request
from .settings import Settings, load_settings

__all__ = ["DecisionRequest", "DecisionResponse", "SemifError", "Settings", "load_settings", "open_engine", "parse_request"]
__version__ = "0.1.0"


def open_engine(*args, **kwargs):  # noqa: ANN002, ANN003 - thin lazy re-export
    """Load a `DecisionEngine` (imports llama_cpp on first use)."""
    from .engine import open_engine as _open

    return _open(*args, **kwargs)
