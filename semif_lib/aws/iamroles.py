"""IAM roles from the least-privilege policies shipped in `container/iam/`.

- SageMaker execution role: `SEMIF_ROLE_ARN` if set; inside SageMaker Studio the notebook's own
  role (what `sagemaker.get_execution_role()` returns); otherwise `semif-sagemaker-<run>` created
  from `sagemaker-trust-policy.json` + `sagemaker-execution-policy.json`.
- CodeBuild service role: `semif-codebuild-<run>` from `codebuild-*.json`.
"""

from __future__ import annotations

import time
from typing import Any

from ..settings import Settings
from .clients import (
    compact_json,
    get_account_id,
    get_region,
    is_not_found,
    load_policy,
    make_client,
    partition_for,
)
from .dlc import dlc_account
from .packaging import default_bucket
from .state import WorkshopState

__all__ = ["ensure_role", "policy_values", "resolve_execution_role"]

INLINE_POLICY_NAME = "semif-least-privilege"
ROLE_PROPAGATION_S = 10  # IAM is eventually consistent: a brand-new role is not assumable at once


def policy_values(settings: Settings, state: WorkshopState) -> dict[str, str]:
    """Values for the `${...}` placeholders of the policies in container/iam/."""
    region = get_region(settings)
    return {
        "PARTITION": partition_for(region)[0],
        "REGION": region,
        "ACCOUNT": get_account_id(settings),
        "BUCKET": default_bucket(settings),
        "PREFIX": settings.s3_prefix,
        "REPOSITORY": state.name("adapter"),
        "PROJECT": state.name("adapter-build"),
        "DLC_ACCOUNT": dlc_account(region),
    }


def ensure_role(name: str, trust: str, policy: str, settings: Settings, state: WorkshopState, description: str) -> str:
    """Create role `name` with the trust and inline policy files (or refresh the policy); return its ARN."""
    iam = make_client("iam", settings)
    values = policy_values(settings, state)
    try:
        arn = iam.get_role(RoleName=name)["Role"]["Arn"]
    except Exception as exc:  # noqa: BLE001
        if not is_not_found(exc):
            raise
        arn = iam.create_role(RoleName=name, AssumeRolePolicyDocument=compact_json(load_policy(trust, **values)),
                              Description=description, MaxSessionDuration=3600, Tags=state.tags())["Role"]["Arn"]
        state.record("iam_role", name, arn=arn)
        time.sleep(0 if settings.aws_endpoint_url else ROLE_PROPAGATION_S)
    iam.put_role_policy(RoleName=name, PolicyName=INLINE_POLICY_NAME, PolicyDocument=compact_json(load_policy(policy, **values)))
    state.record("iam_role", name, arn=arn)
    return arn


def _studio_role(settings: Settings) -> str | None:
    """The IAM role behind an assumed-role session (SageMaker Studio, a notebook instance), if any."""
    arn = make_client("sts", settings).get_caller_identity()["Arn"]
    if ":assumed-role/" not in arn:
        return None
    role_name = arn.split(":assumed-role/")[1].split("/")[0]
    try:
        role: dict[str, Any] = make_client("iam", settings).get_role(RoleName=role_name)["Role"]
    except Exception:  # noqa: BLE001 - no iam:GetRole permission: cannot tell, create our own
        return None
    trust = str(role.get("AssumeRolePolicyDocument", ""))
    return role["Arn"] if "sagemaker.amazonaws.com" in trust else None


def resolve_execution_role(settings: Settings, state: WorkshopState) -> str:
    """The role SageMaker assumes for models, endpoints and transform jobs (see module docstring)."""
    if settings.role_arn:
        return settings.role_arn
    if state.get("execution_role_arn"):
        return state.get("execution_role_arn")
    arn = _studio_role(settings) or ensure_role(
        state.name("sagemaker"), "sagemaker-trust-policy", "sagemaker-execution-policy", settings, state,
        "semif workshop: SageMaker endpoints and transform jobs read the workshop prefix and pull the images")
    return state.set("execution_role_arn", arn)
