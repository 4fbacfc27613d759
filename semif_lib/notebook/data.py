"""The repository's data files, found from any working directory (a notebook runs in `notebooks/`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..jsonlines import read_records
from ..measurement.bench.workload import first_questions
from ..paths import repo_root

__all__ = ["data_path", "load_workload_request", "read_examples"]


def data_path(name: str) -> Path:
    """A file under the repository's `data/` folder."""
    path = repo_root() / "data" / name
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: run the notebooks from a checkout of the repository")
    return path


def read_examples(name: str = "examples.jsonl") -> list[dict[str, Any]]:
    """The example requests (one Jev / System One request per line, each with an `id`)."""
    return read_records(data_path(name))


def load_workload_request(index: int = 0, questions: int | None = None, name: str = "workload_37x21.jsonl") -> dict[str, Any]:
    """One long state of the benchmark workload with its criteria (the first `questions` of 21; None or 0: all)."""
    rows = read_examples(name)
    return first_questions(rows[index % len(rows)], questions)
