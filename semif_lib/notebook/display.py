"""A notebook's settings and the line it prints first: where it runs, why, and for which run.

Notebooks run with their own folder as the working directory, so every relative path in the
settings is resolved against the repository root (`paths.repo_root`), never against `Path.cwd()`:
the state file a notebook writes is the one `semif workshop status` reads from the repository root.
`load_notebook_settings` also makes the kernel show a `SemifError` as its one-line message (what to
do) instead of a traceback through the library (`show_errors_briefly`); the cell still fails.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..errors import SemifError
from ..model.hub import is_hub_reference
from ..paths import repo_root
from ..registry import WorkshopState
from ..settings import Settings, load_settings, setting_source

__all__ = ["describe_target", "find_repo_root", "load_notebook_settings", "show_errors_briefly", "show_target"]


def find_repo_root(start: Path | str | None = None) -> Path:
    """The repository root (`paths.repo_root`): the checkout this package came from (editable install),
    else the first parent of `start` (default: the working directory) holding our `pyproject.toml`, else `start`."""
    return repo_root(start)


def _anchor(path: Path, root: Path) -> Path:
    return path if path.is_absolute() else root / path


def _brief_traceback(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: int | None = None) -> list[str]:
    sys.last_type, sys.last_value, sys.last_traceback = etype, value, tb  # what %tb reads
    stb = [f"\x1b[0;31m{etype.__name__}\x1b[0m: {value}", "(%tb shows the full traceback)"]
    shell._showtraceback(etype, value, stb)  # ipykernel: an error output, and the cell's reply says error
    return stb


def show_errors_briefly() -> bool:
    """In an IPython kernel, show a `SemifError` as `ErrorName: message` (the message says what to do),
    not a traceback through the library. The cell still fails (Run All stops, nbclient raises) and
    `%tb` prints the whole traceback. Returns whether there was a kernel to configure."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None:
        return False

    shell.set_custom_exc((SemifError,), _brief_traceback)
    return True


def load_notebook_settings(target: str | None = None, **overrides: Any) -> Settings:
    """`SEMIF_*` settings with the notebook's `TARGET` (and any overrides) applied, and the state
    file, results folder, calibration file and a relative `MODEL` path anchored at the repository root (a
    kernel runs in `notebooks/`; `models/x.gguf` means the repository's, as it does in a shell there).

    `TARGET = None` (the notebooks' default) means `SEMIF_TARGET`, else `local`: `export
    SEMIF_TARGET=aws` runs every notebook against AWS without editing one. In a notebook it also
    turns on `show_errors_briefly`."""
    show_errors_briefly()
    settings = load_settings(target=target, **overrides)
    root = find_repo_root()
    update: dict[str, Any] = {"state_file": _anchor(Path(settings.state_file), root),
                              "results_dir": _anchor(Path(settings.results_dir), root)}
    if settings.calibration is not None:
        update["calibration"] = _anchor(Path(settings.calibration), root)
    model = overrides.get("model_path")
    if model and not is_hub_reference(model) and not Path(model).expanduser().is_absolute():
        update["model_path"] = _anchor(Path(model), root)
    return settings.model_copy(update=update)


def describe_target(settings: Settings, state: WorkshopState | None = None, target: str | None = None,
                    local_only: bool = False) -> str:
    """The line every notebook prints first: where it runs, why, and (for workshop steps) the run.

    `target` is the notebook's `TARGET` parameter (None: taken from `SEMIF_TARGET`, else the settings file
    `~/.semif/settings.env`, else local).
    `local_only` notebooks run on this machine whatever the target says.
    """
    source = "TARGET parameter" if target else setting_source("target")  # SEMIF_TARGET, the settings file, or default
    if local_only:
        return (f"target=local | this notebook always runs on this machine "
                f"(the workshop target is {settings.target}, from {source})")
    parts = [f"target={settings.target}"]
    if state is not None:
        parts.append(f"run {state.run_id}")
    if settings.target == "aws":
        parts.append(f"region {(state.region if state is not None else None) or settings.aws_region or 'from the AWS session'}")
    if state is not None:
        parts.append(f"state file {state.path}")
    return " | ".join(parts) + f" (target from {source})"


def show_target(settings: Settings, state: WorkshopState | None = None, target: str | None = None,
                local_only: bool = False) -> None:
    """Print `describe_target(...)` (the first output of every notebook)."""
    print(describe_target(settings, state, target, local_only))
