"""What every benchmark shares: the workload, the machine it ran on, and where its results file goes.

Every benchmark reads the 37-state x 21-criterion workload through `load_workload` (`--quick`: the
first `options.QUICK_STATES`), cuts a request to its first questions with `first_questions`, and
writes a results file (`write_result`) with `describe_machine` and the run's `conditions` beside the figures; `describe_bench_run`
is the settings and the head of a results file for the benchmarks that load the engine in process, and
`describe_engine_run` with `write_model_result` the model, machine and per-model file of those that keep one.
The notebooks read the committed files through `load_or_run`. Standard library and plumbing only.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Sequence

from ...arguments import engine_overrides
from ...jsonlines import read_records
from ...model.locate import hash_file
from ...settings import load_settings
from ..conditions import write_results_file
from ..machine import describe_machine
from ..options import QUICK_STATES, RESULTS_DIR, WORKLOAD

__all__ = ["describe_bench_run", "describe_engine_run", "describe_machine", "first_questions", "load_or_run", "load_workload",
           "time_cold", "write_model_result", "write_result"]


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


def describe_bench_run(args: Any) -> tuple[Any, dict[str, Any]]:
    """The settings of `semif bench modes | residency | readout-vs-generation` from its flags, and its results file's
    head: the command as typed, the model and the machine."""
    overrides = engine_overrides(args)
    overrides.update(flash_attn=args.flash_attn, n_ubatch=args.n_ubatch)
    settings = load_settings(**overrides)
    command = "semif bench " + " ".join(sys.argv[3:] if sys.argv[1:3] == ["bench", args.which] else [args.which])
    meta = {"command": " ".join(["semif", *sys.argv[1:]]) if sys.argv[1:2] == ["bench"] else command,
            "model": str(settings.model_path or "embedded SmolLM2-135M-Instruct Q4_1"), "machine": describe_machine(settings)}
    return settings, meta


def time_cold(engine: Any, request: dict[str, Any], mode: str | None = None) -> tuple[Any, float]:
    """`request` scored from an empty prefix cache (in `mode`; None: its own or the server's), and its seconds: arms
    compared cold all pay the same prefill."""
    engine.clear_cache()
    started = time.perf_counter()
    response = engine.ask(request, mode)
    return response, time.perf_counter() - started


def describe_engine_run(engine: Any) -> dict[str, Any]:
    """The model (file and digest) and the machine an engine-backed benchmark ran on, for its results file."""
    return {"model": {"file": engine.model_path.name, "sha256": hash_file(engine.model_path)}, "machine": describe_machine(engine.settings)}


def write_model_result(summary: dict[str, Any], which: str, output: Path | None) -> Path:
    """`summary` with the command as typed, written to `output` or `results/bench/<which>-<model>.json`, and said."""
    typed = sys.argv[1:3] == ["bench", which]
    summary["command"] = " ".join([f"semif bench {which}", *sys.argv[3:]]) if typed else None
    path = write_result(summary, output or RESULTS_DIR / "bench" / f"{which}-{Path(summary['model']['file']).stem}.json")
    print(f"wrote {path}", file=sys.stderr)
    return path


def write_result(doc: dict[str, Any], output: Path) -> Path:
    """`doc` with its `conditions` (machine, load, baseline) written to `output` (`conditions.write_results_file`)."""
    return write_results_file(doc, output)


def load_or_run(names: str | Sequence[str], runner: Callable[[], dict[str, Any]], results_dir: Path = RESULTS_DIR) -> dict[str, Any]:
    """The first committed results file found among `names`, else a fresh run (notebooks must stay quick)."""
    for name in [names] if isinstance(names, str) else names:
        path = Path(results_dir) / "bench" / name
        if path.is_file():
            return json.loads(path.read_text())
    return runner()
