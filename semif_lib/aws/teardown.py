"""How each kind of recorded resource is deleted (used by `workshop.cleanup`, newest first).

Each deleter returns True when it removed something and False when the resource was already
gone; anything else raises, and cleanup reports it and keeps the record for a retry.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from ..processes import stop_process
from ..settings import Settings
from .clients import is_not_found, make_client

__all__ = ["DELETERS", "delete_resource"]


def _gone(call: Callable[[], Any]) -> bool:
    """Run a delete call: True if it deleted, False if the resource did not exist."""
    try:
        call()
        return True
    except Exception as exc:  # noqa: BLE001
        if is_not_found(exc):
            return False
        raise


def _client(service: str, settings: Settings) -> Any:
    return make_client(service, settings)


def delete_scaling_target(entry: dict[str, Any], settings: Settings) -> bool:
    aas = _client("application-autoscaling", settings)
    resource_id = entry["resource_id"]
    for policy in aas.describe_scaling_policies(ServiceNamespace="sagemaker", ResourceId=resource_id).get("ScalingPolicies", []):
        aas.delete_scaling_policy(PolicyName=policy["PolicyName"], ServiceNamespace="sagemaker", ResourceId=resource_id,
                                  ScalableDimension=policy["ScalableDimension"])
    targets = aas.describe_scalable_targets(ServiceNamespace="sagemaker", ResourceIds=[resource_id]).get("ScalableTargets", [])
    for target in targets:
        aas.deregister_scalable_target(ServiceNamespace="sagemaker", ResourceId=resource_id, ScalableDimension=target["ScalableDimension"])
    return bool(targets)


def delete_endpoint(entry: dict[str, Any], settings: Settings) -> bool:
    sm = _client("sagemaker", settings)
    removed = _gone(lambda: sm.delete_endpoint(EndpointName=entry["name"]))
    if removed:  # the config and model after it can only go once the endpoint has released them
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline and _gone(lambda: sm.describe_endpoint(EndpointName=entry["name"])):
            time.sleep(0.2 if settings.aws_endpoint_url else 10)
    _gone(lambda: _client("logs", settings).delete_log_group(logGroupName=f"/aws/sagemaker/Endpoints/{entry['name']}"))
    return removed


def delete_transform_job(entry: dict[str, Any], settings: Settings) -> bool:
    """Transform jobs cannot be deleted: a running one is stopped, a finished one is left as history."""
    sm = _client("sagemaker", settings)
    try:
        status = sm.describe_transform_job(TransformJobName=entry["name"])["TransformJobStatus"]
    except Exception as exc:  # noqa: BLE001
        if is_not_found(exc):
            return False
        raise
    if status == "InProgress":
        sm.stop_transform_job(TransformJobName=entry["name"])
    return True


def delete_codebuild_project(entry: dict[str, Any], settings: Settings) -> bool:
    cb = _client("codebuild", settings)
    existed = bool(cb.batch_get_projects(names=[entry["name"]]).get("projects"))
    if existed:
        cb.delete_project(name=entry["name"])
    _gone(lambda: _client("logs", settings).delete_log_group(logGroupName=f"/aws/codebuild/{entry['name']}"))
    return existed


def delete_iam_role(entry: dict[str, Any], settings: Settings) -> bool:
    iam = _client("iam", settings)
    name = entry["name"]
    try:
        policies = iam.list_role_policies(RoleName=name)["PolicyNames"]
    except Exception as exc:  # noqa: BLE001
        if is_not_found(exc):
            return False
        raise
    for policy in policies:
        iam.delete_role_policy(RoleName=name, PolicyName=policy)
    for attached in iam.list_attached_role_policies(RoleName=name)["AttachedPolicies"]:
        iam.detach_role_policy(RoleName=name, PolicyArn=attached["PolicyArn"])
    iam.delete_role(RoleName=name)
    return True


def delete_s3_bucket(entry: dict[str, Any], settings: Settings) -> bool:
    """Empty the bucket (every version) and delete it; only buckets this run created are recorded."""
    s3 = _client("s3", settings)
    bucket = entry["name"]
    try:
        pages = list(s3.get_paginator("list_object_versions").paginate(Bucket=bucket))
    except Exception as exc:  # noqa: BLE001
        if is_not_found(exc):
            return False
        raise
    for page in pages:
        objects = [{"Key": v["Key"], "VersionId": v["VersionId"]} for v in page.get("Versions", []) + page.get("DeleteMarkers", [])]
        for i in range(0, len(objects), 1000):
            s3.delete_objects(Bucket=bucket, Delete={"Objects": objects[i:i + 1000], "Quiet": True})
    s3.delete_bucket(Bucket=bucket)
    return True


def delete_local_process(entry: dict[str, Any], settings: Settings) -> bool:
    import os
    pid = int(entry["pid"])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return stop_process(pid)


DELETERS: dict[str, Callable[[dict[str, Any], Settings], bool]] = {
    "scaling_target": delete_scaling_target,
    "sagemaker_endpoint": delete_endpoint,
    "sagemaker_endpoint_config": lambda e, s: _gone(lambda: _client("sagemaker", s).delete_endpoint_config(EndpointConfigName=e["name"])),
    "sagemaker_model": lambda e, s: _gone(lambda: _client("sagemaker", s).delete_model(ModelName=e["name"])),
    "transform_job": delete_transform_job,
    "codebuild_project": delete_codebuild_project,
    "ecr_repository": lambda e, s: _gone(lambda: _client("ecr", s).delete_repository(repositoryName=e["name"], force=True)),
    "iam_role": delete_iam_role,
    "s3_object": lambda e, s: _gone(lambda: _client("s3", s).delete_object(Bucket=e["bucket"], Key=e["key"])),
    "s3_bucket": delete_s3_bucket,
    "local_process": delete_local_process,
}


def delete_resource(entry: dict[str, Any], settings: Settings) -> bool:
    try:
        deleter = DELETERS[entry["kind"]]
    except KeyError:
        raise ValueError(f"do not know how to delete a {entry['kind']!r}") from None
    return deleter(entry, settings)
