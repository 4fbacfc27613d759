"""SageMaker real-time endpoints: the llama.cpp DLC (text) and our adapter image (decisions), created and awaited.

- `dlc.pin_dlc_image(settings, state)`: the DLC image (the region's registry account), pinned to the digest
  its tag names when the run first asks, so the text endpoint and the adapter's base are one llama.cpp build.
- `build_container_env(llama_settings)`: `SM_LLAMA_CPP_*` through the same translation the local
  twin uses (`llama_flags.build_sm_env`), checked against SageMaker's limits.
- `deploy_endpoint(...)`: model -> endpoint config (with a startup health-check timeout) -> endpoint,
  through the SageMaker SDK's v3 resources (`sagemaker.core.resources.Model`, `EndpointConfig`,
  `Endpoint`), tagged and recorded in the workshop state; `wait_for_endpoint` shows progress and
  fails when an update rolls back.

Calling a deployed endpoint is `invocations`'s. The text endpoint's llama-server defaults are the same for
every target (`semif_lib.invocation.text_settings`); SageMaker's limits on a container's Environment map
are `llama_flags`'s.
"""
from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..invocation import decision_env, text_settings
from ..llama_flags import MAX_ENV_ENTRIES, MAX_ENV_VALUE_CHARS, build_sm_env
from ..model.package import HostingPlan, is_model_data_prefix, plan_hosting
from ..registry import WorkshopState
from ..settings import Settings, load_settings
from .clients import get_region, make_client, make_session
from .dlc import GPU_INFERENCE_AMI, pin_dlc_image
from .errors import ResourceFailedError, unless_gone
from .iamroles import resolve_execution_role
from .runrecord import settings_and_state
from .scaling import SCALABLE_DIMENSION
from .waits import poll_status, retry_while_role_propagates

__all__ = [
    "build_container_env",
    "deploy_decision_endpoint",
    "deploy_endpoint",
    "deploy_text_endpoint",
    "ensure_endpoint",
    "ensure_endpoint_config",
    "ensure_model",
    "settle_endpoint",
    "validate_container_env",
    "wait_for_endpoint",
]

ENV_KEY_PATTERN = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


# ====================================================================== image URIs and environment
def validate_container_env(env: Mapping[str, str]) -> dict[str, str]:
    """Check a container Environment map against SageMaker's limits; raise `ValueError` naming the entry."""
    if len(env) > MAX_ENV_ENTRIES:
        raise ValueError(f"Environment has {len(env)} entries; SageMaker allows at most {MAX_ENV_ENTRIES}")
    for key, value in env.items():
        if not isinstance(key, str) or not ENV_KEY_PATTERN.match(key):
            raise ValueError(f"Environment key {key!r} does not match {ENV_KEY_PATTERN.pattern}")
        if not isinstance(value, str):
            raise ValueError(f"Environment[{key}] must be a string, got {type(value).__name__}")
        if len(value) > MAX_ENV_VALUE_CHARS:
            raise ValueError(f"Environment[{key}] is {len(value)} characters; SageMaker allows at most {MAX_ENV_VALUE_CHARS}")
    return dict(env)


def build_container_env(llama_settings: Mapping[str, Any] | None = None, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """`SM_LLAMA_CPP_*` from a settings dict (the local twin's translation) plus `extra`, validated."""
    env = build_sm_env(dict(llama_settings or {}))
    env.update(extra or {})
    return validate_container_env(env)


# ====================================================================== create, wait
def _content_hash(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:8]


def _sdk(settings: Settings) -> dict[str, Any]:
    """How a `sagemaker.core.resources` call reaches AWS: our session (region, endpoint) and region."""
    return {"session": make_session(settings), "region": get_region(settings)}


def _sdk_tags(state: WorkshopState) -> list[Any]:
    from sagemaker.core.shapes import Tag

    return [Tag(key=t["Key"], value=t["Value"]) for t in state.tags()]


@dataclass(frozen=True)
class EndpointSpec:
    """What defines an endpoint's model and config; its hash names both, so a change makes new ones."""

    image_uri: str
    model_data_url: str  # ending in "/": an S3 prefix of uncompressed model data (see `container_model_data`)
    env: dict[str, str]
    instance_type: str
    instance_count: int
    startup_timeout_s: int
    gpu: bool
    download_timeout_s: int | None = None
    volume_size_gb: int | None = None
    routing_strategy: str | None = None  # None: SageMaker's default (RANDOM), and no RoutingConfig sent
    async_config: dict[str, Any] | None = None  # AsyncInferenceConfig (`asyncinference`): the endpoint queues its requests

    def digest(self) -> str:
        gpu = [GPU_INFERENCE_AMI] if self.gpu else []  # a new GPU AMI makes a new config
        big = [self.download_timeout_s, self.volume_size_gb] if self.download_timeout_s or self.volume_size_gb else []
        routing = [self.routing_strategy] if self.routing_strategy else []  # unset keeps the names endpoints already have
        queued = [self.async_config] if self.async_config else []
        return _content_hash(self.image_uri, self.model_data_url, self.env, self.instance_type, self.instance_count,
                             self.startup_timeout_s, *gpu, *big, *routing, *queued)


def accepts_volume_size(instance_type: str) -> bool:
    """Whether SageMaker takes VolumeSizeInGB for `instance_type`: not on instances with local NVMe storage, whose disk is
    fixed (AWS: "When using an ML instance with NVMe SSD volumes, SageMaker doesn't provision Amazon EBS"). Their family
    has a "d" (ml.c5d, ml.m5d, ml.g4dn, ml.p4d), or is g5 / g6 / g6e / p5 / trn / inf2, the families the SageMaker Python
    SDK's `volume_size_supported` also excludes. Only a real account confirms a family added after this list."""
    family = instance_type.removeprefix("ml.").split(".")[0]
    return "d" not in family and not family.startswith(("g5", "g6", "p5", "trn", "inf2"))


def plan_endpoint_hosting(state: WorkshopState, settings: Settings, instance_type: str) -> HostingPlan:
    """`model.package.plan_hosting` for the packaged model (its recorded size and format) on `instance_type`."""
    package = state.get("model_package") or {}
    gguf_bytes = int(package.get("gguf_size") or package.get("size") or 0)
    return plan_hosting(gguf_bytes, settings, compressed=not is_model_data_prefix(state.get("model_data_url")),
                        accepts_volume=accepts_volume_size(instance_type))


def container_model_data(model_data_url: str) -> dict[str, Any]:
    """The container's model data: a tarball is ModelDataUrl (SageMaker unpacks it into /opt/ml/model); a URL ending in "/" is
    an S3 prefix of uncompressed files, S3ModelDataSource with CompressionType None (copied as they are; AWS: "A valid key
    name prefix identified by S3Uri always ends with a forward slash"). No ModelAccessConfig: that accepts a JumpStart EULA."""
    if is_model_data_prefix(model_data_url):
        from sagemaker.core.shapes import ModelDataSource, S3ModelDataSource

        return {"model_data_source": ModelDataSource(s3_data_source=S3ModelDataSource(
            s3_uri=model_data_url, s3_data_type="S3Prefix", compression_type="None"))}
    return {"model_data_url": model_data_url}


def ensure_model(name: str, spec: EndpointSpec, settings: Settings, state: WorkshopState) -> str:
    """SageMaker model `name` (sagemaker-core `Model`), created unless it exists; retried while a new role propagates."""
    from sagemaker.core.resources import Model
    from sagemaker.core.shapes import ContainerDefinition

    if unless_gone(lambda: Model.get(model_name=name, **_sdk(settings))) is None:
        role = resolve_execution_role(settings, state)
        container = ContainerDefinition(image=spec.image_uri, environment=spec.env, **container_model_data(spec.model_data_url))
        retry_while_role_propagates(
            lambda: Model.create(model_name=name, primary_container=container, execution_role_arn=role,
                                 tags=_sdk_tags(state), **_sdk(settings)), f"model {name}")
    state.record("sagemaker_model", name)
    return name


def ensure_endpoint_config(name: str, model_name: str, spec: EndpointSpec, settings: Settings, state: WorkshopState) -> str:
    """Endpoint config `name` (sagemaker-core `EndpointConfig`): one variant, startup health-check timeout,
    on a GPU the AL2023 inference AMI whose driver matches the DLC's CUDA 13, the spec's routing strategy, and its
    AsyncInferenceConfig when it queues."""
    from sagemaker.core.resources import EndpointConfig
    from sagemaker.core.shapes import (
        AsyncInferenceClientConfig,
        AsyncInferenceConfig,
        AsyncInferenceOutputConfig,
        ProductionVariant,
        ProductionVariantRoutingConfig,
    )

    if unless_gone(lambda: EndpointConfig.get(endpoint_config_name=name, **_sdk(settings))) is None:
        extra: dict[str, Any] = {"inference_ami_version": GPU_INFERENCE_AMI} if spec.gpu else {}
        if spec.download_timeout_s:
            extra["model_data_download_timeout_in_seconds"] = spec.download_timeout_s
        if spec.volume_size_gb:
            extra["volume_size_in_gb"] = spec.volume_size_gb
        if spec.routing_strategy:
            extra["routing_config"] = ProductionVariantRoutingConfig(routing_strategy=spec.routing_strategy)
        variant = ProductionVariant(variant_name="AllTraffic", model_name=model_name, instance_type=spec.instance_type,
                                    initial_instance_count=spec.instance_count, initial_variant_weight=1.0,
                                    container_startup_health_check_timeout_in_seconds=spec.startup_timeout_s, **extra)
        queued: dict[str, Any] = {}
        if spec.async_config:
            out, client = spec.async_config["OutputConfig"], spec.async_config["ClientConfig"]
            queued["async_inference_config"] = AsyncInferenceConfig(
                output_config=AsyncInferenceOutputConfig(s3_output_path=out["S3OutputPath"], s3_failure_path=out["S3FailurePath"]),
                client_config=AsyncInferenceClientConfig(
                    max_concurrent_invocations_per_instance=client["MaxConcurrentInvocationsPerInstance"]))
        EndpointConfig.create(endpoint_config_name=name, production_variants=[variant], tags=_sdk_tags(state), **queued,
                              **_sdk(settings))
    state.record("sagemaker_endpoint_config", name)
    return name


# SageMaker refuses UpdateEndpoint in these states: wait them out first (a rerun of a cell mid-deploy).
ENDPOINT_BUSY = ("Creating", "Updating", "SystemUpdating", "RollingBack", "Deleting")
# "DeleteEndpoint is the only operation that can be performed on a failed endpoint" (botocore's
# DescribeEndpointOutput; UpdateRollbackFailed allows only deletion and weights): delete, then create again.
ENDPOINT_DEAD = ("Failed", "UpdateRollbackFailed")


def settle_endpoint(name: str, settings: Settings, *, timeout_s: float = 3600, log: Callable[[str], None] = print) -> dict[str, Any] | None:
    """The endpoint's description once SageMaker would accept an update, or None when it does not exist (any
    more): busy states are waited out, a Failed endpoint is deleted and its deletion waited out."""
    sm = make_client("sagemaker", settings)
    start = time.monotonic()
    deleted = False
    while True:
        desc = unless_gone(lambda: sm.describe_endpoint(EndpointName=name))
        status = desc and desc["EndpointStatus"]
        if desc is None:
            return None
        if status in ENDPOINT_DEAD and not deleted:
            log(f"endpoint {name} is {status} ({desc.get('FailureReason') or 'no reason given'}): SageMaker allows only "
                "deleting it, so it is deleted and created again")
            sm.delete_endpoint(EndpointName=name)
            deleted = True
        elif status not in ENDPOINT_BUSY and not deleted:
            return desc
        if time.monotonic() - start > timeout_s:
            raise TimeoutError(f"endpoint {name} still {status} after {timeout_s:.0f} s")
        time.sleep(ENDPOINT_POLL_S)


def _keep_autoscaling(name: str, old_config: str, new_config: str, settings: Settings, variant: str = "AllTraffic",
                      log: Callable[[str], None] = print) -> bool:
    """Whether an update must keep the variant's properties: an autoscaled variant keeps its scaled instance
    count (`RetainAllVariantProperties`; without it the count resets to the config's). SageMaker refuses to
    change an autoscaled variant's instance type, so then the scalable target is deregistered first."""
    aas = make_client("application-autoscaling", settings)
    resource = f"endpoint/{name}/variant/{variant}"
    targets = aas.describe_scalable_targets(ServiceNamespace="sagemaker", ResourceIds=[resource])["ScalableTargets"]
    if not targets:
        return False
    sm = make_client("sagemaker", settings)
    types = [sm.describe_endpoint_config(EndpointConfigName=c)["ProductionVariants"][0]["InstanceType"] for c in (old_config, new_config)]
    if types[0] == types[1]:
        return True
    log(f"endpoint {name}: autoscaling deregistered to change the instance type {types[0]} -> {types[1]} "
        "(SageMaker refuses that on an autoscaled variant); notebook 04 registers it again")
    aas.deregister_scalable_target(ServiceNamespace="sagemaker", ResourceId=resource,
                                   ScalableDimension=SCALABLE_DIMENSION)
    return False


def ensure_endpoint(name: str, config_name: str, settings: Settings, state: WorkshopState) -> str:
    """Endpoint `name` (sagemaker-core `Endpoint`) on `config_name`: created, updated in place, or left alone;
    a Failed one is deleted and created again, a Creating/Updating one is waited out before its update."""
    from sagemaker.core.resources import Endpoint

    current = settle_endpoint(name, settings)
    if current is None:
        Endpoint.create(endpoint_name=name, endpoint_config_name=config_name, tags=_sdk_tags(state), **_sdk(settings))
    elif current["EndpointConfigName"] != config_name:
        endpoint = Endpoint.get(endpoint_name=name, **_sdk(settings))
        endpoint.endpoint_config_name = config_name
        endpoint.update(retain_all_variant_properties=_keep_autoscaling(name, current["EndpointConfigName"], config_name, settings))
    state.record("sagemaker_endpoint", name, region=state.region)
    return name


def deploy_endpoint(purpose: str, image_uri: str, model_data_url: str, env: Mapping[str, str], *,
                    settings: Settings | None = None, state: WorkshopState | None = None,
                    instance_type: str | None = None, instance_count: int = 1, wait: bool = True,
                    progress: bool = True, routing_strategy: str | None = None, async_config: dict[str, Any] | None = None) -> str:
    """Create (or reuse) model, endpoint config and endpoint `semif-<purpose>-<run id>`; return its name.

    Model and config names carry a hash of what defines them, so a redeploy with another image,
    model or environment creates new ones and updates the endpoint in place; an unchanged
    redeploy does nothing. The wait fails when an update rolls back (see `wait_for_endpoint`).
    """
    settings, state = settings_and_state(settings, state)
    instance_type = instance_type or {"cuda": settings.gpu_instance_type, "arm64": settings.arm_instance_type}.get(
        settings.dlc_variant, settings.instance_type)
    plan = plan_endpoint_hosting(state, settings, instance_type)  # volume and timeouts grow with the model
    for note in plan.notes:
        print(f"{purpose} endpoint: {note}")
    spec = EndpointSpec(image_uri, model_data_url, validate_container_env(env), instance_type, instance_count,
                        plan.startup_timeout_s, settings.dlc_variant == "cuda", plan.download_timeout_s, plan.volume_size_gb,
                        routing_strategy, async_config)
    endpoint = state.name(purpose)
    name = f"{endpoint}-{spec.digest()}"
    ensure_model(name, spec, settings, state)
    ensure_endpoint_config(name, name, spec, settings, state)
    ensure_endpoint(endpoint, name, settings, state)
    if wait:
        wait_for_endpoint(endpoint, settings=settings, progress=progress, expected_config=name)
    return endpoint


ENDPOINT_FAILED = ("Failed", "OutOfService", "UpdateRollbackFailed")
ENDPOINT_POLL_S = 15.0


def wait_for_endpoint(name: str, settings: Settings | None = None, timeout_s: float = 3600, poll_s: float | None = None,
                      progress: bool = True, log: Callable[[str], None] = print, expected_config: str | None = None) -> dict[str, Any]:
    """Poll until InService (returns the description); raise `ResourceFailedError` on Failed, OutOfService
    or UpdateRollbackFailed, and when the endpoint is InService on another config than `expected_config`
    (an update that rolled back ends InService on the old config)."""
    sm = make_client("sagemaker", settings or load_settings())
    desc = poll_status(lambda: sm.describe_endpoint(EndpointName=name), "EndpointStatus", "InService",
                       ENDPOINT_FAILED, f"endpoint {name}", timeout_s, poll_s or ENDPOINT_POLL_S, log, progress)
    if expected_config and desc.get("EndpointConfigName") != expected_config:
        raise ResourceFailedError(
            f"endpoint {name}: the update to {expected_config} rolled back; it still serves {desc.get('EndpointConfigName')} "
            f"({desc.get('FailureReason') or 'no reason given'}). See its CloudWatch logs (/aws/sagemaker/Endpoints/{name})")
    return desc


def deploy_text_endpoint(settings: Settings | None = None, state: WorkshopState | None = None,
                         llama_settings: Mapping[str, Any] | None = None, wait: bool = True) -> str:
    """The packaged GGUF on the AWS llama.cpp DLC (`semif-text-<run>`)."""
    settings, state = settings_and_state(settings, state)
    image = pin_dlc_image(settings, state)  # the digest the adapter is built FROM too (03)
    env = build_container_env(text_settings(settings.dlc_variant, llama_settings))
    model_data = state.require("model_data_url", "01_package_gguf_to_s3 (workshop.package_model)")
    return deploy_endpoint("text", image, model_data, env, settings=settings, state=state, wait=wait)


def deploy_decision_endpoint(settings: Settings | None = None, state: WorkshopState | None = None, wait: bool = True) -> str:
    """The packaged GGUF on our adapter image (`semif-decision-<run>`), same model data as the text endpoint."""
    settings, state = settings_and_state(settings, state)
    image = settings.adapter_image_uri or state.require("image_uri", "03_build_adapter_image (workshop.build_adapter_image)")
    model_data = state.require("model_data_url", "01_package_gguf_to_s3 (workshop.package_model)")
    env = decision_env(settings.dlc_variant, settings.mode)
    return deploy_endpoint("decision", image, model_data, env, settings=settings, state=state, wait=wait,
                           routing_strategy=settings.routing_strategy)
