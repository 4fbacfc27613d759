"""IAM roles from the least-privilege policies shipped in `container/iam/`.

- SageMaker execution role: `SEMIF_ROLE_ARN` if set; inside SageMaker Studio (or a notebook
  instance) the notebook's own role, found the SDK's way
  (`sagemaker.core.helper.session_helper.get_execution_role`); otherwise `semif-sagemaker-<run>` created from
  `sagemaker-trust-policy.json` + `sagemaker-execution-policy.json`. The calling identity's own role is never
  chosen otherwise: containers (the adapter is built from source an attendee can edit) do not run with the
  caller's powers.
- CodeBuild service role: `SEMIF_CODEBUILD_ROLE_ARN` if set, else `semif-codebuild-<run>` from `codebuild-*.json`.
- Every role a run creates lives under the path `/semif-workshop/` and carries the permissions boundary
  `semif-workshop-role-boundary` (`workshop-role-boundary.json`, `SEMIF_ROLE_BOUNDARY`): the provisioning policy
  lets a caller create roles only with it, so an inline policy written into such a role grants nothing beyond it.
  The boundary is made once per account by an administrator (or by the first run of one).
- With `SEMIF_KMS_KEY_ID`, both policies get `kms-key-policy.json` on that key.
- An event team's account has both roles already: `container/cfn/workshop-account.yaml` (same policy files,
  for every run of the account; tests/test_cfn.py keeps them equal).

A new role is not assumable at once (IAM is eventually consistent): the calls that pass it
(`CreateProject`, `CreateModel`, `CreateTransformJob`) retry for a bounded time instead
(`waits.retry_while_role_propagates`).
"""

from __future__ import annotations

import os
from typing import Any

from ..registry import WorkshopState
from ..settings import Settings
from .clients import compact_json, get_account_id, get_region, load_policy, make_client, make_session, partition_for
from .dlc import dlc_account
from .errors import DENIED_CODES, AwsPermissionError, error_code, is_not_found
from .packaging import default_bucket

__all__ = ["ROLE_PATH", "boundary_arn", "boundary_document", "boundary_name", "ensure_boundary", "ensure_role", "kms_key_arn",
           "policy_values",
           "resolve_execution_role", "role_policy", "studio_execution_role"]

INLINE_POLICY_NAME = "semif-least-privilege"
ROLE_PATH = "/semif-workshop/"  # every role a run creates; the provisioning policy writes roles under this path only
BOUNDARY_POLICY = "workshop-role-boundary"  # container/iam/workshop-role-boundary.json
BOUNDARY_NAME = "semif-workshop-role-boundary"  # the managed policy made from it, once per account and region: <name>-<region>
KMS_POLICY = "kms-key-policy"  # container/iam/kms-key-policy.json: added to every policy when SEMIF_KMS_KEY_ID is set
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


def kms_key_arn(settings: Settings) -> str | None:
    """`SEMIF_KMS_KEY_ID` as the key ARN an IAM policy names (a key id or alias is looked up with kms:DescribeKey)."""
    key = settings.kms_key_id
    if not key:
        return None
    if key.startswith("arn:") and ":key/" in key:
        return key
    return str(make_client("kms", settings).describe_key(KeyId=key)["KeyMetadata"]["Arn"])


def role_policy(policy: str, settings: Settings, values: dict[str, str]) -> dict[str, Any]:
    """Policy file `policy` filled in; with `SEMIF_KMS_KEY_ID`, plus `kms-key-policy.json` on that key (the objects the
    role reads and writes, and the ECR repository, are encrypted with it: without kms:Decrypt / GenerateDataKey
    SageMaker cannot read the model and CodeBuild cannot read its source)."""
    document = load_policy(policy, **values)
    arn = kms_key_arn(settings)
    if arn:
        document["Statement"] += load_policy(KMS_POLICY, KMS_KEY_ARN=arn)["Statement"]
    return document


def boundary_arn(settings: Settings) -> str:
    """The permissions boundary every role the workshop creates carries: `SEMIF_ROLE_BOUNDARY` (a managed policy's
    name or ARN), else this account's `semif-workshop-role-boundary-<region>` (the boundary names its region)."""
    given = settings.role_boundary or boundary_name(get_region(settings))
    if given.startswith("arn:"):
        return given
    return f"arn:{partition_for(get_region(settings))[0]}:iam::{get_account_id(settings)}:policy/{given}"


def boundary_name(region: str) -> str:
    return f"{BOUNDARY_NAME}-{region}"


def boundary_document(settings: Settings) -> dict[str, Any]:
    """`container/iam/workshop-role-boundary.json` for this account, region, bucket and KMS key: the most a run role may ever
    do (what `sagemaker-execution-policy.json` and `codebuild-service-policy.json` grant any run of the account there); the
    key's use only with `SEMIF_KMS_KEY_ID`, on that key alone."""
    region = get_region(settings)
    document = load_policy(BOUNDARY_POLICY, PARTITION=partition_for(region)[0], REGION=region, ACCOUNT=get_account_id(settings),
                           BUCKET=default_bucket(settings), PREFIX=settings.s3_prefix.strip("/"), DLC_ACCOUNT=dlc_account(region))
    arn = kms_key_arn(settings)
    if arn:
        document["Statement"] += load_policy(KMS_POLICY, KMS_KEY_ARN=arn)["Statement"]
    return document


def ensure_boundary(settings: Settings) -> str:
    """The boundary's ARN, once it exists: read it (iam:GetPolicy); when missing, make it from the shipped document if
    this identity may (an administrator's first run); otherwise one line saying who makes it, and how."""
    iam = make_client("iam", settings)
    arn = boundary_arn(settings)
    try:
        iam.get_policy(PolicyArn=arn)
        return arn
    except Exception as exc:
        if not is_not_found(exc):
            raise
    try:
        iam.create_policy(PolicyName=arn.rsplit("/", 1)[1], PolicyDocument=compact_json(boundary_document(settings)),
                          Description="semif workshop: the most a role the workshop creates may do (permissions boundary)")
    except Exception as exc:
        if error_code(exc) not in DENIED_CODES:
            raise
        raise AwsPermissionError(
            f"the permissions boundary {arn} does not exist and this identity may not create it: an administrator creates it once "
            f"(aws iam create-policy --policy-name {arn.rsplit('/', 1)[1]} --policy-document <the JSON of "
            "aws.iamroles.boundary_document(settings)>, from container/iam/workshop-role-boundary.json), or set SEMIF_ROLE_ARN "
            "and SEMIF_CODEBUILD_ROLE_ARN to roles made for the workshop") from None
    return arn


def ensure_role(name: str, trust: str, policy: str, settings: Settings, state: WorkshopState, description: str) -> str:
    """Create role `name` under `ROLE_PATH` with the permissions boundary, the trust and inline policy files (or refresh
    the policy); return its ARN."""
    iam = make_client("iam", settings)
    values = policy_values(settings, state)
    try:
        arn = iam.get_role(RoleName=name)["Role"]["Arn"]
    except Exception as exc:
        if not is_not_found(exc):
            raise
        boundary = ensure_boundary(settings)
        arn = iam.create_role(RoleName=name, Path=ROLE_PATH, AssumeRolePolicyDocument=compact_json(load_policy(trust, **values)),
                              Description=description, MaxSessionDuration=3600, PermissionsBoundary=boundary,
                              Tags=state.tags())["Role"]["Arn"]
        state.record("iam_role", name, arn=arn)
    iam.put_role_policy(RoleName=name, PolicyName=INLINE_POLICY_NAME, PolicyDocument=compact_json(role_policy(policy, settings, values)))
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


def resolve_execution_role(settings: Settings, state: WorkshopState) -> str:
    """The role SageMaker assumes for models, endpoints and transform jobs (see module docstring)."""
    if settings.role_arn:
        return settings.role_arn
    if state.get("execution_role_arn"):
        return state.get("execution_role_arn")
    arn = studio_execution_role(settings) or ensure_role(
        state.name("sagemaker"), "sagemaker-trust-policy", "sagemaker-execution-policy", settings, state,
        "semif workshop: SageMaker endpoints and transform jobs read the run's prefix and pull the images")
    return state.set("execution_role_arn", arn)
