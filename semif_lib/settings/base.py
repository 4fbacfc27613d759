"""What every concern's settings share: the variables' prefix, the config, the execution modes and debias kinds."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal, get_args

from pydantic_settings import SettingsConfigDict

ENV_PREFIX = "SEMIF_"
# Every field names its variable (`validation_alias="SEMIF_..."`, SageMaker's own where it has one), so a grep for the
# variable finds the field; validate_by_name: code still sets a field by its name (tests, CLI flags)
SETTINGS_CONFIG = SettingsConfigDict(env_prefix=ENV_PREFIX, frozen=True, extra="ignore", validate_by_name=True, validate_by_alias=True)
# After the drain window (`drain_s`) uvicorn waits this much longer, then the worker's last decode
# gets what is left; both end a second before SageMaker's SIGKILL (`serving.runner.Drain`).
DRAIN_TAIL_S = 2.0
RESERVED_RUN_IDS = frozenset({"text", "decision", "async", "batch", "adapter", "build", "sagemaker", "codebuild"})

Mode = Literal["fresh", "serial", "parallel"]
MODES: tuple[str, ...] = get_args(Mode)  # the execution modes a request may ask for (see decision.engine)
Debias = Literal["none", "rotations", "prior"]  # how a choice question's option order is debiased (x_debias, SEMIF_DEFAULT_DEBIAS)


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
