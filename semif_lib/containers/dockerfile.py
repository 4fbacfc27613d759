"""Reading a Dockerfile without Docker: its instructions, the ARGs before the first FROM, what it COPYs.

`container/Dockerfile` is what CodeBuild builds on AWS and what target=container builds here; the
build-context check of notebook 03 (`notebook.inspect_build_context`) and the tests read it through
this one parser. Line continuations are not joined: each physical line is read on its own, which
is all these checks need.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["Dockerfile"]


@dataclass(frozen=True)
class Dockerfile:
    """A Dockerfile's text, read as lines (an empty text when the file does not exist)."""

    text: str = ""

    @classmethod
    def read(cls, path: Path | str) -> "Dockerfile":
        path = Path(path)
        return cls(path.read_text(encoding="utf-8") if path.is_file() else "")

    @property
    def raw_lines(self) -> list[str]:
        """Every line as written, comments included."""
        return self.text.splitlines()

    @property
    def lines(self) -> list[str]:
        """The non-blank lines that are not comments, stripped."""
        return [ln.strip() for ln in self.raw_lines if ln.strip() and not ln.strip().startswith("#")]

    def instructions(self, *keywords: str) -> list[str]:
        """The lines that start with one of `keywords` (case-insensitive; include the space, `"ARG "`, to match a word)."""
        starts = tuple(k.upper() for k in keywords)
        return [ln for ln in self.lines if ln.upper().startswith(starts)]

    def global_args(self) -> dict[str, str]:
        """`ARG NAME=default` before the first FROM, as `{NAME: default}` (`""` when there is none)."""
        args: dict[str, str] = {}
        for ln in self.lines:
            if ln.upper().startswith("FROM "):
                break
            if ln.upper().startswith("ARG "):
                name, _, default = ln[4:].strip().partition("=")
                args[name.strip()] = default.strip()
        return args

    def copy_sources(self) -> list[str]:
        """The build-context paths the COPY instructions read (a `COPY --from=stage` reads none)."""
        return [src for ln in self.instructions("COPY ") if "--from" not in ln for src in ln.split()[1:-1]]
