"""What a benchmark ran under, and how far its ratios hold: the one module every `semif bench` command goes through.

A figure from a shared machine means something only beside what that machine delivered that day. The
command line opens `recording` around every `semif bench` command: before the benchmark starts it reads
the machine and its load (`machine.read_machine`, `machine.sample_load`: a one-second window in which the
benchmark does nothing, so the busy share there is other processes' and the steal share the hypervisor's)
and measures a baseline (`measure_baseline`: a fixed prefill and decode of the embedded model, in a
subprocess on the same llama.cpp library the benchmark runs on, which also names that library's build and
CPU variant). `write_results_file`, the one writer of every benchmark's results file, adds them as its
`conditions`, with the load read again at the end over the whole run (`attach_conditions`).

Ratios: `bootstrap_ratio` resamples states (seeded, numpy) into a 95 % interval of a rate ratio or of a
median per-state ratio, and `judge` says whether the interval clears its target, misses it or spans it
(`interval_against`, `format_interval`: how a results file and the docs' tables show it). Arms compared
in one run (two builds, two settings, two sides) take turns going first, state by state (`paired_order`):
never two runs on two days.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .machine import read_counters, read_machine, sample_load, share_between

__all__ = ["BASELINE_MODULE", "Recording", "attach_conditions", "bootstrap_ratio", "format_interval", "interval_against", "judge",
           "measure_baseline", "paired_order", "recording", "remeasure_baseline", "write_results_file"]

T = TypeVar("T")
BASELINE_MODULE = "semif_lib.measurement.machine"  # `python -m` of this module measures the baseline
BINDING_MODULE = "semif_lib.serving.llamabinding"  # runs a module on an external llama.cpp, its backends loaded
BASELINE_TIMEOUT_S = 180.0
RESAMPLES, LEVEL = 2000, 0.95


# ---------------------------------------------------------------- the baseline: what the machine delivered
def measure_baseline(threads: int, env: dict[str, str] | None = None, module: str | None = None) -> dict[str, Any]:
    """A fixed prefill and decode of the embedded model in a subprocess on the library the benchmark uses.

    `env` (LLAMA_CPP_LIB_PATH, PYTHONPATH) and `module` (`semif_lib.serving.llamabinding`, which checks
    and loads that library first) are what the benchmark's own server runs with; without them the
    subprocess inherits this process's environment. A failure is recorded, never raised: the figures
    the benchmark measured stay valid, they just lack their yardstick.
    """
    if module is None and {**os.environ, **(env or {})}.get("LLAMA_CPP_LIB_PATH"):  # a GGML_BACKEND_DL build: its backends load there
        module = BINDING_MODULE
    argv = [sys.executable, "-m", *([module, "run"] if module else []), BASELINE_MODULE, "--threads", str(threads)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=BASELINE_TIMEOUT_S, env={**os.environ, **(env or {})})
        if done.returncode != 0:
            return {"error": f"exit {done.returncode}: {done.stderr.strip()[-400:]}"}
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


# ---------------------------------------------------------------- one recording per command
@dataclass
class Recording:
    """A bench command's conditions so far: the machine, the load before it started and the baseline."""

    machine: dict[str, Any]
    start: dict[str, Any]
    counters: dict[str, Any]  # /proc/stat when the benchmark started, for the shares over the whole run
    baseline: dict[str, Any] | None = None


_current: Recording | None = None


@contextmanager
def recording(threads: int | None) -> Iterator[Recording]:
    """The conditions of one `semif bench` command, read before it starts and attached to every results file it writes."""
    global _current
    from ..settings import detect_cpu_count

    machine, start = read_machine(), sample_load()
    record = Recording(machine=machine, start=start, counters=read_counters())
    record.baseline = measure_baseline(threads or detect_cpu_count())
    record.counters = read_counters()  # the run's shares start after the baseline's own work
    previous, _current = _current, record
    try:
        yield record
    finally:
        _current = previous


def remeasure_baseline(threads: int, env: dict[str, str], module: str) -> dict[str, Any] | None:
    """The baseline again, on the library a benchmark's server runs on (`semif bench peer --decision-llama build`), and
    returned (None outside `recording`: nothing measured)."""
    if _current is not None and _current.baseline is not None:
        _current.baseline = measure_baseline(threads, env, module)
        _current.counters = read_counters()
        return _current.baseline
    return None


def attach_conditions(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` with its `conditions`: the machine, the load at the start and over the run to now, and the baseline.

    Outside `recording` (a benchmark called as a function, a test) the machine and the load now, and the
    baseline recorded as not measured.
    """
    record = _current
    if record is None:
        now = read_counters()
        return {**doc, "conditions": {"machine": read_machine(), "start": None,
                                      "end": {"time": now["time"], "loadavg": now.get("loadavg"), "runnable": now.get("runnable")},
                                      "baseline": None, "note": "not run through `semif bench`: no start load and no baseline"}}
    now = read_counters()
    end = {"time": now["time"], "loadavg": now.get("loadavg"), "runnable": now.get("runnable"),
           "run_s": round(now["monotonic"] - record.counters["monotonic"], 1), **share_between(record.counters, now)}
    return {**doc, "conditions": {"machine": record.machine, "start": record.start, "end": end, "baseline": record.baseline}}


def write_results_file(doc: dict[str, Any], output: Path) -> Path:
    """The one writer of a benchmark's results file: `doc` with its `conditions`, as indented JSON."""
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(attach_conditions(doc), indent=2) + "\n", encoding="utf-8")
    return output


# ---------------------------------------------------------------- intervals over states, and pairing
def bootstrap_ratio(ours: Sequence[tuple[float, float]], theirs: Sequence[tuple[float, float]] | None = None,
                    seed: int = 0, resamples: int = RESAMPLES) -> dict[str, Any]:
    """A ratio and its 95 % bootstrap interval over states (resampled with replacement, seeded).

    With `theirs`: `ours` and `theirs` are per-state (decisions, seconds) of two arms on the same states,
    and the ratio is of their rates, sum(d)/sum(s) each. Without: `ours` holds per-state (numerator,
    denominator) pairs and the ratio is the median of their quotients. Fewer than 2 states: no interval.
    """
    import numpy as np

    if theirs is not None and len(theirs) != len(ours):
        raise ValueError(f"paired arms need the same states: {len(ours)} against {len(theirs)}")
    a = np.asarray(ours, dtype=float).reshape(-1, 2)
    b = np.asarray(theirs, dtype=float).reshape(-1, 2) if theirs is not None else None

    def statistic(idx: Any) -> Any:
        if b is None:
            return np.median(a[idx, 0] / a[idx, 1], axis=-1)
        return (a[idx, 0].sum(-1) / a[idx, 1].sum(-1)) / (b[idx, 0].sum(-1) / b[idx, 1].sum(-1))

    n = len(a)
    point = float(statistic(np.arange(n)))
    out: dict[str, Any] = {"ratio": round(point, 3), "interval": None, "states": n,
                           "statistic": "median of per-state ratios" if b is None else "ratio of rates over states"}
    if n >= 2:
        draws = statistic(np.random.default_rng(seed).integers(0, n, size=(resamples, n)))
        low, high = np.quantile(draws, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
        out.update(interval=[round(float(low), 3), round(float(high), 3)], level=LEVEL, resamples=resamples, seed=seed)
    return out


def judge(interval: Sequence[float] | None, target: float, at_most: bool = False) -> str:
    """"met", "not met" or "spans the target" for a 95 % interval against `target` (`at_most`: lower is better)."""
    if not interval:
        return "no interval"
    low, high = interval
    if low <= target <= high:
        return "spans the target"
    return "met" if (high < target if at_most else low > target) else "not met"


def interval_against(bootstrap: dict[str, Any], target: float, at_most: bool = False) -> dict[str, Any]:
    """`bootstrap_ratio`'s interval as a results file records it beside a target: bounds, how it was drawn, the verdict."""
    extra = {k: bootstrap[k] for k in ("level", "resamples", "seed") if k in bootstrap}
    return {"bounds": bootstrap["interval"], "states": bootstrap["states"], "statistic": bootstrap["statistic"],
            "verdict": judge(bootstrap["interval"], target, at_most), **extra}


def format_interval(interval: dict[str, Any] | None) -> str:
    """An interval's cell in the docs' target tables: "[low, high] over N states: verdict", or "-" where there is none."""
    if not interval or not interval.get("bounds"):
        return "-"
    low, high = interval["bounds"]
    return f"[{low}, {high}] over {interval['states']} states: {interval['verdict']}"


def paired_order(index: int, arms: Sequence[T]) -> list[T]:
    """The order the arms run in on the `index`-th state: rotated one step per state, so each goes first in turn."""
    shift = index % len(arms) if arms else 0
    return [*arms[shift:], *arms[:shift]]


