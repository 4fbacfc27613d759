"""The docker or podman CLI, and a container run on this machine as SageMaker runs one.

SageMaker starts an inference image as `docker run IMAGE serve`, with the model unpacked read-only
at `/opt/ml/model`, expects `GET /ping` and `POST /invocations` on port 8080, and stops it with
SIGTERM, then SIGKILL 30 s later. `run_container` does exactly that through the docker or podman
CLI (whichever `find_container_runtime` finds), publishing the container's 8080 on a loopback port.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from ..contract import KILL_AFTER_S, MODEL_DIR, PORT
from ..errors import SemifError
from ..llamabuilds import LlamaVersion, read_llama_version
from ..processes import wait_for_ping
from ..settings import ContainerSettings

__all__ = ["ContainerError", "ContainerRuntime", "RunningContainer", "find_container_runtime", "image_exists", "read_image_version",
           "run_container"]

STOP_TIMEOUT_S = int(KILL_AFTER_S)  # SageMaker's SIGTERM-to-SIGKILL grace period (`docker stop -t` takes whole seconds)


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


def find_container_runtime(settings: ContainerSettings) -> ContainerRuntime | None:
    """The first of the configured runtime, podman, docker whose CLI answers `info`; None when there is none.

    `settings.container_runtime` (SEMIF_CONTAINER_RUNTIME) names the preferred one (`none` disables containers).
    Machine-specific runtime settings (the CI machines' runc and ulimits) come from the runtime's own configuration
    (`CONTAINERS_CONF`), never from here.
    """
    preferred = settings.container_runtime or ""
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


def read_image_version(runtime: ContainerRuntime, image: str, timeout_s: float = 900) -> LlamaVersion:
    """The llama.cpp version and build an image carries, from its own `llama-server --version` (pulled first if it is not
    local); a release whose build number no table here records (v0.7.0 built without git history) has only its version.

    What `semif dlc check --run` reads: the DLC labels no build, so the binary is the one source that cannot drift."""
    done = runtime.run("run", "--rm", "--entrypoint", "llama-server", image, "--version", timeout_s=timeout_s, check=False)
    found = read_llama_version(done.stdout + done.stderr)
    if found.build is None and found.version is None:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise ContainerError(f"`{runtime.name} run --entrypoint llama-server {image} --version` printed no llama.cpp build "
                             f"(exit {done.returncode}): {' | '.join(tail) or 'no output'}")
    return found


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
