"""target=container: the two images run on this machine as SageMaker runs them.

The text image is the llama.cpp DLC itself when it is here or AWS credentials can pull it, else the
local replica (`container/replica/Dockerfile`); the decision image is `container/Dockerfile` built
FROM it. Each runs as `run IMAGE serve` with the model read-only at `/opt/ml/model`, is recorded as a
`local_container`, and is stopped with SIGTERM (SIGKILL after 30 s) and removed by `delete_resource`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping

from ..aws.clients import get_region
from ..aws.errors import aws_errors
from ..aws.imagebuild import pull_dlc_image
from ..containers.images import ADAPTER_IMAGE, REPLICA_IMAGE, build_replica_image
from ..containers.images import build_adapter_image as build_image_here
from ..containers.runtime import ContainerError, ContainerRuntime, RunningContainer, find_container_runtime, image_exists, run_container
from ..model.package import plan_hosting
from ..processes import is_answering
from ..registry import WorkshopState
from ..settings import Settings
from .machine import LocalServerError, MachineTarget, check_port_free, port_of

__all__ = ["ContainerTarget", "delete_local_container", "require_container_runtime", "resolve_text_image", "start_local_container"]


def require_container_runtime(settings: Settings) -> Any:
    """The docker or podman CLI for target=container (SEMIF_CONTAINER_RUNTIME's first), or one line on how to get one."""
    runtime = find_container_runtime(settings)
    if runtime is None:
        raise LocalServerError("target=container needs a working docker or podman CLI (none answered `info`): install one, "
                               "or use target=local, which runs the same servers as processes")
    return runtime


def start_local_container(kind: str, image: str, model_dir: Path, settings: Settings, state: WorkshopState,
                          env: Mapping[str, str] | None = None, log: Callable[[str], None] = print) -> str:
    """Run `image` as SageMaker does (`run IMAGE serve`, model read-only at /opt/ml/model, SIGTERM on stop),
    its port 8080 published where `SEMIF_LOCAL_{DECISION,TEXT}_URL` says; recorded for `cleanup()`."""
    url = settings.local_decision_url if kind == "decision" else settings.local_text_url
    if is_answering(url):
        return url
    runtime = require_container_runtime(settings)
    check_port_free(kind, url, f"the {kind} container")
    name = f"semif-{kind}-{state.run_id}"
    runtime.run("rm", "-f", name, check=False)  # a stopped one left by an interrupted run
    log(f"starting {image} as {name} on {url} (`{runtime.name} run ... {image} serve`)")
    try:
        gguf_bytes = sum(p.stat().st_size for p in model_dir.glob("*.gguf"))  # the start-up wait grows with the model (plan_hosting)
        startup = plan_hosting(gguf_bytes, settings, compressed=False).startup_timeout_s
        run_container(runtime, image, model_dir, port_of(url)[1], env, name=name, startup_timeout_s=startup)
    except ContainerError as exc:
        raise LocalServerError(str(exc)) from None
    state.record("local_container", name, runtime=runtime.binary, image=image, url=url)
    return url


def resolve_text_image(settings: Settings, runtime: Any, log: Callable[[str], None] = print) -> str:
    """The text path's image for target=container: the real llama.cpp DLC if it is here or AWS credentials
    can pull it, else the local replica (container/replica/Dockerfile), built on first use."""
    try:
        with aws_errors("pull the llama.cpp DLC image"):
            uri = pull_dlc_image(runtime, get_region(settings), settings.dlc_variant, settings=settings)
        log(f"text image: the llama.cpp DLC itself, {uri}")
        return uri
    except Exception as exc:  # noqa: BLE001 - no credentials, no permission, no network: the replica stands in
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        log(f"text image: the local DLC replica {REPLICA_IMAGE} (the real DLC could not be pulled: {reason})")
    if not image_exists(runtime, REPLICA_IMAGE):
        log("building the DLC replica (container/replica/Dockerfile, about a minute once llama.cpp is built) ...")
        build_replica_image(runtime, settings)
    return REPLICA_IMAGE


def delete_local_container(entry: dict[str, Any]) -> bool:
    """Stop a container this target started (SIGTERM, SIGKILL after 30 s) and remove it; False when it was gone."""
    runtime = ContainerRuntime(entry["runtime"])
    if runtime.run("container", "inspect", entry["name"], check=False).returncode != 0:
        return False
    RunningContainer(runtime, entry["name"], entry.get("image", ""), entry.get("url", "")).stop()
    return True


class ContainerTarget(MachineTarget):
    """target=container: the DLC (or its replica) and the adapter image, run locally."""

    name: ClassVar[str] = "container"
    kinds: ClassVar[frozenset[str]] = frozenset({"local_container"})

    def deploy_text_model(self, state: WorkshopState, llama_settings: Mapping[str, Any] | None, wait: bool) -> str:
        self.plan_text_model(state, llama_settings)
        env = self.text_env(llama_settings)
        image = resolve_text_image(self.settings, require_container_runtime(self.settings))
        url = start_local_container("text", image, self.model_dir(state), self.settings, state, env=env)
        state.set("text_image", image)
        return url

    def build_adapter_image(self, state: WorkshopState, wait: bool, log: Callable[[str], None]) -> str:
        runtime = require_container_runtime(self.settings)
        base = state.get("text_image") or resolve_text_image(self.settings, runtime, log)
        log(f"building {ADAPTER_IMAGE} from container/Dockerfile with BASE_IMAGE={base} (a few minutes: pip inside the image) ...")
        log_dir = Path(self.settings.state_file).parent
        tag = build_image_here(runtime, base, log_dir=log_dir)
        log(f"built {tag}; log: {log_dir / 'build-adapter-image.log'}")
        return tag

    def deploy_decision_model(self, state: WorkshopState, wait: bool) -> str:
        self.plan_decision_model(state)
        image = state.require("image_uri", "03_build_adapter_image (workshop.build_adapter_image)")
        if image.startswith("local:") or "amazonaws.com" in image:
            raise LocalServerError(f"the recorded adapter image {image} is not a local image: run 03_build_adapter_image "
                                   "with target=container first", field="image_uri")
        return start_local_container("decision", image, self.model_dir(state), self.settings, state, env=self.decision_env())

    def delete_resource(self, entry: dict[str, Any]) -> bool:
        return delete_local_container(entry)
