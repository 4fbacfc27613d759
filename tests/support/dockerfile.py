"""The adapter Dockerfile read as `docker build` reads it: which image its final stage starts from.

The lines and ARGs come from `semif_lib.containers.dockerfile` (the parser notebook 03's check uses); the ARG
expansion in FROM lines is only needed here.
"""

from __future__ import annotations

import re

from support.paths import ROOT


def _expand(text: str, args: dict[str, str]) -> str:
    """Dockerfile ARG expansion as the docs define it: ${X}, ${X:-word}, ${X:+word}, words may nest."""
    pattern = re.compile(r"\$\{(\w+)(?::([-+])((?:[^{}]|\{[^{}]*\})*))?\}")
    while (m := pattern.search(text)) is not None:
        value = args.get(m.group(1), "")
        if m.group(2) == "-":
            value = value or _expand(m.group(3), args)
        elif m.group(2) == "+":
            value = _expand(m.group(3), args) if value else ""
        text = text[:m.start()] + value + text[m.end():]
    return text


def dockerfile_base(build_args: dict[str, str]) -> str:
    """The image the adapter's final stage starts from, for `docker build --build-arg ...`."""
    from semif_lib.containers.dockerfile import Dockerfile

    dockerfile = Dockerfile.read(ROOT / "container" / "Dockerfile")
    args = {name: build_args.get(name, default) for name, default in dockerfile.global_args().items()}
    stages: dict[str, str] = {}
    image = ""
    for ln in dockerfile.instructions("FROM "):
        source, _, alias = _expand(ln[5:], args).partition(" AS ")
        image = stages.get(source, source)
        if alias:
            stages[alias] = image
    return image
