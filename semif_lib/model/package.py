"""A GGUF packaged as SageMaker model data (`model.tar.gz`, or the files themselves), and what hosting it needs.

The tarball holds the GGUF at its root, which is where the AWS llama.cpp DLC (and our adapter,
`model.locate.find_gguf_in_dir`) look first: SageMaker unpacks ModelDataUrl into `/opt/ml/model`
and the first `*.gguf` there is served. A split GGUF goes in whole, every shard beside the first
(llama.cpp opens the first and finds the others by name). The GGUF's sha256 names the package's
folder and is recorded beside it, so an unchanged model is never packaged twice.

Before anything is written, the workshop's packaging step has the model inspected (the `inspect` hook,
`decision.inspection.check_for_packaging`, which this floor cannot import): a GGUF whose answer slots cannot
verify, or whose architecture this llama.cpp lacks, is refused with one line, not on the endpoint after
an upload. A hub reference (`hf://org/repo/file.gguf[@rev]`) is
downloaded first, and its repository and resolved commit are recorded with the package.

With `uncompressed` (`SEMIF_MODEL_DATA=uncompressed`) no tarball is built: the GGUF file(s) go to S3
as they are, under a prefix SageMaker copies into `/opt/ml/model` (S3ModelDataSource, CompressionType
None), so the machine that packages needs no second copy of a 40 GB model.

`plan_hosting` is the one rule for what an endpoint needs for a model of a given size (volume,
download and start-up timeouts); see its docstring.

This is plumbing (no wing, no boto3): every target packages the same way (`workshop.package_model`);
the AWS wing uploads the result (`aws.packaging`) and the targets on this machine unpack it
(`extract_model_package`).
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import InsufficientStorageError, ModelNotFoundError
from ..settings import Settings
from .defaults import model_for
from .hub import download_hub_model, hub_origin, is_hub_reference, local_shards
from .locate import find_model_path, hash_file

__all__ = ["HostingPlan", "ModelPackage", "build_model_package", "build_model_tarball", "extract_model_package",
           "is_model_data_prefix", "list_tarball", "plan_hosting"]

COPY_BUFFER = 8 << 20
TAR_OVERHEAD = 1 << 20  # tar headers and padding, gzip's stored-block framing (5 bytes per 64 KiB): well under 1 MiB per GB


@dataclass(frozen=True)
class ModelPackage:
    """One packaged model. `tarball` is None for uncompressed model data (the `files` go up as they are)."""

    tarball: Path | None
    gguf_name: str  # the first shard: what llama.cpp opens
    sha256: str  # the model's identity: of the GGUF, or of its shards' digests when split (see `model_identity`)
    gguf_size: int  # every shard
    tarball_size: int  # 0 without a tarball
    files: tuple[Path, ...] = ()  # the GGUF file(s), first shard first
    source: str | None = None  # hf://org/repo/file.gguf@<commit> when it came from the hub
    inspection: dict[str, Any] = field(default_factory=dict)  # what refuse_unworkable found

    def record(self) -> dict[str, Any]:
        """What the workshop state keeps (`model_package`); `model_data_url` is this machine's until a target publishes it.

        Uncompressed model data is a prefix, and a prefix URL ends with `/` (S3ModelDataSource's rule): that ending is
        how deployment tells the two apart."""
        url = self.tarball.resolve().as_uri() if self.tarball else self.files[0].resolve().parent.as_uri() + "/"
        return {"tarball": str(self.tarball) if self.tarball else None, "gguf_name": self.gguf_name, "sha256": self.sha256,
                "size": self.tarball_size or self.gguf_size, "gguf_size": self.gguf_size, "files": [str(f) for f in self.files],
                "source": self.source, "model_data_url": url, "uploaded": False}


def is_model_data_prefix(model_data_url: str | None) -> bool:
    """Whether model data is uncompressed files under a prefix rather than a tarball: S3ModelDataSource's prefix ends with "/"
    (AWS: "A valid key name prefix identified by S3Uri always ends with a forward slash"), and only a prefix does."""
    return str(model_data_url or "").endswith("/")


def model_identity(digests: list[str], names: list[str]) -> str:
    """One file: its sha256 (what calibration files and S3 metadata already carry). Split: the sha256 of the shards'
    `sha256sum` lines, so the identity changes when any shard does."""
    if len(digests) == 1:
        return digests[0]
    return hashlib.sha256("".join(f"{d}  {n}\n" for d, n in zip(digests, names, strict=True)).encode()).hexdigest()


def resolve_model_files(gguf: Path | str | None, settings: Settings) -> tuple[tuple[Path, ...], list[str] | None, str | None]:
    """(every shard's local path, their sha256 if already known, the hub source) for a path, a hub reference or the default.

    A hub download's digests were checked against the hub's LFS sha256 on the way in, so they are not hashed again."""
    wanted = gguf or model_for(settings)  # on target aws with no model named: the target's default (model.defaults)
    if wanted and is_hub_reference(wanted):
        hub = download_hub_model(str(wanted))
        origin = hub_origin(hub.path)
        return hub.files, list(hub.sha256), str(origin) if origin else None
    path = find_model_path(wanted, settings.model_dir)
    if path.suffix != ".gguf" or not path.is_file():
        raise ModelNotFoundError(f"{path} is not a .gguf file", field="model_path")
    origin = hub_origin(path)  # SEMIF_MODEL_PATH may name a file inside the hub cache
    return local_shards(path), None, str(origin) if origin else None


def check_free_disk(folder: Path, need: int, what: str) -> None:
    """Refuse before writing when `folder`'s filesystem has less than `need` bytes free, naming the size and the way out."""
    probe = folder
    while not probe.exists():
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if free < need:
        raise InsufficientStorageError(
            f"{what} needs {need / 1e9:.2f} GB free in {probe}, {free / 1e9:.2f} GB are: free space there, put the workshop state "
            "(and its packages) on a bigger disk (SEMIF_STATE_FILE), or set SEMIF_MODEL_DATA=uncompressed, which uploads the GGUF "
            "as it is, with no local copy", field="model_path")


def build_model_package(gguf: Path | str | None = None, out_dir: Path | str = Path(".semif/packages"), *,
                        settings: Settings, uncompressed: bool | None = None, compresslevel: int = 0,
                        inspect: Callable[[Path, str], dict[str, Any]] | None = None) -> ModelPackage:
    """Inspect, identify and package a model: `out_dir/<sha12>/model.tar.gz` (rebuilt only when missing), or, uncompressed,
    just the manifest beside the files that go up as they are.

    `gguf`: a local path (the first shard of a split GGUF), a hub reference, or None for the model the adapter would serve
    (`SEMIF_MODEL_PATH`, else the target's default: `model.defaults`, the embedded SmolLM2 but on aws).
    `inspect(first shard, identity)` runs before anything is written and
    raises to refuse the model (the workshop step passes `decision.inspection.check_for_packaging`; this floor cannot import it).
    Quantized GGUF weights barely compress (level 1 saved 6% on SmolLM2 Q4_1 and took 25x longer), so gzip stores them
    (`compresslevel=0`): the format SageMaker wants, at disk speed.
    """
    uncompressed = settings.model_data == "uncompressed" if uncompressed is None else uncompressed
    files, digests, source = resolve_model_files(gguf, settings)
    names = [f.name for f in files]
    sha = model_identity(digests or [hash_file(f) for f in files], names)
    inspection = inspect(files[0], sha) if inspect else {}  # refused here: nothing written, nothing uploaded
    size = sum(f.stat().st_size for f in files)
    folder = Path(out_dir) / sha[:12]
    manifest = folder / "manifest.json"
    facts = {"gguf": names[0], "files": names, "sha256": sha, "size": size, "source": source, "inspection": inspection}
    if uncompressed:
        folder.mkdir(parents=True, exist_ok=True)
        manifest.write_text(json.dumps({**facts, "model_data": "uncompressed"}, indent=2) + "\n")
        return ModelPackage(None, names[0], sha, size, 0, files, source, inspection)
    tarball = folder / "model.tar.gz"
    if not (tarball.is_file() and manifest.is_file() and json.loads(manifest.read_text()).get("sha256") == sha):
        check_free_disk(folder, size + TAR_OVERHEAD * max(1, math.ceil(size / 1e9)), f"packaging {names[0]} ({size / 1e9:.2f} GB)")
        folder.mkdir(parents=True, exist_ok=True)
        _write_tarball(tarball, files, compresslevel)
        manifest.write_text(json.dumps(facts, indent=2) + "\n")
    return ModelPackage(tarball, names[0], sha, size, tarball.stat().st_size, files, source, inspection)


def build_model_tarball(gguf: Path | str | None = None, out_dir: Path | str = Path(".semif/packages"),
                        compresslevel: int = 0, *, settings: Settings) -> ModelPackage:
    """`build_model_package` with a tarball, whatever `SEMIF_MODEL_DATA` says."""
    return build_model_package(gguf, out_dir, settings=settings, uncompressed=False, compresslevel=compresslevel)


def _write_tarball(tarball: Path, files: tuple[Path, ...], compresslevel: int) -> None:
    """Every file at the tarball's root as a regular file (a hub cache entry is a symlink: its blob goes in), written aside
    and renamed, so an interrupted run leaves no half tarball under the final name."""
    partial = tarball.with_suffix(".partial")
    with tarfile.open(partial, "w:gz", compresslevel=compresslevel, copybufsize=COPY_BUFFER) as tar:
        for path in files:
            with path.open("rb") as fh:
                info = tar.gettarinfo(arcname=path.name, fileobj=fh)  # the open file: a symlink's target, not the link
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                info.mode = 0o644
                tar.addfile(info, fh)
    partial.replace(tarball)


def list_tarball(tarball: Path | str) -> list[str]:
    """Member names of a model tarball (to check the layout)."""
    with tarfile.open(tarball, "r:gz") as tar:
        return tar.getnames()


def extract_model_package(tarball: Path | str, dest: Path | str) -> Path:
    """Unpack `model.tar.gz` into `dest` as SageMaker unpacks ModelDataUrl into /opt/ml/model."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tarball, "r:gz", copybufsize=COPY_BUFFER) as tar:
        try:
            tar.extractall(dest, filter="data")
        except TypeError:  # Python < 3.11.4: no extraction filters; our tarballs hold one regular file
            if any(not m.isfile() or "/" in m.name or m.name.startswith(".") for m in tar.getmembers()):
                raise ValueError(f"{tarball} holds more than plain files at its root") from None
            tar.extractall(dest)
    return dest


# ====================================================================== hosting a model of a given size
GIB = 1024 ** 3
DEFAULT_VOLUME_GB = 30  # AWS: "If the size of the model is larger than 30 GB and you are using an instance without a local
#                         disk, you should increase [VolumeSizeInGB] to be slightly larger than the size of your model"
VOLUME_HEADROOM_GB = 2  # the container's own writes (logs, /tmp) beside the model
BASE_TIMEOUT_S = 600  # the floor for both timeouts: the DLC's GPU variant needs >= 600 s to start (shared/AWS_FACTS)
DOWNLOAD_BYTES_PER_S = 50e6  # assumed S3 -> instance rate, conservative: 40 GB (AWS's threshold for raising the timeout) in ~800 s
READ_BYTES_PER_S = 100e6  # assumed rate llama.cpp reads the GGUF from the instance's gp2 volume at start-up


@dataclass(frozen=True)
class HostingPlan:
    """What a SageMaker production variant needs for one model; None: leave SageMaker's default."""

    volume_size_gb: int | None
    download_timeout_s: int
    startup_timeout_s: int
    notes: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        volume = f"{self.volume_size_gb} GB" if self.volume_size_gb else f"SageMaker's default (~{DEFAULT_VOLUME_GB} GB)"
        return [f"volume {volume}, model download timeout {self.download_timeout_s} s, start-up health check "
                f"{self.startup_timeout_s} s", *self.notes]


def settings_bounds(name: str) -> tuple[int, int]:
    """(ge, le) of a `Settings` field: SageMaker's range for that parameter, kept in one place (settings.py)."""
    low = high = None
    for bound in Settings.model_fields[name].metadata:
        low = getattr(bound, "ge", low)
        high = getattr(bound, "le", high)
    if low is None or high is None:
        raise ValueError(f"Settings.{name} has no ge/le bounds")
    return int(low), int(high)


def _clamped(name: str, value: float, notes: list[str], why: str) -> int:
    low, high = settings_bounds(name)
    if value > high:
        notes.append(f"{why} would want {value:.0f}, SageMaker allows at most {high}: set to {high}")
    return int(min(max(value, low), high))


def plan_hosting(gguf_bytes: int, settings: Settings, *, compressed: bool, accepts_volume: bool = True) -> HostingPlan:
    """The one rule for a model of `gguf_bytes` (every shard), each value overridable by its setting.

    - Volume (`SEMIF_VOLUME_SIZE_GB`): the model data on the instance is the GGUF, twice while a tarball is downloaded
      and unpacked (`compressed`), plus 2 GB; sent only above SageMaker's ~30 GB default, and never to an instance with
      local NVMe storage (`accepts_volume` False: SageMaker refuses VolumeSizeInGB there, its disk is fixed).
    - Download timeout (`SEMIF_MODEL_DOWNLOAD_TIMEOUT_S`): 600 s plus the data at 50 MB/s.
    - Start-up health check (`SEMIF_STARTUP_TIMEOUT_S`): 600 s plus the GGUF read at 100 MB/s.
    Both timeouts are capped at SageMaker's 3600 s, with a note saying so.
    """
    notes: list[str] = []
    on_disk_gb = gguf_bytes * (2 if compressed else 1) / GIB + VOLUME_HEADROOM_GB
    volume = settings.volume_size_gb
    if volume is None and on_disk_gb > DEFAULT_VOLUME_GB:
        volume = _clamped("volume_size_gb", math.ceil(on_disk_gb), notes, "the model data")
    if settings.volume_size_gb and not accepts_volume:
        raise ValueError(f"SEMIF_VOLUME_SIZE_GB={settings.volume_size_gb}, but this instance type has local NVMe storage of a "
                         "fixed size and SageMaker refuses VolumeSizeInGB for it: unset SEMIF_VOLUME_SIZE_GB, or pick an "
                         "EBS-only type (ml.c6i, ml.m6i, ml.r6i, ml.c7g)")
    if volume is not None and not accepts_volume:
        notes.append(f"this instance type has local NVMe storage of a fixed size and refuses VolumeSizeInGB: the model data "
                     f"needs {on_disk_gb:.0f} GB there" + ("; SEMIF_MODEL_DATA=uncompressed halves that" if compressed else ""))
        volume = None
    download = settings.model_download_timeout_s or _clamped(
        "model_download_timeout_s", BASE_TIMEOUT_S + gguf_bytes / DOWNLOAD_BYTES_PER_S, notes, "the download")
    startup = settings.startup_timeout_s or _clamped(
        "startup_timeout_s", BASE_TIMEOUT_S + gguf_bytes / READ_BYTES_PER_S, notes, "the start-up")
    return HostingPlan(volume, download, startup, tuple(notes))
