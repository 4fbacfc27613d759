"""IAM roles from the least-privilege policies shipped in `container/iam/`.

- SageMaker execution role: `SEMIF_ROLE_ARN` if set; inside SageMaker Studio (or a notebook
  instance) the notebook's own role, found the SDK's way
  (`sagemaker.core.helper.session_helper.get_execution_role`); else the calling role when SageMaker
  may assume it; otherwise `semif-sagemaker-<run>` created from `sagemaker-trust-policy.json` +
  `sagemaker-execution-policy.json`.
- CodeBuild service role: `semif-codebuild-<run>` from `codebuild-*.json`.

A new role is not assumable at once (IAM is eventually consistent): the calls that pass it
(`CreateProject`, `CreateModel`, `CreateTransformJob`) retry for a bounded time instead
(`clients.retry_while_role_propagates`).
"""

from __future__ import annotations

import os
from typing import Any

from ..registry import WorkshopState
from ..settings import Settings
from .clients import (
    compact_json,
    get_account_id,
    get_region,
    is_not_found,
    load_policy,
    make_client,
    make_session,
    partition_for,
)
from .dlc import dlc_account
from .packaging import default_bucket

__all__ = ["ensure_role", "policy_values", "resolve_execution_role", "studio_execution_role"]

INLINE_POLICY_NAME = "semif-least-privilege"
# Where SageMaker Studio and notebook instances describe the running app (the SDK reads the same file).
STUDIO_METADATA_FILE = "/opt/ml/metadata/resource-metadata.json"


def policy_values(settings: Settings, state: WorkshopState) -> dict[str, str]:
    """Values for the `${...}` placeholders of the policies in container/iam/ (scoped to this run)."""
    region = get_region(settings)
    return {
        "PARTITION": partition_for(region)[0],
        "REGION": region,
        "ACCOUNT": get_account_id(settings),
        "BUCKET": default_bucket(settings),
        "PREFIX": state.prefix(settings),
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
    except Exception as exc:
        if not is_not_found(exc):
            raise
        arn = iam.create_role(RoleName=name, AssumeRolePolicyDocument=compact_json(load_policy(trust, **values)),
                              Description=description, MaxSessionDuration=3600, Tags=state.tags())["Role"]["Arn"]
        state.record("iam_role", name, arn=arn)
    iam.put_role_policy(RoleName=name, PolicyName=INLINE_POLICY_NAME, PolicyDocument=compact_json(load_policy(policy, **values)))
    state.record("iam_role", name, arn=arn)
    return arn


def studio_execution_role(settings: Settings) -> str | None:
    """Inside SageMaker Studio or a notebook instance: the app's execution role, as the SageMaker SDK
    finds it (the metadata file, then DescribeUserProfile / DescribeDomain). Elsewhere None, without
    importing the SDK."""
    if not os.path.exists(STUDIO_METADATA_FILE):
        return None
    from sagemaker.core.helper.session_helper import Session, get_execution_role

    session = Session(boto_session=make_session(settings), sagemaker_client=make_client("sagemaker", settings))
    return get_execution_role(session)


def _assumable_caller_role(settings: Settings) -> str | None:
    """The IAM role behind an assumed-role session when SageMaker may assume it (a SageMaker job, say)."""
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
    arn = studio_execution_role(settings) or _assumable_caller_role(settings) or ensure_role(
        state.name("sagemaker"), "sagemaker-trust-policy", "sagemaker-execution-policy", settings, state,
        "semif workshop: SageMaker endpoints and transform jobs read the run's prefix and pull the images")
    return state.set("execution_role_arn", arn)
