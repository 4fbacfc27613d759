"""Notebook 03's exercise: the Dockerfile line that makes llama-cpp-python load the DLC's own `libllama`.

Without `LLAMA_CPP_LIB_PATH` llama-cpp-python loads the library its wheel ships, a second llama.cpp build that the
DLC's tags and fixes never reach; with it, the adapter runs the very build the text endpoint runs."""

from __future__ import annotations

import re
from pathlib import Path

from semif_lib.paths import repo_root


def find_library_path(dockerfile: Path | None = None) -> str:
    """The directory `LLAMA_CPP_LIB_PATH` names in `container/Dockerfile` (an `ENV` instruction)."""
    text = (dockerfile or repo_root() / "container" / "Dockerfile").read_text(encoding="utf-8")
    match = re.search(r"^ENV\s+LLAMA_CPP_LIB_PATH=(\S+)", text, flags=re.MULTILINE)
    if match is None:
        raise ValueError("container/Dockerfile sets no LLAMA_CPP_LIB_PATH")
    return match.group(1)
