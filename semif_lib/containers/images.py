"""The DLC replica and the adapter image, built on this machine from the repository's Dockerfiles.

The replica carries the llama-server that `container/build_libllama.sh` built, on a Debian base; the adapter
image is `container/Dockerfile`, unchanged, on top of it, as CodeBuild builds it on the real DLC.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Mapping

from ..paths import repo_root
from ..settings import ContainerSettings
from .runtime import ContainerError, ContainerRuntime, image_exists

__all__ = ["build_adapter_image", "build_image", "build_replica_image", "default_base_image", "llama_cpp_dir"]

REPO_ROOT = repo_root()
# What container/build_libllama.sh builds by default: the published build nearest the one the DLC's tags carry
# today (v0.4.1 = b10964; serving.llamabinding.DLC_RELEASES). The replica image is tagged with it.
LLAMA_CPP_BUILD = 10970


def llama_cpp_dir(build: int, suffix: str = "") -> Path:
    """Where `container/build_libllama.sh BUILD` puts llama-server, libllama and the build's binding (`-cuda`: CUDA=1)."""
    return REPO_ROOT / ".semif" / f"llama-cpp-b{build}{suffix}"


LLAMA_CPP_DIR = llama_cpp_dir(LLAMA_CPP_BUILD)
REPLICA_IMAGE = f"localhost/semif-dlc-replica:b{LLAMA_CPP_BUILD}"
ADAPTER_IMAGE = "localhost/semif-decision:latest"
BASE_IMAGE = "localhost/semif-debian:bookworm"


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


def default_base_image(runtime: ContainerRuntime, settings: ContainerSettings) -> str:
    """The replica's base: `settings.base_image` (SEMIF_BASE_IMAGE), else the locally made Debian (.ci/container_setup.sh),
    else Docker Hub's."""
    configured = settings.base_image
    if configured:
        return configured
    return BASE_IMAGE if image_exists(runtime, BASE_IMAGE) else "docker.io/library/debian:bookworm-slim"


def build_replica_image(runtime: ContainerRuntime, settings: ContainerSettings, llama_cpp_dir: Path = LLAMA_CPP_DIR,
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
    args = {"BASE_IMAGE": default_base_image(runtime, settings), "LLAMA_CPP_DIR": relative.as_posix()}
    return build_image(runtime, REPO_ROOT / "container" / "replica" / "Dockerfile", tag, args,
                       log_path=log_dir / "build-replica-image.log")


def build_adapter_image(runtime: ContainerRuntime, base_image: str = REPLICA_IMAGE, tag: str = ADAPTER_IMAGE,
                        log_dir: Path = Path("results/tmp")) -> str:
    """container/Dockerfile, unchanged, FROM `base_image` through the BASE_IMAGE argument CodeBuild passes."""
    return build_image(runtime, REPO_ROOT / "container" / "Dockerfile", tag, {"BASE_IMAGE": base_image},
                       log_path=log_dir / "build-adapter-image.log")
