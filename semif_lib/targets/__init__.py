"""Where the workshop runs: one `Target` per place, chosen from `Settings.target` here and nowhere else.

Each step, per target (`LocalTarget`: processes; `ContainerTarget`: images, as SageMaker runs them; `AwsTarget`):

- `publish_model`: nothing, the tarball's file:// URL stays | the same | upload to S3 (SSE, idempotent)
- `deploy_text_model`: `semif serve-text` on the extracted tarball | the DLC image (the real one if AWS
  credentials can pull it, else the local replica) | the llama.cpp DLC endpoint
- `build_adapter_image`: nothing to build | `container/Dockerfile` FROM that DLC image, built locally | CodeBuild -> ECR
- `deploy_decision_model`: `semif serve` on the extracted tarball | the adapter image, `run IMAGE serve` | an endpoint on it
- `invoke_decision`, `chat`, `stream_chat`: HTTP to the local server | HTTP to the container | `invoke_endpoint(_with_response_stream)`
- `score_jsonlines`: POST JSON Lines to the local adapter | the same, to the container | Batch Transform
- `enable_autoscaling`, `check_permissions`: None | None | Application Auto Scaling; the permission check
- `delete_resource`: `local_process` (SIGTERM) | `local_container` (stop, remove) | every other kind (`aws.teardown`)

`select_target(settings)` is the target a step runs on; `owner_of(kind, settings)` the one that
removes a recorded resource (the target that created it, whatever the target is now). Selecting a
target imports nothing heavy: boto3 and the SageMaker SDK load inside the AWS wing's functions, when a step calls AWS.

Modules: `base` (the `Target` protocol), `machine` (what the two targets on this machine share), `local`,
`container` and `aws` (one target each), and `plans` (what a step on AWS would send, printed on this machine).
"""

from __future__ import annotations

from typing import Any

from ..model.package import extract_model_package
from ..registry import WorkshopState
from ..registry import load_state as load_registry
from ..settings import Settings, load_settings
from .aws import AwsTarget, settings_for_cleanup
from .base import Target
from .container import ContainerTarget, require_container_runtime
from .local import LocalTarget, start_local_server
from .machine import LocalServerError

__all__ = [
    "LOCAL_KINDS",
    "AwsTarget",
    "ContainerTarget",
    "LocalServerError",
    "LocalTarget",
    "Target",
    "extract_model_package",
    "load_state",
    "owner_of",
    "require_container_runtime",
    "select_target",
    "settings_and_state",
    "settings_for_cleanup",
    "start_local_server",
    "stop_local_servers",
]

TARGETS: dict[str, type[Any]] = {"local": LocalTarget, "container": ContainerTarget, "aws": AwsTarget}
LOCAL_KINDS = LocalTarget.kinds | ContainerTarget.kinds  # what runs on this machine; every other kind is AWS's


def select_target(settings: Settings) -> Target:
    """The target `settings.target` names (`local`, `container` or `aws`)."""
    try:
        return TARGETS[settings.target](settings)
    except KeyError:
        raise ValueError(f"target must be one of {sorted(TARGETS)}, not {settings.target!r}") from None


def owner_of(kind: str, settings: Settings) -> Target:
    """The target that removes a recorded resource of `kind`: the machine's own kinds, else AWS."""
    for cls in (LocalTarget, ContainerTarget):
        if kind in cls.kinds:
            return cls(settings)
    return AwsTarget(settings)


def load_state(settings: Settings | None = None) -> WorkshopState:
    """The state of this workshop run (created, with a fresh run id, on first use); on AWS it records the region."""
    settings = settings or load_settings()
    return load_registry(settings, region=select_target(settings).region)


def settings_and_state(settings: Settings | None, state: WorkshopState | None) -> tuple[Settings, WorkshopState]:
    """The settings and state a step was given, or the environment's and this run's."""
    settings = settings or load_settings()
    return settings, state or load_state(settings)


def stop_local_servers(settings: Settings | None = None, state: WorkshopState | None = None) -> list[str]:
    """Stop every local server (`semif serve`, `semif serve-text`, or their containers) the state file records; keep the
    rest of the state (model package, names) for the next notebook. AWS resources are untouched."""
    settings, state = settings_and_state(settings, state)
    stopped = []
    for entry in [e for e in reversed(state.resources) if e["kind"] in LOCAL_KINDS]:
        if owner_of(entry["kind"], settings).delete_resource(entry):
            stopped.append(f"{entry['name']} (pid {entry['pid']})" if "pid" in entry else f"{entry['name']} (container)")
        state.forget(entry["kind"], entry["name"])
    return stopped
