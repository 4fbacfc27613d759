"""Upload the packaged GGUF (`model.tar.gz`, or the GGUF files uncompressed, built by `semif_lib.model.package`) to S3 as
SageMaker model data.

The GGUF's sha256 is recorded beside the tarball and in the S3 object's metadata, so a second upload
of the same model is skipped. The package itself is built by `model.package`, for every target.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..model.package import ModelPackage
from ..registry import WorkshopState
from ..settings import Settings
from .clients import get_account_id, get_region, make_client
from .errors import AwsSetupError, error_code, is_not_found
from .runrecord import settings_and_state

__all__ = ["UploadResult", "bucket_region", "ensure_bucket", "upload_model"]

SHA_METADATA_KEY = "gguf-sha256"  # S3 user metadata: x-amz-meta-gguf-sha256
MULTIPART_THRESHOLD = 64 << 20
MULTIPART_CHUNK = 64 << 20


@dataclass(frozen=True)
class UploadResult:
    uri: str
    bucket: str
    key: str
    skipped: bool  # the same sha256 was already there


BUCKET_NAME = "semif-sagemaker-{account}-{region}"


def default_bucket(settings: Settings) -> str:
    """`SEMIF_S3_BUCKET`, else `semif-sagemaker-<account>-<region>`.

    The name contains `sagemaker` because SageMaker Studio's default execution role
    (AmazonSageMakerFullAccess) may read and write objects only in buckets named `*sagemaker*`:
    with any other name notebook 01 cannot upload and the endpoint cannot read its model.
    """
    return settings.s3_bucket or BUCKET_NAME.format(account=get_account_id(settings), region=get_region(settings))


def bucket_region(s3: Any, bucket: str) -> str | None:
    """The region a bucket lives in, or None if it does not exist (GetBucketLocation: allowed to Studio's default role)."""
    try:
        location = s3.get_bucket_location(Bucket=bucket).get("LocationConstraint")
    except Exception as exc:  # botocore ClientError, imported lazily
        if is_not_found(exc):
            return None
        raise
    return {None: "us-east-1", "": "us-east-1", "EU": "eu-west-1"}.get(location, location)


def ensure_bucket(settings: Settings, state: WorkshopState | None = None,
                  log: Callable[[str], None] = print) -> str:
    """The workshop bucket: created if missing, with public access blocked, SSE-S3 by default and tags.

    Only a bucket this run created is recorded (and so may be deleted by its cleanup, once empty);
    a bucket that already exists, another run's or one named by `SEMIF_S3_BUCKET`, is used as is.
    """
    settings, state = settings_and_state(settings, state)
    s3 = make_client("s3", settings)
    bucket = default_bucket(settings)
    region = get_region(settings)
    existing = bucket_region(s3, bucket)
    if existing is not None:
        if existing != region:
            raise AwsSetupError(f"bucket {bucket} is in {existing}, the workshop runs in {region}: SageMaker reads model data "
                                "only from its own region; set SEMIF_S3_BUCKET to a bucket in this region, or unset it")
        return bucket
    kwargs: dict[str, Any] = {"Bucket": bucket}
    if region != "us-east-1":
        kwargs["CreateBucketConfiguration"] = {"LocationConstraint": region}
    try:
        s3.create_bucket(**kwargs)
    except Exception as exc:  # another attendee's run created it a moment ago
        if error_code(exc) != "BucketAlreadyOwnedByYou":
            raise
        return bucket
    state.record("s3_bucket", bucket, region=region)
    _harden_bucket(s3, bucket, state, log, settings)
    return bucket


def sse_args(settings: Settings) -> dict[str, str]:
    """Server-side encryption of every object the workshop writes: SSE-KMS with `SEMIF_KMS_KEY_ID`, else SSE-S3."""
    if settings.kms_key_id:
        return {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": settings.kms_key_id}
    return {"ServerSideEncryption": "AES256"}


def _default_encryption(settings: Settings) -> dict[str, Any]:
    if settings.kms_key_id:
        return {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": settings.kms_key_id}
    return {"SSEAlgorithm": "AES256"}


def _harden_bucket(s3: Any, bucket: str, state: WorkshopState, log: Callable[[str], None], settings: Settings) -> None:
    """Block public access, encrypt with SSE-S3 (SSE-KMS with `SEMIF_KMS_KEY_ID`), tag. S3 already does the first two for every new bucket
    (since 2023); an identity without the Put* permissions (Studio's default role) keeps those defaults."""
    calls = {
        "public access block": lambda: s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration={
            "BlockPublicAcls": True, "IgnorePublicAcls": True, "BlockPublicPolicy": True, "RestrictPublicBuckets": True}),
        "default encryption": lambda: s3.put_bucket_encryption(Bucket=bucket, ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": _default_encryption(settings), "BucketKeyEnabled": True}]}),
        "tags": lambda: s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": state.tags()}),
    }
    for what, call in calls.items():
        try:
            call()
        except Exception as exc:
            if error_code(exc) not in ("AccessDenied", "AccessDeniedException"):
                raise
            log(f"s3://{bucket}: no permission to set its {what}; S3's defaults for new buckets stay in place")


def _progress_callback(total: int, desc: str, enabled: bool) -> tuple[Any, Any]:
    from tqdm.auto import tqdm

    bar = tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=desc, disable=not enabled)
    return bar, bar.update


def upload_file(path: Path, bucket: str, key: str, settings: Settings, metadata: dict[str, str] | None = None,
                progress: bool = True) -> None:
    """Upload with SSE-S3, multipart above 64 MiB (boto3 TransferConfig) and a tqdm progress bar.

    Objects carry no tags (that would need s3:PutObjectTagging, which Studio's default role lacks):
    the run id is in every key (`run_prefix`) and the run records every object it writes.
    """
    from boto3.s3.transfer import TransferConfig
    s3 = make_client("s3", settings)
    config = TransferConfig(multipart_threshold=MULTIPART_THRESHOLD, multipart_chunksize=MULTIPART_CHUNK, max_concurrency=8)
    extra: dict[str, Any] = {**sse_args(settings), "Metadata": metadata or {}}
    bar, callback = _progress_callback(path.stat().st_size, f"s3://{bucket}/{key}", progress)
    try:
        s3.upload_file(str(path), bucket, key, ExtraArgs=extra, Config=config, Callback=callback)
    finally:
        bar.close()


def model_folder(prefix: str, sha256: str) -> str:
    """Where a model's data lives in the bucket: by its GGUF's sha256, so a second upload of it is recognised."""
    return f"{prefix}/models/{sha256[:12]}"


def plan_bucket(settings: Settings) -> str:
    """`default_bucket` without calling AWS: the account, which only AWS knows, as a placeholder."""
    return settings.s3_bucket or BUCKET_NAME.format(account="<account>", region=settings.aws_region or "<region>")


def plan_model_data_url(settings: Settings, state: WorkshopState) -> str:
    """The model data URL a run on AWS would use, without calling AWS: the recorded one once uploaded, else the
    bucket and key `upload_model` would choose, with the account (which only AWS knows) as a placeholder."""
    recorded = state.get("model_data_url") or ""
    if recorded.startswith("s3://"):
        return recorded
    package = state.get("model_package") or {}
    folder = model_folder(state.prefix(settings), package.get("sha256") or "<gguf sha256>")
    return f"s3://{plan_bucket(settings)}/{folder}/" + ("model.tar.gz" if package.get("tarball") or not package else "files/")


def upload_model(package: ModelPackage, bucket: str | None = None, key: str | None = None, *,
                 settings: Settings, state: WorkshopState | None = None, progress: bool = True) -> UploadResult:
    """Upload `model.tar.gz` to `s3://bucket/<prefix>/<run id>/models/<sha12>/model.tar.gz`, idempotently; without a tarball
    (uncompressed model data) every GGUF file under `.../models/<sha12>/files/`, and the result is that prefix (ending in `/`,
    as S3ModelDataSource wants one: SageMaker copies every object under it into /opt/ml/model).

    When an object is already there with the same GGUF sha256 in its metadata (and the same size), nothing is sent.
    """
    settings, state = settings_and_state(settings, state)
    bucket = bucket or ensure_bucket(settings, state)
    folder = model_folder(state.prefix(settings), package.sha256)
    uploads = [(package.tarball, key or f"{folder}/model.tar.gz")] if package.tarball else \
        [(path, f"{key or folder + '/files'}/{path.name}") for path in package.files]
    skipped = True
    for path, object_key in uploads:
        skipped &= _upload_once(path, bucket, object_key, package, settings, progress)
        state.record("s3_object", f"s3://{bucket}/{object_key}", bucket=bucket, key=object_key)
    result_key = uploads[0][1] if package.tarball else uploads[0][1].rsplit("/", 1)[0] + "/"
    return UploadResult(uri=f"s3://{bucket}/{result_key}", bucket=bucket, key=result_key, skipped=skipped)


def _upload_once(path: Path, bucket: str, key: str, package: ModelPackage, settings: Settings, progress: bool) -> bool:
    """Upload unless the object is there with this model's sha256 and the file's size; True when skipped."""
    s3 = make_client("s3", settings)
    try:
        head = s3.head_object(Bucket=bucket, Key=key)
        if head.get("Metadata", {}).get(SHA_METADATA_KEY) == package.sha256 and head.get("ContentLength") == path.stat().st_size:
            return True
    except Exception as exc:  # ClientError 404 means: upload it
        if not is_not_found(exc):
            raise
    upload_file(path, bucket, key, settings, progress=progress,
                metadata={SHA_METADATA_KEY: package.sha256, "gguf-name": package.gguf_name})
    return False
