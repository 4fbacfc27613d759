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
from ..invocation import transform_env
from ..model.package import is_model_data_prefix
from ..registry import WorkshopState
from ..settings import Settings
from . import dlc
from .apicalls import ApiCall, scalable_target_call, scaling_policy_call, transform_job_call
from .clients import make_client
from .dlc import GPU_TRANSFORM_AMI
from .errors import AwsSetupError
from .packaging import ensure_bucket, upload_file
from .runrecord import settings_and_state
from .waits import poll_status, retry_while_role_propagates

__all__ = ["create_batch_transform", "enable_autoscaling", "plan_autoscaling", "plan_batch_transform", "read_transform_output",
           "run_batch_transform", "transform_resources", "wait_for_transform"]

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


def plan_batch_transform(model_name: str, input_s3_uri: str, output_s3_uri: str, *, settings: Settings, state: WorkshopState,
                         job_name: str, instance_type: str | None = None, instance_count: int = 1,
                         max_payload_mb: int = MAX_PAYLOAD_MB, max_concurrent: int = 1,
                         invocation_timeout_s: int = INVOCATION_TIMEOUT_S) -> ApiCall:
    """The CreateTransformJob request (arm64, and cuda until verified, are refused here: `transform_resources`)."""
    return transform_job_call(job_name, model_name, input_s3_uri, output_s3_uri,
                              resources=transform_resources(settings, instance_type, instance_count),
                              environment=deadline_environment(invocation_timeout_s) | transform_env(), max_payload_mb=max_payload_mb,
                              max_concurrent=max_concurrent, invocation_timeout_s=invocation_timeout_s,
                              invocation_retries=INVOCATION_RETRIES, content_type=JSONLINES, tags=state.tags())


def create_batch_transform(model_name: str, input_s3_uri: str, output_s3_uri: str, *, settings: Settings,
                           state: WorkshopState | None = None, job_name: str | None = None, log: Callable[[str], None] = print,
                           **options: Any) -> str:
    """Start a transform job over a JSON Lines object (or prefix) in S3, printing the request; returns the job name.
    `options` are `plan_batch_transform`'s (instance type and count, payload, concurrency, invocation timeout)."""
    settings, state = settings_and_state(settings, state)
    job_name = job_name or f"{state.name('batch')}-{time.strftime('%m%d%H%M%S')}"
    call = plan_batch_transform(model_name, input_s3_uri, output_s3_uri, settings=settings, state=state, job_name=job_name,
                                **options)
    log(str(call))
    sm = make_client("sagemaker", settings)
    retry_while_role_propagates(lambda: sm.create_transform_job(**call.request), f"transform job {job_name}")
    state.record("transform_job", job_name)
    return job_name


def wait_for_transform(job_name: str, settings: Settings, timeout_s: float = 7200, poll_s: float = 30,
                       log: Callable[[str], None] = print, progress: bool = True) -> dict[str, Any]:
    """Poll until Completed, with a `tqdm.auto` bar of the status and elapsed time; Failed or Stopped raise."""
    sm = make_client("sagemaker", settings)
    return poll_status(lambda: sm.describe_transform_job(TransformJobName=job_name), "TransformJobStatus", "Completed",
                       ("Failed", "Stopped"), f"transform job {job_name}", timeout_s, poll_s, log, progress)


def _decision_model_name(state: WorkshopState) -> str:
    endpoint = state.require("decision_endpoint", "04_deploy_decision_endpoint (workshop.deploy_decision_model)")
    models = [e["name"] for e in state.find("sagemaker_model") if e["name"].startswith(f"{endpoint}-")]
    if not models:
        raise KeyError(f"no model recorded for endpoint {endpoint}")
    return models[-1]


def batch_keys(prefix: str, stamp: str, name: str) -> tuple[str, str, str]:
    """Where a transform's file goes in the bucket: the input's key, the output prefix the job writes under (ending in
    "/"), and the output's key (SageMaker names it after the input, plus `.out`)."""
    return f"{prefix}/batch/input/{stamp}/{name}", f"{prefix}/batch/output/{stamp}/", f"{prefix}/batch/output/{stamp}/{name}.out"


def run_batch_transform(path: Path, settings: Settings, state: WorkshopState | None = None,
                        wait: bool = True, progress: bool = True) -> str:
    """Upload a local JSON Lines file and score it with the decision model; returns the output URI (or, without
    `wait`, the job name). `read_transform_output` reads the records."""
    settings, state = settings_and_state(settings, state)
    transform_resources(settings)  # refuse arm64 before anything is uploaded
    if is_model_data_prefix(state.get("model_data_url")):
        raise AwsSetupError("Batch Transform cannot read uncompressed model data (AWS does not take ModelDataSource for batch "
                            "transform): package again without SEMIF_MODEL_DATA=uncompressed and redeploy 04, or score the file "
                            "through the endpoint (workshop.invoke_decision per line)")
    bucket = ensure_bucket(settings, state)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    prefix = state.prefix(settings)
    key, output_prefix, out_key = batch_keys(prefix, stamp, path.name)
    upload_file(path, bucket, key, settings, progress=False)
    state.record("s3_object", f"s3://{bucket}/{key}", bucket=bucket, key=key)
    output = f"s3://{bucket}/{output_prefix}"
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


def read_transform_output(output_uri: str, settings: Settings) -> list[dict[str, Any]]:
    """The records a transform job wrote (`<input>.out`, one JSON response per input line, in order)."""
    from ..jsonlines import decode_utf8, parse_records, split_lines

    bucket, _, key = output_uri.removeprefix("s3://").partition("/")
    body = make_client("s3", settings).get_object(Bucket=bucket, Key=key)["Body"].read()
    return parse_records(split_lines(decode_utf8(body, output_uri)), output_uri)


SCALABLE_DIMENSION = "sagemaker:variant:DesiredInstanceCount"


def variant_resource(endpoint: str, variant: str = "AllTraffic") -> str:
    """Application Auto Scaling's id for an endpoint's variant."""
    return f"endpoint/{endpoint}/variant/{variant}"


def register_variant(endpoint: str, variant: str, min_instances: int, max_instances: int, settings: Settings,
                     state: WorkshopState, log: Callable[[str], None] = print) -> tuple[Any, str, str]:
    """The endpoint variant registered with Application Auto Scaling (and recorded for cleanup), printing the request:
    the client, its resource id and the scalable dimension, for the policies the caller puts on it."""
    aas = make_client("application-autoscaling", settings)
    resource_id = variant_resource(endpoint, variant)
    call = scalable_target_call(resource_id, SCALABLE_DIMENSION, min_instances, max_instances)
    log(str(call))
    aas.register_scalable_target(**call.request)
    state.record("scaling_target", resource_id, resource_id=resource_id)
    return aas, resource_id, SCALABLE_DIMENSION


SCALE_IN_COOLDOWN_S = 300
SCALE_OUT_COOLDOWN_S = 60


def plan_autoscaling(endpoint: str, min_instances: int, max_instances: int, invocations_per_instance: float,
                     variant: str = "AllTraffic") -> list[ApiCall]:
    """RegisterScalableTarget and the target-tracking PutScalingPolicy `enable_autoscaling` sends."""
    if not 1 <= min_instances <= max_instances:
        raise ValueError(f"need 1 <= min_instances ({min_instances}) <= max_instances ({max_instances})")
    resource_id = variant_resource(endpoint, variant)
    return [scalable_target_call(resource_id, SCALABLE_DIMENSION, min_instances, max_instances),
            scaling_policy_call(f"{endpoint}-invocations", resource_id, SCALABLE_DIMENSION, invocations_per_instance,
                                SCALE_IN_COOLDOWN_S, SCALE_OUT_COOLDOWN_S)]


def enable_autoscaling(endpoint: str, *, variant: str = "AllTraffic", min_instances: int = 1, max_instances: int = 2,
                       invocations_per_instance: float = 60.0, settings: Settings,
                       state: WorkshopState | None = None, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Register the variant with Application Auto Scaling and track invocations per instance (per minute), printing
    both requests (`plan_autoscaling`)."""
    target, policy_call = plan_autoscaling(endpoint, min_instances, max_instances, invocations_per_instance, variant)
    settings, state = settings_and_state(settings, state)
    aas, resource_id, _ = register_variant(endpoint, variant, min_instances, max_instances, settings, state, log)
    log(str(policy_call))
    policy = aas.put_scaling_policy(**policy_call.request)
    return {"resource_id": resource_id, "policy_name": policy_call.request["PolicyName"], "policy_arn": policy.get("PolicyARN"),
            "min": min_instances, "max": max_instances, "target_invocations_per_instance": invocations_per_instance}
