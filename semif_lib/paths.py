"""Where the repository is: one rule for every module that needs a file from the checkout.

`container/`, `data/`, `.semif/` and the notebooks' state file are found from the repository root.
The rule: the checkout this package was imported from (an editable install, the usual case),
else the first folder from `start` (default: the working directory) upwards that holds this
project's `pyproject.toml`, else `start` itself.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["PACKAGE_DIR", "PROJECT_NAME", "is_repo_root", "repo_root"]

PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_NAME = "semif-workshop"


def is_repo_root(path: Path) -> bool:
    """Whether `path` holds this project's `pyproject.toml`."""
    pyproject = path / "pyproject.toml"
    return pyproject.is_file() and f'name = "{PROJECT_NAME}"' in pyproject.read_text(encoding="utf-8", errors="replace")


def repo_root(start: Path | str | None = None) -> Path:
    """The repository root (see the module docstring for the rule)."""
    if is_repo_root(PACKAGE_DIR.parent):
        return PACKAGE_DIR.parent
    begin = Path(start or Path.cwd()).resolve()
    for folder in (begin, *begin.parents):
        if is_repo_root(folder):
            return folder
    return begin
