"""How each kind of AWS resource a run recorded is deleted (`targets.AwsTarget.delete_resource`, which
`workshop.cleanup` calls newest first; the processes and containers on this machine are the local
targets' to stop).

Each deleter returns True when it removed something and False when the resource was already
gone; `KeptResource` means it stays on purpose (a bucket other runs still use); anything else
raises, and cleanup reports it and keeps the record for a retry. Deletes are plain boto3 calls
(the SageMaker SDK's `delete()` only wraps them), made in the region the state file records.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from ..registry import KeptResource
from ..settings import Settings
from .clients import make_client
from .errors import DENIED_CODES, error_code, is_not_found, unless_gone

__all__ = ["KINDS", "ResourceKind", "delete_resource", "describe_still_billing"]


def _gone(call: Callable[[], Any]) -> bool:
    """Run a delete call: True if it deleted, False if the resource did not exist."""
    try:
        call()
        return True
    except Exception as exc:
        if is_not_found(exc):
            return False
        raise


def _client(service: str, settings: Settings) -> Any:
    return make_client(service, settings)


def _delete_log_group(name: str, settings: Settings, log: Callable[[str], None] = print) -> None:
    """Best effort: a log group costs next to nothing, and Studio's default role may not delete one
    (AmazonSageMakerFullAccess has no logs:DeleteLogGroup); the resource it belonged to is gone either way,
    and the log group is reported as kept, with how to remove it."""
    try:
        _gone(lambda: _client("logs", settings).delete_log_group(logGroupName=name))
    except Exception as exc:
        if error_code(exc) not in DENIED_CODES:
            raise
        log(f"log group {name}: kept: no logs:DeleteLogGroup permission (delete it in the CloudWatch console, "
            "or attach container/iam/workshop-caller-policy.json)")


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
    _delete_log_group(f"/aws/sagemaker/Endpoints/{entry['name']}", settings)
    return removed


TRANSFORM_STOP_WAIT_S = 900  # a stopping transform job is waited out this long before cleanup goes on
TRANSFORM_RUNNING = ("InProgress", "Stopping")


def _transform_status(sm: Any, name: str) -> str | None:
    desc = unless_gone(lambda: sm.describe_transform_job(TransformJobName=name))
    return desc and str(desc["TransformJobStatus"])


def delete_transform_job(entry: dict[str, Any], settings: Settings) -> bool:
    """Transform jobs cannot be deleted: a running one is stopped, a finished one is left as history. A job that is
    stopping can still write its output, which cleanup deletes next (it was recorded before the job): the job is
    waited out until it has stopped, at most `TRANSFORM_STOP_WAIT_S`."""
    sm = _client("sagemaker", settings)
    status = _transform_status(sm, entry["name"])
    if status is None:
        return False
    if status == "InProgress":
        sm.stop_transform_job(TransformJobName=entry["name"])
    deadline = time.monotonic() + TRANSFORM_STOP_WAIT_S
    while status in TRANSFORM_RUNNING:
        if time.monotonic() > deadline:
            raise TimeoutError(f"transform job {entry['name']} is still {status} after {TRANSFORM_STOP_WAIT_S} s: "
                               "its output is kept until it stops; run cleanup again")
        time.sleep(0.2 if settings.aws_endpoint_url else 10)
        status = _transform_status(sm, entry["name"])
    return True


def delete_s3_object(entry: dict[str, Any], settings: Settings) -> bool:
    """An object the run recorded; a transform job's output only once that job has stopped (it could still write it)."""
    job = entry.get("transform_job")
    if job:
        status = _transform_status(_client("sagemaker", settings), job)
        if status in TRANSFORM_RUNNING:
            raise RuntimeError(f"kept while transform job {job} is {status} (it can still write here): run cleanup again once it stopped")
    return _gone(lambda: _client("s3", settings).delete_object(Bucket=entry["bucket"], Key=entry["key"]))


def delete_codebuild_project(entry: dict[str, Any], settings: Settings) -> bool:
    cb = _client("codebuild", settings)
    existed = bool(cb.batch_get_projects(names=[entry["name"]]).get("projects"))
    if existed:
        cb.delete_project(name=entry["name"])
    _delete_log_group(f"/aws/codebuild/{entry['name']}", settings)
    return existed


def delete_iam_role(entry: dict[str, Any], settings: Settings) -> bool:
    iam = _client("iam", settings)
    name = entry["name"]
    try:
        policies = iam.list_role_policies(RoleName=name)["PolicyNames"]
    except Exception as exc:
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
    """Delete the bucket this run created, but only once it is empty.

    Runs in one account and region share the bucket: this run's own objects were recorded and
    deleted before it (newest first). Anything still in it belongs to another run, so the bucket
    stays (`KeptResource`), and so does every object in it.
    """
    s3 = _client("s3", settings)
    bucket = entry["name"]
    try:
        listing = s3.list_objects_v2(Bucket=bucket, MaxKeys=1)
    except Exception as exc:
        if is_not_found(exc):
            return False
        raise
    if listing.get("KeyCount") or listing.get("Contents"):
        raise KeptResource(f"kept: it holds other runs' objects (first: {listing['Contents'][0]['Key']})")
    try:
        s3.delete_bucket(Bucket=bucket)
    except Exception as exc:
        if is_not_found(exc):
            return False
        if error_code(exc) == "BucketNotEmpty":  # object versions or a write that just arrived
            raise KeptResource("kept: not empty (object versions, or another run's upload)") from None
        if error_code(exc) in DENIED_CODES:  # Studio's default role may not delete buckets
            raise KeptResource("kept, empty: no s3:DeleteBucket permission (delete it in the S3 console, "
                               "or attach container/iam/workshop-provisioning-policy.json)") from None
        raise
    return True


def delete_alarm(entry: dict[str, Any], settings: Settings) -> bool:
    """A CloudWatch alarm the run made itself (the async endpoint's wake-from-zero alarm); DeleteAlarms does not say
    whether it existed, so DescribeAlarms asks first."""
    cw = _client("cloudwatch", settings)
    if not cw.describe_alarms(AlarmNames=[entry["name"]]).get("MetricAlarms"):
        return False
    cw.delete_alarms(AlarmNames=[entry["name"]])
    return True


def _endpoint_billing(entry: dict[str, Any], settings: Settings) -> str | None:
    name = entry["name"]
    desc = unless_gone(lambda: _client("sagemaker", settings).describe_endpoint(EndpointName=name))
    return desc and f"endpoint {name} is {desc['EndpointStatus']}: its instances bill every hour until it is deleted"


def _transform_billing(entry: dict[str, Any], settings: Settings) -> str | None:
    status = _transform_status(_client("sagemaker", settings), entry["name"])
    return f"transform job {entry['name']} is {status}: its instances bill until it stops" if status in TRANSFORM_RUNNING else None


def _repository_billing(entry: dict[str, Any], settings: Settings) -> str | None:
    desc = unless_gone(lambda: _client("ecr", settings).describe_repositories(repositoryNames=[entry["name"]]))
    return desc and f"ECR repository {entry['name']}: its images bill as storage (cents a month)"


def _object_billing(entry: dict[str, Any], settings: Settings) -> str | None:
    desc = unless_gone(lambda: _client("s3", settings).head_object(Bucket=entry["bucket"], Key=entry["key"]))
    return desc and f"{entry['name']}: {desc.get('ContentLength', 0) / 1e6:.1f} MB of S3 storage (cents a month)"


def _alarm_billing(entry: dict[str, Any], settings: Settings) -> str | None:
    alarms = _client("cloudwatch", settings).describe_alarms(AlarmNames=[entry["name"]]).get("MetricAlarms")
    return f"CloudWatch alarm {entry['name']}: $0.10 a month" if alarms else None


@dataclass(frozen=True)
class ResourceKind:
    """One kind of AWS resource a run records (`state.record(kind, ...)`): how cleanup deletes it, how 99 sees whether it
    still bills (None: it costs nothing while it exists), and the IAM actions those two calls need (held to
    `permissions.NEEDS` by tests/test_teardown_kinds.py). A new kind is one row here."""

    delete: Callable[[dict[str, Any], Settings], bool]
    still_billing: Callable[[dict[str, Any], Settings], str | None] | None = None
    iam_actions: tuple[str, ...] = ()


KINDS: dict[str, ResourceKind] = {
    "cloudwatch_alarm": ResourceKind(delete_alarm, _alarm_billing, ("cloudwatch:DescribeAlarms", "cloudwatch:DeleteAlarms")),
    "scaling_target": ResourceKind(delete_scaling_target, None, ("application-autoscaling:DeleteScalingPolicy",
                                                                 "application-autoscaling:DeregisterScalableTarget")),
    "sagemaker_endpoint": ResourceKind(delete_endpoint, _endpoint_billing, ("sagemaker:DeleteEndpoint",)),
    "sagemaker_endpoint_config": ResourceKind(
        lambda e, s: _gone(lambda: _client("sagemaker", s).delete_endpoint_config(EndpointConfigName=e["name"])), None,
        ("sagemaker:DeleteEndpointConfig",)),
    "sagemaker_model": ResourceKind(lambda e, s: _gone(lambda: _client("sagemaker", s).delete_model(ModelName=e["name"])), None,
                                    ("sagemaker:DeleteModel",)),
    "transform_job": ResourceKind(delete_transform_job, _transform_billing, ("sagemaker:StopTransformJob",)),
    "codebuild_project": ResourceKind(delete_codebuild_project, None, ("codebuild:DeleteProject",)),
    "ecr_repository": ResourceKind(lambda e, s: _gone(lambda: _client("ecr", s).delete_repository(repositoryName=e["name"], force=True)),
                                   _repository_billing, ("ecr:DeleteRepository",)),
    "iam_role": ResourceKind(delete_iam_role, None, ("iam:DeleteRole",)),
    "s3_object": ResourceKind(delete_s3_object, _object_billing, ("s3:DeleteObject",)),
    "s3_bucket": ResourceKind(delete_s3_bucket, None, ("s3:ListBucket", "s3:DeleteBucket")),
}


def describe_still_billing(entry: dict[str, Any], settings: Settings) -> str | None:
    """After cleanup, a describe call per recorded resource that costs money while it exists: what is left and what it
    bills, or None when it is gone (a transform job that has stopped counts as gone: it is history, not an instance).
    A describe this identity may not make is said, never taken for gone."""
    kind = KINDS.get(entry["kind"])
    if kind is None or kind.still_billing is None:
        return None
    try:
        return kind.still_billing(entry, settings)
    except Exception as exc:
        if error_code(exc) in DENIED_CODES:
            return f"{entry['kind']} {entry['name']}: not checked (no permission to describe it): look in the console"
        raise


def delete_resource(entry: dict[str, Any], settings: Settings) -> bool:
    try:
        kind = KINDS[entry["kind"]]
    except KeyError:
        raise ValueError(f"do not know how to delete a {entry['kind']!r}") from None
    return kind.delete(entry, settings)
