"""SageMaker real-time endpoints: the llama.cpp DLC (text) and our adapter image (decisions), created and awaited.

- `dlc.pin_dlc_image(settings, state)`: the DLC image (the region's registry account), pinned to the digest
  its tag names when the run first asks, so the text endpoint and the adapter's base are one llama.cpp build.
- `build_container_env(llama_settings)`: `SM_LLAMA_CPP_*` through the same translation the local
  twin uses (`llama_flags.build_sm_env`), checked against SageMaker's limits.
- `deploy_endpoint(...)`: model -> endpoint config (with a startup health-check timeout) -> endpoint,
  through the SageMaker SDK's v3 resources (`sagemaker.core.resources.Model`, `EndpointConfig`,
  `Endpoint`), tagged and recorded in the workshop state; `wait_for_endpoint` shows progress and
  fails when an update rolls back. Each request is printed as it is sent, with every field (`apicalls`);
  `plan_text_endpoint` and `plan_decision_endpoint` give the same requests without calling AWS.

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
from ..settings import Settings
from .apicalls import (
    PLACEHOLDER_ROLE,
    ApiCall,
    EndpointSpec,
    endpoint_call,
    endpoint_config_call,
    model_call,
    update_endpoint_call,
)
from .clients import get_region, make_client, make_session
from .dlc import GPU_INFERENCE_AMI, pin_dlc_image, resolve_dlc_image_uri
from .errors import ResourceFailedError, unless_gone
from .iamroles import resolve_execution_role
from .images import check_deployed_images, check_model_image, decision_image
from .packaging import plan_model_data_url
from .runrecord import settings_and_state
from .scaling import SCALABLE_DIMENSION, variant_resource
from .waits import poll_status, retry_while_role_propagates

__all__ = [
    "build_container_env",
    "deploy_decision_endpoint",
    "deploy_endpoint",
    "deploy_text_endpoint",
    "ensure_endpoint",
    "ensure_endpoint_config",
    "ensure_model",
    "plan_decision_endpoint",
    "plan_endpoint",
    "plan_text_endpoint",
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


def digest_spec(spec: EndpointSpec) -> str:
    """The hash that names an endpoint's model and config: fields that are unset stay out of it, so the names
    endpoints already have are kept when a field is added."""
    gpu = [GPU_INFERENCE_AMI] if spec.gpu else []  # a new GPU AMI makes a new config
    big = [spec.download_timeout_s, spec.volume_size_gb] if spec.download_timeout_s or spec.volume_size_gb else []
    routing = [spec.routing_strategy] if spec.routing_strategy else []
    queued = [spec.async_config] if spec.async_config else []
    return _content_hash(spec.image_uri, spec.model_data_url, spec.env, spec.instance_type, spec.instance_count,
                         spec.startup_timeout_s, *gpu, *big, *routing, *queued)


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


def ensure_model(call: ApiCall, settings: Settings, log: Callable[[str], None] = print) -> str:
    """The model `call` creates (sagemaker-core `Model`), created unless it exists; retried while a new role propagates."""
    from sagemaker.core.resources import Model

    name = call.request["ModelName"]
    existing = unless_gone(lambda: Model.get(model_name=name, **_sdk(settings)))
    if existing is None:
        log(str(call))
        retry_while_role_propagates(lambda: Model.create(**call.as_sdk_arguments(), **_sdk(settings)), f"model {name}")
    else:
        check_model_image(name, getattr(existing.primary_container, "image", None), call.request["PrimaryContainer"]["Image"])
        log(f"model {name} exists: CreateModel not sent")
    return name


def ensure_endpoint_config(call: ApiCall, settings: Settings, log: Callable[[str], None] = print) -> str:
    """The endpoint config `call` creates (sagemaker-core `EndpointConfig`), created unless it exists."""
    from sagemaker.core.resources import EndpointConfig

    name = call.request["EndpointConfigName"]
    if unless_gone(lambda: EndpointConfig.get(endpoint_config_name=name, **_sdk(settings))) is None:
        log(str(call))
        EndpointConfig.create(**call.as_sdk_arguments(), **_sdk(settings))
    else:
        log(f"endpoint config {name} exists: CreateEndpointConfig not sent")
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
    resource = variant_resource(name, variant)
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


def ensure_endpoint(name: str, config_name: str, settings: Settings, state: WorkshopState,
                    log: Callable[[str], None] = print) -> str:
    """Endpoint `name` (sagemaker-core `Endpoint`) on `config_name`: created, updated in place, or left alone;
    a Failed one is deleted and created again, a Creating/Updating one is waited out before its update."""
    from sagemaker.core.resources import Endpoint

    current = settle_endpoint(name, settings, log=log)
    if current is None:
        call = endpoint_call(name, config_name, state.tags())
        log(str(call))
        Endpoint.create(**call.as_sdk_arguments(), **_sdk(settings))
    elif current["EndpointConfigName"] != config_name:
        retain = _keep_autoscaling(name, current["EndpointConfigName"], config_name, settings, log=log)
        log(str(update_endpoint_call(name, config_name, retain)))
        endpoint = Endpoint.get(endpoint_name=name, **_sdk(settings))
        endpoint.endpoint_config_name = config_name
        endpoint.update(retain_all_variant_properties=retain)
    else:
        log(f"endpoint {name} already serves {config_name}: nothing sent")
    state.record("sagemaker_endpoint", name, region=state.region)
    return name


@dataclass(frozen=True)
class EndpointPlan:
    """What a deploy step sends: the endpoint's name and the model and config requests (named by the spec's hash)."""

    endpoint: str
    spec: EndpointSpec
    model: ApiCall
    config: ApiCall

    def calls(self) -> list[ApiCall]:
        """The three requests of a first deploy (a redeploy with a new spec sends UpdateEndpoint instead of CreateEndpoint)."""
        return [self.model, self.config, endpoint_call(self.endpoint, self.config.request["EndpointConfigName"],
                                                       self.model.request["Tags"])]


def plan_endpoint(purpose: str, image_uri: str, model_data_url: str, env: Mapping[str, str], *, settings: Settings,
                  state: WorkshopState, role: str, instance_type: str | None = None, instance_count: int = 1,
                  routing_strategy: str | None = None, async_config: dict[str, Any] | None = None,
                  log: Callable[[str], None] = print) -> EndpointPlan:
    """The model, endpoint config and endpoint `semif-<purpose>-<run id>` a deploy sends, without calling AWS; the
    model and config names carry the hash of what defines them."""
    instance_type = instance_type or {"cuda": settings.gpu_instance_type, "arm64": settings.arm_instance_type}.get(
        settings.dlc_variant, settings.instance_type)
    hosting = plan_endpoint_hosting(state, settings, instance_type)  # volume and timeouts grow with the model
    for note in hosting.notes:
        log(f"{purpose} endpoint: {note}")
    spec = EndpointSpec(image_uri, model_data_url, validate_container_env(env), instance_type, instance_count,
                        hosting.startup_timeout_s, settings.dlc_variant == "cuda", hosting.download_timeout_s,
                        hosting.volume_size_gb, routing_strategy, async_config)
    endpoint = state.name(purpose)
    name = f"{endpoint}-{digest_spec(spec)}"
    tags = state.tags()
    return EndpointPlan(endpoint, spec, model_call(name, spec, role, tags), endpoint_config_call(name, name, spec, tags))


def deploy_endpoint(purpose: str, image_uri: str, model_data_url: str, env: Mapping[str, str], *,
                    settings: Settings, state: WorkshopState | None = None,
                    instance_type: str | None = None, instance_count: int = 1, wait: bool = True,
                    progress: bool = True, routing_strategy: str | None = None, async_config: dict[str, Any] | None = None,
                    log: Callable[[str], None] = print) -> str:
    """Create (or reuse) model, endpoint config and endpoint `semif-<purpose>-<run id>`, printing each request it
    sends with every field; return the endpoint's name.

    A redeploy with another image, model or environment creates a new model and config and updates the endpoint
    in place; an unchanged redeploy sends nothing. The wait fails when an update rolls back (see `wait_for_endpoint`).
    """
    settings, state = settings_and_state(settings, state)
    role = resolve_execution_role(settings, state)
    plan = plan_endpoint(purpose, image_uri, model_data_url, env, settings=settings, state=state, role=role,
                         instance_type=instance_type, instance_count=instance_count, routing_strategy=routing_strategy,
                         async_config=async_config, log=log)
    state.record("sagemaker_model", ensure_model(plan.model, settings, log))
    state.record("sagemaker_endpoint_config", ensure_endpoint_config(plan.config, settings, log))
    ensure_endpoint(plan.endpoint, plan.config.request["EndpointConfigName"], settings, state, log)
    if wait:
        check_deployed_images(wait_for_endpoint(plan.endpoint, settings=settings, progress=progress,
                                                expected_config=plan.config.request["EndpointConfigName"]), image_uri)
    return plan.endpoint


ENDPOINT_FAILED = ("Failed", "OutOfService", "UpdateRollbackFailed")
ENDPOINT_POLL_S = 15.0


def wait_for_endpoint(name: str, settings: Settings, timeout_s: float = 3600, poll_s: float | None = None,
                      progress: bool = True, log: Callable[[str], None] = print, expected_config: str | None = None) -> dict[str, Any]:
    """Poll until InService (returns the description); raise `ResourceFailedError` on Failed, OutOfService
    or UpdateRollbackFailed, and when the endpoint is InService on another config than `expected_config`
    (an update that rolled back ends InService on the old config)."""
    sm = make_client("sagemaker", settings)
    desc = poll_status(lambda: sm.describe_endpoint(EndpointName=name), "EndpointStatus", "InService",
                       ENDPOINT_FAILED, f"endpoint {name}", timeout_s, poll_s or ENDPOINT_POLL_S, log, progress)
    if expected_config and desc.get("EndpointConfigName") != expected_config:
        raise ResourceFailedError(
            f"endpoint {name}: the update to {expected_config} rolled back; it still serves {desc.get('EndpointConfigName')} "
            f"({desc.get('FailureReason') or 'no reason given'}). See its CloudWatch logs (/aws/sagemaker/Endpoints/{name})")
    return desc


PACKAGE_STEP = "01_package_gguf_to_s3 (workshop.package_model)"
PLACEHOLDER_IMAGE = "<account>.dkr.ecr.<region>.amazonaws.com/<the adapter repository notebook 03 makes>@<the digest its build pushed>"


def deploy_text_endpoint(settings: Settings, state: WorkshopState | None = None,
                         llama_settings: Mapping[str, Any] | None = None, wait: bool = True) -> str:
    """The packaged GGUF on the AWS llama.cpp DLC (`semif-text-<run>`)."""
    settings, state = settings_and_state(settings, state)
    image = pin_dlc_image(settings, state)  # the digest the adapter is built FROM too (03)
    env = build_container_env(text_settings(settings.dlc_variant, llama_settings))
    model_data = state.require("model_data_url", PACKAGE_STEP)
    return deploy_endpoint("text", image, model_data, env, settings=settings, state=state, wait=wait)


def deploy_decision_endpoint(settings: Settings, state: WorkshopState | None = None, wait: bool = True) -> str:
    """The packaged GGUF on our adapter image (`semif-decision-<run>`), same model data as the text endpoint."""
    settings, state = settings_and_state(settings, state)
    image = decision_image(settings, state)
    model_data = state.require("model_data_url", PACKAGE_STEP)
    env = decision_env(settings.dlc_variant, settings.mode)
    return deploy_endpoint("decision", image, model_data, env, settings=settings, state=state, wait=wait,
                           routing_strategy=settings.routing_strategy)


def plan_text_endpoint(settings: Settings, state: WorkshopState, llama_settings: Mapping[str, Any] | None = None) -> list[ApiCall]:
    """What `deploy_text_endpoint` would send, without calling AWS: the DLC by its tag (AWS pins its digest first), and
    placeholders for what only an account knows (the role, the account in the bucket's name)."""
    region = settings.aws_region or "us-east-1"
    env = build_container_env(text_settings(settings.dlc_variant, llama_settings))
    return plan_endpoint("text", resolve_dlc_image_uri(region, settings.dlc_variant), plan_model_data_url(settings, state), env,
                         settings=settings, state=state, role=PLACEHOLDER_ROLE, log=lambda _: None).calls()


def plan_decision_endpoint(settings: Settings, state: WorkshopState) -> list[ApiCall]:
    """What `deploy_decision_endpoint` would send, without calling AWS (placeholders as in `plan_text_endpoint`)."""
    image = settings.adapter_image_uri or PLACEHOLDER_IMAGE
    return plan_endpoint("decision", image, plan_model_data_url(settings, state), decision_env(settings.dlc_variant, settings.mode),
                         settings=settings, state=state, role=PLACEHOLDER_ROLE, routing_strategy=settings.routing_strategy,
                         log=lambda _: None).calls()
