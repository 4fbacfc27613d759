"""`model.tar.gz`: a GGUF packaged as SageMaker model data, and unpacked as SageMaker unpacks it.

The tarball holds the GGUF at its root, which is where the AWS llama.cpp DLC (and our adapter,
`modelfile.find_gguf_in_dir`) look first: SageMaker unpacks ModelDataUrl into `/opt/ml/model`
and the first `*.gguf` there is served. The GGUF's sha256 names the package's folder and is
recorded beside the tarball, so an unchanged model is never packaged twice.

This is plumbing (no wing, no boto3): every target packages the same way (`workshop.package_model`);
the AWS wing uploads the result (`aws.packaging`) and the targets on this machine unpack it
(`extract_model_package`).
"""

from __future__ import annotations

import json
import tarfile
from dataclasses import dataclass
from pathlib import Path

from .modelfile import find_model_path, hash_file
from .settings import load_settings

__all__ = ["ModelPackage", "build_model_tarball", "extract_model_package", "list_tarball"]

COPY_BUFFER = 8 << 20


@dataclass(frozen=True)
class ModelPackage:
    tarball: Path
    gguf_name: str
    sha256: str  # of the GGUF inside, the model's identity
    gguf_size: int
    tarball_size: int


def build_model_tarball(gguf: Path | str | None = None, out_dir: Path | str = Path(".semif/packages"),
                        compresslevel: int = 0) -> ModelPackage:
    """`out_dir/<sha12>/model.tar.gz` with the GGUF at its root; rebuilt only when missing.

    With no `gguf`, the model the adapter would serve (`SEMIF_MODEL_PATH`, else the embedded SmolLM2).
    Quantized GGUF weights barely compress (level 1 saved 6% on SmolLM2 Q4_1 and took 25x longer),
    so gzip stores them (`compresslevel=0`): the format SageMaker wants, at disk speed.
    """
    path = Path(gguf) if gguf else find_model_path(load_settings().model_path)
    if path.suffix != ".gguf" or not path.is_file():
        raise FileNotFoundError(f"{path} is not a .gguf file")
    sha = hash_file(path)
    folder = Path(out_dir) / sha[:12]
    tarball = folder / "model.tar.gz"
    manifest = folder / "manifest.json"
    if not (tarball.is_file() and manifest.is_file() and json.loads(manifest.read_text()).get("sha256") == sha):
        folder.mkdir(parents=True, exist_ok=True)
        partial = tarball.with_suffix(".partial")
        with tarfile.open(partial, "w:gz", compresslevel=compresslevel, copybufsize=COPY_BUFFER) as tar:
            info = tar.gettarinfo(str(path), arcname=path.name)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mode = 0o644
            with path.open("rb") as fh:
                tar.addfile(info, fh)
        partial.replace(tarball)
        manifest.write_text(json.dumps({"gguf": path.name, "sha256": sha, "size": path.stat().st_size}, indent=2) + "\n")
    return ModelPackage(tarball=tarball, gguf_name=path.name, sha256=sha, gguf_size=path.stat().st_size,
                        tarball_size=tarball.stat().st_size)


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
