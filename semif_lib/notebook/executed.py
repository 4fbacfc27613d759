"""Executed copies of the notebooks, for a reader who does not run them: the committed notebooks carry no outputs, so
on GitHub they show code only. `semif workshop render` runs every notebook on the local target with its own parameters
(as `semif workshop clock` does, in order, with a fresh state file) and writes each, outputs and charts included, to
`results/notebooks/executed/`, where GitHub renders it. Paths of this machine in the outputs become `<repo>`, `<venv>`
and `<tmp>`, and the markdown's relative links are rewritten to reach the same files from there. A test holds every
copy to its notebook's current cells (`stale_copies`), as the screenshots are held.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..paths import repo_root
from .clock import execute_notebook, local_env

__all__ = ["executed_dir", "render_notebooks", "stale_copies"]


def executed_dir() -> Path:
    return repo_root() / "results" / "notebooks" / "executed"


def _scrub(value: Any, replacements: dict[str, str]) -> Any:
    """Text outputs with this machine's paths replaced (images and other binary data pass through)."""
    if isinstance(value, str):
        for old, new in replacements.items():
            value = value.replace(old, new)
        return value
    if isinstance(value, list):
        return [_scrub(v, replacements) for v in value]
    return value


def _coalesce_streams(nb: Any) -> None:
    """One output per run of printed text, as JupyterLab shows it (a streamed reply arrives as one message per token,
    which a renderer would show one per line)."""
    for cell in nb.cells:
        merged: list[Any] = []
        for output in cell.get("outputs", []):
            last = merged[-1] if merged else None
            if last is not None and output.get("output_type") == "stream" == last.get("output_type") and output["name"] == last["name"]:
                last["text"] = "".join(last["text"]) + "".join(output["text"])
            else:
                merged.append(output)
        if "outputs" in cell:
            cell["outputs"] = merged


def _scrub_outputs(nb: Any, replacements: dict[str, str]) -> None:
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if "text" in output:
                output["text"] = _scrub(output["text"], replacements)
            for mime, data in output.get("data", {}).items():
                if mime.startswith("text/") or mime == "application/json":
                    output["data"][mime] = _scrub(data, replacements)


# A copy lives two folders below notebooks/: its markdown's links into the repository are rewritten to reach the same files
RELINKS = {"](../": "](../../../", "](solutions/": "](../../../notebooks/solutions/"}


def _relink(text: str) -> str:
    for old, new in RELINKS.items():
        text = text.replace(old, new)
    return text


def render_notebooks(names: list[str] | None = None, progress: bool = True, out_dir: Path | None = None) -> list[Path]:
    """Run the notebooks (`names`: two-digit prefixes, default all) locally, in order, and write their executed copies."""
    import nbformat
    from tqdm.auto import tqdm

    folder, out = repo_root() / "notebooks", out_dir or executed_dir()
    out.mkdir(parents=True, exist_ok=True)
    paths = sorted(p for p in folder.glob("*.ipynb") if names is None or p.name[:2] in names)
    written = []
    with tempfile.TemporaryDirectory(prefix="semif-render-") as tmp:
        env = local_env(Path(tmp))
        for path in tqdm(paths, desc="notebooks", unit="notebook", disable=not progress):
            _, nb = execute_notebook(path, env)
            _coalesce_streams(nb)
            _scrub_outputs(nb, {str(Path(tmp).resolve()): "<tmp>", tmp: "<tmp>", str(repo_root()): "<repo>", sys.prefix: "<venv>"})
            for cell in nb.cells:
                if cell.cell_type == "markdown":
                    cell.source = _relink(cell.source)
            nbformat.write(nb, out / path.name)
            written.append(out / path.name)
    return written


def _sources(path: Path, relink: bool = False) -> list[tuple[str, str]]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [(c["cell_type"], _relink("".join(c["source"])) if relink and c["cell_type"] == "markdown" else "".join(c["source"]))
            for c in cells]


def stale_copies(out_dir: Path | None = None) -> list[str]:
    """One line per notebook whose executed copy is missing or was run on other cells than the notebook holds now."""
    out = out_dir or executed_dir()
    stale = []
    for path in sorted((repo_root() / "notebooks").glob("*.ipynb")):
        copy = out / path.name
        if not copy.is_file():
            stale.append(f"{path.name}: no executed copy")
        elif _sources(copy) != _sources(path, relink=True):
            stale.append(f"{path.name}: its executed copy ran other cells")
    return stale


def command_render(args: Any) -> int:
    """`semif workshop render`: run and write every notebook's executed copy."""
    for path in render_notebooks(args.notebooks or None, progress=not args.quiet):
        print(f"wrote {path.relative_to(repo_root())}")
    return 0
