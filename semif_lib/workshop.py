"""The workshop's resource registry, the `target` switch and one cleanup.

Every AWS resource a notebook creates is named `semif-<purpose>-<run id>`, tagged with the run id
and recorded, in creation order, in a small JSON state file (`SEMIF_STATE_FILE`). Notebooks pass
names to each other through it (no `%store`), and `cleanup()` deletes everything in reverse order
and reports what it removed.

The notebook-facing steps dispatch on `Settings.target`:

| step | `local` | `aws` |
|---|---|---|
| `package_model` | `model.tar.gz` under `.semif/` | the same tarball, uploaded to S3 (SSE, idempotent) |
| `deploy_text_model` | `semif serve-text` on the extracted tarball | the llama.cpp DLC endpoint |
| `build_adapter_image` | nothing to build (the adapter runs from this checkout) | CodeBuild -> ECR |
| `deploy_decision_model` | `semif serve` on the extracted tarball | endpoint on the adapter image |
| `invoke_decision`, `chat`, `stream_chat` | HTTP to the local server | `invoke_endpoint(_with_response_stream)` |
| `score_jsonlines` | POST JSON Lines to the local adapter | Batch Transform |

The request bytes are built once (`deployment.encode_payload`) and sent unchanged either way.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from .settings import Settings, load_settings

__all__ = [
    "WorkshopState",
    "build_adapter_image",
    "chat",
    "cleanup",
    "deploy_decision_model",
    "deploy_text_model",
    "enable_autoscaling",
    "invoke_decision",
    "load_state",
    "package_model",
    "register_cli",
    "resource_name",
    "score_jsonlines",
    "start_local_server",
    "stream_chat",
]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def new_run_id() -> str:
    """Six lowercase characters: short enough for every AWS name limit, enough to keep attendees apart."""
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(secrets.choice(alphabet) for _ in range(6))


def resource_name(run_id: str, purpose: str) -> str:
    """`semif-<purpose>-<run id>`: valid for S3 keys, IAM, ECR, CodeBuild and SageMaker (<= 63 chars)."""
    name = f"semif-{purpose}-{run_id}"
    if len(name) > 63:
        raise ValueError(f"resource name {name!r} is longer than 63 characters")
    return name


@dataclass
class WorkshopState:
    """What a workshop run created (in order) and the values notebooks hand to each other.

    `resources` is a list of `{"kind", "name", ...}` records; `values` holds named results
    (`model_data_url`, `text_endpoint`, `image_uri`, ...). Saved after every change.
    """

    path: Path
    run_id: str
    region: str | None = None
    created: str = field(default_factory=_now)
    resources: list[dict[str, Any]] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)

    # ---------------------------------------------------------------- persistence
    @classmethod
    def load(cls, path: Path | str, run_id: str | None = None) -> "WorkshopState":
        path = Path(path)
        if path.is_file():
            data = json.loads(path.read_text(encoding="utf-8"))
            if run_id and data.get("run_id") != run_id:
                raise ValueError(
                    f"{path} belongs to run {data.get('run_id')!r}, not {run_id!r}: run cleanup() for it first, "
                    "or point SEMIF_STATE_FILE elsewhere"
                )
            return cls(path=path, run_id=data["run_id"], region=data.get("region"), created=data.get("created", _now()),
                       resources=list(data.get("resources", [])), values=dict(data.get("values", {})))
        state = cls(path=path, run_id=run_id or new_run_id())
        state.save()
        return state

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"run_id": self.run_id, "region": self.region, "created": self.created,
                "resources": self.resources, "values": self.values}
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(self.path)

    # ---------------------------------------------------------------- resources and values
    def name(self, purpose: str) -> str:
        return resource_name(self.run_id, purpose)

    def record(self, kind: str, name: str, **details: Any) -> dict[str, Any]:
        """Record a created resource (once: a second record of the same kind and name updates it)."""
        for entry in self.resources:
            if entry["kind"] == kind and entry["name"] == name:
                entry.update(details)
                self.save()
                return entry
        entry = {"kind": kind, "name": name, "created": _now(), **details}
        self.resources.append(entry)
        self.save()
        return entry

    def forget(self, kind: str, name: str) -> None:
        self.resources = [e for e in self.resources if not (e["kind"] == kind and e["name"] == name)]
        self.save()

    def find(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.resources if e["kind"] == kind]

    def has(self, kind: str, name: str) -> bool:
        return any(e["kind"] == kind and e["name"] == name for e in self.resources)

    def set(self, key: str, value: Any) -> Any:
        self.values[key] = value
        self.save()
        return value

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def require(self, key: str, step: str) -> Any:
        """A value an earlier step stored; the error names the notebook that makes it."""
        if key not in self.values:
            raise KeyError(f"no {key!r} in {self.path}: run {step} first")
        return self.values[key]

    def tags(self) -> list[dict[str, str]]:
        from .aws import tag_list

        return tag_list(self.run_id)


def load_state(settings: Settings | None = None) -> WorkshopState:
    """The state of this workshop run (created, with a fresh run id, on first use)."""
    settings = settings or load_settings()
    state = WorkshopState.load(settings.state_file, settings.run_id)
    if settings.target == "aws" and state.region is None:
        from .aws import get_region

        state.region = get_region(settings)
        state.save()
    return state


def _settings_state(settings: Settings | None, state: WorkshopState | None) -> tuple[Settings, WorkshopState]:
    settings = settings or load_settings()
    return settings, state or load_state(settings)


# ====================================================================== local servers
LOCAL_SERVERS = {"decision": "serve", "text": "serve-text"}


def _port_of(url: str) -> tuple[str, int]:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or 80


def wait_for_ping(url: str, timeout_s: float = 120.0, process: subprocess.Popen | None = None, path: str = "/ping") -> None:
    """Poll `url + path` until it answers 200; fail early if `process` exits."""
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"local server exited with code {process.returncode} before answering {url}{path}")
        try:
            with urllib.request.urlopen(url + path, timeout=2) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, OSError) as exc:
            last = exc
        time.sleep(0.25)
    raise TimeoutError(f"{url}{path} did not answer within {timeout_s:.0f} s ({last})")


def _ping_ok(url: str) -> bool:
    try:
        wait_for_ping(url, timeout_s=0.5)
        return True
    except (TimeoutError, RuntimeError):
        return False


def start_local_server(kind: str, model_dir: Path | str | None = None, settings: Settings | None = None,
                       state: WorkshopState | None = None, env: Mapping[str, str] | None = None,
                       timeout_s: float = 180.0) -> str:
    """Start `semif serve` (kind="decision") or `semif serve-text` (kind="text") in the background.

    It listens where `SEMIF_LOCAL_DECISION_URL` / `SEMIF_LOCAL_TEXT_URL` say, reads the model from
    `model_dir` the way the container reads `/opt/ml/model`, and is recorded in the state file so
    that `cleanup()` stops it. A server already answering there is reused. Returns its URL.
    """
    settings, state = _settings_state(settings, state)
    if kind not in LOCAL_SERVERS:
        raise ValueError(f"kind must be one of {sorted(LOCAL_SERVERS)}")
    url = settings.local_decision_url if kind == "decision" else settings.local_text_url
    if _ping_ok(url):
        return url
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
        wait_for_ping(url, timeout_s, process)
    except Exception as exc:
        tail = log_path.read_text(errors="replace")[-2000:]
        stop_process(process.pid)
        state.forget("local_process", f"{kind}-server")
        raise RuntimeError(f"{exc}\n--- {log_path} ---\n{tail}") from None
    return url


def stop_process(pid: int, timeout_s: float = 30.0) -> bool:
    """SIGTERM the process group we started (as SageMaker does), SIGKILL after `timeout_s`."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    except PermissionError:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            finished, _ = os.waitpid(pid, os.WNOHANG)
            if finished:
                return True
        except ChildProcessError:  # not our child (another notebook kernel started it)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
        time.sleep(0.1)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return True


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
    from . import packaging

    settings, state = _settings_state(settings, state)
    package = packaging.build_model_tarball(gguf, out_dir=Path(settings.state_file).parent / "packages")
    info: dict[str, Any] = {"tarball": str(package.tarball), "gguf_name": package.gguf_name, "sha256": package.sha256,
                            "size": package.tarball_size, "model_data_url": package.tarball.resolve().as_uri(), "uploaded": False}
    if settings.target == "aws":
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
    from . import deployment

    settings, state = _settings_state(settings, state)
    llama_settings = dict(llama_settings or deployment.default_text_settings(settings.dlc_variant))
    if settings.target == "local":
        from .llama_flags import build_sm_env

        url = start_local_server("text", _local_model_dir(settings, state), settings, state, env=build_sm_env(llama_settings))
        return state.set("text_endpoint", url)
    name = deployment.deploy_text_endpoint(settings=settings, state=state, llama_settings=llama_settings, wait=wait)
    return state.set("text_endpoint", name)


def build_adapter_image(settings: Settings | None = None, state: WorkshopState | None = None, wait: bool = True,
                        log: Callable[[str], None] = print) -> str:
    """Step 03: build the decision adapter image with CodeBuild and return its ECR URI (local: a note)."""
    settings, state = _settings_state(settings, state)
    if settings.target == "local":
        log("target=local: no image to build; `semif serve` runs from this checkout (container/Dockerfile is what CodeBuild builds)")
        return state.set("image_uri", "local:semif-adapter")
    from . import imagebuild

    uri = imagebuild.build_adapter_image(settings=settings, state=state, wait=wait, log=log)
    return state.set("image_uri", uri)


def deploy_decision_model(settings: Settings | None = None, state: WorkshopState | None = None, wait: bool = True) -> str:
    """Step 04: serve the decision adapter on the packaged model. Returns the endpoint name or local URL."""
    settings, state = _settings_state(settings, state)
    if settings.target == "local":
        url = start_local_server("decision", _local_model_dir(settings, state), settings, state)
        return state.set("decision_endpoint", url)
    from . import deployment

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
    from . import deployment

    settings, state = _settings_state(settings, state)
    body = deployment.encode_payload(request)
    target = state.require("decision_endpoint", "04_deploy_decision_endpoint (workshop.deploy_decision_model)")
    if settings.target == "local":
        query = f"?mode={mode}" if mode else ""
        return json.loads(_post_local(f"{target}/invocations{query}", body, "application/json"))
    return deployment.invoke_decision_endpoint(target, body, settings=settings, mode=mode)


def chat(messages: Sequence[Mapping[str, Any]] | str, settings: Settings | None = None, state: WorkshopState | None = None,
         **params: Any) -> dict[str, Any]:
    """One OpenAI-style chat completion from the text endpoint (local twin or the DLC)."""
    from . import deployment

    settings, state = _settings_state(settings, state)
    body = deployment.encode_payload(deployment.build_chat_request(messages, stream=False, **params))
    target = state.require("text_endpoint", "02_deploy_text_dlc (workshop.deploy_text_model)")
    if settings.target == "local":
        return json.loads(_post_local(f"{target}/invocations", body, "application/json"))
    return deployment.invoke_chat_endpoint(target, body, settings=settings)


def stream_chat(messages: Sequence[Mapping[str, Any]] | str, settings: Settings | None = None,
                state: WorkshopState | None = None, **params: Any) -> Iterator[str]:
    """Yield the text deltas of a streamed chat completion (`"stream": true`)."""
    from . import deployment

    settings, state = _settings_state(settings, state)
    body = deployment.encode_payload(deployment.build_chat_request(messages, stream=True, **params))
    target = state.require("text_endpoint", "02_deploy_text_dlc (workshop.deploy_text_model)")
    if settings.target == "local":
        import urllib.request

        req = urllib.request.Request(f"{target}/invocations", data=body, method="POST",
                                     headers={"Content-Type": "application/json", "Accept": "text/event-stream"})
        with urllib.request.urlopen(req, timeout=300) as resp:
            chunks = iter(lambda: resp.read1(65536), b"")
            yield from deployment.iter_chat_deltas(deployment.iter_sse_events(chunks))
        return
    yield from deployment.stream_chat_endpoint(target, body, settings=settings)


def score_jsonlines(path: Path | str, settings: Settings | None = None, state: WorkshopState | None = None,
                    wait: bool = True) -> list[dict[str, Any]] | str:
    """Score a JSON Lines file of requests: Batch Transform on AWS, one JSON Lines POST locally.

    Locally returns the response records; on AWS returns the S3 URI of the output (or the job
    name when `wait=False`).
    """
    settings, state = _settings_state(settings, state)
    body = Path(path).read_bytes()
    if settings.target == "local":
        target = state.require("decision_endpoint", "04_deploy_decision_endpoint (workshop.deploy_decision_model)")
        out = _post_local(f"{target}/invocations", body, "application/jsonlines", accept="application/jsonlines")
        return [json.loads(line) for line in out.decode("utf-8").splitlines() if line.strip()]
    from . import scaling

    return scaling.run_batch_transform(Path(path), settings=settings, state=state, wait=wait)


def enable_autoscaling(min_instances: int = 1, max_instances: int = 2, invocations_per_instance: float = 60.0,
                       settings: Settings | None = None, state: WorkshopState | None = None) -> dict[str, Any] | None:
    """Target-tracking autoscaling on the decision endpoint (AWS only; local mode returns None)."""
    settings, state = _settings_state(settings, state)
    if settings.target == "local":
        return None
    from . import scaling

    endpoint = state.require("decision_endpoint", "04_deploy_decision_endpoint (workshop.deploy_decision_model)")
    return scaling.enable_autoscaling(endpoint, min_instances=min_instances, max_instances=max_instances,
                                      invocations_per_instance=invocations_per_instance, settings=settings, state=state)


# ====================================================================== cleanup
@dataclass
class CleanupReport:
    removed: list[str] = field(default_factory=list)
    already_gone: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"removed {len(self.removed)}, already gone {len(self.already_gone)}, failed {len(self.failed)}"]
        lines += [f"  - removed {r}" for r in self.removed]
        lines += [f"  - already gone {r}" for r in self.already_gone]
        lines += [f"  ! failed {r}" for r in self.failed]
        return "\n".join(lines)

    def _repr_markdown_(self) -> str:  # notebooks show the list
        return "```\n" + str(self) + "\n```"


def cleanup(settings: Settings | None = None, state: WorkshopState | None = None, delete_state: bool = True) -> CleanupReport:
    """Delete everything this run created, newest first, and report it.

    A resource that is already gone counts as removed-before; one that fails stays in the state file
    (so a second `cleanup()` retries it) and the state file is kept.
    """
    from .teardown import delete_resource

    settings, state = _settings_state(settings, state)
    report = CleanupReport()
    for entry in list(reversed(state.resources)):
        label = f"{entry['kind']} {entry['name']}"
        try:
            existed = delete_resource(entry, settings)
        except Exception as exc:  # noqa: BLE001 - report and keep going: cleanup must be best effort
            report.failed.append(f"{label}: {exc}")
            continue
        (report.removed if existed else report.already_gone).append(label)
        state.forget(entry["kind"], entry["name"])
    if not report.failed and delete_state:
        state.path.unlink(missing_ok=True)
    return report


# ====================================================================== CLI
def command_cleanup(args: Any) -> int:
    report = cleanup(load_settings(**({"target": args.target} if args.target else {})))
    print(report)
    return 1 if report.failed else 0


def command_status(args: Any) -> int:
    settings = load_settings()
    if not Path(settings.state_file).is_file():
        print(f"no workshop state at {settings.state_file}")
        return 0
    state = WorkshopState.load(settings.state_file)
    print(json.dumps({"run_id": state.run_id, "region": state.region, "resources": state.resources, "values": state.values}, indent=2))
    return 0


def register_cli(subparsers: Any) -> None:
    parser = subparsers.add_parser("workshop", help="workshop resources: status and cleanup")
    sub = parser.add_subparsers(dest="workshop_command", required=True)
    clean = sub.add_parser("cleanup", help="delete everything this workshop run created (reverse order)")
    clean.add_argument("--target", choices=("local", "aws"), help="override SEMIF_TARGET")
    clean.set_defaults(func=command_cleanup)
    status = sub.add_parser("status", help="print the state file: run id, resources, values")
    status.set_defaults(func=command_status)
