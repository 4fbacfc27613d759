"""The workshop's settings: the target the notebooks run on, where their state lives, and the images on this machine
(`semif_lib.containers`). Every variable's name is written here, literally, once."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings

from ..contract import PORT
from .base import SETTINGS_CONFIG


class WorkshopSettings(BaseSettings):
    """The workshop: which target the notebooks run on, their state file, results, and the local servers' URLs."""

    model_config = SETTINGS_CONFIG

    target: Literal["local", "container", "aws"] = Field(
        "local", validation_alias="SEMIF_TARGET",
        description="Workshop target: local processes, the two images run locally as SageMaker runs them, or AWS.")
    state_file: Path = Field(Path(".semif/workshop_state.json"), validation_alias="SEMIF_STATE_FILE",
                             description="Resources created by the notebooks.")
    results_dir: Path = Field(Path("results"), validation_alias="SEMIF_RESULTS_DIR",
                              description="Where benchmarks and evaluations write JSON.")
    local_decision_url: str = Field(f"http://127.0.0.1:{PORT}", validation_alias="SEMIF_LOCAL_DECISION_URL",
                                    description="Local decision adapter (`semif serve`) for target=local.")
    local_text_url: str = Field("http://127.0.0.1:8081", validation_alias="SEMIF_LOCAL_TEXT_URL",
                                description="Local text twin (`semif serve-text`) for target=local.")


class ContainerSettings(BaseSettings):
    """The images on this machine (`semif_lib.containers`: the `container` target, container tests, `semif bench peer`)."""

    model_config = SETTINGS_CONFIG

    container_runtime: str | None = Field(
        None, validation_alias="SEMIF_CONTAINER_RUNTIME",
        description="docker or podman CLI to use (`none`: no containers); default: podman, else docker.")
    base_image: str | None = Field(
        None, validation_alias="SEMIF_BASE_IMAGE",
        description="Base of the DLC replica image; default localhost/semif-debian:bookworm if built (no registry), else "
                    "debian:bookworm-slim.")
    llama_server: Path | None = Field(
        None, validation_alias="SEMIF_LLAMA_SERVER",
        description="llama-server binary for the native text server; default: container/build_libllama.sh's build, else PATH.")
