"""Notebook 06's exercise: the fork's speed-up over fresh, computed from the committed results file, not read off it."""

from __future__ import annotations

import json
from pathlib import Path

from semif_lib.paths import repo_root


def fork_speedup(results: Path | None = None) -> tuple[str, float]:
    """The fastest fork path (parallel, serial or cached: whichever decided most per second, `cached` aside as it skips
    the prefill) and its decisions per second over fresh's."""
    modes = json.loads((results or repo_root() / "results" / "bench" / "modes.json").read_text(encoding="utf-8"))
    paths = modes["paths"]
    best = max(("parallel", "serial"), key=lambda name: paths[name]["decisions_per_s"])
    return best, paths[best]["decisions_per_s"] / paths["fresh"]["decisions_per_s"]
