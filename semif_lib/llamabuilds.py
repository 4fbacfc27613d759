"""llama.cpp builds: which one AWS's DLC tags carry, and how a binary says which it is.

The DLC's SageMaker tags (`server-sagemaker-cpu-v1`, ...) float: AWS moved them from b10433 to the stable
release v0.4.1 (b10964) on 2026-09-25 without a new tag, and will again. What an image really holds is read
from its `llama-server --version`; the binding, the flags llama-server accepts and the replica follow from that.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DLC_BUILD", "DLC_RELEASES", "RELEASE_BUILDS", "DlcRelease", "parse_llama_build", "read_llama_server_build",
           "release_for_build"]


@dataclass(frozen=True)
class DlcRelease:
    """One release AWS shipped under the DLC's floating tags (docs/llama-cpp/changelog/index.md in aws/deep-learning-containers)."""

    name: str  # as the changelog names it: "v0.4.1", "b10433"
    build: int
    date: str  # the changelog's date: the tags carried this build from that day


# Newest first. Both stay in use: an account that pinned a digest before 2026-09-25 still builds on b10433.
DLC_RELEASES = (DlcRelease("v0.4.1", 10964, "2026-09-25"), DlcRelease("b10433", 10433, "2026-08-21"))
DLC_BUILD = DLC_RELEASES[0].build  # what the tags carry today
# llama.cpp's stable releases print their version beside a build number; one built without git history
# prints build 0, so its version names the build.
RELEASE_BUILDS = {"0.4.1": 10964}


def release_for_build(build: int) -> DlcRelease | None:
    """The DLC release that shipped `build`, if AWS shipped it."""
    return next((r for r in DLC_RELEASES if r.build == build), None)


def parse_llama_build(version_text: str) -> int | None:
    """The build number in `llama-server --version` output, in every format llama.cpp prints:
    `version: 0.4.1 (build 10964, commit 1a2b3c4)` (a stable release), `version: 0.1.0-dev (build 10435, commit unknown)`
    (a nightly, as built from the sdist), and the older `version: 10433 (e1f2a3b)` / `version: b10433 (...)`. A stable
    release built without git history prints build 0; its version then names the build (`RELEASE_BUILDS`)."""
    match = re.search(r"version:\s*v?([0-9][0-9.]*[0-9])(?:-\w+)?\s*\(build (\d+)", version_text)
    if match:
        build = int(match.group(2))
        return build if build > 0 else RELEASE_BUILDS.get(match.group(1))
    match = re.search(r"version:\s*b?(\d+)\s*\(", version_text)
    return int(match.group(1)) if match else None


def read_llama_server_build(binary: Path) -> int | None:
    """The llama.cpp build number of a llama-server binary, from its `--version`."""
    env = {**os.environ, "LD_LIBRARY_PATH": f"{binary.parent}:{os.environ.get('LD_LIBRARY_PATH', '')}"}
    done = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60, env=env)
    return parse_llama_build(done.stdout + done.stderr)
