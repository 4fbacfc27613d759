"""SageMaker Asynchronous Inference for long decision work: the decision image behind a queue, answers in S3.

A real-time invocation must answer within 60 s, so the adapter refuses work at its 58 s deadline
(`contract.answer_deadline_s`). An async endpoint queues each request, gives it up to an hour
(`InvokeEndpointAsync.InvocationTimeoutSeconds`, at most 3600 s in botocore's model) and writes the answer, or
the failure, to S3. The same image serves it; only its deadline moves, through the model's Environment, to just
inside that hour (`scaling.deadline_environment`, the rule Batch Transform's jobs use). Stateful sessions do not
apply: SageMaker routes async requests from its queue, with no `SessionId`.

- `deploy_async_decision_endpoint`: `semif-decision-async-<run>` with `AsyncInferenceConfig` (output and failure
  prefixes under this run's `batch/async/`, where the execution role may write; SNS topics are left to the user).
- `invoke_async`: the request inline (`Body`, up to 128,000 bytes) or uploaded to S3 (larger), `InvokeEndpointAsync`,
  then a wait with a bar until the output or the failure object appears, and the answer read back.
- `enable_async_autoscaling`: scale to zero. Target tracking on `ApproximateBacklogSizePerInstance`, plus a step
  policy on `HasBacklogWithoutCapacity` so that one request wakes an endpoint at zero instances (without it,
  AWS starts from zero only once the backlog exceeds the tracking target: "Autoscale an asynchronous endpoint").

moto answers `InvokeEndpointAsync` from a queue of prepared results in a bucket of its own and never reads the
AsyncInferenceConfig; only a real account shows the queue, the output path, the wake from zero and the timeouts.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Callable

from ..invocation import decision_env, encode_payload
from ..registry import WorkshopState
from ..settings import Settings
from .clients import make_client
from .deployment import deploy_endpoint
from .errors import ResourceFailedError, unless_gone
from .images import decision_image
from .packaging import ensure_bucket, sse_args
from .runrecord import settings_and_state
from .scaling import deadline_environment, register_variant
from .waits import poll_status

__all__ = ["ASYNC_INVOCATION_TIMEOUT_S", "INLINE_BODY_BYTES", "async_inference_config", "async_prefix",
           "deploy_async_decision_endpoint", "enable_async_autoscaling", "invoke_async", "read_async_answer", "split_s3_uri"]

PURPOSE = "decision-async"
ASYNC_INVOCATION_TIMEOUT_S = 3600  # InvokeEndpointAsync's InvocationTimeoutSeconds: botocore allows 1..3600 (default 900)
REQUEST_TTL_S = 21600  # RequestTTLSeconds: how long a request may wait in the queue (botocore: 60..21600, the default)
INLINE_BODY_BYTES = 128_000  # InvokeEndpointAsync's Body: inline input up to this size; larger goes to S3 as InputLocation
MAX_CONCURRENT_PER_INSTANCE = 1  # the adapter runs one request at a time on its cores; the queue holds the rest
ASYNC_POLL_S = 5.0
BACKLOG_PER_INSTANCE = 4.0  # target tracking: queued requests per instance before another instance starts
WAKE_ALARM_SUFFIX = "backlog-without-capacity"


def async_prefix(state: WorkshopState, settings: Settings) -> str:
    """Where this run's async inputs and answers live: under `batch/`, the prefix the execution role may write."""
    return f"{state.prefix(settings)}/batch/async"


def async_inference_config(output_uri: str, failure_uri: str, max_concurrent: int = MAX_CONCURRENT_PER_INSTANCE) -> dict[str, Any]:
    """`CreateEndpointConfig.AsyncInferenceConfig`: where answers and failures go, and how many run at once per instance."""
    if not 1 <= max_concurrent <= 1000:  # botocore: MaxConcurrentInvocationsPerInstance 1..1000
        raise ValueError(f"max_concurrent must be 1 to 1000, got {max_concurrent}")
    return {"OutputConfig": {"S3OutputPath": output_uri, "S3FailurePath": failure_uri},
            "ClientConfig": {"MaxConcurrentInvocationsPerInstance": max_concurrent}}


def deploy_async_decision_endpoint(settings: Settings, state: WorkshopState | None = None, wait: bool = True,
                                   invocation_timeout_s: int = ASYNC_INVOCATION_TIMEOUT_S) -> str:
    """The decision image as an async endpoint (`semif-decision-async-<run>`), its deadline inside `invocation_timeout_s`."""
    settings, state = settings_and_state(settings, state)
    _check_timeout(invocation_timeout_s)
    image = decision_image(settings, state)
    model_data = state.require("model_data_url", "01_package_gguf_to_s3 (workshop.package_model)")
    bucket = ensure_bucket(settings, state)
    base = f"s3://{bucket}/{async_prefix(state, settings)}"
    env = decision_env(settings.dlc_variant, settings.mode, sessions=False) | deadline_environment(invocation_timeout_s)
    endpoint = deploy_endpoint(PURPOSE, image, model_data, env, settings=settings, state=state, wait=wait,
                               async_config=async_inference_config(f"{base}/output/", f"{base}/failure/"))
    state.set("async_invocation_timeout_s", invocation_timeout_s)
    return endpoint


def _check_timeout(seconds: int) -> None:
    if not 1 <= seconds <= ASYNC_INVOCATION_TIMEOUT_S:
        raise ValueError(f"invocation_timeout_s must be 1 to {ASYNC_INVOCATION_TIMEOUT_S} s (InvokeEndpointAsync's "
                         f"InvocationTimeoutSeconds), got {seconds}")


def split_s3_uri(uri: str) -> tuple[str, str]:
    """`s3://bucket/key` as (bucket, key)."""
    if not uri.startswith("s3://") or "/" not in uri[5:]:
        raise ValueError(f"not an s3://bucket/key URI: {uri!r}")
    bucket, _, key = uri[5:].partition("/")
    return bucket, key


def _object_status(s3: Any, output: str, failure: str | None) -> dict[str, Any]:
    """What the async request's objects say: Completed (the answer is there), Failed (the failure is), else InProgress."""
    for status, uri in (("Completed", output), ("Failed", failure)):
        if not uri:
            continue
        bucket, key = split_s3_uri(uri)
        if unless_gone(lambda: s3.head_object(Bucket=bucket, Key=key)) is None:  # not there until SageMaker writes it
            continue
        if status == "Failed":
            reason = s3.get_object(Bucket=bucket, Key=key)["Body"].read().decode("utf-8", "replace")
            return {"Status": status, "FailureReason": reason[:2000]}
        return {"Status": status}
    return {"Status": "InProgress"}


def invoke_async(endpoint: str, body: bytes, *, settings: Settings, state: WorkshopState | None = None,
                 wait: bool = True, progress: bool = True, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Queue one decision request on the async endpoint; with `wait`, the answer (a `ResourceFailedError` carries the
    failure SageMaker wrote). Without `wait`: the inference id and the output and failure locations to read later.
    Every object it makes or that SageMaker will write is recorded, so cleanup removes it."""
    body = encode_payload(body)  # the queue takes up to 1 GB, but the adapter reads one request of at most 6 MB
    settings, state = settings_and_state(settings, state)
    timeout_s = int(state.get("async_invocation_timeout_s") or ASYNC_INVOCATION_TIMEOUT_S)
    _check_timeout(timeout_s)
    request: dict[str, Any] = {"EndpointName": endpoint, "ContentType": "application/json", "Accept": "application/json",
                               "InvocationTimeoutSeconds": timeout_s, "RequestTTLSeconds": REQUEST_TTL_S,
                               "InferenceId": uuid.uuid4().hex}
    if len(body) <= INLINE_BODY_BYTES:
        request["Body"] = body
    else:
        bucket = ensure_bucket(settings, state)
        key = f"{async_prefix(state, settings)}/input/{request['InferenceId']}.json"
        make_client("s3", settings).put_object(Bucket=bucket, Key=key, Body=body, **sse_args(settings))
        state.record("s3_object", f"s3://{bucket}/{key}", bucket=bucket, key=key)
        request["InputLocation"] = f"s3://{bucket}/{key}"
    answer = make_client("sagemaker-runtime", settings).invoke_endpoint_async(**request)
    located = {"inference_id": answer.get("InferenceId") or request["InferenceId"],
               "output": answer["OutputLocation"], "failure": answer.get("FailureLocation")}
    for uri in filter(None, (located["output"], located["failure"])):
        bucket, key = split_s3_uri(uri)
        state.record("s3_object", uri, bucket=bucket, key=key)
    if not wait:
        return located
    return read_async_answer(located, settings=settings, timeout_s=timeout_s + REQUEST_TTL_S, progress=progress, log=log)


def read_async_answer(located: dict[str, Any], *, settings: Settings, timeout_s: float = ASYNC_INVOCATION_TIMEOUT_S + REQUEST_TTL_S,
                      progress: bool = True, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Wait (a bar with the elapsed time) until the request's answer or failure is in S3; the answer's JSON."""
    s3 = make_client("s3", settings)
    failure = located.get("failure")
    poll_s = 0.2 if settings.aws_endpoint_url else ASYNC_POLL_S
    try:
        poll_status(lambda: _object_status(s3, located["output"], failure), "Status", "Completed", ("Failed",),
                    f"async request {located['inference_id']}", timeout_s, poll_s, log, progress)
    except ResourceFailedError as exc:
        raise ResourceFailedError(f"{exc} (written to {failure})") from None
    bucket, key = split_s3_uri(located["output"])
    return json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())


def enable_async_autoscaling(endpoint: str, *, max_instances: int = 1, backlog_per_instance: float = BACKLOG_PER_INSTANCE,
                             scale_in_cooldown_s: int = 600, scale_out_cooldown_s: int = 60, variant: str = "AllTraffic",
                             settings: Settings, state: WorkshopState | None = None) -> dict[str, Any]:
    """Scale the async endpoint between 0 and `max_instances`: backlog target tracking, and a step policy whose alarm
    (`HasBacklogWithoutCapacity` >= 1) adds one instance when requests wait at zero. All three are recorded for cleanup."""
    if max_instances < 1:
        raise ValueError(f"max_instances must be at least 1, got {max_instances}")
    settings, state = settings_and_state(settings, state)
    aas, resource_id, dimension = register_variant(endpoint, variant, 0, max_instances, settings, state)
    metric = {"Namespace": "AWS/SageMaker", "Dimensions": [{"Name": "EndpointName", "Value": endpoint}]}
    aas.put_scaling_policy(
        PolicyName=f"{endpoint}-backlog", ServiceNamespace="sagemaker", ResourceId=resource_id, ScalableDimension=dimension,
        PolicyType="TargetTrackingScaling",
        TargetTrackingScalingPolicyConfiguration={
            "TargetValue": float(backlog_per_instance),
            "CustomizedMetricSpecification": {"MetricName": "ApproximateBacklogSizePerInstance", "Statistic": "Average", **metric},
            "ScaleInCooldown": scale_in_cooldown_s, "ScaleOutCooldown": scale_out_cooldown_s})
    wake = aas.put_scaling_policy(
        PolicyName=f"{endpoint}-wake", ServiceNamespace="sagemaker", ResourceId=resource_id, ScalableDimension=dimension,
        PolicyType="StepScaling",
        StepScalingPolicyConfiguration={"AdjustmentType": "ChangeInCapacity", "MetricAggregationType": "Average",
                                        "Cooldown": scale_out_cooldown_s,
                                        "StepAdjustments": [{"MetricIntervalLowerBound": 0, "ScalingAdjustment": 1}]})
    alarm = f"{endpoint}-{WAKE_ALARM_SUFFIX}"
    make_client("cloudwatch", settings).put_metric_alarm(
        AlarmName=alarm, MetricName="HasBacklogWithoutCapacity", Statistic="Average", Period=60, EvaluationPeriods=2,
        DatapointsToAlarm=2, Threshold=1.0, ComparisonOperator="GreaterThanOrEqualToThreshold", TreatMissingData="missing",
        AlarmActions=[wake["PolicyARN"]], AlarmDescription=f"wakes {endpoint} from zero instances when requests wait",
        **metric)  # no Tags: tagging on PutMetricAlarm needs cloudwatch:TagResource too; the name carries the run
    state.record("cloudwatch_alarm", alarm)
    return {"resource_id": resource_id, "min": 0, "max": max_instances, "backlog_per_instance": backlog_per_instance,
            "wake_alarm": alarm}
