"""Notebook 01's exercise: open `model.tar.gz` with the standard library and check it is what SageMaker and the DLC
expect: one regular file, a GGUF, at the root, whose sha256 is the one the package recorded."""

from __future__ import annotations

import hashlib
import tarfile
from pathlib import Path


def verify_package(tarball: Path | str) -> str:
    """The sha256 of the GGUF inside `tarball`, after checking the layout (raises ValueError naming what is wrong)."""
    with tarfile.open(tarball, "r:*") as archive:
        members = archive.getmembers()
        ggufs = [m for m in members if m.name.endswith(".gguf")]
        if not ggufs or any("/" in m.name.lstrip("./") or not m.isfile() for m in members):
            raise ValueError(f"{tarball}: expected regular files at the root, a GGUF among them; found {[m.name for m in members]}")
        digest = hashlib.sha256()
        with archive.extractfile(ggufs[0]) as stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()
