"""GGUFs from the Hugging Face Hub by name: `hf://org/repo/file.gguf[@revision]`, downloaded with `huggingface_hub`.

`huggingface_hub` does the work every GGUF user already relies on: the cache (`HF_HOME`, `HF_HUB_CACHE`),
resumable downloads with a progress bar, revisions, mirrors (`HF_ENDPOINT`) and `HF_HUB_OFFLINE`. This
module adds what a decision endpoint needs on top: a split GGUF (`-00001-of-0000N.gguf`) fetched as one
model, every shard's sha256 checked against the hub's LFS metadata (the cache names each blob by the
ETag the hub sent, which is the LFS sha256), and the commit the revision resolved to, recorded.

Both spellings are accepted: the issue's `hf://org/repo/file.gguf@rev` and huggingface_hub's canonical
`hf://org/repo@rev/file.gguf` (and a pasted `https://huggingface.co/org/repo/blob/main/file.gguf`). A
`pathlib.Path` collapses `hf://` to `hf:/`, so that form is read as the same reference.
"""

from __future__ import annotations

import hashlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelNotFoundError

__all__ = ["HubModel", "HubReference", "download_hub_model", "hub_origin", "is_hub_reference", "local_shards", "parse_hub_reference",
           "split_shards"]

SPLIT_RE = re.compile(r"^(?P<stem>.*)-(?P<index>\d{5})-of-(?P<count>\d{5})\.gguf$")
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
_HUB_PREFIXES = ("hf://", "hf:/", "https://huggingface.co/")


@dataclass(frozen=True)
class HubReference:
    """One GGUF on the hub: repository, file inside it, and an optional revision (branch, tag or commit)."""

    repo_id: str
    filename: str
    revision: str | None = None

    def __str__(self) -> str:
        return f"hf://{self.repo_id}/{self.filename}" + (f"@{self.revision}" if self.revision else "")


@dataclass(frozen=True)
class HubModel:
    """A downloaded hub model: the first shard's local path (what llama.cpp opens) and what was checked."""

    reference: HubReference
    path: Path
    commit: str
    shards: tuple[str, ...]
    sha256: tuple[str, ...]
    size: int
    files: tuple[Path, ...] = ()  # every shard's local path, first shard first


def is_hub_reference(text: object) -> bool:
    """True for a string (or a Path) that names a hub file rather than a local one."""
    return str(text).startswith(_HUB_PREFIXES)


def parse_hub_reference(text: object) -> HubReference:
    """Parse a hub reference with huggingface_hub's own URI parser; a bad one is one line on what to write."""
    from huggingface_hub.errors import HfUriError
    from huggingface_hub.utils import parse_hf_uri

    raw = str(text)
    if raw.startswith("hf:/") and not raw.startswith("hf://"):
        raw = "hf://" + raw[len("hf:/"):]
    parts = raw[len("hf://"):].split("/") if raw.startswith("hf://") else []
    if len(parts) >= 3 and "@" in parts[-1] and "@" not in parts[1]:  # file.gguf@rev -> huggingface_hub's repo@rev/file.gguf
        name, revision = parts[-1].split("@", 1)
        raw = "hf://" + "/".join([parts[0], f"{parts[1]}@{revision}", *parts[2:-1], name])
    try:
        uri = parse_hf_uri(raw)
    except HfUriError as exc:
        raise ModelNotFoundError(f"{text} is not a hub model reference ({exc}): write hf://org/repo/file.gguf[@revision]",
                                 field="model_path") from None
    if uri.type != "model" or not uri.path_in_repo.endswith(".gguf"):
        raise ModelNotFoundError(f"{text} does not name a .gguf file in a model repository: write hf://org/repo/file.gguf[@revision]",
                                 field="model_path")
    return HubReference(uri.id, uri.path_in_repo, uri.revision)


def hub_origin(path: Path | str) -> HubReference | None:
    """The repository, file and resolved commit of a file inside huggingface_hub's cache, else None.

    The cache lays a download out as `models--org--repo/snapshots/<commit>/<path in repo>`, so a path
    read from there names its commit however it was found (a hub reference, `SEMIF_MODEL_PATH` set to the
    cached file, a packaged copy's manifest): this is what model_info and the package record.
    """
    parts = Path(path).parts
    for i in range(len(parts) - 3, -1, -1):
        if parts[i].startswith("models--") and parts[i + 1] == "snapshots" and len(parts) > i + 3:
            repo_id = parts[i][len("models--"):].replace("--", "/", 1)
            return HubReference(repo_id, "/".join(parts[i + 3:]), parts[i + 2])
    return None


def split_shards(filename: str) -> tuple[str, ...]:
    """Every shard of a split GGUF named by its first (`x-00001-of-00003.gguf`), or just `filename`."""
    match = SPLIT_RE.match(filename)
    if not match:
        return (filename,)
    index, count = int(match["index"]), int(match["count"])
    if index != 1 or count < 1:
        first = f"{match['stem']}-00001-of-{match['count']}.gguf"
        raise ModelNotFoundError(f"{filename} is shard {index} of a split GGUF: name the first shard, {first}", field="model_path")
    return tuple(f"{match['stem']}-{i:05d}-of-{match['count']}.gguf" for i in range(1, count + 1))


def local_shards(path: Path) -> tuple[Path, ...]:
    """Every shard of a local GGUF named by its first, beside it (just `path` when it is not split); one missing is an error."""
    files = tuple(path.with_name(name) for name in split_shards(path.name))
    missing = [f.name for f in files if not f.is_file()]
    if missing:
        raise ModelNotFoundError(f"{path.name} is the first of {len(files)} shards; {', '.join(missing)} missing beside it in "
                                 f"{path.parent}: a split GGUF is used whole", field="model_path")
    return files


def download_hub_model(reference: HubReference | str, progress: bool = True) -> HubModel:
    """Download (or find in the cache) every shard of `reference`, checking each against the hub's sha256."""
    from huggingface_hub import constants, hf_hub_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError, OfflineModeIsEnabled
    from huggingface_hub.utils import disable_progress_bars, enable_progress_bars

    ref = parse_hub_reference(reference) if isinstance(reference, str) else reference
    shards = split_shards(ref.filename)
    paths: list[Path] = []
    (disable_progress_bars if not progress else enable_progress_bars)()
    try:
        for shard in shards:
            paths.append(Path(hf_hub_download(ref.repo_id, shard, revision=ref.revision)))
    except (LocalEntryNotFoundError, OfflineModeIsEnabled) as exc:
        raise ModelNotFoundError(f"{ref}: not in the local cache and the hub cannot be reached ({type(exc).__name__}); "
                                 f"download it where the hub is reachable (HF_ENDPOINT={constants.ENDPOINT}), or unset HF_HUB_OFFLINE",
                                 field="model_path") from None
    except HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else "?"
        raise ModelNotFoundError(f"{ref}: the hub answered {status} ({type(exc).__name__}); check the repository, file name "
                                 "and revision, and HF_TOKEN for a gated repository", field="model_path") from None
    except OSError as exc:
        raise ModelNotFoundError(f"{ref}: download failed ({exc}); a rerun resumes it", field="model_path") from None
    finally:
        enable_progress_bars()
    digests = tuple(verify_blob(path, Path(constants.HF_HOME)) for path in paths)
    origin = hub_origin(paths[0])
    commit = origin.revision if origin else "unknown"
    size = sum(p.stat().st_size for p in paths)
    print(f"model {ref} at commit {commit}: {len(paths)} file(s), {size / 1e9:.2f} GB, sha256 checked -> {paths[0]}", file=sys.stderr)
    return HubModel(ref, paths[0], commit, shards, digests, size, tuple(paths))


def verify_blob(path: Path, hf_home: Path) -> str:
    """The file's sha256, which must equal the LFS sha256 the hub sent as its ETag (the blob's name in the cache).

    A verified blob is remembered (by name, size and mtime) under `HF_HOME/semif-verified/`, so a
    5 GB model is hashed once after download, not at every start.
    """
    blob = path.resolve()
    expected = blob.name
    if not _SHA256_RE.match(expected):
        raise ModelNotFoundError(f"{path}: the hub gave no LFS sha256 for this file (ETag {expected[:16]}...), so it cannot be checked; "
                                 "GGUFs on the hub are LFS files: is this a GGUF?", field="model_path")
    stat = blob.stat()
    marker = hf_home / "semif-verified" / expected
    stamp = f"{stat.st_size} {stat.st_mtime_ns}"
    if marker.is_file() and marker.read_text() == stamp:
        return expected
    digest = hashlib.sha256()
    with open(blob, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    if digest.hexdigest() != expected:
        blob.unlink()  # a corrupt blob would be served from the cache forever; a rerun downloads it again
        raise ModelNotFoundError(f"{path}: sha256 {digest.hexdigest()} differs from the hub's {expected}; the corrupt copy was "
                                 "removed, rerun to download it again", field="model_path")
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(stamp)
    return expected
