"""The notebooks' facade: one call per workshop step, and one cleanup.

This is the top floor: no wing imports it. Each step does what every target shares (building
`model.tar.gz` with `model.package`, encoding the request bytes once with `invocation.encode_payload`,
passing names between notebooks through the state file, no `%store`) and asks the target `Settings.target` names
for the rest (`targets.select_target`; the table of what each target does is in `semif_lib.targets`).
What a run created is recorded in the state file (`registry.WorkshopState`, re-exported here with
`load_state`); `cleanup()` deletes everything in reverse order, each resource by the target that
created it, and reports what it removed.

Importing this module loads no AWS SDK (boto3, botocore, the SageMaker SDK), and neither do the steps with
`target=local`: the tarball, the request bytes and the chat stream are plumbing (`model.package`, `invocation`),
and the AWS wing loads the SDKs only inside the functions that call AWS (`AwsTarget`'s steps, and
`ContainerTarget`'s pull of the real DLC image).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from .invocation import build_chat_request, encode_payload
from .model.package import build_model_package
from .registry import KeptResource, WorkshopState
from .settings import Settings, load_settings
from .targets import (
    LocalServerError,
    extract_model_package,
    load_state,
    owner_of,
    select_target,
    settings_and_state,
    settings_for_cleanup,
    start_local_server,
)

__all__ = [
    "CleanupReport",
    "LocalServerError",
    "WorkshopState",
    "build_adapter_image",
    "chat",
    "check_permissions",
    "cleanup",
    "close_decision_session",
    "deploy_async_decision_model",
    "deploy_decision_model",
    "deploy_text_model",
    "enable_async_autoscaling",
    "enable_autoscaling",
    "extract_model_package",
    "find_still_billing",
    "invoke_decision",
    "invoke_decision_async",
    "open_decision_session",
    "load_state",
    "package_model",
    "score_jsonlines",
    "start_local_server",
    "stream_chat",
]

DECISION_STEP = "04_deploy_decision_endpoint (workshop.deploy_decision_model)"
TEXT_STEP = "02_deploy_text_dlc (workshop.deploy_text_model)"


# ====================================================================== workshop steps
def package_model(gguf: Path | str | None = None, settings: Settings | None = None, state: WorkshopState | None = None,
                  progress: bool = True) -> dict[str, Any]:
    """Step 01: inspect the GGUF (a path or a hub reference; one that cannot work is refused here), build `model.tar.gz`
    (every shard at its root, sha256 recorded), or nothing with `SEMIF_MODEL_DATA=uncompressed`; on AWS also upload it.

    Returns `ModelPackage.record()`: `{"tarball", "gguf_name", "sha256", "size", "gguf_size", "files", "source",
    "model_data_url", "uploaded"}`.
    """
    settings, state = settings_and_state(settings, state)
    from .decision.inspection import check_for_packaging

    package = build_model_package(gguf, out_dir=Path(settings.state_file).parent / "packages", settings=settings,
                                  inspect=lambda path, identity: check_for_packaging(path, identity, settings))
    info: dict[str, Any] = package.record()
    info.update(select_target(settings).publish_model(package, state, progress))
    state.set("model_package", info)
    state.set("model_data_url", info["model_data_url"])
    return info


def deploy_text_model(settings: Settings | None = None, state: WorkshopState | None = None,
                      llama_settings: Mapping[str, Any] | None = None, wait: bool = True) -> str:
    """Step 02: serve the packaged GGUF with llama.cpp's chat API. Returns the endpoint name or local URL."""
    settings, state = settings_and_state(settings, state)
    return state.set("text_endpoint", select_target(settings).deploy_text_model(state, llama_settings, wait))


def build_adapter_image(settings: Settings | None = None, state: WorkshopState | None = None, wait: bool = True,
                        log: Callable[[str], None] = print) -> str:
    """Step 03: build the decision adapter image with CodeBuild and return it by digest, `<ECR URI>@sha256:...` (local: a note;
    container: `container/Dockerfile` built here FROM the text path's DLC image, real or replica)."""
    settings, state = settings_and_state(settings, state)
    return state.set("image_uri", select_target(settings).build_adapter_image(state, wait, log))


def deploy_decision_model(settings: Settings | None = None, state: WorkshopState | None = None, wait: bool = True) -> str:
    """Step 04: serve the decision adapter on the packaged model. Returns the endpoint name or local URL."""
    settings, state = settings_and_state(settings, state)
    return state.set("decision_endpoint", select_target(settings).deploy_decision_model(state, wait))


def invoke_decision(request: Mapping[str, Any] | str | bytes, settings: Settings | None = None,
                    state: WorkshopState | None = None, mode: str | None = None, session: str | None = None) -> dict[str, Any]:
    """Score one Jev / System One request on the decision endpoint (local adapter or SageMaker); with `session` (from
    `open_decision_session`) it goes to the instance holding that session's state, and may send only its questions."""
    settings, state = settings_and_state(settings, state)
    body = encode_payload(request)
    return select_target(settings).invoke_decision(state.require("decision_endpoint", DECISION_STEP), body, mode, session)


def open_decision_session(settings: Settings | None = None, state: WorkshopState | None = None) -> str:
    """Open a SageMaker stateful session on the decision endpoint (`SessionId=NEW_SESSION` on AWS, the container's
    header on this machine); its id. The states its requests send stay cached on one instance until
    `close_decision_session` or the expiry (SAGEMAKER_SESSIONS_EXPIRATION)."""
    settings, state = settings_and_state(settings, state)
    session, _expires = select_target(settings).open_session(state.require("decision_endpoint", DECISION_STEP))
    return session


def close_decision_session(session: str, settings: Settings | None = None, state: WorkshopState | None = None) -> str:
    """Close a stateful session, releasing the states it kept cached; the id closed."""
    settings, state = settings_and_state(settings, state)
    return select_target(settings).close_session(state.require("decision_endpoint", DECISION_STEP), session)


ASYNC_STEP = "workshop.deploy_async_decision_model"


def deploy_async_decision_model(settings: Settings | None = None, state: WorkshopState | None = None, wait: bool = True) -> str:
    """The decision image behind SageMaker's queue (Asynchronous Inference): requests may run up to an hour and answer
    in S3. On this machine there is no queue, and the decision server from step 04 answers."""
    settings, state = settings_and_state(settings, state)
    return state.set("async_decision_endpoint", select_target(settings).deploy_async_decision_model(state, wait))


def invoke_decision_async(request: Mapping[str, Any] | str | bytes, settings: Settings | None = None,
                          state: WorkshopState | None = None, wait: bool = True) -> dict[str, Any]:
    """Queue one decision request on the async endpoint and (with `wait`) read its answer from S3, with a bar while
    it waits; without `wait`, the inference id and the S3 locations of its answer and failure."""
    settings, state = settings_and_state(settings, state)
    body = encode_payload(request)
    endpoint = state.require("async_decision_endpoint", ASYNC_STEP)
    return select_target(settings).invoke_decision_async(state, endpoint, body, wait)


def enable_async_autoscaling(max_instances: int = 1, settings: Settings | None = None,
                             state: WorkshopState | None = None) -> dict[str, Any] | None:
    """Scale the async endpoint to zero when idle and back up when requests wait (AWS only; None on this machine)."""
    settings, state = settings_and_state(settings, state)
    endpoint = state.require("async_decision_endpoint", ASYNC_STEP)
    return select_target(settings).enable_async_autoscaling(state, endpoint, max_instances)


def chat(messages: Sequence[Mapping[str, Any]] | str, settings: Settings | None = None, state: WorkshopState | None = None,
         **params: Any) -> dict[str, Any]:
    """One OpenAI-style chat completion from the text endpoint (local twin or the DLC)."""
    settings, state = settings_and_state(settings, state)
    body = encode_payload(build_chat_request(messages, stream=False, **params))
    return select_target(settings).chat(state.require("text_endpoint", TEXT_STEP), body)


def stream_chat(messages: Sequence[Mapping[str, Any]] | str, settings: Settings | None = None,
                state: WorkshopState | None = None, **params: Any) -> Iterator[str]:
    """Yield the text deltas of a streamed chat completion (`"stream": true`)."""
    settings, state = settings_and_state(settings, state)
    body = encode_payload(build_chat_request(messages, stream=True, **params))
    yield from select_target(settings).stream_chat(state.require("text_endpoint", TEXT_STEP), body)


def score_jsonlines(path: Path | str, settings: Settings | None = None, state: WorkshopState | None = None,
                    wait: bool = True) -> list[dict[str, Any]] | str:
    """Score a JSON Lines file of requests: Batch Transform on AWS (its request printed, its output read back from S3),
    one JSON Lines POST locally (the transform's request printed as the plan). Returns the response records, one per
    line, in order; on AWS with `wait=False`, the transform job's name.
    """
    settings, state = settings_and_state(settings, state)
    body = Path(path).read_bytes()
    return select_target(settings).score_jsonlines(state, Path(path), body, wait)


def enable_autoscaling(min_instances: int = 1, max_instances: int = 2, invocations_per_instance: float = 60.0,
                       settings: Settings | None = None, state: WorkshopState | None = None) -> dict[str, Any] | None:
    """Target-tracking autoscaling on the decision endpoint, its two requests printed (AWS only: on this machine the
    requests are printed as the plan, and None returned)."""
    settings, state = settings_and_state(settings, state)
    return select_target(settings).enable_autoscaling(state, min_instances, max_instances, invocations_per_instance)


def check_permissions(settings: Settings | None = None, state: WorkshopState | None = None,
                      log: Callable[[str], None] = print) -> Any:
    """Notebook 01's first step: which AWS actions the workshop needs and whether you have them, in one
    table (`aws.preflight.PermissionCheck`), before anything is created. Local mode needs none: None."""
    settings, state = settings_and_state(settings, state)
    return select_target(settings).check_permissions(state, log)


# ====================================================================== cleanup
@dataclass
class CleanupReport:
    removed: list[str] = field(default_factory=list)
    already_gone: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"removed {len(self.removed)}, already gone {len(self.already_gone)}, failed {len(self.failed)}"
                 + (f", kept {len(self.kept)}" if self.kept else "")]
        lines += [f"  - removed {r}" for r in self.removed]
        lines += [f"  - already gone {r}" for r in self.already_gone]
        lines += [f"  = kept {r}" for r in self.kept]
        lines += [f"  ! failed {r}" for r in self.failed]
        return "\n".join(lines)

    def _repr_markdown_(self) -> str:  # notebooks show the list
        return "```\n" + str(self) + "\n```"


def cleanup(settings: Settings | None = None, state: WorkshopState | None = None, delete_state: bool = True) -> CleanupReport:
    """Delete everything this run created, newest first, in the region the state file records, and report it.

    Each resource is removed by the target that created it (`targets.owner_of`). A resource that is
    already gone counts as removed-before; a bucket other runs still use is kept; one that fails
    stays in the state file (so a second `cleanup()` retries it) and the state file is kept.
    """
    settings, state = settings_and_state(settings, state)
    settings = settings_for_cleanup(settings, state)
    report = CleanupReport()
    for entry in list(reversed(state.resources)):
        label = f"{entry['kind']} {entry['name']}"
        try:
            existed = owner_of(entry["kind"], settings).delete_resource(entry)
        except KeptResource as kept:
            report.kept.append(f"{label}: {kept}")
            state.forget(entry["kind"], entry["name"])
            continue
        except Exception as exc:  # noqa: BLE001 - report and keep going: cleanup must be best effort
            report.failed.append(f"{label}: {exc}")
            continue
        (report.removed if existed else report.already_gone).append(label)
        state.forget(entry["kind"], entry["name"])
    if not report.failed and delete_state:
        state.path.unlink(missing_ok=True)
    return report


def find_still_billing(recorded: Sequence[Mapping[str, Any]], settings: Settings | None = None) -> list[str]:
    """After `cleanup`, a describe call for each resource `recorded` held (take `list(state.resources)` before cleanup)
    that bills while it exists: what is still there and what it costs. Empty when nothing bills any more. It asks in
    this session's region, which `cleanup` has just checked is the run's. It takes no state: cleanup has deleted the
    state file, and loading one would start a new run."""
    settings = settings or load_settings()
    left = [owner_of(entry["kind"], settings).still_billing(dict(entry)) for entry in recorded]
    return [line for line in left if line]
