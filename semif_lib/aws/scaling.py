"""Scale-out helpers: Batch Transform for offline JSON Lines scoring, target-tracking autoscaling.

Batch Transform splits the input file by line (`SplitType=Line`) and packs several lines into
one POST (`BatchStrategy=MultiRecord`, `application/jsonlines`); the adapter answers JSON Lines
with one response per line, which `AssembleWith=Line` joins into `<input name>.out`. The job runs
on the image variant's hardware: x86 CPU; cuda is refused until a real account shows the GPU batch AMI
(driver 535) runs the DLC's CUDA 13; arm64 is refused (Batch Transform has no Graviton instances). `ModelClientConfig` gives each mini-batch
an hour, not the default 600 s, and the job's `Environment` moves the adapter's own deadline
(`contract.answer_deadline_s`: 58 s on a real-time endpoint) to just inside that hour.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from ..contract import request_timeout_for
from ..model.package import is_model_data_prefix
from ..registry import WorkshopState
from ..settings import Settings, load_settings
from . import dlc
from .clients import make_client
from .dlc import GPU_TRANSFORM_AMI
from .errors import AwsSetupError
from .packaging import ensure_bucket, upload_file
from .runrecord import settings_and_state
from .waits import poll_status, retry_while_role_propagates

__all__ = ["create_batch_transform", "enable_autoscaling", "run_batch_transform", "transform_resources", "wait_for_transform"]

JSONLINES = "application/jsonlines"
MAX_PAYLOAD_MB = 6  # one mini-batch per POST, SageMaker's real-time payload limit (the adapter's body limit)
INVOCATION_TIMEOUT_S = 3600  # ModelClientConfig: a 6 MB mini-batch on a bigger model outlasts the default 600 s
INVOCATION_RETRIES = 1
# The adapter answers 503 after its deadline (contract.answer_deadline_s: inside a real-time endpoint's 60 s by default). In a
# transform job SageMaker waits InvocationsTimeoutInSeconds (an async request InvocationTimeoutSeconds), so the container
# gets a request timeout whose deadline is just inside that wait.
DEADLINE_MARGIN_S = 30


def deadline_environment(invocation_timeout_s: int) -> dict[str, str]:
    """The adapter's Environment when SageMaker waits `invocation_timeout_s` for an answer (a transform job's mini-batch,
    an async request): its deadline follows, just inside that wait."""
    return {"SEMIF_REQUEST_TIMEOUT_S": f"{request_timeout_for(invocation_timeout_s - DEADLINE_MARGIN_S):g}"}


def transform_resources(settings: Settings, instance_type: str | None = None, instance_count: int = 1) -> dict[str, Any]:
    """`TransformResources` for the image variant: x86 CPU, or a GPU instance with the GPU batch AMI on cuda.

    arm64 is refused: Batch Transform has no Graviton instance types, so the arm64 image cannot run. cuda is
    refused while `dlc.CUDA_TRANSFORM_VERIFIED` is False: the batch GPU AMIs' driver 535 is below what the DLC's CUDA 13 needs.
    """
    if settings.dlc_variant == "arm64":
        raise AwsSetupError(
            "Batch Transform cannot run the arm64 (Graviton) image: SageMaker offers no Graviton transform instance. "
            "Score the file through the real-time endpoint (workshop.invoke_decision per line), or build and deploy "
            "with SEMIF_DLC_VARIANT=cpu (or cuda) for Batch Transform.")
    if settings.dlc_variant == "cuda" and not dlc.CUDA_TRANSFORM_VERIFIED:
        raise AwsSetupError(
            f"Batch Transform on the cuda image is refused until a real account shows it uses the GPU: its GPU AMIs end at "
            f"{GPU_TRANSFORM_AMI} (NVIDIA driver {dlc.GPU_TRANSFORM_DRIVER}), below the {dlc.DLC_CUDA_MIN_DRIVER} that the DLC's "
            f"CUDA {dlc.DLC_CUDA} needs without forward compatibility. Score the file through the cuda endpoint "
            "(workshop.invoke_decision), or run Batch Transform with SEMIF_DLC_VARIANT=cpu.")
    resources: dict[str, Any] = {"InstanceCount": instance_count}
    if settings.dlc_variant == "cuda":
        resources.update(InstanceType=instance_type or settings.gpu_transform_instance_type, TransformAmiVersion=GPU_TRANSFORM_AMI)
    else:
        resources["InstanceType"] = instance_type or settings.transform_instance_type
    return resources


def create_batch_transform(model_name: str, input_s3_uri: str, output_s3_uri: str, *, settings: Settings | None = None,
                           state: WorkshopState | None = None, job_name: str | None = None, instance_type: str | None = None,
                           instance_count: int = 1, max_payload_mb: int = MAX_PAYLOAD_MB, max_concurrent: int = 1,
                           invocation_timeout_s: int = INVOCATION_TIMEOUT_S) -> str:
    """Start a transform job over a JSON Lines object (or prefix) in S3; returns the job name."""
    settings, state = settings_and_state(settings, state)
    resources = transform_resources(settings, instance_type, instance_count)
    job_name = job_name or f"{state.name('batch')}-{time.strftime('%m%d%H%M%S')}"
    sm = make_client("sagemaker", settings)
    retry_while_role_propagates(lambda: sm.create_transform_job(
        TransformJobName=job_name,
        ModelName=model_name,
        MaxConcurrentTransforms=max_concurrent,
        MaxPayloadInMB=max_payload_mb,
        ModelClientConfig={"InvocationsTimeoutInSeconds": invocation_timeout_s, "InvocationsMaxRetries": INVOCATION_RETRIES},
        Environment=deadline_environment(invocation_timeout_s),
        BatchStrategy="MultiRecord",
        TransformInput={
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": input_s3_uri}},
            "ContentType": JSONLINES,
            "SplitType": "Line",
            "CompressionType": "None",
        },
        TransformOutput={"S3OutputPath": output_s3_uri, "Accept": JSONLINES, "AssembleWith": "Line"},
        TransformResources=resources,
        Tags=state.tags(),
    ), f"transform job {job_name}")
    state.record("transform_job", job_name)
    return job_name


def wait_for_transform(job_name: str, settings: Settings | None = None, timeout_s: float = 7200, poll_s: float = 30,
                       log: Callable[[str], None] = print, progress: bool = True) -> dict[str, Any]:
    """Poll until Completed, with a `tqdm.auto` bar of the status and elapsed time; Failed or Stopped raise."""
    sm = make_client("sagemaker", settings or load_settings())
    return poll_status(lambda: sm.describe_transform_job(TransformJobName=job_name), "TransformJobStatus", "Completed",
                       ("Failed", "Stopped"), f"transform job {job_name}", timeout_s, poll_s, log, progress)


def _decision_model_name(state: WorkshopState) -> str:
    endpoint = state.require("decision_endpoint", "04_deploy_decision_endpoint (workshop.deploy_decision_model)")
    models = [e["name"] for e in state.find("sagemaker_model") if e["name"].startswith(f"{endpoint}-")]
    if not models:
        raise KeyError(f"no model recorded for endpoint {endpoint}")
    return models[-1]


def run_batch_transform(path: Path, settings: Settings | None = None, state: WorkshopState | None = None,
                        wait: bool = True, progress: bool = True) -> str:
    """Upload a local JSON Lines file and score it with the decision model; returns the output URI (or job name)."""
    settings, state = settings_and_state(settings, state)
    transform_resources(settings)  # refuse arm64 before anything is uploaded
    if is_model_data_prefix(state.get("model_data_url")):
        raise AwsSetupError("Batch Transform cannot read uncompressed model data (AWS does not take ModelDataSource for batch "
                            "transform): package again without SEMIF_MODEL_DATA=uncompressed and redeploy 04, or score the file "
                            "through the endpoint (workshop.invoke_decision per line)")
    bucket = ensure_bucket(settings, state)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    prefix = state.prefix(settings)
    key = f"{prefix}/batch/input/{stamp}/{path.name}"
    upload_file(path, bucket, key, settings, progress=False)
    state.record("s3_object", f"s3://{bucket}/{key}", bucket=bucket, key=key)
    output = f"s3://{bucket}/{prefix}/batch/output/{stamp}/"
    out_key = f"{prefix}/batch/output/{stamp}/{path.name}.out"
    # recorded before the job writes it, so cleanup removes it even if this kernel stops waiting
    state.record("s3_object", f"s3://{bucket}/{out_key}", bucket=bucket, key=out_key)
    job = create_batch_transform(_decision_model_name(state), f"s3://{bucket}/{key}", output, settings=settings, state=state)
    # cleanup deletes the output only once this job has stopped (a stopping job can still write it)
    state.record("s3_object", f"s3://{bucket}/{out_key}", transform_job=job)
    state.set("batch_output", f"s3://{bucket}/{out_key}")
    if not wait:
        return job
    wait_for_transform(job, settings, progress=progress)
    return f"s3://{bucket}/{out_key}"


SCALABLE_DIMENSION = "sagemaker:variant:DesiredInstanceCount"


def register_variant(endpoint: str, variant: str, min_instances: int, max_instances: int, settings: Settings,
                     state: WorkshopState) -> tuple[Any, str, str]:
    """The endpoint variant registered with Application Auto Scaling (and recorded for cleanup): the client, its
    resource id and the scalable dimension, for the policies the caller puts on it."""
    aas = make_client("application-autoscaling", settings)
    resource_id = f"endpoint/{endpoint}/variant/{variant}"
    aas.register_scalable_target(ServiceNamespace="sagemaker", ResourceId=resource_id, ScalableDimension=SCALABLE_DIMENSION,
                                 MinCapacity=min_instances, MaxCapacity=max_instances)
    state.record("scaling_target", resource_id, resource_id=resource_id)
    return aas, resource_id, SCALABLE_DIMENSION


def enable_autoscaling(endpoint: str, *, variant: str = "AllTraffic", min_instances: int = 1, max_instances: int = 2,
                       invocations_per_instance: float = 60.0, scale_in_cooldown_s: int = 300, scale_out_cooldown_s: int = 60,
                       settings: Settings | None = None, state: WorkshopState | None = None) -> dict[str, Any]:
    """Register the variant with Application Auto Scaling and track invocations per instance (per minute)."""
    if not 1 <= min_instances <= max_instances:
        raise ValueError(f"need 1 <= min_instances ({min_instances}) <= max_instances ({max_instances})")
    settings, state = settings_and_state(settings, state)
    aas, resource_id, dimension = register_variant(endpoint, variant, min_instances, max_instances, settings, state)
    policy_name = f"{endpoint}-invocations"
    policy = aas.put_scaling_policy(
        PolicyName=policy_name, ServiceNamespace="sagemaker", ResourceId=resource_id, ScalableDimension=dimension,
        PolicyType="TargetTrackingScaling",
        TargetTrackingScalingPolicyConfiguration={
            "TargetValue": float(invocations_per_instance),
            "PredefinedMetricSpecification": {"PredefinedMetricType": "SageMakerVariantInvocationsPerInstance"},
            "ScaleInCooldown": scale_in_cooldown_s,
            "ScaleOutCooldown": scale_out_cooldown_s,
        })
    return {"resource_id": resource_id, "policy_name": policy_name, "policy_arn": policy.get("PolicyARN"),
            "min": min_instances, "max": max_instances, "target_invocations_per_instance": invocations_per_instance}
