"""The AWS wing's settings: account, region, bucket, roles, images (by digest only), instances and timeouts. Every
variable's name is written here, literally, once."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings

from .base import RESERVED_RUN_IDS, SETTINGS_CONFIG

# An image named by its digest: what SageMaker pulls is then the very image that was built or given, whoever may push.
IMAGE_BY_DIGEST = re.compile(r"^[a-z0-9.-]+/[a-z0-9._/-]+@sha256:[0-9a-f]{64}$")
ECR_REGISTRY = re.compile(r"^(?P<account>[0-9]{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(\.cn)?$")


def require_image_digest(uri: str) -> str:
    """`uri` when it names an image by digest (`<registry>/<repository>@sha256:<64 hex>`); else a one-line `ValueError`
    that gives the AWS CLI command reading the digest of the tag it names (a tag is refused: anyone who may push to
    the repository, or delete and recreate it, can put another image under it)."""
    if IMAGE_BY_DIGEST.match(uri):
        return uri
    registry, _, path = uri.partition("/")
    repository, _, tag = path.partition("@")[0].rpartition(":") if ":" in path else (path, "", "")
    ecr = ECR_REGISTRY.match(registry)
    where = f"--region {ecr['region']} --registry-id {ecr['account']} " if ecr else ""
    read = (f"aws ecr describe-images {where}--repository-name {repository or '<repository>'} --image-ids imageTag={tag or '<tag>'} "
            "--query 'imageDetails[0].imageDigest' --output text")
    raise ValueError(f"{uri!r} is not an image by digest: give <registry>/<repository>@sha256:<64 hex>, never a tag (anyone who "
                     f"may push can move a tag to another image); read the digest with `{read}` and use "
                     f"{registry or '<registry>'}/{repository or '<repository>'}@<that digest>")

class AwsSettings(BaseSettings):
    """The AWS target (`semif_lib.aws`): names, region, roles, images, instances and the hosting of big models."""

    model_config = SETTINGS_CONFIG

    run_id: str | None = Field(
        None, validation_alias="SEMIF_RUN_ID", pattern=r"^[a-z0-9]{4,12}$",
        description="Suffix on every resource name; default: a random one kept in the state file. In an event team's account, the "
                    "Studio user profile (the policies scope every name to it), so never a word of a resource name.")

    @field_validator("run_id")
    @classmethod
    def _run_id_is_no_name_word(cls, value: str | None) -> str | None:
        # names are semif-<purpose words>-<run id>[-<hash>]: a run id that is one of those words would match another run's
        # names under the policies' semif-*-<run id> patterns
        if value in RESERVED_RUN_IDS:
            raise ValueError(f"run id {value!r} is a word of the workshop's resource names ({', '.join(sorted(RESERVED_RUN_IDS))})")
        return value

    aws_region: str | None = Field(
        None, validation_alias="SEMIF_AWS_REGION",
        description="AWS region; default: the boto3 session's (AWS_REGION / AWS_DEFAULT_REGION / profile).")
    aws_endpoint_url: str | None = Field(
        None, validation_alias="SEMIF_AWS_ENDPOINT_URL",
        description="One endpoint URL for every AWS client (a moto server in tests); unset for real AWS.")
    s3_bucket: str | None = Field(
        None, validation_alias="SEMIF_S3_BUCKET",
        description="Bucket for models, build sources and batch data; default semif-sagemaker-<account>-<region> (the name Studio's "
                    "default role may use), created private.")
    s3_prefix: str = Field("semif-workshop", validation_alias="SEMIF_S3_PREFIX",
                           description="Key prefix inside the bucket; each run writes under <prefix>/<run id>/.")
    role_arn: str | None = Field(
        None, validation_alias="SEMIF_ROLE_ARN",
        description="SageMaker execution role; default: Studio's role, else one created from container/iam/.")
    codebuild_role_arn: str | None = Field(  # an event team's account provisions it once (container/cfn/)
        None, validation_alias="SEMIF_CODEBUILD_ROLE_ARN",
        description="CodeBuild service role for the adapter build; default: semif-codebuild-<run>, created from container/iam/.")
    role_boundary: str | None = Field(  # a role the workshop creates can never do more than this managed policy
        None, validation_alias="SEMIF_ROLE_BOUNDARY",
        description="Permissions boundary (a managed policy's name or ARN) on every role the workshop creates; default "
                    "semif-workshop-role-boundary, made once per account from container/iam/workshop-role-boundary.json.")
    adapter_image_uri: str | None = Field(
        None, validation_alias="SEMIF_ADAPTER_IMAGE_URI",
        description="A pre-built adapter image notebook 04 deploys, by digest only (<registry>/<repository>@sha256:<64 hex>: "
                    "a tag can be moved to another image); set, notebook 03 builds nothing.")

    @field_validator("adapter_image_uri")
    @classmethod
    def _adapter_image_by_digest(cls, value: str | None) -> str | None:
        return None if value is None else require_image_digest(value)

    kms_key_id: str | None = Field(  # accounts that enforce KMS refuse SSE-S3 uploads
        None, validation_alias="SEMIF_KMS_KEY_ID",
        description="KMS key (id, ARN or alias) for the bucket, its objects and the ECR repository; default SSE-S3 / AES256.")
    dlc_variant: Literal["cpu", "cuda", "arm64"] = Field(
        "cpu", validation_alias="SEMIF_DLC_VARIANT",
        description="AWS llama.cpp DLC image variant for the text endpoint and the adapter base.")
    dlc_image: str | None = Field(  # AWS moves the DLC's tags to new llama.cpp builds; an event team pins one it checked
        None, validation_alias="SEMIF_DLC_IMAGE", pattern=r"^[a-z0-9.-]+/[a-z0-9._/-]+@sha256:[0-9a-f]{64}$",
        description="A DLC image pinned by digest (<registry>/<repository>@sha256:<64 hex>, as `semif dlc check` prints it) for "
                    "both paths; unset: the variant's tag, pinned to its digest when the run first needs it.")
    instance_type: str = Field("ml.c6i.xlarge", validation_alias="SEMIF_INSTANCE_TYPE",
                               description="Real-time endpoint instance (cpu / arm64 variants).")
    gpu_instance_type: str = Field("ml.g6.xlarge", validation_alias="SEMIF_GPU_INSTANCE_TYPE",
                                   description="Real-time endpoint instance for the cuda variant.")
    arm_instance_type: str = Field("ml.c7g.xlarge", validation_alias="SEMIF_ARM_INSTANCE_TYPE",
                                   description="Real-time endpoint instance for the arm64 variant (Graviton).")
    transform_instance_type: str = Field("ml.c6i.xlarge", validation_alias="SEMIF_TRANSFORM_INSTANCE_TYPE",
                                         description="Batch Transform instance.")
    # Big models: unset, each is derived from the GGUF's size by model.package.plan_hosting; the bounds are
    # SageMaker's (botocore's ProductionVariant shapes; tests/test_packaging.py reads them from the service model).
    startup_timeout_s: int | None = Field(
        None, validation_alias="SEMIF_STARTUP_TIMEOUT_S",
        ge=60, le=3600, description="ContainerStartupHealthCheckTimeoutInSeconds; unset: 600 s plus the GGUF's read time.")
    model_download_timeout_s: int | None = Field(
        None, validation_alias="SEMIF_MODEL_DOWNLOAD_TIMEOUT_S",
        ge=60, le=3600, description="ModelDataDownloadTimeoutInSeconds; unset: 600 s plus the model data's download time.")
    volume_size_gb: int | None = Field(
        None, validation_alias="SEMIF_VOLUME_SIZE_GB",
        ge=1, le=512, description="VolumeSizeInGB of each endpoint instance (instances with NVMe storage refuse it); unset: "
                                  "sent only when the model data needs more than SageMaker's ~30 GB default.")
    model_data: Literal["tarball", "uncompressed"] = Field(
        "tarball", validation_alias="SEMIF_MODEL_DATA",
        description="How the GGUF goes to SageMaker: model.tar.gz (ModelDataUrl), or uncompressed: the GGUF file(s) under "
                    "an S3 prefix (S3ModelDataSource, CompressionType None): no tarball, no second local copy, no "
                    "Batch Transform (target=aws only).")
    routing_strategy: Literal["LEAST_OUTSTANDING_REQUESTS", "RANDOM"] = Field(
        "LEAST_OUTSTANDING_REQUESTS", validation_alias="SEMIF_ROUTING_STRATEGY",
        description="How SageMaker spreads the decision endpoint's requests over its instances (ProductionVariant "
                    "RoutingConfig): to the instance with the fewest requests in flight, which suits decisions whose cost "
                    "varies 10x with their state, or at random (SageMaker's default). A stateful session's requests stay on "
                    "their instance either way.")
    codebuild_compute_type: str = Field("BUILD_GENERAL1_MEDIUM", validation_alias="SEMIF_CODEBUILD_COMPUTE_TYPE",
                                        description="CodeBuild compute type for the adapter image.")
    gpu_transform_instance_type: str = Field(
        "ml.g6.xlarge", validation_alias="SEMIF_GPU_TRANSFORM_INSTANCE_TYPE",
        description="Batch Transform instance for the cuda variant (a GPU; arm64 has no transform instances).")
