"""The suite's plugins: tier markers set from what a test uses, and the shared fixtures (tests/support/).

Helpers are imported from `support` by name (see tests/support/__init__.py); the names below stay
importable from `conftest` for the modules that still do so.
"""

from __future__ import annotations

from support.answers import MAX_ABS_DIFF, MEAN_ABS_DIFF, flatten_probabilities
from support.paths import DATA, ROOT
from support.servers import free_port

pytest_plugins = [
    "support.markers",
    "support.fixtures_model",
    "support.fixtures_containers",
    "support.fixtures_aws",
]

__all__ = ["DATA", "MAX_ABS_DIFF", "MEAN_ABS_DIFF", "ROOT", "flatten_probabilities", "free_port"]
