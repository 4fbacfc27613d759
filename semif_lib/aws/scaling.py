"""Scale-out helpers: Batch Transform for offline JSON Lines scoring, target-tracking autoscaling.

Batch Transform splits the input file by line (`SplitType=Line`) and packs several lines into
one POST (`BatchStrategy=MultiRecord`, `application/jsonlines`); the adapter answers JSON Lines
with one response per line, which `AssembleWith=Line` joins into `<input name>.out`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from ..settings import Settings, load_settings
from .clients import make_client, poll_status
from .packaging import ensure_bucket, upload_file
from .state import WorkshopState, settings_and_state

__all__ = ["create_batch_transform", "enable_autoscaling", "run_batch_transform", "wait_for_transform"]

JSONLINES = "application/jsonlines"


def create_batch_transform(model_name: str, input_s3_uri: str, output_s3_uri: str, *, settings: Settings | None = None,
                           state: WorkshopState | None = None, job_name: str | None = None, instance_type: str | None = None,
                           instance_count: int = 1, max_payload_mb: int = 6, max_concurrent: int = 1) -> str:
    """Start a transform job over a JSON Lines object (or prefix) in S3; returns the job name."""
    settings, state = settings_and_state(settings, state)
    job_name = job_name or f"{state.name('batch')}-{time.strftime('%m%d%H%M%S')}"
    make_client("sagemaker", settings).create_transform_job(
        TransformJobName=job_name,
        ModelName=model_name,
        MaxConcurrentTransforms=max_concurrent,
        MaxPayloadInMB=max_payload_mb,
        BatchStrategy="MultiRecord",
        TransformInput={
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": input_s3_uri}},
            "ContentType": JSONLINES,
            "SplitType": "Line",
            "CompressionType": "None",
        },
        TransformOutput={"S3OutputPath": output_s3_uri, "Accept": JSONLINES, "AssembleWith": "Line"},
        TransformResources={"InstanceType": instance_type or settings.transform_instance_type, "InstanceCount": instance_count},
        Tags=state.tags(),
    )
    state.record("transform_job", job_name)
    return job_name


def wait_for_transform(job_name: str, settings: Settings | None = None, timeout_s: float = 7200, poll_s: float = 30,
                       log: Callable[[str], None] = print) -> dict[str, Any]:
    sm = make_client("sagemaker", settings or load_settings())
    return poll_status(lambda: sm.describe_transform_job(TransformJobName=job_name), "TransformJobStatus", "Completed",
                       ("Failed", "Stopped"), f"transform job {job_name}", timeout_s, poll_s, log)


def _decision_model_name(state: WorkshopState) -> str:
    endpoint = state.require("decision_endpoint", "04_deploy_decision_endpoint (workshop.deploy_decision_model)")
    models = [e["name"] for e in state.find("sagemaker_model") if e["name"].startswith(f"{endpoint}-")]
    if not models:
        raise KeyError(f"no model recorded for endpoint {endpoint}")
    return models[-1]


def run_batch_transform(path: Path, settings: Settings | None = None, state: WorkshopState | None = None,
                        wait: bool = True) -> str:
    """Upload a local JSON Lines file and score it with the decision model; returns the output URI (or job name)."""
    settings, state = settings_and_state(settings, state)
    bucket = ensure_bucket(settings, state)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    key = f"{settings.s3_prefix}/batch/input/{stamp}/{path.name}"
    upload_file(path, bucket, key, settings, progress=False, tags=state.tags())
    state.record("s3_object", f"s3://{bucket}/{key}", bucket=bucket, key=key)
    output = f"s3://{bucket}/{settings.s3_prefix}/batch/output/{stamp}/"
    job = create_batch_transform(_decision_model_name(state), f"s3://{bucket}/{key}", output, settings=settings, state=state)
    state.set("batch_output", f"{output}{path.name}.out")
    if not wait:
        return job
    wait_for_transform(job, settings)
    state.record("s3_object", f"{output}{path.name}.out", bucket=bucket, key=f"{settings.s3_prefix}/batch/output/{stamp}/{path.name}.out")
    return f"{output}{path.name}.out"


def enable_autoscaling(endpoint: str, *, variant: str = "AllTraffic", min_instances: int = 1, max_instances: int = 2,
                       invocations_per_instance: float = 60.0, scale_in_cooldown_s: int = 300, scale_out_cooldown_s: int = 60,
                       settings: Settings | None = None, state: WorkshopState | None = None) -> dict[str, Any]:
    """Register the variant with Application Auto Scaling and track invocations per instance (per minute)."""
    if not 1 <= min_instances <= max_instances:
        raise ValueError(f"need 1 <= min_instances ({min_instances}) <= max_instances ({max_instances})")
    settings, state = settings_and_state(settings, state)
    aas = make_client("application-autoscaling", settings)
    resource_id = f"endpoint/{endpoint}/variant/{variant}"
    dimension = "sagemaker:variant:DesiredInstanceCount"
    aas.register_scalable_target(ServiceNamespace="sagemaker", ResourceId=resource_id, ScalableDimension=dimension,
                                 MinCapacity=min_instances, MaxCapacity=max_instances)
    state.record("scaling_target", resource_id, resource_id=resource_id)
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
