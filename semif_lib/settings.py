"""Every `SEMIF_*` environment variable the project reads, in one place.

The settings object is a read-only snapshot: code receives a `Settings` and never
reads `os.environ` itself, so tests can build one explicitly.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

ENV_PREFIX = "SEMIF_"


def detect_cpu_count() -> int:
    """CPUs this process may really use: affinity mask and cgroup quota, not `os.cpu_count()`.

    Inside a container with a CPU quota `os.cpu_count()` reports the host's cores, and
    llama.cpp with too many threads spins on cores it does not get.
    """
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        count = os.cpu_count() or 1
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            count = min(count, max(1, int(int(quota) // int(period))))
    except (OSError, ValueError):
        pass
    return max(1, count)


class Settings(BaseSettings):
    """Runtime configuration. Each field `foo` is read from `SEMIF_FOO`."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, frozen=True, extra="ignore")

    # --- model discovery (same order as AWS's llama.cpp DLC) ---
    model_path: Path | None = Field(None, description="Explicit GGUF file; wins over everything else.")
    model_dir: Path = Field(Path("/opt/ml/model"), description="Searched two levels deep for the first *.gguf.")

    # --- llama.cpp context ---
    n_ctx: int = Field(8192, ge=512, le=131072, description="KV cells shared by the prefix cache and all branches.")
    n_batch: int = Field(2048, ge=64, le=16384, description="Largest batch handed to one llama_decode.")
    n_ubatch: int = Field(512, ge=32, le=4096, description="Physical micro-batch; above 512 was slower on CPU.")
    n_seq_max: int = Field(64, ge=2, le=256, description="KV sequences: cached prefixes plus parallel branches.")
    threads: int = Field(default_factory=detect_cpu_count, ge=1, le=512, description="llama.cpp threads.")
    flash_attn: Literal["auto", "on", "off"] = Field("auto", description="Flash attention type.")
    n_gpu_layers: int = Field(0, ge=-1, description="Layers offloaded to a GPU build (999 = all).")
    cache_tokens: int = Field(4096, ge=0, description="Token budget of the cross-request prefix cache.")
    mode: Literal["fresh", "serial", "parallel"] = Field("parallel", description="Default execution mode.")
    verbose: bool = Field(False, description="Let llama.cpp log more than errors.")

    # --- adapter server ---
    host: str = Field("127.0.0.1", description="Bind address; the container sets 0.0.0.0.")
    port: int = Field(8080, ge=1, le=65535, description="SageMaker's contract port.")
    api_key: str | None = Field(None, description="Bearer token checked when set (local use only).")
    queue_size: int = Field(64, ge=1, le=100000, description="Requests waiting for the worker before 503.")
    max_body_bytes: int = Field(6_291_456, ge=1024, description="SageMaker's real-time payload limit.")

    # --- calibration and workshop ---
    calibration: Path | None = Field(None, description="Calibration file applied to every answer.")
    target: Literal["local", "aws"] = Field("local", description="Workshop target: local servers or AWS.")
    state_file: Path = Field(Path(".semif/workshop_state.json"), description="Resources created by the notebooks.")
    results_dir: Path = Field(Path("results"), description="Where benchmarks and evaluations write JSON.")


def load_settings(**overrides: object) -> Settings:
    """Read the environment, then apply explicit overrides (CLI flags), ignoring `None`s."""
    return Settings(**{k: v for k, v in overrides.items() if v is not None})


def env_names() -> dict[str, str]:
    """Map each setting to its environment variable, for docs and `semif env`."""
    return {name: f"{ENV_PREFIX}{name.upper()}" for name in Settings.model_fields}
