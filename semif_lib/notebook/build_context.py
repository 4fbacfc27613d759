"""Notebook 03's check of `container/`, static, as CodeBuild will use it, without Docker."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

from ..aws.imagebuild import build_source_zip
from ..containers.dockerfile import Dockerfile
from ..paths import repo_root

__all__ = ["inspect_build_context"]


def _dockerfile_report(dockerfile: Dockerfile) -> dict[str, Any]:
    return {"base_args": [ln for ln in dockerfile.instructions("ARG ") if "BASE" in ln.upper()],
            "from": dockerfile.instructions("FROM "),
            "entrypoint": dockerfile.instructions("ENTRYPOINT", "CMD"),
            "llama_cpp_lib": [ln for ln in dockerfile.raw_lines if "LLAMA_CPP_LIB" in ln]}


def _buildspec_commands(buildspec: Path) -> tuple[bool, list[str]]:
    """Whether the buildspec exists, and its login/build/push commands."""
    spec_lines = buildspec.read_text(encoding="utf-8").splitlines() if buildspec.is_file() else []
    commands = [ln.strip().lstrip("- ").strip() for ln in spec_lines if "docker" in ln or "get-login-password" in ln]
    return bool(spec_lines), [c for c in commands if not c.startswith("#")]  # the buildspec's comments are not commands


def _zip_names(root: Path) -> tuple[bytes, str, list[str]]:
    data, sha = build_source_zip(root)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return data, sha, zf.namelist()


def _missing_from_zip(sources: list[str], names: list[str]) -> list[str]:
    return [src for src in sources if not any(n == src or n.startswith(src.rstrip("/") + "/") for n in names)]


def inspect_build_context(root: Path | None = None) -> dict[str, Any]:
    """Check `container/` statically, as CodeBuild will use it, without Docker.

    Returns the zip's size and sha256 (which names the image tag), the Dockerfile's base-image
    ARG, FROM, ENTRYPOINT and llama.cpp library path, the buildspec's login/build/push commands,
    and `problems`, a list that is empty when everything the build needs is there.
    """
    root = root or repo_root()
    dockerfile = Dockerfile.read(root / "container" / "Dockerfile")
    report = _dockerfile_report(dockerfile)
    has_spec, commands = _buildspec_commands(root / "container" / "buildspec.yml")
    checks = {
        "Dockerfile": bool(dockerfile.raw_lines),
        "base image ARG": bool(report["base_args"]),
        "FROM uses the ARG": any("$" in ln for ln in report["from"]),
        "ENTRYPOINT": bool(report["entrypoint"]),
        "LLAMA_CPP_LIB_PATH": bool(report["llama_cpp_lib"]),
        "buildspec.yml": has_spec,
        "registry login": any("get-login-password" in c for c in commands),
        "docker build": any("docker build" in c for c in commands),
        "docker push": any("docker push" in c for c in commands),
    }
    data, sha, names = _zip_names(root)
    missing = _missing_from_zip(dockerfile.copy_sources(), names)
    checks["every COPY source in the zip"] = not missing
    problems = [name for name, ok in checks.items() if not ok] + [f"not in the zip: {src}" for src in missing]
    return {"zip_bytes": len(data), "zip_sha256": sha, "files": len(names),
            "container_files": [n for n in names if n.startswith("container/")],
            **report, "buildspec_commands": commands, "checks": checks, "problems": problems}
