"""Whether the calling identity has the IAM actions the workshop needs (`permissions.NEEDS`), before anything is created.

`check_permissions(settings, state)` answers, per row, in one of two ways:

- **IAM policy simulation** (`iam:SimulatePrincipalPolicy` on the caller's own role or user),
  where the caller may run it: every row gets allowed or denied, conditions included.
- **dry calls** otherwise: a read-only call per row that has one (describing a resource this run
  has not created yet answers "not found" when allowed and "access denied" when not). Rows with no
  side-effect-free call (the creates, `iam:PassRole`) are reported as not checked.

A denial names the `container/iam/` file to attach, filled in for this account by `caller_policy(settings)` and
`provisioning_policy(settings)`. No call here creates, changes or deletes anything.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..registry import WorkshopState
from ..settings import Settings
from .clients import get_account_id, get_region, load_policy, make_client, partition_for
from .dlc import DLC_IMAGES, dlc_account, require_dlc_region
from .errors import CREDENTIAL_ERRORS, DENIED_CODES, AwsPermissionError, error_code, is_not_found
from .iamroles import ROLE_PATH, boundary_arn, role_policy
from .packaging import bucket_region, default_bucket
from .permissions import BUILD_POLICY, CALLER_POLICY, LIST_KEYS, PROVISIONING_POLICY, needs_in_context
from .quotas import describe_quotas

__all__ = ["PermissionCheck", "build_policy", "caller_arns", "caller_policy", "caller_principal", "check_permissions",
           "provisioning_policy"]


# Stand-ins for the parts of a name a run makes later (a model's spec hash, a transform job's time stamp): the policies
# match them by pattern, the simulator needs one concrete ARN.
SPEC_STAND_IN, JOB_STAND_IN = "0123456789ab", "1205120000"


def _values(settings: Settings, state: WorkshopState) -> dict[str, str]:
    from .imagebuild import BUILD_IMAGE, BUILD_IMAGE_ARM

    region = get_region(settings)
    partition, account = partition_for(region)[0], get_account_id(settings)
    arm = settings.dlc_variant == "arm64"
    instance = {"cuda": settings.gpu_instance_type, "arm64": settings.arm_instance_type}.get(settings.dlc_variant, settings.instance_type)
    return {"partition": partition, "region": region, "account": account,
            "bucket": default_bucket(settings), "prefix": settings.s3_prefix.strip("/"), "run": state.run_id,
            "dlc_account": dlc_account(region), "dlc_repository": DLC_IMAGES[settings.dlc_variant][0],
            "boundary": boundary_arn(settings), "spec": SPEC_STAND_IN, "job": JOB_STAND_IN, "instance_type": instance,
            "transform_instance_type": (settings.gpu_transform_instance_type if settings.dlc_variant == "cuda"
                                        else settings.transform_instance_type),
            "build_compute": "BUILD_GENERAL1_LARGE" if arm else settings.codebuild_compute_type,
            "build_image": BUILD_IMAGE_ARM if arm else BUILD_IMAGE,
            "codebuild_role": settings.codebuild_role_arn or f"arn:{partition}:iam::{account}:role{ROLE_PATH}semif-codebuild-"
                                                             f"{state.run_id}"}


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
    # OWNER: every run of this identity (in an event team's account the template writes ${aws:SourceIdentity}: one attendee's runs)
    values = {**_account_values(settings), **caller_arns(caller or caller_principal(settings)), "OWNER": "*"}
    run_role = f"arn:{values['PARTITION']}:iam::{values['ACCOUNT']}:role{ROLE_PATH}semif"
    values["SAGEMAKER_ROLE"] = settings.role_arn or f"{run_role}-sagemaker-*"
    values["CODEBUILD_ROLE"] = settings.codebuild_role_arn or f"{run_role}-codebuild-*"
    return role_policy(CALLER_POLICY, settings, values)  # with SEMIF_KMS_KEY_ID: kms-key-policy.json on that key too


def build_policy(settings: Settings) -> dict[str, Any]:
    """`container/iam/workshop-build-policy.json` filled in: step 03's adapter repository, CodeBuild project and build role,
    beside the caller policy (the two exceed IAM's 6,144 characters for one managed policy together)."""
    values = {**_account_values(settings), "OWNER": "*"}
    run_roles = f"arn:{values['PARTITION']}:iam::{values['ACCOUNT']}:role{ROLE_PATH}"
    values["CODEBUILD_ROLE"] = settings.codebuild_role_arn or f"{run_roles}semif-codebuild-*"
    return role_policy(BUILD_POLICY, settings, values)


def provisioning_policy(settings: Settings, caller: str | None = None) -> dict[str, Any]:
    """`container/iam/workshop-provisioning-policy.json` filled in: only where no event team's template provisioned the
    bucket and the roles. Every role it lets the caller create must carry the permissions boundary (`boundary_arn`)."""
    values = _account_values(settings)
    return load_policy(PROVISIONING_POLICY, PARTITION=values["PARTITION"], ACCOUNT=values["ACCOUNT"], BUCKET=values["BUCKET"],
                       BOUNDARY_ARN=boundary_arn(settings), **caller_arns(caller or caller_principal(settings)))


# ====================================================================== the check
def _attach(rows: list[dict[str, Any]]) -> str:
    """Which container/iam/ files grant these rows, as a reader attaches them."""
    files = sorted({r["policy"] for r in rows if r.get("policy")}, key=lambda f: (f != CALLER_POLICY, f))  # caller first, then by name
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
            line += (f". Attach {_attach(self.missing)} (aws.preflight.caller_policy / build_policy / provisioning_policy(settings)) "
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
                "(aws.preflight.caller_policy / build_policy / provisioning_policy(settings)) to this identity (in Studio: the "
                "execution role), or ask your event team")

    def __str__(self) -> str:
        mark = {True: "yes", False: "NO", None: "?"}
        lines = [self.summary()] + [f"  {mark[r['allowed']] if not (r.get('optional') and r['allowed'] is False) else 'opt':>3}  "
                                    f"{r['step']:<24} {r['action']:<48} {r['how']}" for r in self.rows]
        if self.quotas:
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
    decisions = simulate(settings, principal, rows, state.run_id)
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


def simulate(settings: Settings, principal: str, rows: list[dict[str, Any]], run_id: str) -> dict[tuple[str, str], bool] | None:
    """`iam:SimulatePrincipalPolicy` for every row (grouped by resource and condition keys); None if not allowed."""
    iam = make_client("iam", settings, max_attempts=2)  # a simulation that fails falls back to dry calls at once
    groups: dict[tuple[str, tuple[tuple[str, str], ...]], list[str]] = {}
    for row in rows:
        groups.setdefault((row["resource"], tuple(row.get("context", ()))), []).append(row["action"])
    decisions: dict[tuple[str, str], bool] = {}
    try:
        for (resource, keys), actions in groups.items():
            # aws:SourceIdentity: in an event team's account Studio sets it to the user profile, the run id the policies scope names to
            entries = [{"ContextKeyName": k, "ContextKeyValues": [v], "ContextKeyType": "stringList" if k in LIST_KEYS else "string"}
                       for k, v in (("aws:SourceIdentity", run_id), *keys)]
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
