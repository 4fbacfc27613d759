"""The stated minutes, measured: every notebook run top to bottom with its own parameters, locally, one after another as
an attendee runs them, each timed; the results file is what `budget` states its minutes from.

`semif workshop clock` writes `results/notebooks/clock.json` and fails when a notebook took more than `ALLOWED_FACTOR`
times the minutes its first line states. Run it alone on the machine, like the benchmarks: timing a notebook inside a
test run would measure the tests beside it.
"""
from __future__ import annotations

import json
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from ..paths import repo_root
from .budget import CLOCKS

__all__ = ["ALLOWED_FACTOR", "check_clock", "execute_notebook", "local_env", "read_clock", "run_clock", "stated_minutes"]

ALLOWED_FACTOR = 2.0  # a notebook may take up to twice its stated minutes on a slower machine before the figure is wrong
CELL_TIMEOUT_S = 900


def clock_path() -> Path:
    return repo_root() / "results" / "notebooks" / "clock.json"


def stated_minutes(seconds: float) -> int:
    """Whole minutes, rounded up, at least one: how a measured run becomes the figure a notebook states."""
    return max(1, math.ceil(seconds / 60))


def execute_notebook(path: Path, env: dict[str, str]) -> tuple[float, Any]:
    """Run `path` top to bottom on the `python3` kernel, in its folder, with `env`: seconds, and the executed notebook."""
    import nbclient
    import nbformat

    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3", allow_errors=False,
                                     resources={"metadata": {"path": str(path.parent)}})
    start = time.monotonic()
    client.execute(env=env)
    return time.monotonic() - start, nb


def _run_one(path: Path, env: dict[str, str]) -> float:
    return execute_notebook(path, env)[0]


def local_env(state_dir: Path) -> dict[str, str]:
    """The environment of an attendee's local run: no SEMIF_* setting of this shell, the local target, a fresh state."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMIF_")}
    env.update(SEMIF_TARGET="local", SEMIF_STATE_FILE=str(state_dir / "workshop_state.json"))
    return env


def run_clock(names: list[str] | None = None, progress: bool = True) -> dict[str, Any]:
    """Run the notebooks (`names`: two-digit prefixes, default all) in order with `SEMIF_TARGET=local` and a fresh state
    file, as an attendee would; seconds per notebook, the stated minutes, and the machine."""
    from tqdm.auto import tqdm

    from ..measurement.bench.workload import describe_machine
    from ..settings import load_settings

    folder = repo_root() / "notebooks"
    paths = sorted(p for p in folder.glob("*.ipynb") if names is None or p.name[:2] in names)
    with tempfile.TemporaryDirectory(prefix="semif-clock-") as tmp:
        env = local_env(Path(tmp))
        seconds = {}
        for path in tqdm(paths, desc="notebooks", unit="notebook", disable=not progress):
            seconds[path.name[:2]] = round(_run_one(path, env), 1)
    # the stated minutes are not copied in: they live in budget.CLOCKS, and a copy went stale when they changed
    return {"seconds": seconds, "allowed_factor": ALLOWED_FACTOR,
            "machine": describe_machine(load_settings()), "command": "semif workshop clock"}


def check_clock(results: dict[str, Any]) -> list[str]:
    """One line per notebook that took more than `ALLOWED_FACTOR` times its stated minutes (empty: every figure holds)."""
    return [f"{name}: {seconds:.0f} s against 'about {CLOCKS[name].here_min} min with the local target' (more than {ALLOWED_FACTOR:g}x): "
            f"state {stated_minutes(seconds)} min in notebook.budget.CLOCKS, or make the notebook faster"
            for name, seconds in results["seconds"].items() if seconds > ALLOWED_FACTOR * 60 * CLOCKS[name].here_min]


def read_clock(path: Path | None = None) -> dict[str, Any]:
    return json.loads((path or clock_path()).read_text(encoding="utf-8"))


def command_clock(args: Any) -> int:
    """`semif workshop clock`: run, write, check."""
    results = run_clock(args.notebooks or None, progress=not args.quiet)
    out = Path(args.output) if args.output else clock_path()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    for name, seconds in results["seconds"].items():
        print(f"{name}: {seconds:6.1f} s  (stated: about {CLOCKS[name].here_min} min with the local target)")
    problems = check_clock(results)
    for line in problems:
        print(line)
    print(f"wrote {out}")
    return 1 if problems else 0
