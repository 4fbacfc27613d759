"""The requests a workshop step sends to AWS, built once in the shape boto3 takes them.

A step prints each request before it sends it (on AWS) or as the plan it would send (`target=local` and
`container`), with every field, so an attendee can send the same with boto3 alone:
`boto3.client("sagemaker").create_model(**request)`. The senders (`deployment`, `scaling`) send these very
dicts: boto3 directly, or the SageMaker SDK's resources after `as_sdk_arguments`.

Nothing here calls AWS or imports boto3.
"""
from __future__ import annotations

import pprint
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..model.package import is_model_data_prefix
from .dlc import GPU_INFERENCE_AMI

__all__ = ["ApiCall", "EndpointSpec", "PLACEHOLDER_ROLE", "endpoint_call", "endpoint_config_call", "model_call",
           "model_data_fields", "print_calls", "scalable_target_call", "scaling_policy_call", "transform_job_call",
           "update_endpoint_call"]

# What a local plan prints where only an account knows the value.
PLACEHOLDER_ROLE = "arn:aws:iam::<account>:role/<SageMaker execution role>"


@dataclass(frozen=True)
class ApiCall:
    """One request: the service and operation as AWS names them, and the request as boto3 takes it."""

    service: str  # "sagemaker", "application-autoscaling"
    operation: str  # "CreateModel"
    request: dict[str, Any] = field(default_factory=dict)

    @property
    def method(self) -> str:
        """boto3's method name (botocore's `xform_name` for these operations, which carry no acronym)."""
        return re.sub(r"(?<!^)(?=[A-Z])", "_", self.operation).lower()

    def __str__(self) -> str:
        body = pprint.pformat(self.request, sort_dicts=False, width=110)
        return f"{self.operation}: boto3.client({self.service!r}).{self.method}(**{body})"

    def as_sdk_arguments(self) -> dict[str, Any]:
        """The request as the SageMaker SDK's resources take it (snake_case), through the SDK's own transform from
        the service model, so `Model.create(**call.as_sdk_arguments())` sends `request` again."""
        from sagemaker.core.utils.code_injection.codec import transform

        return transform(self.request, f"{self.operation}Input")


def print_calls(calls: list[ApiCall], heading: str, log: Callable[[str], None] = print) -> None:
    """`heading`, then each request with every field."""
    log(heading)
    for call in calls:
        log(str(call))


@dataclass(frozen=True)
class EndpointSpec:
    """What defines an endpoint's model and config; its hash names both, so a change makes new ones."""

    image_uri: str
    model_data_url: str  # ending in "/": an S3 prefix of uncompressed model data (see `model_data_fields`)
    env: dict[str, str]
    instance_type: str
    instance_count: int
    startup_timeout_s: int
    gpu: bool
    download_timeout_s: int | None = None
    volume_size_gb: int | None = None
    routing_strategy: str | None = None  # None: SageMaker's default (RANDOM), and no RoutingConfig sent
    async_config: dict[str, Any] | None = None  # AsyncInferenceConfig (`asyncinference`): the endpoint queues its requests


def model_data_fields(model_data_url: str) -> dict[str, Any]:
    """The container's model data: a tarball is ModelDataUrl (SageMaker unpacks it into /opt/ml/model); a URL ending in "/" is
    an S3 prefix of uncompressed files, S3ModelDataSource with CompressionType None (copied as they are; AWS: "A valid key
    name prefix identified by S3Uri always ends with a forward slash"). No ModelAccessConfig: that accepts a JumpStart EULA."""
    if is_model_data_prefix(model_data_url):
        return {"ModelDataSource": {"S3DataSource": {"S3Uri": model_data_url, "S3DataType": "S3Prefix", "CompressionType": "None"}}}
    return {"ModelDataUrl": model_data_url}


def model_call(name: str, spec: EndpointSpec, role: str, tags: list[dict[str, str]]) -> ApiCall:
    container = {"Image": spec.image_uri, "Environment": dict(spec.env), **model_data_fields(spec.model_data_url)}
    return ApiCall("sagemaker", "CreateModel",
                   {"ModelName": name, "PrimaryContainer": container, "ExecutionRoleArn": role, "Tags": list(tags)})


def endpoint_config_call(name: str, model_name: str, spec: EndpointSpec, tags: list[dict[str, str]]) -> ApiCall:
    """One variant, the startup health-check timeout, on a GPU the AL2023 inference AMI whose driver matches the DLC's
    CUDA 13, the spec's routing strategy, and its AsyncInferenceConfig when it queues."""
    variant: dict[str, Any] = {
        "VariantName": "AllTraffic", "ModelName": model_name, "InstanceType": spec.instance_type,
        "InitialInstanceCount": spec.instance_count, "InitialVariantWeight": 1.0,
        "ContainerStartupHealthCheckTimeoutInSeconds": spec.startup_timeout_s}
    if spec.gpu:
        variant["InferenceAmiVersion"] = GPU_INFERENCE_AMI
    if spec.download_timeout_s:
        variant["ModelDataDownloadTimeoutInSeconds"] = spec.download_timeout_s
    if spec.volume_size_gb:
        variant["VolumeSizeInGB"] = spec.volume_size_gb
    if spec.routing_strategy:
        variant["RoutingConfig"] = {"RoutingStrategy": spec.routing_strategy}
    request: dict[str, Any] = {"EndpointConfigName": name, "ProductionVariants": [variant]}
    if spec.async_config:
        request["AsyncInferenceConfig"] = spec.async_config
    request["Tags"] = list(tags)
    return ApiCall("sagemaker", "CreateEndpointConfig", request)


def endpoint_call(name: str, config_name: str, tags: list[dict[str, str]]) -> ApiCall:
    return ApiCall("sagemaker", "CreateEndpoint", {"EndpointName": name, "EndpointConfigName": config_name, "Tags": list(tags)})


def update_endpoint_call(name: str, config_name: str, retain_variant_properties: bool) -> ApiCall:
    """An endpoint moved to a new config; an autoscaled variant keeps its scaled instance count."""
    return ApiCall("sagemaker", "UpdateEndpoint", {"EndpointName": name, "EndpointConfigName": config_name,
                                                   "RetainAllVariantProperties": retain_variant_properties})


def transform_job_call(job_name: str, model_name: str, input_s3_uri: str, output_s3_uri: str, *, resources: Mapping[str, Any],
                       environment: Mapping[str, str], max_payload_mb: int, max_concurrent: int, invocation_timeout_s: int,
                       invocation_retries: int, content_type: str, tags: list[dict[str, str]]) -> ApiCall:
    """A Batch Transform over JSON Lines: one request per line (`SplitType=Line`), several lines per POST
    (`MultiRecord`), the answers joined line by line in `<input>.out`."""
    return ApiCall("sagemaker", "CreateTransformJob", {
        "TransformJobName": job_name,
        "ModelName": model_name,
        "MaxConcurrentTransforms": max_concurrent,
        "MaxPayloadInMB": max_payload_mb,
        "ModelClientConfig": {"InvocationsTimeoutInSeconds": invocation_timeout_s, "InvocationsMaxRetries": invocation_retries},
        "Environment": dict(environment),
        "BatchStrategy": "MultiRecord",
        "TransformInput": {"DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": input_s3_uri}},
                           "ContentType": content_type, "SplitType": "Line", "CompressionType": "None"},
        "TransformOutput": {"S3OutputPath": output_s3_uri, "Accept": content_type, "AssembleWith": "Line"},
        "TransformResources": dict(resources),
        "Tags": list(tags),
    })


def scalable_target_call(resource_id: str, dimension: str, min_instances: int, max_instances: int) -> ApiCall:
    return ApiCall("application-autoscaling", "RegisterScalableTarget", {
        "ServiceNamespace": "sagemaker", "ResourceId": resource_id, "ScalableDimension": dimension,
        "MinCapacity": min_instances, "MaxCapacity": max_instances})


def scaling_policy_call(policy_name: str, resource_id: str, dimension: str, invocations_per_instance: float,
                        scale_in_cooldown_s: int, scale_out_cooldown_s: int) -> ApiCall:
    """Target tracking on invocations per instance per minute."""
    return ApiCall("application-autoscaling", "PutScalingPolicy", {
        "PolicyName": policy_name, "ServiceNamespace": "sagemaker", "ResourceId": resource_id, "ScalableDimension": dimension,
        "PolicyType": "TargetTrackingScaling",
        "TargetTrackingScalingPolicyConfiguration": {
            "TargetValue": float(invocations_per_instance),
            "PredefinedMetricSpecification": {"PredefinedMetricType": "SageMakerVariantInvocationsPerInstance"},
            "ScaleInCooldown": scale_in_cooldown_s,
            "ScaleOutCooldown": scale_out_cooldown_s}})
