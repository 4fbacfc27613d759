"""What every benchmark shares: the workload, the machine it ran on, and where its results file goes.

`bench` (`semif bench modes`, ...) and `peer` (`semif bench peer`) both read the 37-state x
21-criterion workload through `load_workload` (`--quick`: the first `QUICK_STATES`), cut a request
to its first questions with `first_questions`, and write a results file with `describe_machine`
beside the figures; `positive_int` is their `--states`/`--runs` type. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from collections.abc import Mapping
from datetime import datetime, timezone
from itertools import islice
from pathlib import Path
from typing import Any

from ..jsonlines import read_records
from ..paths import repo_root

__all__ = [
    "DATA_DIR",
    "QUICK_STATES",
    "RESULTS_DIR",
    "WORKLOAD",
    "describe_machine",
    "first_questions",
    "load_workload",
    "positive_int",
    "write_result",
]

DATA_DIR = repo_root() / "data"
WORKLOAD = DATA_DIR / "workload_37x21.jsonl"
RESULTS_DIR = DATA_DIR.parent / "results"  # the committed figures the README quotes
QUICK_STATES = 4  # `--quick` of every benchmark: the first 4 states


def load_workload(path: Path = WORKLOAD, quick: bool = False, states: int | None = None) -> list[dict[str, Any]]:
    """Workload lines (one state with its criteria each); `quick` keeps the first `QUICK_STATES`, else the first `states`."""
    rows = read_records(path)
    limit = QUICK_STATES if quick else states
    return rows[:limit] if limit else rows


def first_questions(request: Mapping[str, Any], count: int | None) -> dict[str, Any]:
    """The request with only its first `count` questions, in their order (`None` or 0: all of them)."""
    if not count:
        return dict(request)
    return {**request, "questions": dict(islice(request["questions"].items(), count))}


def describe_machine(settings: Any) -> dict[str, Any]:
    """CPU model, thread count and library versions, stored beside the figures."""
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    from importlib import metadata

    from ..llamabuilds import read_library_build

    lib_dir = os.environ.get("LLAMA_CPP_LIB_PATH")  # set: the engine runs on that llama.cpp build, as the adapter image does
    library = f"b{read_library_build(Path(lib_dir))} ({lib_dir})" if lib_dir else "llama-cpp-python's bundled build"
    return {
        "cpu": cpu,
        "threads": settings.threads,
        "flash_attn": settings.flash_attn,
        "n_ubatch": settings.n_ubatch,
        "python": platform.python_version(),
        "llama_cpp_python": metadata.version("llama-cpp-python"),
        "llama_cpp": library,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def write_result(doc: dict[str, Any], output: Path) -> Path:
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(doc, indent=2) + "\n")
    return output


def positive_int(text: str) -> int:
    """An integer >= 1, for argparse: `--states 0` or `--runs 0` is a usage error, not "all" or a crash."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value
