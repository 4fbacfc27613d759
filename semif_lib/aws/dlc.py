"""The AWS llama.cpp Deep Learning Container: where its image lives in each region, and its names.

A leaf of the AWS wing. The registry account differs in opt-in regions, and three modules need
it: deployment (the endpoint's image), imagebuild (CodeBuild pulls the DLC as its base) and
iamroles (the policies allow pulling from that account).
"""

from __future__ import annotations

import re

from .clients import partition_for

__all__ = ["DLC_ACCOUNTS", "DLC_IMAGES", "GPU_INFERENCE_AMI", "dlc_account", "dlc_registry", "resolve_dlc_image_uri"]

DEFAULT_DLC_ACCOUNT = "763104351884"
# Regions whose Deep Learning Containers live in their own registry account (opt-in regions).
DLC_ACCOUNTS = {
    "af-south-1": "626614931356",
    "eu-south-1": "692866216735",
    "me-south-1": "217643126080",
}
DLC_IMAGES = {  # variant -> (repository, SageMaker tag)
    "cpu": ("llama-cpp", "server-sagemaker-cpu-v1"),
    "cuda": ("llama-cpp", "server-sagemaker-cuda-v1"),
    "arm64": ("llama-cpp-arm64", "server-sagemaker-cpu-v1"),
}
GPU_INFERENCE_AMI = "al2-ami-sagemaker-inference-gpu-3-1"


def dlc_account(region: str) -> str:
    return DLC_ACCOUNTS.get(region, DEFAULT_DLC_ACCOUNT)


def dlc_registry(region: str) -> str:
    """`<account>.dkr.ecr.<region>.amazonaws.com` (`.com.cn` in China): what `docker login` needs."""
    return f"{dlc_account(region)}.dkr.ecr.{region}.{partition_for(region)[1]}"


def resolve_dlc_image_uri(region: str, variant: str = "cpu") -> str:
    """The AWS llama.cpp DLC SageMaker image for `region` and `variant` (cpu, cuda, arm64)."""
    if variant not in DLC_IMAGES:
        raise ValueError(f"variant must be one of {sorted(DLC_IMAGES)}, not {variant!r}")
    if not re.fullmatch(r"[a-z]{2}(-gov)?-[a-z]+-\d", region):
        raise ValueError(f"{region!r} is not an AWS region name")
    repository, tag = DLC_IMAGES[variant]
    return f"{dlc_registry(region)}/{repository}:{tag}"
