"""Package a GGUF as SageMaker model data and upload it to S3.

`model.tar.gz` holds the GGUF at its root, which is where the AWS llama.cpp DLC (and our adapter,
`modelfile.find_gguf_in_dir`) look first: SageMaker unpacks ModelDataUrl into `/opt/ml/model`
and the first `*.gguf` there is served. The GGUF's sha256 is recorded beside the tarball and in
the S3 object's metadata, so a second upload of the same model is skipped.
"""

from __future__ import annotations

import json
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..modelfile import find_model_path, hash_file
from ..settings import Settings, load_settings
from .clients import get_account_id, get_region, is_not_found, make_client
from .state import WorkshopState, settings_and_state

__all__ = ["ModelPackage", "UploadResult", "build_model_tarball", "ensure_bucket", "upload_model"]

SHA_METADATA_KEY = "gguf-sha256"  # S3 user metadata: x-amz-meta-gguf-sha256
MULTIPART_THRESHOLD = 64 << 20
MULTIPART_CHUNK = 64 << 20
COPY_BUFFER = 8 << 20


@dataclass(frozen=True)
class ModelPackage:
    tarball: Path
    gguf_name: str
    sha256: str  # of the GGUF inside, the model's identity
    gguf_size: int
    tarball_size: int


@dataclass(frozen=True)
class UploadResult:
    uri: str
    bucket: str
    key: str
    skipped: bool  # the same sha256 was already there


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


def default_bucket(settings: Settings) -> str:
    return settings.s3_bucket or f"semif-workshop-{get_account_id(settings)}-{get_region(settings)}"


def ensure_bucket(settings: Settings | None = None, state: WorkshopState | None = None) -> str:
    """The workshop bucket: created if missing, with public access blocked, SSE-S3 by default and tags.

    A bucket named by `SEMIF_S3_BUCKET` that already exists is used as is (and never deleted by cleanup).
    """
    settings, state = settings_and_state(settings, state)
    s3 = make_client("s3", settings)
    bucket = default_bucket(settings)
    try:
        s3.head_bucket(Bucket=bucket)
        return bucket
    except Exception as exc:  # noqa: BLE001 - botocore ClientError, imported lazily
        if not (is_not_found(exc) or getattr(exc, "response", {}).get("Error", {}).get("Code") in ("404", "NoSuchBucket")):
            raise
    region = get_region(settings)
    kwargs: dict[str, Any] = {"Bucket": bucket}
    if region != "us-east-1":
        kwargs["CreateBucketConfiguration"] = {"LocationConstraint": region}
    s3.create_bucket(**kwargs)
    state.record("s3_bucket", bucket, region=region)
    s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration={
        "BlockPublicAcls": True, "IgnorePublicAcls": True, "BlockPublicPolicy": True, "RestrictPublicBuckets": True})
    s3.put_bucket_encryption(Bucket=bucket, ServerSideEncryptionConfiguration={
        "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}, "BucketKeyEnabled": True}]})
    s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": state.tags()})
    return bucket


def _progress_callback(total: int, desc: str, enabled: bool) -> tuple[Any, Any]:
    from tqdm.auto import tqdm

    bar = tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=desc, disable=not enabled)
    return bar, bar.update


def upload_file(path: Path, bucket: str, key: str, settings: Settings, metadata: dict[str, str] | None = None,
                progress: bool = True, tags: list[dict[str, str]] | None = None) -> None:
    """Upload with SSE-S3, multipart above 64 MiB (boto3 TransferConfig) and a tqdm progress bar."""
    from urllib.parse import urlencode

    from boto3.s3.transfer import TransferConfig
    s3 = make_client("s3", settings)
    config = TransferConfig(multipart_threshold=MULTIPART_THRESHOLD, multipart_chunksize=MULTIPART_CHUNK, max_concurrency=8)
    extra: dict[str, Any] = {"ServerSideEncryption": "AES256", "Metadata": metadata or {}}
    if tags:
        extra["Tagging"] = urlencode({t["Key"]: t["Value"] for t in tags})
    bar, callback = _progress_callback(path.stat().st_size, f"s3://{bucket}/{key}", progress)
    try:
        s3.upload_file(str(path), bucket, key, ExtraArgs=extra, Config=config, Callback=callback)
    finally:
        bar.close()


def upload_model(package: ModelPackage, bucket: str | None = None, key: str | None = None,
                 settings: Settings | None = None, state: WorkshopState | None = None, progress: bool = True) -> UploadResult:
    """Upload `model.tar.gz` to `s3://bucket/<prefix>/models/<sha12>/model.tar.gz`, idempotently.

    When the object is already there with the same GGUF sha256 in its metadata, nothing is sent.
    """
    settings, state = settings_and_state(settings, state)
    bucket = bucket or ensure_bucket(settings, state)
    key = key or f"{settings.s3_prefix}/models/{package.sha256[:12]}/model.tar.gz"
    s3 = make_client("s3", settings)
    try:
        head = s3.head_object(Bucket=bucket, Key=key)
        if head.get("Metadata", {}).get(SHA_METADATA_KEY) == package.sha256:
            state.record("s3_object", f"s3://{bucket}/{key}", bucket=bucket, key=key)
            return UploadResult(uri=f"s3://{bucket}/{key}", bucket=bucket, key=key, skipped=True)
    except Exception as exc:  # noqa: BLE001 - ClientError 404 means: upload it
        if not is_not_found(exc):
            raise
    upload_file(package.tarball, bucket, key, settings, progress=progress, tags=state.tags(),
                metadata={SHA_METADATA_KEY: package.sha256, "gguf-name": package.gguf_name})
    state.record("s3_object", f"s3://{bucket}/{key}", bucket=bucket, key=key)
    return UploadResult(uri=f"s3://{bucket}/{key}", bucket=bucket, key=key, skipped=False)
