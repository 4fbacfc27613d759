"""Which AWS actions the workshop needs, and whether the calling identity has them, before anything is created.

`NEEDS` is the table: one row per (step, IAM action) with the resource it acts on, for this run, and the
`container/iam/` file that grants it. The policies are split by job (docs/aws.md, "Roles by job"):

- `workshop-caller-policy.json`: what an attendee runs (S3 under the prefix, SageMaker `semif-*`, CodeBuild,
  the adapter's ECR repository, autoscaling of endpoint variants, logs, quotas), and `iam:PassRole` on the two
  service roles only; no IAM write, no bucket configuration (`caller_policy(settings)` fills it in);
- `workshop-provisioning-policy.json`: only where no event team's template made the bucket and the roles (the
  standalone path): the bucket, and run roles under the `/semif-workshop/` path that must carry the permissions
  boundary `workshop-role-boundary.json` (`provisioning_policy(settings)`, `iamroles.boundary_document(settings)`).

SageMaker Studio's default execution role (AmazonSageMakerFullAccess) lacks CodeBuild and the roles, among others.

`check_permissions(settings, state)` answers, per row, in one of two ways:

- **IAM policy simulation** (`iam:SimulatePrincipalPolicy` on the caller's own role or user),
  where the caller may run it: every row gets allowed or denied, conditions included.
- **dry calls** otherwise: a read-only call per row that has one (describing a resource this run
  has not created yet answers "not found" when allowed and "access denied" when not). Rows with no
  side-effect-free call (the creates, `iam:PassRole`) are reported as not checked.

Rows the context does not need are left out (`needs_in_context`): the bucket's when it exists, a role's when it is
given. No call here creates, changes or deletes anything.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable

from ..registry import WorkshopState
from ..settings import Settings
from .clients import get_account_id, get_region, load_policy, make_client, partition_for
from .dlc import DLC_IMAGES, dlc_account, require_dlc_region
from .errors import CREDENTIAL_ERRORS, DENIED_CODES, AwsPermissionError, error_code, is_not_found
from .iamroles import ROLE_PATH, boundary_arn, role_policy
from .packaging import bucket_region, default_bucket

__all__ = ["CALLER_POLICY", "NEEDS", "PROVISIONING_POLICY", "Need", "PermissionCheck", "caller_arns", "caller_policy",
           "check_permissions", "iam_action_for", "provisioning_policy"]

CALLER_POLICY = "workshop-caller-policy"
PROVISIONING_POLICY = "workshop-provisioning-policy"
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
# A scalable target's ARN ends in an id Application Auto Scaling assigns, not the endpoint's name: what scopes the
# autoscaling rows is the namespace and dimension (condition keys), besides SageMaker's own check of the endpoint.
_SCALABLE = "arn:{partition}:application-autoscaling:{region}:{account}:scalable-target/*"
_VARIANT = (("application-autoscaling:service-namespace", "sagemaker"),
            ("application-autoscaling:scalable-dimension", "sagemaker:variant:DesiredInstanceCount"))
_BOUNDED = (("iam:PermissionsBoundary", "{boundary}"),)
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
    *_rows("02 text endpoint", f"{_SM}:model/semif-text-{{run}}", "sagemaker:DescribeModel", "sagemaker:CreateModel", "sagemaker:AddTags"),
    *_rows("02 text endpoint", f"{_SM}:endpoint-config/semif-text-{{run}}", "sagemaker:DescribeEndpointConfig",
           "sagemaker:CreateEndpointConfig", "sagemaker:AddTags"),
    # streaming (InvokeEndpointWithResponseStream) is authorised as sagemaker:InvokeEndpoint: botocore's model says so
    *_rows("02 text endpoint", f"{_SM}:endpoint/semif-text-{{run}}", "sagemaker:DescribeEndpoint", "sagemaker:CreateEndpoint",
           "sagemaker:AddTags", "sagemaker:UpdateEndpoint", "sagemaker:InvokeEndpoint"),
    *_rows("03 image build", "arn:{partition}:s3:::{bucket}/{prefix}/{run}/build/adapter.zip", "s3:PutObject"),  # the build context
    *_rows("03 image build", _REPO, "ecr:DescribeRepositories", "ecr:CreateRepository", "ecr:TagResource", "ecr:DescribeImages"),
    *_role_rows("03 image build", "codebuild", "iam:GetRole", "iam:TagRole"),
    *_rows("03 image build", f"{_RUN_ROLE}/semif-codebuild-{{run}}", "iam:PassRole", context=_TO_CODEBUILD),
    *_rows("03 image build", _PROJECT, "codebuild:BatchGetProjects", "codebuild:CreateProject", "codebuild:UpdateProject",
           "codebuild:StartBuild", "codebuild:BatchGetBuilds"),
    *_rows("04 batch + autoscaling", f"{_SM}:transform-job/semif-batch-{{run}}", "sagemaker:CreateTransformJob",
           "sagemaker:DescribeTransformJob"),
    *_rows("04 batch + autoscaling", f"{_SM}:endpoint/semif-decision-{{run}}", "sagemaker:UpdateEndpointWeightsAndCapacities"),
    *_rows("04 batch + autoscaling", _SCALABLE, "application-autoscaling:RegisterScalableTarget",
           "application-autoscaling:PutScalingPolicy", context=_VARIANT),
    *_rows("04 batch + autoscaling", "*", "application-autoscaling:DescribeScalableTargets",
           "application-autoscaling:DescribeScalingPolicies"),
    *_rows("04 batch + autoscaling", _ALARM, "cloudwatch:PutMetricAlarm", "cloudwatch:DescribeAlarms"),
    *_rows("04 batch + autoscaling", _SLR, "iam:CreateServiceLinkedRole",
           context=(("iam:AWSServiceName", "sagemaker.application-autoscaling.amazonaws.com"),)),
    *_rows("99 cleanup", f"{_SM}:endpoint/semif-text-{{run}}", "sagemaker:DeleteEndpoint"),
    *_rows("99 cleanup", f"{_SM}:endpoint-config/semif-text-{{run}}", "sagemaker:DeleteEndpointConfig"),
    *_rows("99 cleanup", f"{_SM}:model/semif-text-{{run}}", "sagemaker:DeleteModel"),
    *_rows("99 cleanup", f"{_SM}:transform-job/semif-batch-{{run}}", "sagemaker:StopTransformJob"),
    *_rows("99 cleanup", _SCALABLE, "application-autoscaling:DeleteScalingPolicy", "application-autoscaling:DeregisterScalableTarget",
           context=_VARIANT),
    *_rows("99 cleanup", _ALARM, "cloudwatch:DeleteAlarms"),
    *_rows("99 cleanup", _PROJECT, "codebuild:DeleteProject"),
    *_rows("99 cleanup", _REPO, "ecr:DeleteRepository"),
    *_rows("99 cleanup", f"{_RUN_ROLE}/semif-codebuild-{{run}}", "iam:ListRolePolicies", "iam:ListAttachedRolePolicies", "iam:DeleteRole",
           policy=_PROVISIONING, made_by_run="codebuild-role"),
    *_rows("99 cleanup", f"{_RUN_ROLE}/semif-codebuild-{{run}}", "iam:DeleteRolePolicy", "iam:DetachRolePolicy", context=_BOUNDED,
           policy=_PROVISIONING, made_by_run="codebuild-role"),
    *_rows("99 cleanup", "arn:{partition}:logs:{region}:{account}:log-group:/aws/sagemaker/Endpoints/semif-text-{run}",
           "logs:DeleteLogGroup"),
    *_rows("99 cleanup", _OBJECT, "s3:DeleteObject"),
    *_rows("99 cleanup", _BUCKET, "s3:ListBucket"),
    *_rows("99 cleanup", _BUCKET, "s3:DeleteBucket", policy=_PROVISIONING, made_by_run="bucket"),
]


def _values(settings: Settings, state: WorkshopState) -> dict[str, str]:
    region = get_region(settings)
    return {"partition": partition_for(region)[0], "region": region, "account": get_account_id(settings),
            "bucket": default_bucket(settings), "prefix": settings.s3_prefix.strip("/"), "run": state.run_id,
            "dlc_account": dlc_account(region), "dlc_repository": DLC_IMAGES[settings.dlc_variant][0],
            "boundary": boundary_arn(settings)}


def _account_values(settings: Settings) -> dict[str, str]:
    """The placeholders every container/iam/ file shares, for this account, region and bucket."""
    region = get_region(settings)
    return {"PARTITION": partition_for(region)[0], "REGION": region, "ACCOUNT": get_account_id(settings),
            "BUCKET": default_bucket(settings), "PREFIX": settings.s3_prefix.strip("/"), "DLC_ACCOUNT": dlc_account(region)}


def caller_arns(arn: str) -> dict[str, str]:
    """`${CALLER}` of the policies: the caller's own role or user under any path (`role*/<name>` matches `role/<name>`
    and `role/<path>/<name>`, no other name): its path is not always readable, the caller may not `iam:GetRole`
    itself. The policies simulate only it, and deny every write to it."""
    for kind in (":role/", ":user/"):
        if kind in arn:
            head, name = arn.split(kind, 1)
            return {"CALLER": f"{head}{kind[:-1]}*/{name.rsplit('/', 1)[-1]}"}
    return {"CALLER": arn}


def caller_policy(settings: Settings, caller: str | None = None) -> dict[str, Any]:
    """`container/iam/workshop-caller-policy.json` for this account, region, bucket and caller (default: the identity
    asking, `caller_principal`): attach it to the identity that runs the notebooks (in Studio: the domain's or user
    profile's execution role). It passes the roles `SEMIF_ROLE_ARN` / `SEMIF_CODEBUILD_ROLE_ARN` name, else the run
    roles under `/semif-workshop/`."""
    values = {**_account_values(settings), **caller_arns(caller or caller_principal(settings))}
    run_role = f"arn:{values['PARTITION']}:iam::{values['ACCOUNT']}:role{ROLE_PATH}semif"
    values["SAGEMAKER_ROLE"] = settings.role_arn or f"{run_role}-sagemaker-*"
    values["CODEBUILD_ROLE"] = settings.codebuild_role_arn or f"{run_role}-codebuild-*"
    return role_policy(CALLER_POLICY, settings, values)  # with SEMIF_KMS_KEY_ID: kms-key-policy.json on that key too


def provisioning_policy(settings: Settings, caller: str | None = None) -> dict[str, Any]:
    """`container/iam/workshop-provisioning-policy.json` filled in: only where no event team's template provisioned the
    bucket and the roles. Every role it lets the caller create must carry the permissions boundary (`boundary_arn`)."""
    values = _account_values(settings)
    return load_policy(PROVISIONING_POLICY, PARTITION=values["PARTITION"], ACCOUNT=values["ACCOUNT"], BUCKET=values["BUCKET"],
                       BOUNDARY_ARN=boundary_arn(settings), **caller_arns(caller or caller_principal(settings)))


# ====================================================================== the check
def _attach(rows: list[dict[str, Any]]) -> str:
    """Which container/iam/ files grant these rows, as a reader attaches them."""
    files = sorted({r["policy"] for r in rows if r.get("policy")}, key=lambda f: f != CALLER_POLICY)
    return " and ".join(f"container/iam/{f}.json" for f in files) or f"container/iam/{CALLER_POLICY}.json"


@dataclass
class PermissionCheck:
    """One row per needed action: `allowed` is True, False or None (not checked)."""

    principal: str
    method: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    quotas: list[dict[str, Any]] = field(default_factory=list)  # aws.quotas.check_quotas: the run's peak against the account's

    @property
    def missing(self) -> list[dict[str, Any]]:
        """Denied rows that stop their step (an optional row's denial does not)."""
        return [r for r in self.rows if r["allowed"] is False and not r.get("optional")]

    @property
    def optional_denied(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["allowed"] is False and r.get("optional")]

    @property
    def unchecked(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["allowed"] is None]

    def summary(self) -> str:
        ok = sum(r["allowed"] is True for r in self.rows)
        line = (f"{self.principal} ({self.method}): {ok} of {len(self.rows)} needed actions allowed, "
                f"{len(self.missing)} denied, {len(self.unchecked)} not checked")
        if self.optional_denied:
            line += f", {len(self.optional_denied)} optional denied (the step goes on without it)"
        if self.missing:
            line += (f". Attach {_attach(self.missing)} (aws.preflight.caller_policy(settings) / provisioning_policy(settings)) "
                     "before running the AWS steps")
        return line

    def require(self, step: str | None = None, log: Callable[[str], None] | None = print) -> None:
        """Raise `AwsPermissionError` (one line) when an action of `step` ("01", "02", ...; None: every step) is
        denied. Denials of other steps do not stop this one: each is logged as a warning line, and the
        notebook of that step stops on it."""
        here = [r for r in self.missing if step is None or r["step"].startswith(step)]
        later: dict[str, list[dict[str, Any]]] = {}
        for row in self.missing:
            if row not in here:
                later.setdefault(row["step"], []).append(row)
        for other, rows in later.items():
            if log:
                log(f"warning: step {other} will stop on {', '.join(sorted({r['action'] for r in rows}))} (denied); "
                    f"attach {_attach(rows)} before it")
        if here:
            actions = ", ".join(sorted({r["action"] for r in here}))
            raise AwsPermissionError(
                f"step {here[0]['step']}: {self.principal} may not {actions} ({here[0]['how']}). Attach {_attach(here)} "
                "(aws.preflight.caller_policy(settings) / provisioning_policy(settings)) to this identity (in Studio: the "
                "execution role), or ask your event team")

    def __str__(self) -> str:
        mark = {True: "yes", False: "NO", None: "?"}
        lines = [self.summary()] + [f"  {mark[r['allowed']] if not (r.get('optional') and r['allowed'] is False) else 'opt':>3}  "
                                    f"{r['step']:<24} {r['action']:<48} {r['how']}" for r in self.rows]
        if self.quotas:
            from .quotas import describe_quotas

            lines += ["quotas (Service Quotas):", *describe_quotas(self.quotas)]
        return "\n".join(lines)


def check_permissions(settings: Settings, state: WorkshopState) -> PermissionCheck:
    """Which of `NEEDS` the caller has (policy simulation where allowed, else dry calls); creates nothing."""
    require_dlc_region(get_region(settings))
    values = _values(settings, state)
    principal = caller_principal(settings)
    needs = needs_in_context(settings, state, bucket_exists=_bucket_exists(settings, values["bucket"]))
    rows = [{"step": n.step, "action": n.action, "resource": n.resource.format(**values), "allowed": None, "how": "",
             "context": tuple((k, v.format(**values)) for k, v in n.context), "policy": n.policy, "optional": n.optional}
            for n in needs]
    decisions = simulate(settings, principal, rows)
    if decisions is not None:
        for row in rows:
            row["allowed"], row["how"] = decisions[(row["action"], row["resource"])], "simulated"
        return PermissionCheck(principal, "IAM policy simulation", rows)
    probes = dry_calls(settings, state, values)
    for row in rows:
        probe = probes.get(row["action"])
        row["allowed"], row["how"] = probe() if probe else (None, "not checked: no dry call, and no iam:SimulatePrincipalPolicy")
    return PermissionCheck(principal, "dry calls", rows)


def _bucket_exists(settings: Settings, bucket: str) -> bool | None:
    """Whether the workshop bucket is already there (an event team's, another run's): then this run neither creates,
    configures nor deletes it. None when the identity may not tell (s3:GetBucketLocation denied)."""
    try:
        return bucket_region(make_client("s3", settings, max_attempts=2), bucket) is not None
    except Exception as exc:
        if type(exc).__name__ in CREDENTIAL_ERRORS:
            raise
        return None


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
    kept: list[Need] = []
    for need in NEEDS:
        if need.step.startswith("03") and settings.adapter_image_uri:
            continue  # a pre-built image: step 03 calls nothing
        if need.made_by_run == "bucket" and bucket_exists:
            continue
        if need.made_by_run in passed and passed[need.made_by_run][0]:
            continue  # the provisioned role is neither made nor deleted
        for purpose, (provisioned, arn) in passed.items():
            if provisioned and need.action == "iam:PassRole" and f"/semif-{purpose.split('-')[0]}-" in need.resource:
                need = Need(need.step, need.action, arn or need.resource, need.context, need.policy)
        kept.append(need)
    return kept


def caller_principal(settings: Settings) -> str:
    """The caller as an IAM principal ARN (`role/<path><name>` for an assumed role, when readable)."""
    arn = make_client("sts", settings).get_caller_identity()["Arn"]
    if ":assumed-role/" not in arn:
        return arn
    partition_account, rest = arn.split(":assumed-role/", 1)
    name = rest.split("/")[0]
    role_arn = partition_account.replace(":sts:", ":iam:") + f":role/{name}"
    try:
        return make_client("iam", settings).get_role(RoleName=name)["Role"]["Arn"]  # with its path
    except Exception:  # noqa: BLE001 - no iam:GetRole: Studio's console-made roles live under service-role/
        return role_arn.replace(":role/", ":role/service-role/") if "AmazonSageMaker-ExecutionRole" in name else role_arn


def simulate(settings: Settings, principal: str, rows: list[dict[str, Any]]) -> dict[tuple[str, str], bool] | None:
    """`iam:SimulatePrincipalPolicy` for every row (grouped by resource and condition keys); None if not allowed."""
    iam = make_client("iam", settings, max_attempts=2)  # a simulation that fails falls back to dry calls at once
    groups: dict[tuple[str, tuple[tuple[str, str], ...]], list[str]] = {}
    for row in rows:
        groups.setdefault((row["resource"], tuple(row.get("context", ()))), []).append(row["action"])
    decisions: dict[tuple[str, str], bool] = {}
    try:
        for (resource, keys), actions in groups.items():
            entries = [{"ContextKeyName": k, "ContextKeyValues": [v], "ContextKeyType": "string"} for k, v in keys]
            result = iam.simulate_principal_policy(PolicySourceArn=principal, ActionNames=sorted(set(actions)),
                                                   ResourceArns=[resource], ContextEntries=entries)
            for item in result["EvaluationResults"]:
                decisions[(item["EvalActionName"], resource)] = item["EvalDecision"] == "allowed"
    except Exception as exc:  # denied, unknown principal, not implemented (moto): use dry calls
        if type(exc).__name__ in CREDENTIAL_ERRORS:
            raise
        return None
    return decisions


def _probe(call: Callable[[], Any]) -> Callable[[], tuple[bool | None, str]]:
    """A dry call's verdict: denied on AccessDenied, allowed on success or "not found"."""
    def run() -> tuple[bool | None, str]:
        try:
            call()
            return True, "dry call"
        except Exception as exc:  # noqa: BLE001 - any other failure is a verdict of its own (None: cannot tell)
            if error_code(exc) in DENIED_CODES or error_code(exc) == "403":
                return False, "dry call: access denied"
            if is_not_found(exc):
                return True, "dry call (not found yet)"
            return None, f"dry call failed: {error_code(exc) or type(exc).__name__}"
    return run


def dry_calls(settings: Settings, state: WorkshopState, values: dict[str, str]) -> dict[str, Callable[[], tuple[bool | None, str]]]:
    """A side-effect-free call per action that has one; each describes something this run may not have made yet."""
    s3, sm, ecr = make_client("s3", settings), make_client("sagemaker", settings), make_client("ecr", settings)
    iam, cb = make_client("iam", settings), make_client("codebuild", settings)
    aas, cw = make_client("application-autoscaling", settings), make_client("cloudwatch", settings)
    run, bucket = values["run"], values["bucket"]
    return {
        "s3:GetBucketLocation": _probe(lambda: s3.get_bucket_location(Bucket=bucket)),
        "s3:ListBucket": _probe(lambda: s3.list_objects_v2(Bucket=bucket, Prefix=f"{values['prefix']}/{run}/", MaxKeys=1)),
        "s3:GetObject": _probe(lambda: s3.head_object(Bucket=bucket, Key=f"{values['prefix']}/{run}/preflight-probe")),
        "iam:GetRole": _probe(lambda: iam.get_role(RoleName=f"semif-sagemaker-{run}")),
        "sagemaker:DescribeModel": _probe(lambda: sm.describe_model(ModelName=f"semif-text-{run}")),
        "sagemaker:DescribeEndpointConfig": _probe(lambda: sm.describe_endpoint_config(EndpointConfigName=f"semif-text-{run}")),
        "sagemaker:DescribeEndpoint": _probe(lambda: sm.describe_endpoint(EndpointName=f"semif-text-{run}")),
        "sagemaker:DescribeTransformJob": _probe(lambda: sm.describe_transform_job(TransformJobName=f"semif-batch-{run}")),
        "ecr:DescribeRepositories": _probe(lambda: ecr.describe_repositories(repositoryNames=[f"semif-adapter-{run}"])),
        "ecr:DescribeImages": _probe(lambda: ecr.describe_images(repositoryName=f"semif-adapter-{run}", imageIds=[{"imageTag": "probe"}])),
        "ecr:BatchGetImage": _probe(lambda: ecr.batch_get_image(  # the DLC's manifest, as dlc.pin_dlc_image reads it
            registryId=values["dlc_account"], repositoryName=values["dlc_repository"],
            imageIds=[{"imageTag": DLC_IMAGES[settings.dlc_variant][1]}])),
        "codebuild:BatchGetProjects": _probe(lambda: cb.batch_get_projects(names=[f"semif-adapter-build-{run}"])),
        "codebuild:BatchGetBuilds": _probe(
            lambda: cb.batch_get_builds(ids=[f"semif-adapter-build-{run}:00000000-0000-0000-0000-000000000000"])),
        "application-autoscaling:DescribeScalableTargets": _probe(
            lambda: aas.describe_scalable_targets(ServiceNamespace="sagemaker", MaxResults=1)),
        "application-autoscaling:DescribeScalingPolicies": _probe(
            lambda: aas.describe_scaling_policies(ServiceNamespace="sagemaker", MaxResults=1)),
        "cloudwatch:DescribeAlarms": _probe(
            lambda: cw.describe_alarms(AlarmNamePrefix=f"TargetTracking-endpoint/semif-decision-{run}", MaxRecords=1)),
        "iam:ListRolePolicies": _probe(lambda: iam.list_role_policies(RoleName=f"semif-codebuild-{run}")),
        "iam:ListAttachedRolePolicies": _probe(lambda: iam.list_attached_role_policies(RoleName=f"semif-codebuild-{run}")),
        "iam:GetPolicy": _probe(lambda: iam.get_policy(PolicyArn=values["boundary"])),
    }


# ====================================================================== API call -> IAM action
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
