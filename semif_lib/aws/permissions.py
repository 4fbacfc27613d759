"""The IAM actions a workshop run needs, step by step, and the action each AWS API call is authorised as.

`NEEDS` is the table: one row per (step, IAM action) with the resource it acts on, for this run, and the
`container/iam/` file that grants it. The policies are split by job (docs/aws.md, "Roles by job"):

- `workshop-caller-policy.json`: what an attendee runs (S3 under the run's prefix, SageMaker `semif-*-<run>`, autoscaling
  of endpoint variants, logs, quotas), and `iam:PassRole` on the execution role only; no IAM write, no bucket
  configuration (`preflight.caller_policy(settings)` fills it in); `workshop-build-policy.json`: step 03's repository,
  CodeBuild project and build role (`preflight.build_policy(settings)`);
- `workshop-provisioning-policy.json`: only where no event team's template made the bucket and the roles (the
  standalone path): the bucket, and run roles under the `/semif-workshop/` path that must carry the permissions
  boundary `workshop-role-boundary.json` (`preflight.provisioning_policy(settings)`, `iamroles.boundary_document(settings)`).

SageMaker Studio's default execution role (AmazonSageMakerFullAccess) lacks CodeBuild and the roles, among others.
Rows the context does not need are left out (`needs_in_context`): the bucket's when it exists, a role's when it is
given. `iam_action_for` maps an API call to its actions, so the tests can hold the table to every call a run makes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ..registry import WorkshopState
from ..settings import Settings
from .iamroles import ROLE_PATH

__all__ = ["BUILD_POLICY", "CALLER_POLICY", "LIST_KEYS", "NEEDS", "PROVISIONING_POLICY", "Need", "iam_action_for", "needs_in_context"]

CALLER_POLICY = "workshop-caller-policy"
PROVISIONING_POLICY = "workshop-provisioning-policy"
BUILD_POLICY = "workshop-build-policy"  # what step 03 alone calls: the adapter's repository, its CodeBuild project and build role
GUARDRAILS_POLICY = "workshop-guardrails-policy"  # the event team's template only: denies over AmazonSageMakerFullAccess


@dataclass(frozen=True)
class Need:
    step: str
    action: str
    resource: str  # a template: {partition} {region} {account} {bucket} {prefix} {run} {dlc_account} {dlc_repository} {boundary}
    context: tuple[tuple[str, str], ...] = ()  # condition keys the simulation must see (iam:PassedToService), templates too
    policy: str | None = CALLER_POLICY  # the container/iam/ file that grants it (None: none does, the step goes on without it)
    made_by_run: str = ""  # "bucket", "sagemaker-role", "codebuild-role": needed only where this run makes that resource
    optional: bool = False  # a denial is reported, never a stop


_SM = "arn:{partition}:sagemaker:{region}:{account}"
_ROLE = "arn:{partition}:iam::{account}:role"
_RUN_ROLE = _ROLE + ROLE_PATH.rstrip("/")  # the roles a run creates live under their own path
_OBJECT = "arn:{partition}:s3:::{bucket}/{prefix}/{run}/models/model.tar.gz"
_BUCKET = "arn:{partition}:s3:::{bucket}"
_REPO = "arn:{partition}:ecr:{region}:{account}:repository/semif-adapter-{run}"
_PROJECT = "arn:{partition}:codebuild:{region}:{account}:project/semif-adapter-build-{run}"
_SLR = ("arn:{partition}:iam::{account}:role/aws-service-role/sagemaker.application-autoscaling.amazonaws.com/"
        "AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint")
_ALARM = "arn:{partition}:cloudwatch:{region}:{account}:alarm:TargetTracking-endpoint/semif-decision-{run}/variant/AllTraffic-AlarmHigh"
_WAKE_ALARM = "arn:{partition}:cloudwatch:{region}:{account}:alarm:semif-decision-async-{run}-backlog-without-capacity"
_ASYNC = "04 async inference (optional)"
# A scalable target's ARN ends in an id Application Auto Scaling assigns, not the endpoint's name: what scopes the
# autoscaling rows is the namespace and dimension (condition keys), besides SageMaker's own check of the endpoint.
_SCALABLE = "arn:{partition}:application-autoscaling:{region}:{account}:scalable-target/*"
_VARIANT = (("application-autoscaling:service-namespace", "sagemaker"),
            ("application-autoscaling:scalable-dimension", "sagemaker:variant:DesiredInstanceCount"))
_BOUNDED = (("iam:PermissionsBoundary", "{boundary}"),)
# What SageMaker authorises a config or transform job with besides its name: the model it runs and its instances
_RUNS = (("sagemaker:ModelArn", _SM + ":model/semif-text-{run}-{spec}"), ("sagemaker:InstanceTypes", "{instance_type}"))
_BATCH_RUNS = (("sagemaker:ModelArn", _SM + ":model/semif-decision-{run}-{spec}"), ("sagemaker:InstanceTypes", "{transform_instance_type}"))
# What CodeBuild authorises a project with: its compute, image, source and role (the policy bounds each)
_BUILDS = (("codebuild:environment.computeType", "{build_compute}"), ("codebuild:environment.image", "{build_image}"),
           ("codebuild:source.location", "{bucket}/{prefix}/{run}/build/adapter.zip"), ("codebuild:serviceRole", "{codebuild_role}"))
_SCALING_POLICY = ("arn:{partition}:autoscaling:{region}:{account}:scalingPolicy:{spec}:resource/sagemaker/endpoint/"
                   "semif-decision-{run}/variant/AllTraffic:policyName/semif-decision-{run}")
_FIRES = (("cloudwatch:AlarmActions", _SCALING_POLICY),)
LIST_KEYS = {"sagemaker:InstanceTypes", "cloudwatch:AlarmActions"}  # condition keys IAM types as lists (stringList)
_TO_SAGEMAKER = (("iam:PassedToService", "sagemaker.amazonaws.com"),)
_TO_CODEBUILD = (("iam:PassedToService", "codebuild.amazonaws.com"),)
_PROVISIONING = PROVISIONING_POLICY


def _rows(step: str, resource: str, *actions: str, context: tuple[tuple[str, str], ...] = (), policy: str | None = CALLER_POLICY,
          made_by_run: str = "", optional: bool = False) -> list[Need]:
    return [Need(step, action, resource, context, policy, made_by_run, optional) for action in actions]


def _role_rows(step: str, purpose: str, *reads: str) -> list[Need]:
    """What making run role `semif-<purpose>-<run>` needs: the boundary exists, then the role is created under it."""
    made, role = f"{purpose}-role", f"{_RUN_ROLE}/semif-{purpose}-{{run}}"
    return [*_rows(step, role, *reads, policy=_PROVISIONING, made_by_run=made),
            *_rows(step, role, "iam:CreateRole", "iam:PutRolePolicy", context=_BOUNDED, policy=_PROVISIONING, made_by_run=made),
            *_rows(step, "{boundary}", "iam:GetPolicy", policy=_PROVISIONING, made_by_run=made)]


NEEDS: list[Need] = [
    *_rows("01 package", _BUCKET, "s3:GetBucketLocation"),
    *_rows("01 package", _BUCKET, "s3:CreateBucket", "s3:PutEncryptionConfiguration", "s3:PutBucketTagging", policy=_PROVISIONING,
           made_by_run="bucket"),
    # S3 blocks public access on every new bucket by default; no shipped policy lets an attendee change a shared bucket's block
    *_rows("01 package", _BUCKET, "s3:PutBucketPublicAccessBlock", policy=None, made_by_run="bucket", optional=True),
    *_rows("01 package", _OBJECT, "s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload"),
    *_role_rows("02 text endpoint", "sagemaker", "iam:GetRole", "iam:TagRole"),
    *_rows("02 text endpoint", f"{_RUN_ROLE}/semif-sagemaker-{{run}}", "iam:PassRole", context=_TO_SAGEMAKER),
    *_rows("02 text endpoint", "arn:{partition}:ecr:{region}:{dlc_account}:repository/{dlc_repository}", "ecr:BatchGetImage"),  # the digest
    *_rows("02 text endpoint", f"{_SM}:model/semif-text-{{run}}-{{spec}}", "sagemaker:DescribeModel", "sagemaker:CreateModel",
           "sagemaker:AddTags"),
    *_rows("02 text endpoint", f"{_SM}:endpoint-config/semif-text-{{run}}-{{spec}}", "sagemaker:DescribeEndpointConfig",
           "sagemaker:AddTags"),
    *_rows("02 text endpoint", f"{_SM}:endpoint-config/semif-text-{{run}}-{{spec}}", "sagemaker:CreateEndpointConfig", context=_RUNS),
    # streaming (InvokeEndpointWithResponseStream) is authorised as sagemaker:InvokeEndpoint: botocore's model says so
    *_rows("02 text endpoint", f"{_SM}:endpoint/semif-text-{{run}}", "sagemaker:DescribeEndpoint", "sagemaker:CreateEndpoint",
           "sagemaker:AddTags", "sagemaker:UpdateEndpoint", "sagemaker:InvokeEndpoint"),
    *_rows("03 image build", "arn:{partition}:s3:::{bucket}/{prefix}/{run}/build/adapter.zip", "s3:PutObject"),  # the build context
    *_rows("03 image build", _REPO, "ecr:DescribeRepositories", "ecr:CreateRepository", "ecr:TagResource", "ecr:DescribeImages",
           policy=BUILD_POLICY),
    *_role_rows("03 image build", "codebuild", "iam:GetRole", "iam:TagRole"),
    *_rows("03 image build", f"{_RUN_ROLE}/semif-codebuild-{{run}}", "iam:PassRole", context=_TO_CODEBUILD, policy=BUILD_POLICY),
    *_rows("03 image build", _PROJECT, "codebuild:BatchGetProjects", "codebuild:StartBuild", "codebuild:BatchGetBuilds",
           policy=BUILD_POLICY),
    *_rows("03 image build", _PROJECT, "codebuild:CreateProject", "codebuild:UpdateProject", context=_BUILDS, policy=BUILD_POLICY),
    *_rows("04 batch + autoscaling", f"{_SM}:transform-job/semif-batch-{{run}}-{{job}}", "sagemaker:DescribeTransformJob"),
    *_rows("04 batch + autoscaling", f"{_SM}:transform-job/semif-batch-{{run}}-{{job}}", "sagemaker:CreateTransformJob",
           context=_BATCH_RUNS),
    *_rows("04 batch + autoscaling", f"{_SM}:endpoint/semif-decision-{{run}}", "sagemaker:UpdateEndpointWeightsAndCapacities"),
    *_rows("04 batch + autoscaling", _SCALABLE, "application-autoscaling:RegisterScalableTarget",
           "application-autoscaling:PutScalingPolicy", context=_VARIANT),
    *_rows("04 batch + autoscaling", "*", "application-autoscaling:DescribeScalableTargets",
           "application-autoscaling:DescribeScalingPolicies"),
    *_rows("04 batch + autoscaling", _ALARM, "cloudwatch:DescribeAlarms"),
    *_rows("04 batch + autoscaling", _ALARM, "cloudwatch:PutMetricAlarm", context=_FIRES),
    *_rows("04 batch + autoscaling", _SLR, "iam:CreateServiceLinkedRole",
           context=(("iam:AWSServiceName", "sagemaker.application-autoscaling.amazonaws.com"),)),
    # the async endpoint's model, config and endpoint are created as the text rows show; what only it does is below
    *_rows(_ASYNC, f"{_SM}:endpoint/semif-decision-async-{{run}}", "sagemaker:InvokeEndpointAsync"),
    *_rows(_ASYNC, "arn:{partition}:s3:::{bucket}/{prefix}/{run}/batch/async/input/*", "s3:PutObject"),
    *_rows(_ASYNC, _WAKE_ALARM, "cloudwatch:DescribeAlarms"),
    *_rows(_ASYNC, _WAKE_ALARM, "cloudwatch:PutMetricAlarm", context=(("cloudwatch:AlarmActions", _SCALING_POLICY.replace(
        "semif-decision-{run}", "semif-decision-async-{run}")),)),
    *_rows("99 cleanup", f"{_SM}:endpoint/semif-text-{{run}}", "sagemaker:DeleteEndpoint"),
    *_rows("99 cleanup", f"{_SM}:endpoint-config/semif-text-{{run}}-{{spec}}", "sagemaker:DeleteEndpointConfig"),
    *_rows("99 cleanup", f"{_SM}:model/semif-text-{{run}}-{{spec}}", "sagemaker:DeleteModel"),
    *_rows("99 cleanup", f"{_SM}:transform-job/semif-batch-{{run}}-{{job}}", "sagemaker:StopTransformJob"),
    *_rows("99 cleanup", _SCALABLE, "application-autoscaling:DeleteScalingPolicy", "application-autoscaling:DeregisterScalableTarget",
           context=_VARIANT),
    *_rows("99 cleanup", _ALARM, "cloudwatch:DeleteAlarms"),
    *_rows("99 cleanup", _WAKE_ALARM, "cloudwatch:DescribeAlarms", "cloudwatch:DeleteAlarms"),
    *_rows("99 cleanup", _PROJECT, "codebuild:DeleteProject", policy=BUILD_POLICY),
    *_rows("99 cleanup", _REPO, "ecr:DeleteRepository", policy=BUILD_POLICY),
    *_rows("99 cleanup", f"{_RUN_ROLE}/semif-codebuild-{{run}}", "iam:ListRolePolicies", "iam:ListAttachedRolePolicies", "iam:DeleteRole",
           policy=_PROVISIONING, made_by_run="codebuild-role"),
    *_rows("99 cleanup", f"{_RUN_ROLE}/semif-codebuild-{{run}}", "iam:DeleteRolePolicy", "iam:DetachRolePolicy", context=_BOUNDED,
           policy=_PROVISIONING, made_by_run="codebuild-role"),
    *_rows("99 cleanup", "arn:{partition}:logs:{region}:{account}:log-group:/aws/sagemaker/Endpoints/semif-text-{run}",
           "logs:DeleteLogGroup"),
    *_rows("99 cleanup", _OBJECT, "s3:DeleteObject"),
    # a bucket the run made is deleted only when empty: listed whole (every run's prefix), which only its maker may do
    *_rows("99 cleanup", _BUCKET, "s3:ListBucket", "s3:DeleteBucket", policy=_PROVISIONING, made_by_run="bucket"),
]


def needs_in_context(settings: Settings, state: WorkshopState, bucket_exists: bool | None = None) -> list[Need]:
    """`NEEDS` less the rows this identity will not use here: with `SEMIF_ROLE_ARN` set, inside Studio or a
    notebook instance (the notebook's own role), or with a role already chosen, no `semif-sagemaker-<run>`
    role is made, so only `iam:PassRole` on that role remains; likewise for `SEMIF_CODEBUILD_ROLE_ARN`; with
    `SEMIF_ADAPTER_IMAGE_URI` step 03 builds nothing and needs nothing; an existing bucket is neither created,
    configured nor deleted by this run."""
    from .iamroles import STUDIO_METADATA_FILE

    given = settings.role_arn or state.get("execution_role_arn")
    in_studio = given or os.path.exists(STUDIO_METADATA_FILE)
    passed = {"sagemaker-role": (in_studio, given or f"{_ROLE}/service-role/*"),
              "codebuild-role": (bool(settings.codebuild_role_arn), settings.codebuild_role_arn)}
    return [_name_passed_role(need, passed) for need in NEEDS if not _is_unused(need, settings, passed, bucket_exists)]


def _is_unused(need: Need, settings: Settings, passed: dict[str, tuple[Any, str | None]], bucket_exists: bool | None) -> bool:
    """A row this run will not call: step 03 with a pre-built image, an existing bucket's making, a provisioned role's making."""
    if need.step.startswith("03") and settings.adapter_image_uri:
        return True  # a pre-built image: step 03 calls nothing
    if need.made_by_run == "bucket" and bucket_exists:
        return True
    return bool(need.made_by_run in passed and passed[need.made_by_run][0])  # a provisioned role is neither made nor deleted


def _name_passed_role(need: Need, passed: dict[str, tuple[Any, str | None]]) -> Need:
    """An `iam:PassRole` row on a role this run would make, pointed at the provisioned role that is passed instead."""
    for purpose, (provisioned, arn) in passed.items():
        if provisioned and need.action == "iam:PassRole" and f"/semif-{purpose.split('-')[0]}-" in need.resource:
            need = Need(need.step, need.action, arn or need.resource, need.context, need.policy)
    return need


SERVICE_PREFIX = {"sagemaker-runtime": "sagemaker", "runtime.sagemaker": "sagemaker", "service-quotas": "servicequotas"}
S3_ACTIONS = {
    "HeadBucket": "s3:ListBucket", "ListObjectsV2": "s3:ListBucket", "ListObjects": "s3:ListBucket",
    "HeadObject": "s3:GetObject", "PutPublicAccessBlock": "s3:PutBucketPublicAccessBlock",
    "PutBucketEncryption": "s3:PutEncryptionConfiguration", "CreateMultipartUpload": "s3:PutObject", "UploadPart": "s3:PutObject",
    "CompleteMultipartUpload": "s3:PutObject", "DeleteObjects": "s3:DeleteObject", "ListObjectVersions": "s3:ListBucketVersions",
    "DeletePublicAccessBlock": "s3:PutBucketPublicAccessBlock", "GetPublicAccessBlock": "s3:GetBucketPublicAccessBlock",
    "DeleteBucketEncryption": "s3:PutEncryptionConfiguration", "GetBucketEncryption": "s3:GetEncryptionConfiguration",
}
TAG_ON_CREATE = {"sagemaker": "sagemaker:AddTags", "iam": "iam:TagRole", "ecr": "ecr:TagResource"}
# a call naming a role passes it: iam:PassRole (CodeBuild's StartBuild may override the project's role)
PASSES_A_ROLE = {"ExecutionRoleArn", "serviceRole", "serviceRoleOverride", "RoleArn"}
NO_PERMISSION_NEEDED = {"sts:GetCallerIdentity"}
# Operations AWS authorises as another action (botocore's documentation of InvokeEndpointWithResponseStream:
# "your IAM permissions must allow the sagemaker:InvokeEndpoint action"; there is no streaming action to grant).
AUTHORISED_AS = {"sagemaker:InvokeEndpointWithResponseStream": "sagemaker:InvokeEndpoint"}


def iam_action_for(service: str, operation: str, params: dict[str, Any] | None = None) -> list[str]:
    """The IAM actions an API call needs (S3's differ from its operation names; streaming is InvokeEndpoint; a
    create with tags also tags; a call that names a role passes it)."""
    prefix = SERVICE_PREFIX.get(service, service)
    action = S3_ACTIONS.get(operation, f"s3:{operation}") if prefix == "s3" else f"{prefix}:{operation}"
    action = AUTHORISED_AS.get(action, action)
    actions = [] if action in NO_PERMISSION_NEEDED else [action]
    params = params or {}
    if operation.startswith("Create") and params.get("Tags" if prefix != "ecr" else "tags") and prefix in TAG_ON_CREATE:
        actions.append(TAG_ON_CREATE[prefix])
    if prefix not in ("iam", "sts") and PASSES_A_ROLE & set(params):  # sts:AssumeRole names the role it assumes, passes none
        actions.append("iam:PassRole")
    return actions
