"""The suite's plugins: tier markers set from what a test uses, and the shared fixtures (tests/support/).

Helpers are imported from `support` by name (see tests/support/__init__.py); the names below stay
importable from `conftest` for the modules that still do so.
"""

from __future__ import annotations

import os

from support.answers import MAX_ABS_DIFF, MEAN_ABS_DIFF, flatten_probabilities
from support.paths import DATA, ROOT
from support.servers import free_port

# The suite never reads a developer's ~/.semif/settings.env (semif_lib.settings.settings_file); tests that
# need a settings file point SEMIF_SETTINGS_FILE at their own. Child processes (servers, kernels) inherit this.
os.environ.setdefault("SEMIF_SETTINGS_FILE", os.devnull)

pytest_plugins = [
    "support.markers",
    "support.fixtures_model",
    "support.fixtures_containers",
    "support.fixtures_aws",
    "support.workers",
]

__all__ = ["DATA", "MAX_ABS_DIFF", "MEAN_ABS_DIFF", "ROOT", "flatten_probabilities", "free_port"]
