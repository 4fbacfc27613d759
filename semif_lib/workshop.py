"""The notebooks' facade: one call per workshop step, the `target` switch, and one cleanup.

This is the top floor: it may import every wing (the AWS wing for `aws`, local servers for
`local`), and no wing imports it. What a run created is recorded in the state file
(`aws.state.WorkshopState`, re-exported here with `load_state`); notebooks pass names to each
other through it (no `%store`), and `cleanup()` deletes everything in reverse order and reports
what it removed.

The notebook-facing steps dispatch on `Settings.target`:

| step | `local` (processes) | `container` (images, as SageMaker runs them) | `aws` |
|---|---|---|---|
| `package_model` | `model.tar.gz` under `.semif/` | the same | the same tarball, uploaded to S3 (SSE, idempotent) |
| `deploy_text_model` | `semif serve-text` on the extracted tarball | the DLC image (the real one if AWS credentials can pull it, else the local replica) | the llama.cpp DLC endpoint |
| `build_adapter_image` | nothing to build | `container/Dockerfile` FROM that DLC image, built locally | CodeBuild -> ECR |
| `deploy_decision_model` | `semif serve` on the extracted tarball | the adapter image, `run IMAGE serve` | endpoint on the adapter image |
| `invoke_decision`, `chat`, `stream_chat` | HTTP to the local server | HTTP to the container | `invoke_endpoint(_with_response_stream)` |
| `score_jsonlines` | POST JSON Lines to the local adapter | the same, to the container | Batch Transform |

The request bytes are built once (`deployment.encode_payload`) and sent unchanged either way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from .aws.clients import AwsSetupError, aws_errors, get_region, in_region
from .aws.state import WorkshopState, load_state, resource_name, settings_and_state
from .errors import SemifError
from .jsonlines import split_lines
from .processes import is_answering, stop_process, wait_for_ping
from .settings import Settings

__all__ = [
    "LocalServerError",
    "WorkshopState",
    "build_adapter_image",
    "chat",
    "check_permissions",
    "cleanup",
    "deploy_decision_model",
    "deploy_text_model",
    "enable_autoscaling",
    "invoke_decision",
    "load_state",
    "package_model",
    "resource_name",
    "score_jsonlines",
    "require_container_runtime",
    "resolve_text_image",
    "start_local_container",
    "start_local_server",
    "stream_chat",
]


# ====================================================================== local servers
LOCAL_SERVERS = {"decision": "serve", "text": "serve-text"}
LOCAL_TARGETS = ("local", "container")  # targets answered over HTTP on this machine


class LocalServerError(SemifError):
    """A local server (`semif serve`, `semif serve-text`) could not start; the message says what to do."""

    status_code = 503
    error_type = "local_server_failed"


def _port_of(url: str) -> tuple[str, int]:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or 80


def _check_port_free(kind: str, url: str, what: str | None = None) -> None:
    """Fail before starting anything when another program holds the port (uvicorn would exit with a traceback)."""
    import errno
    import socket

    from .settings import env_names

    host, port = _port_of(url)
    variable = env_names()[f"local_{kind}_url"]
    what = what or f"`semif {LOCAL_SERVERS[kind]}`"
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: a port in TIME_WAIT is free
        try:
            sock.bind((host, port))
            return
        except OSError as exc:
            in_use = exc.errno == errno.EADDRINUSE
            reason = exc.strerror
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    if in_use:
        raise LocalServerError(f"port {port} is in use by another program, so {what} cannot listen on {url}: "
                               f"stop that program, or set {variable}=http://127.0.0.1:{free} (a free port; in a notebook "
                               f"`%env {variable}=...`, then rerun the settings cell)", field=f"local_{kind}_url")
    raise LocalServerError(f"{what} cannot listen on {url} ({reason}): "
                           f"set {variable} to a loopback URL such as http://127.0.0.1:{free}", field=f"local_{kind}_url")


def _last_line(path: Path) -> str:
    lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    return lines[-1] if lines else "(nothing logged)"


def _wait_until_serving(kind: str, url: str, process: subprocess.Popen, timeout_s: float, log_path: Path) -> None:
    """Wait for `/ping` with a progress bar (a widget in JupyterLab, stderr elsewhere); a failure is one line."""
    from tqdm.auto import tqdm

    command = f"semif {LOCAL_SERVERS[kind]}"
    deadline = time.monotonic() + timeout_s
    with tqdm(total=None, desc=f"starting {command} on {url}", bar_format="{desc}: {elapsed}", file=sys.stderr,
              dynamic_ncols=True) as bar:  # dynamic: a full-width widget in JupyterLab, not a 20 px box
        try:
            while True:
                try:
                    wait_for_ping(url, min(1.0, max(0.1, deadline - time.monotonic())), process)
                    bar.set_description_str(f"{command} answers on {url}", refresh=False)
                    bar.total = 1  # a full bar once it answers (an unknown total draws an empty one)
                    bar.update(1)
                    return
                except TimeoutError:
                    if time.monotonic() >= deadline:
                        raise LocalServerError(f"`{command}` did not answer {url}/ping within {timeout_s:.0f} s: "
                                               f"its log is {log_path}") from None
                    bar.refresh()
                except RuntimeError:  # the process exited
                    raise LocalServerError(f"`{command}` stopped before answering on {url} (exit code {process.returncode}): "
                                           f"{_last_line(log_path)} [log: {log_path}]") from None
        except BaseException:
            bar.leave = False  # no finished-looking bar above the error
            raise


def start_local_server(kind: str, model_dir: Path | str | None = None, settings: Settings | None = None,
                       state: WorkshopState | None = None, env: Mapping[str, str] | None = None,
                       timeout_s: float = 180.0) -> str:
    """Start `semif serve` (kind="decision") or `semif serve-text` (kind="text") in the background.

    It listens where `SEMIF_LOCAL_DECISION_URL` / `SEMIF_LOCAL_TEXT_URL` say, reads the model from
    `model_dir` the way the container reads `/opt/ml/model`, and is recorded in the state file so
    that `cleanup()` stops it. A server already answering there is reused. Returns its URL. A
    progress bar shows the wait; a port held by another program, or a server that stops before
    answering, raises `LocalServerError` with one line that says what to do.
    """
    settings, state = settings_and_state(settings, state)
    if kind not in LOCAL_SERVERS:
        raise ValueError(f"kind must be one of {sorted(LOCAL_SERVERS)}")
    url = settings.local_decision_url if kind == "decision" else settings.local_text_url
    if is_answering(url):
        return url
    _check_port_free(kind, url)
    host, port = _port_of(url)
    child_env = {**os.environ, **(env or {}), "SEMIF_HOST": host, "SEMIF_PORT": str(port)}
    if model_dir is not None:
        child_env["SEMIF_MODEL_DIR"] = str(model_dir)
        child_env.pop("SEMIF_MODEL_PATH", None)
    log_path = Path(settings.state_file).parent / f"{kind}-server.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = log_path.open("ab")
    process = subprocess.Popen([sys.executable, "-m", "semif_lib.cli", LOCAL_SERVERS[kind], "--host", host, "--port", str(port)],
                               env=child_env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    state.record("local_process", f"{kind}-server", pid=process.pid, url=url, log=str(log_path))
    try:
        _wait_until_serving(kind, url, process, timeout_s, log_path)
    except BaseException:
        stop_process(process.pid)
        state.forget("local_process", f"{kind}-server")
        raise
    return url


def start_local_container(kind: str, image: str, model_dir: Path, settings: Settings, state: WorkshopState,
                          env: Mapping[str, str] | None = None, log: Callable[[str], None] = print) -> str:
    """Run `image` as SageMaker does (`run IMAGE serve`, model read-only at /opt/ml/model, SIGTERM on stop),
    its port 8080 published where `SEMIF_LOCAL_{DECISION,TEXT}_URL` says; recorded for `cleanup()`."""
    from .containers import ContainerError, run_container

    url = settings.local_decision_url if kind == "decision" else settings.local_text_url
    if is_answering(url):
        return url
    runtime = require_container_runtime()
    _check_port_free(kind, url, what=f"the {kind} container")
    name = f"semif-{kind}-{state.run_id}"
    runtime.run("rm", "-f", name, check=False)  # a stopped one left by an interrupted run
    log(f"starting {image} as {name} on {url} (`{runtime.name} run ... {image} serve`)")
    try:
        run_container(runtime, image, model_dir, _port_of(url)[1], env, name=name, startup_timeout_s=settings.startup_timeout_s)
    except ContainerError as exc:
        raise LocalServerError(str(exc)) from None
    state.record("local_container", name, runtime=runtime.binary, image=image, url=url)
    return url


def require_container_runtime() -> Any:
    """The docker or podman CLI for target=container, or one line on how to get one."""
    from .containers import find_container_runtime

    runtime = find_container_runtime()
    if runtime is None:
        raise LocalServerError("target=container needs a working docker or podman CLI (none answered `info`): install one, "
                               "or use target=local, which runs the same servers as processes")
    return runtime


def resolve_text_image(settings: Settings, runtime: Any, log: Callable[[str], None] = print) -> str:
    """The text path's image for target=container: the real llama.cpp DLC if it is here or AWS credentials
    can pull it, else the local replica (container/replica/Dockerfile), built on first use."""
    from .containers import REPLICA_IMAGE, build_replica_image, image_exists

    try:
        from .aws.imagebuild import pull_dlc_image

        with aws_errors("pull the llama.cpp DLC image"):
            uri = pull_dlc_image(runtime, get_region(settings), settings.dlc_variant, settings=settings)
        log(f"text image: the llama.cpp DLC itself, {uri}")
        return uri
    except Exception as exc:  # noqa: BLE001 - no credentials, no permission, no network: the replica stands in
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        log(f"text image: the local DLC replica {REPLICA_IMAGE} (the real DLC could not be pulled: {reason})")
    if not image_exists(runtime, REPLICA_IMAGE):
        log("building the DLC replica (container/replica/Dockerfile, about a minute once llama.cpp is built) ...")
        build_replica_image(runtime)
    return REPLICA_IMAGE


def extract_model_package(tarball: Path | str, dest: Path | str) -> Path:
    """Unpack `model.tar.gz` into `dest` as SageMaker unpacks ModelDataUrl into /opt/ml/model."""
    import tarfile

    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tarball, "r:gz", copybufsize=8 << 20) as tar:
        try:
            tar.extractall(dest, filter="data")
        except TypeError:  # Python < 3.11.4: no extraction filters; our tarballs hold one regular file
            if any(not m.isfile() or "/" in m.name or m.name.startswith(".") for m in tar.getmembers()):
                raise ValueError(f"{tarball} holds more than plain files at its root") from None
            tar.extractall(dest)
    return dest


# ====================================================================== workshop steps
def package_model(gguf: Path | str | None = None, settings: Settings | None = None, state: WorkshopState | None = None,
                  progress: bool = True) -> dict[str, Any]:
    """Step 01: build `model.tar.gz` (GGUF at its root, sha256 recorded); on AWS also upload it to S3.

    Returns `{"tarball", "gguf_name", "sha256", "size", "model_data_url", "uploaded"}`.
    """
    from .aws import packaging

    settings, state = settings_and_state(settings, state)
    package = packaging.build_model_tarball(gguf, out_dir=Path(settings.state_file).parent / "packages")
    info: dict[str, Any] = {"tarball": str(package.tarball), "gguf_name": package.gguf_name, "sha256": package.sha256,
                            "size": package.tarball_size, "model_data_url": package.tarball.resolve().as_uri(), "uploaded": False}
    if settings.target == "aws":
        from .aws.dlc import require_dlc_region

        with aws_errors("package_model (01)"):
            require_dlc_region(get_region(settings))  # before the bucket: no DLC here, no endpoint later
            result = packaging.upload_model(package, settings=settings, state=state, progress=progress)
        info.update(model_data_url=result.uri, uploaded=not result.skipped)
    state.set("model_package", info)
    state.set("model_data_url", info["model_data_url"])
    return info


def _local_model_dir(settings: Settings, state: WorkshopState) -> Path:
    info = state.require("model_package", "01_package_gguf_to_s3 (workshop.package_model)")
    dest = Path(settings.state_file).parent / "opt-ml-model" / info["sha256"][:12]
    if not any(dest.glob("*.gguf")):
        extract_model_package(info["tarball"], dest)
    return dest


def deploy_text_model(settings: Settings | None = None, state: WorkshopState | None = None,
                      llama_settings: Mapping[str, Any] | None = None, wait: bool = True) -> str:
    """Step 02: serve the packaged GGUF with llama.cpp's chat API. Returns the endpoint name or local URL."""
    from .aws import deployment

    settings, state = settings_and_state(settings, state)
    if settings.target in LOCAL_TARGETS:
        from .llama_flags import build_sm_env

        env = build_sm_env(deployment.text_settings(settings.dlc_variant, llama_settings))
        if settings.target == "container":
            image = resolve_text_image(settings, require_container_runtime())
            url = start_local_container("text", image, _local_model_dir(settings, state), settings, state, env=env)
            state.set("text_image", image)
        else:
            url = start_local_server("text", _local_model_dir(settings, state), settings, state, env=env)
        return state.set("text_endpoint", url)
    with aws_errors("deploy_text_model (02)"):  # the variant's defaults merged with llama_settings (GPU offload stays)
        name = deployment.deploy_text_endpoint(settings=settings, state=state, llama_settings=llama_settings, wait=wait)
    return state.set("text_endpoint", name)


def build_adapter_image(settings: Settings | None = None, state: WorkshopState | None = None, wait: bool = True,
                        log: Callable[[str], None] = print) -> str:
    """Step 03: build the decision adapter image with CodeBuild and return its ECR URI (local: a note;
    container: `container/Dockerfile` built here FROM the text path's DLC image, real or replica)."""
    settings, state = settings_and_state(settings, state)
    if settings.target == "container":
        from .containers import ADAPTER_IMAGE
        from .containers import build_adapter_image as build_image_here

        runtime = require_container_runtime()
        base = state.get("text_image") or resolve_text_image(settings, runtime, log)
        log(f"building {ADAPTER_IMAGE} from container/Dockerfile with BASE_IMAGE={base} (a few minutes: pip inside the image) ...")
        tag = build_image_here(runtime, base, log_dir=Path(settings.state_file).parent)
        log(f"built {tag}; log: {Path(settings.state_file).parent / 'build-adapter-image.log'}")
        return state.set("image_uri", tag)
    if settings.target == "local":
        log("target=local: no image to build; `semif serve` runs from this checkout (container/Dockerfile is what CodeBuild builds)")
        return state.set("image_uri", "local:semif-adapter")
    from .aws import imagebuild

    with aws_errors("build_adapter_image (03)"):
        uri = imagebuild.build_adapter_image(settings=settings, state=state, wait=wait, log=log)
    return state.set("image_uri", uri)


def deploy_decision_model(settings: Settings | None = None, state: WorkshopState | None = None, wait: bool = True) -> str:
    """Step 04: serve the decision adapter on the packaged model. Returns the endpoint name or local URL."""
    settings, state = settings_and_state(settings, state)
    if settings.target == "container":
        image = state.require("image_uri", "03_build_adapter_image (workshop.build_adapter_image)")
        if image.startswith("local:") or "amazonaws.com" in image:
            raise LocalServerError(f"the recorded adapter image {image} is not a local image: run 03_build_adapter_image "
                                   "with target=container first", field="image_uri")
        url = start_local_container("decision", image, _local_model_dir(settings, state), settings, state)
        return state.set("decision_endpoint", url)
    if settings.target == "local":
        url = start_local_server("decision", _local_model_dir(settings, state), settings, state)
        return state.set("decision_endpoint", url)
    from .aws import deployment

    with aws_errors("deploy_decision_model (04)"):
        name = deployment.deploy_decision_endpoint(settings=settings, state=state, wait=wait)
    return state.set("decision_endpoint", name)


def _post_local(url: str, body: bytes, content_type: str, accept: str = "application/json", timeout: float = 300.0) -> bytes:
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": content_type, "Accept": accept})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.read()
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace")
        raise RuntimeError(f"{url} answered {exc.code}: {detail}") from None


def invoke_decision(request: Mapping[str, Any] | str | bytes, settings: Settings | None = None,
                    state: WorkshopState | None = None, mode: str | None = None) -> dict[str, Any]:
    """Score one Jev / System One request on the decision endpoint (local adapter or SageMaker)."""
    from .aws import deployment

    settings, state = settings_and_state(settings, state)
    body = deployment.encode_payload(request)
    target = state.require("decision_endpoint", "04_deploy_decision_endpoint (workshop.deploy_decision_model)")
    if settings.target in LOCAL_TARGETS:
        query = f"?mode={mode}" if mode else ""
        return json.loads(_post_local(f"{target}/invocations{query}", body, "application/json"))
    with aws_errors("invoke_decision"):
        return deployment.invoke_decision_endpoint(target, body, settings=settings, mode=mode)


def chat(messages: Sequence[Mapping[str, Any]] | str, settings: Settings | None = None, state: WorkshopState | None = None,
         **params: Any) -> dict[str, Any]:
    """One OpenAI-style chat completion from the text endpoint (local twin or the DLC)."""
    from .aws import deployment

    settings, state = settings_and_state(settings, state)
    body = deployment.encode_payload(deployment.build_chat_request(messages, stream=False, **params))
    target = state.require("text_endpoint", "02_deploy_text_dlc (workshop.deploy_text_model)")
    if settings.target in LOCAL_TARGETS:
        return json.loads(_post_local(f"{target}/invocations", body, "application/json"))
    with aws_errors("chat"):
        return deployment.invoke_chat_endpoint(target, body, settings=settings)


def stream_chat(messages: Sequence[Mapping[str, Any]] | str, settings: Settings | None = None,
                state: WorkshopState | None = None, **params: Any) -> Iterator[str]:
    """Yield the text deltas of a streamed chat completion (`"stream": true`)."""
    from .aws import deployment

    settings, state = settings_and_state(settings, state)
    body = deployment.encode_payload(deployment.build_chat_request(messages, stream=True, **params))
    target = state.require("text_endpoint", "02_deploy_text_dlc (workshop.deploy_text_model)")
    if settings.target in LOCAL_TARGETS:
        import urllib.request

        req = urllib.request.Request(f"{target}/invocations", data=body, method="POST",
                                     headers={"Content-Type": "application/json", "Accept": "text/event-stream"})
        with urllib.request.urlopen(req, timeout=300) as resp:
            chunks = iter(lambda: resp.read1(65536), b"")
            yield from deployment.iter_chat_deltas(deployment.iter_sse_events(chunks))
        return
    with aws_errors("stream_chat"):
        yield from deployment.stream_chat_endpoint(target, body, settings=settings)


def score_jsonlines(path: Path | str, settings: Settings | None = None, state: WorkshopState | None = None,
                    wait: bool = True) -> list[dict[str, Any]] | str:
    """Score a JSON Lines file of requests: Batch Transform on AWS, one JSON Lines POST locally.

    Locally returns the response records; on AWS returns the S3 URI of the output (or the job
    name when `wait=False`).
    """
    settings, state = settings_and_state(settings, state)
    body = Path(path).read_bytes()
    if settings.target in LOCAL_TARGETS:
        target = state.require("decision_endpoint", "04_deploy_decision_endpoint (workshop.deploy_decision_model)")
        out = _post_local(f"{target}/invocations", body, "application/jsonlines", accept="application/jsonlines")
        return [json.loads(line) for _, line in split_lines(out.decode("utf-8"))]
    from .aws import scaling

    with aws_errors("score_jsonlines (04, Batch Transform)"):
        return scaling.run_batch_transform(Path(path), settings=settings, state=state, wait=wait)


def enable_autoscaling(min_instances: int = 1, max_instances: int = 2, invocations_per_instance: float = 60.0,
                       settings: Settings | None = None, state: WorkshopState | None = None) -> dict[str, Any] | None:
    """Target-tracking autoscaling on the decision endpoint (AWS only; local mode returns None)."""
    settings, state = settings_and_state(settings, state)
    if settings.target in LOCAL_TARGETS:
        return None
    from .aws import scaling

    endpoint = state.require("decision_endpoint", "04_deploy_decision_endpoint (workshop.deploy_decision_model)")
    with aws_errors("enable_autoscaling (04)"):
        return scaling.enable_autoscaling(endpoint, min_instances=min_instances, max_instances=max_instances,
                                          invocations_per_instance=invocations_per_instance, settings=settings, state=state)


def check_permissions(settings: Settings | None = None, state: WorkshopState | None = None,
                      log: Callable[[str], None] = print) -> Any:
    """Notebook 01's first step: which AWS actions the workshop needs and whether you have them, in one
    table (`aws.preflight.PermissionCheck`), before anything is created. Local mode needs none: None."""
    settings, state = settings_and_state(settings, state)
    if settings.target in LOCAL_TARGETS:
        log(f"target={settings.target}: no AWS account or permissions needed")
        return None
    from .aws import preflight

    with aws_errors("check_permissions (01)"):
        check = preflight.check_permissions(settings, state)
    log(check.summary())
    return check


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


LOCAL_KINDS = {"local_process", "local_container"}


def settings_for_cleanup(settings: Settings, state: WorkshopState) -> Settings:
    """Settings whose clients reach the region this run's AWS resources live in (the state file's).

    A session in another region would find nothing there, report everything "already gone" and
    delete the state file while the endpoints keep billing: that is refused, naming both regions.
    """
    if state.region is None or all(e["kind"] in LOCAL_KINDS for e in state.resources):
        return settings
    current = get_region(settings)
    if current != state.region:
        raise AwsSetupError(
            f"{state.path} records run {state.run_id}'s resources in {state.region}, but this session is in {current}: "
            f"set SEMIF_AWS_REGION={state.region} (or AWS_REGION) and run cleanup again. Nothing was deleted.")
    return in_region(settings, state.region)


def cleanup(settings: Settings | None = None, state: WorkshopState | None = None, delete_state: bool = True) -> CleanupReport:
    """Delete everything this run created, newest first, in the region the state file records, and report it.

    A resource that is already gone counts as removed-before; a bucket other runs still use is
    kept; one that fails stays in the state file (so a second `cleanup()` retries it) and the state
    file is kept.
    """
    from .aws.teardown import KeptResource, delete_resource

    settings, state = settings_and_state(settings, state)
    with aws_errors("cleanup (99)"):
        settings = settings_for_cleanup(settings, state)
    report = CleanupReport()
    for entry in list(reversed(state.resources)):
        label = f"{entry['kind']} {entry['name']}"
        try:
            with aws_errors(f"cleanup of {label}"):
                existed = delete_resource(entry, settings)
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
