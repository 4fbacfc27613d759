"""Images built and run on this machine as SageMaker runs them, and llama-server without a container.

SageMaker starts an inference image as `docker run IMAGE serve`, with the model unpacked read-only
at `/opt/ml/model`, expects `GET /ping` and `POST /invocations` on port 8080, and stops it with
SIGTERM, then SIGKILL 30 s later. `run_container` does exactly that through the docker or podman
CLI (whichever `find_container_runtime` finds), publishing the container's 8080 on a loopback port.

The text path's peer can also run without any runtime: `start_native_text_server` runs the
llama-server that `container/build_libllama.sh` built (the same binary the DLC replica image
carries), with the command line the DLC entrypoint would build (`llama_flags`). `run_text_server`
picks one and says which it ran, so a benchmark can record what it measured.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Literal, Mapping, Sequence

from .contract import KILL_AFTER_S, MODEL_DIR, PORT
from .errors import SemifError
from .llama_flags import build_server_command, find_gguf_in_dir
from .llamabuilds import parse_llama_build, read_llama_server_build
from .paths import repo_root
from .processes import ServerProcess, ServerStartError, start_server, wait_for_ping
from .settings import load_settings

__all__ = [
    "ContainerError",
    "ContainerRuntime",
    "RunningContainer",
    "TextServer",
    "build_adapter_image",
    "build_image",
    "build_replica_image",
    "default_base_image",
    "find_container_runtime",
    "find_llama_server",
    "image_exists",
    "read_image_build",
    "run_container",
    "run_text_server",
    "start_native_text_server",
]

REPO_ROOT = repo_root()
# What container/build_libllama.sh builds by default: the published build nearest the one the DLC's tags carry
# today (v0.4.1 = b10964; serving.llamabinding.DLC_RELEASES). The replica image is tagged with it.
LLAMA_CPP_BUILD = 10970
LLAMA_CPP_DIR = REPO_ROOT / ".semif" / f"llama-cpp-b{LLAMA_CPP_BUILD}"
REPLICA_IMAGE = f"localhost/semif-dlc-replica:b{LLAMA_CPP_BUILD}"
ADAPTER_IMAGE = "localhost/semif-decision:latest"
BASE_IMAGE = "localhost/semif-debian:bookworm"
STOP_TIMEOUT_S = int(KILL_AFTER_S)  # SageMaker's SIGTERM-to-SIGKILL grace period (`docker stop -t` takes whole seconds)

TextKind = Literal["auto", "container", "native"]


class ContainerError(SemifError):
    """A container runtime, image or container did not do what SageMaker would need; the message says what."""

    status_code = 503
    error_type = "container_failed"


@dataclass(frozen=True)
class ContainerRuntime:
    """The docker or podman CLI, with the environment it needs (e.g. `CONTAINERS_CONF` on these machines)."""

    binary: str
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return Path(self.binary).name

    def run(self, *args: str, timeout_s: float | None = 120, check: bool = True, **kwargs: object) -> subprocess.CompletedProcess:
        """One CLI call; a non-zero exit raises `ContainerError` with the CLI's own stderr."""
        env = {**os.environ, **self.env}
        done = subprocess.run([self.binary, *args], env=env, capture_output=True, text=True, timeout=timeout_s, **kwargs)
        if check and done.returncode != 0:
            raise ContainerError(f"`{self.name} {' '.join(args[:3])} ...` failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
        return done


def find_container_runtime(preferred: str | None = None) -> ContainerRuntime | None:
    """The first of `preferred`, podman, docker whose CLI answers `info`; None when there is none.

    `SEMIF_CONTAINER_RUNTIME` names the preferred one (`none` disables containers). Machine-specific
    runtime settings (the CI machines' runc and ulimits) come from the runtime's own configuration
    (`CONTAINERS_CONF`), never from here.
    """
    preferred = preferred if preferred is not None else (load_settings().container_runtime or "")
    if preferred.lower() == "none":
        return None
    candidates = [preferred] if preferred else ["podman", "docker"]
    for candidate in candidates:
        binary = shutil.which(candidate)
        if not binary:
            continue
        runtime = ContainerRuntime(binary)
        try:
            if runtime.run("info", timeout_s=60, check=False).returncode == 0:
                return runtime
        except (OSError, subprocess.TimeoutExpired):
            continue
    return None


def image_exists(runtime: ContainerRuntime, image: str) -> bool:
    """Whether `image` is in the runtime's local store (nothing is pulled)."""
    return runtime.run("image", "inspect", image, check=False).returncode == 0


def read_image_build(runtime: ContainerRuntime, image: str, timeout_s: float = 900) -> int | None:
    """The llama.cpp build an image carries, from its own `llama-server --version` (pulled first if it is not local).

    What `semif dlc check --run` reads: the DLC labels no build, so the binary is the one source that cannot drift."""
    done = runtime.run("run", "--rm", "--entrypoint", "llama-server", image, "--version", timeout_s=timeout_s, check=False)
    build = parse_llama_build(done.stdout + done.stderr)
    if build is None:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise ContainerError(f"`{runtime.name} run --entrypoint llama-server {image} --version` printed no llama.cpp build "
                             f"(exit {done.returncode}): {' | '.join(tail) or 'no output'}")
    return build


def build_image(runtime: ContainerRuntime, dockerfile: Path, tag: str, build_args: Mapping[str, str] | None = None,
                context: Path = REPO_ROOT, log_path: Path | None = None, timeout_s: float = 3600) -> str:
    """`docker build -f DOCKERFILE -t TAG --build-arg ... CONTEXT`; the log goes to `log_path` (shown on failure)."""
    args = ["build", "-f", str(dockerfile), "-t", tag]
    for key, value in (build_args or {}).items():
        args += ["--build-arg", f"{key}={value}"]
    done = runtime.run(*args, str(context), timeout_s=timeout_s, check=False, stdin=subprocess.DEVNULL)
    if log_path is not None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-25:])
        raise ContainerError(f"building {tag} from {dockerfile} failed ({done.returncode}):\n{tail}")
    return tag


def default_base_image(runtime: ContainerRuntime) -> str:
    """The replica's base: `SEMIF_BASE_IMAGE`, else the locally made Debian (.ci/container_setup.sh), else Docker Hub's."""
    configured = load_settings().base_image
    if configured:
        return configured
    return BASE_IMAGE if image_exists(runtime, BASE_IMAGE) else "docker.io/library/debian:bookworm-slim"


def build_replica_image(runtime: ContainerRuntime, base_image: str | None = None, llama_cpp_dir: Path = LLAMA_CPP_DIR,
                        tag: str = REPLICA_IMAGE, log_dir: Path = Path("results/tmp")) -> str:
    """The DLC replica (container/replica/Dockerfile) on llama.cpp from container/build_libllama.sh."""
    llama_cpp_dir = Path(llama_cpp_dir).resolve()
    if not (llama_cpp_dir / "llama-server").is_file():
        raise ContainerError(f"no llama-server in {llama_cpp_dir}: run `bash container/build_libllama.sh` first "
                             f"(llama.cpp b{LLAMA_CPP_BUILD}, about 8 min on 2 cores)")
    try:
        relative = llama_cpp_dir.relative_to(REPO_ROOT)
    except ValueError:
        raise ContainerError(f"{llama_cpp_dir} must be inside {REPO_ROOT}, the build context") from None
    args = {"BASE_IMAGE": base_image or default_base_image(runtime), "LLAMA_CPP_DIR": relative.as_posix()}
    return build_image(runtime, REPO_ROOT / "container" / "replica" / "Dockerfile", tag, args,
                       log_path=log_dir / "build-replica-image.log")


def build_adapter_image(runtime: ContainerRuntime, base_image: str = REPLICA_IMAGE, tag: str = ADAPTER_IMAGE,
                        log_dir: Path = Path("results/tmp")) -> str:
    """container/Dockerfile, unchanged, FROM `base_image` through the BASE_IMAGE argument CodeBuild passes."""
    return build_image(runtime, REPO_ROOT / "container" / "Dockerfile", tag, {"BASE_IMAGE": base_image},
                       log_path=log_dir / "build-adapter-image.log")


@dataclass
class RunningContainer:
    """A container started by `run_container`: where it answers, and how to stop it as SageMaker does."""

    runtime: ContainerRuntime
    name: str
    image: str
    base_url: str

    def logs(self) -> str:
        done = self.runtime.run("logs", self.name, check=False)
        return done.stdout + done.stderr

    def is_running(self) -> bool:
        done = self.runtime.run("inspect", "-f", "{{.State.Running}}", self.name, check=False)
        return done.stdout.strip() == "true"

    def stop(self, timeout_s: int = STOP_TIMEOUT_S, remove: bool = True) -> int:
        """SIGTERM, SIGKILL after `timeout_s`; returns the container's exit code (and removes it unless told not to)."""
        self.runtime.run("stop", "-t", str(timeout_s), self.name, timeout_s=timeout_s + 60, check=False)
        done = self.runtime.run("inspect", "-f", "{{.State.ExitCode}}", self.name, check=False)
        if remove:
            self.runtime.run("rm", "-f", self.name, check=False)
        try:
            return int(done.stdout.strip())
        except ValueError:
            return -1


def run_container(runtime: ContainerRuntime, image: str, model_dir: Path, port: int, env: Mapping[str, str] | None = None,
                  name: str | None = None, startup_timeout_s: float = 120, ping_path: str = "/ping",
                  extra_args: Sequence[str] = ()) -> RunningContainer:
    """`docker run -d IMAGE serve` as SageMaker runs it: model read-only at /opt/ml/model, 8080 on 127.0.0.1:`port`.

    Waits until `ping_path` answers 200; if the container exits or never answers, its log is in
    the error and it is removed.
    """
    name = name or f"semif-{uuid.uuid4().hex[:10]}"
    args = ["run", "-d", "--name", name, "-p", f"127.0.0.1:{port}:{PORT}",
            "-v", f"{Path(model_dir).resolve()}:{MODEL_DIR}:ro", *extra_args]
    for key, value in (env or {}).items():
        args += ["-e", f"{key}={value}"]
    try:
        runtime.run(*args, image, "serve")
    except (ContainerError, subprocess.TimeoutExpired):
        runtime.run("rm", "-f", name, check=False)  # `run -d` may have created it before failing to start it
        raise
    container = RunningContainer(runtime, name, image, f"http://127.0.0.1:{port}")
    deadline = time.monotonic() + startup_timeout_s
    try:
        while True:
            try:
                wait_for_ping(container.base_url, timeout_s=min(5.0, max(0.5, deadline - time.monotonic())), path=ping_path)
                return container
            except TimeoutError:
                if not container.is_running() or time.monotonic() > deadline:
                    raise
    except (TimeoutError, RuntimeError) as exc:
        logs = container.logs()
        container.stop(timeout_s=5)
        raise ContainerError(f"{image} did not answer {ping_path} on {container.base_url} ({exc}); its log:\n{logs[-3000:]}") from exc


def find_llama_server(directory: Path | None = None) -> Path | None:
    """llama-server from `SEMIF_LLAMA_SERVER`, `directory`, the build of container/build_libllama.sh, or PATH."""
    configured = load_settings().llama_server
    candidates = [Path(configured)] if configured else []
    candidates += [Path(directory) / "llama-server"] if directory else []
    candidates += [LLAMA_CPP_DIR / "llama-server"]
    found = shutil.which("llama-server")
    candidates += [Path(found)] if found else []
    return next((c for c in candidates if c.is_file() and os.access(c, os.X_OK)), None)


@dataclass
class TextServer:
    """A running text-path server: the DLC replica image, the real DLC image, or llama-server natively.

    `chat_path` is where a DLC user's client sends chat completions: `/invocations` behind the
    container's nginx, `/v1/chat/completions` on a bare llama-server (which has no /invocations).
    """

    kind: str  # "dlc-replica-container", "dlc-container" or "native-llama-server"
    base_url: str
    chat_path: str
    ping_path: str
    build: int | None
    image: str | None = None
    log_path: Path | None = None
    command: list[str] = field(default_factory=list)
    fallback_reason: str | None = None  # why `auto` ran llama-server natively instead of the image


def start_native_text_server(model_path: Path, sm_env: Mapping[str, str], port: int, log_path: Path,
                             binary: Path | None = None, startup_timeout_s: float = 120) -> tuple[ServerProcess, TextServer]:
    """llama-server on 127.0.0.1:`port` with the flags the DLC entrypoint derives from `sm_env`, answering /health.

    The `ServerProcess` stops it (SIGTERM, SIGKILL after 30 s), also as a context manager.
    """
    binary = binary or find_llama_server()
    if binary is None:
        raise ContainerError("no llama-server found: run `bash container/build_libllama.sh` (about 7.5 min on 2 cores) "
                             "or set SEMIF_LLAMA_SERVER to one")
    command = build_server_command(dict(sm_env), str(model_path), port, str(binary))
    env = {**os.environ, "LD_LIBRARY_PATH": f"{binary.parent}:{os.environ.get('LD_LIBRARY_PATH', '')}"}
    server = TextServer("native-llama-server", f"http://127.0.0.1:{port}", "/v1/chat/completions", "/health",
                        read_llama_server_build(binary), log_path=log_path, command=command)
    try:
        process = start_server(command, server.base_url, env=env, log_path=log_path, ping_path=server.ping_path,
                               startup_timeout_s=startup_timeout_s)
    except ServerStartError as exc:
        raise ContainerError(f"llama-server did not start ({exc}); its log ({log_path}):\n{exc.output[-3000:]}") from exc
    return process, server


@contextlib.contextmanager
def run_text_server(model_path: Path, sm_env: Mapping[str, str], port: int, kind: TextKind = "auto",
                    log_dir: Path = Path("results/tmp"), image: str = REPLICA_IMAGE,
                    runtime: ContainerRuntime | None = None) -> Iterator[TextServer]:
    """The text DLC as a user would meet it, stopped on exit (SIGTERM).

    `container` runs `image` (the DLC replica, or the real DLC image) with `model_path`'s folder
    mounted at /opt/ml/model; `native` runs llama-server itself; `auto` takes the container when a
    runtime and the image are present and the container starts, else native, saying why in
    `fallback_reason`.
    """
    container, fallback = (None, None) if kind == "native" else _start_text_container(model_path, sm_env, port, kind, image, runtime)
    if container is None:
        process, server = start_native_text_server(model_path, sm_env, port, log_dir / f"llama-server-{port}.log")
        server.fallback_reason = fallback
        with process:
            yield server
        return
    kind_name = "dlc-replica-container" if image == REPLICA_IMAGE else "dlc-container"
    server = TextServer(kind_name, container.base_url, "/invocations", "/ping", _image_build(container.runtime, image), image=image)
    try:
        yield server
    finally:
        log_dir.mkdir(parents=True, exist_ok=True)
        (log_dir / f"{container.name}.log").write_text(container.logs())
        container.stop()


def _start_text_container(model_path: Path, sm_env: Mapping[str, str], port: int, kind: TextKind, image: str,
                          runtime: ContainerRuntime | None) -> tuple[RunningContainer | None, str | None]:
    """`image` serving `model_path` on `port`, or None and why not; with kind="container" a reason is an error."""
    runtime = runtime or find_container_runtime()
    if runtime is None:
        fallback = "no docker or podman CLI answers"
    elif not image_exists(runtime, image):
        fallback = f"no image {image} (see container/README.md)"
    else:
        model_dir = Path(model_path).parent
        env = dict(sm_env)
        if find_gguf_in_dir(model_dir) != Path(model_path):
            env["SM_LLAMA_CPP_MODEL"] = f"{MODEL_DIR}/{Path(model_path).name}"
        try:
            return run_container(runtime, image, model_dir, port, env, ping_path="/ping"), None
        except ContainerError as exc:
            if kind == "container":
                raise
            return None, f"{image} did not start: {str(exc).splitlines()[0]}"
    if kind == "container":
        raise ContainerError(f"cannot run the text DLC in a container: {fallback}; or use kind='native'")
    return None, fallback


def _image_build(runtime: ContainerRuntime, image: str) -> int | None:
    """The llama.cpp build inside an image, from its own `llama-server --version`."""
    done = runtime.run("run", "--rm", "--entrypoint", "llama-server", image, "--version", check=False, timeout_s=120)
    return parse_llama_build(done.stdout + done.stderr)
