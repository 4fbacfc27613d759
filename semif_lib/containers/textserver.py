"""The text path's peer: the text DLC as a user would meet it, in a container or as llama-server natively.

Without any runtime, `start_native_text_server` runs the llama-server that `container/build_libllama.sh`
built (the same binary the DLC replica image carries), with the command line the DLC entrypoint would
build (`llama_flags`). `run_text_server` picks one and says which it ran, so a benchmark can record what
it measured.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Literal, Mapping

from ..contract import MODEL_DIR
from ..llama_flags import build_server_command, find_gguf_in_dir
from ..llamabuilds import parse_llama_build, read_llama_server_build
from ..processes import ServerProcess, ServerStartError, start_server
from ..settings import ContainerSettings
from .images import LLAMA_CPP_DIR, REPLICA_IMAGE
from .runtime import ContainerError, ContainerRuntime, RunningContainer, find_container_runtime, image_exists, run_container

__all__ = ["TextServer", "find_llama_server", "run_text_server", "start_native_text_server"]

TextKind = Literal["auto", "container", "native"]


def find_llama_server(settings: ContainerSettings, directory: Path | None = None) -> Path | None:
    """llama-server from `settings.llama_server` (SEMIF_LLAMA_SERVER), `directory`, container/build_libllama.sh's build, or PATH."""
    configured = settings.llama_server
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
                             binary: Path | None, startup_timeout_s: float = 120) -> tuple[ServerProcess, TextServer]:
    """llama-server on 127.0.0.1:`port` with the flags the DLC entrypoint derives from `sm_env`, answering /health.

    The `ServerProcess` stops it (SIGTERM, SIGKILL after 30 s), also as a context manager.
    """
    if binary is None:  # what find_llama_server found
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
def run_text_server(model_path: Path, sm_env: Mapping[str, str], port: int, settings: ContainerSettings, kind: TextKind = "auto",
                    log_dir: Path = Path("results/tmp"), image: str = REPLICA_IMAGE,
                    runtime: ContainerRuntime | None = None) -> Iterator[TextServer]:
    """The text DLC as a user would meet it, stopped on exit (SIGTERM).

    `container` runs `image` (the DLC replica, or the real DLC image) with `model_path`'s folder
    mounted at /opt/ml/model; `native` runs llama-server itself; `auto` takes the container when a
    runtime and the image are present and the container starts, else native, saying why in
    `fallback_reason`. `settings`: this machine's runtime and llama-server (SEMIF_CONTAINER_RUNTIME, SEMIF_LLAMA_SERVER).
    """
    runtime = runtime or (None if kind == "native" else find_container_runtime(settings))
    container, fallback = (None, None) if kind == "native" else _start_text_container(model_path, sm_env, port, kind, image, runtime)
    if container is None:
        process, server = start_native_text_server(model_path, sm_env, port, log_dir / f"llama-server-{port}.log",
                                                   find_llama_server(settings))
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
