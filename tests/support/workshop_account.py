"""The event team's account on moto: container/cfn/workshop-account.yaml deployed with moto's CloudFormation, and the
policies it gave each role read back, as the tests of that account (test_cfn, test_account_attacks, the template
account's notebook walk) need them.

moto creates the bucket and the three roles and skips AWS::SageMaker::Domain, UserProfile and StudioLifecycleConfig
(it warns and leaves them out); the Studio half is read from the template instead.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from typing import Any

from support.paths import ROOT

__all__ = ["ACCOUNT", "STUDIO_ONLY", "TEMPLATE", "Renderer", "amazon_sagemaker_full_access", "attendee_policies", "deploy_account",
           "lifecycle_script",
           "load_template", "moto_policy", "role_policies"]

TEMPLATE = ROOT / "container" / "cfn" / "workshop-account.yaml"
STUDIO_ONLY = {"AWS::SageMaker::Domain", "AWS::SageMaker::UserProfile", "AWS::SageMaker::StudioLifecycleConfig"}
NETWORK = {"VpcId": "vpc-0123456789abcdef0", "SubnetIds": "subnet-0123456789abcdef0"}
ACCOUNT = "123456789012"
NO_VALUE = object()


def load_template() -> dict[str, Any]:
    """The template as cfn-lint reads it: `!Sub x` becomes `{"Fn::Sub": x}`, and so on."""
    from cfnlint.decode.cfn_yaml import loads  # CloudFormation's YAML (!Sub, !If, ...), as cfn-lint reads it

    return loads(TEMPLATE.read_text())


class Renderer:
    """The intrinsic functions this template uses, evaluated for given parameters (what CloudFormation would do)."""

    def __init__(self, template: dict[str, Any], region: str, parameters: dict[str, str], attributes: dict[str, str]):
        self.template = template
        defaults = {k: v.get("Default", "") for k, v in template["Parameters"].items()}
        self.refs: dict[str, Any] = {**defaults, **parameters, **attributes, "AWS::Region": region, "AWS::AccountId": ACCOUNT,
                                     "AWS::Partition": "aws-cn" if region.startswith("cn-") else "aws", "AWS::NoValue": NO_VALUE}
        self.conditions = {name: self.render(body) for name, body in template["Conditions"].items()}

    def render(self, node: Any) -> Any:
        if isinstance(node, list):
            return [v for v in (self.render(x) for x in node) if v is not NO_VALUE]
        if not isinstance(node, dict):
            return str(node) if isinstance(node, str) else node
        if len(node) == 1:
            (key, arg), = node.items()
            if key in FUNCTIONS:
                return FUNCTIONS[key](self, arg)
        return {str(k): v for k, v in ((k, self.render(x)) for k, x in node.items()) if v is not NO_VALUE}

    def sub(self, arg: Any) -> str:
        text, extra = (arg, {}) if isinstance(arg, str) else (arg[0], {k: self.render(v) for k, v in arg[1].items()})
        done = re.sub(r"\$\{([^}!]+)\}", lambda m: str({**self.refs, **extra}[m.group(1)]), str(text))
        return done.replace("${!", "${")  # Fn::Sub writes ${!Literal} as ${Literal}


FUNCTIONS = {
    "Ref": lambda r, a: r.refs[a],
    "Fn::Sub": Renderer.sub,
    "Fn::If": lambda r, a: r.render(a[1] if r.conditions[a[0]] else a[2]),
    "Fn::Not": lambda r, a: not r.render(a[0]),
    "Fn::Equals": lambda r, a: r.render(a[0]) == r.render(a[1]),
    "Fn::FindInMap": lambda r, a: r.template["Mappings"][r.render(a[0])][r.render(a[1])][r.render(a[2])],
    "Fn::GetAtt": lambda r, a: r.refs[".".join(a) if isinstance(a, list) else a],
    "Fn::Base64": lambda r, a: r.render(a),  # kept as text: the script is read, not decoded
}


def lifecycle_script(region: str, parameters: dict[str, str], attributes: dict[str, str]) -> str:
    """The JupyterLab lifecycle script as CloudFormation writes it for these parameters and resolved attributes."""
    template = load_template()
    return Renderer(template, region, parameters, attributes).render(
        template["Resources"]["WorkshopSettings"]["Properties"]["StudioLifecycleConfigContent"])


def _referenced(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["Ref"]} if "Ref" in node else set()
        if "Fn::GetAtt" in node:
            target = node["Fn::GetAtt"]
            found.add(target[0] if isinstance(target, list) else target.split(".")[0])
        return found.union(*(_referenced(v) for v in node.values()))
    return set().union(*(_referenced(v) for v in node)) if isinstance(node, list) else set()


NO_VALUE_REF = {"Ref": "AWS::NoValue"}


def _drop_no_values(node: Any, conditions: dict[str, bool]) -> Any:
    """Resolve `Fn::If` items of a list whose false branch is AWS::NoValue, as CloudFormation does: moto keeps the
    null in the list (a role's `Policies`) and fails on it."""
    if isinstance(node, dict):
        return {k: _drop_no_values(v, conditions) for k, v in node.items()}
    if not isinstance(node, list):
        return node
    kept = []
    for item in node:
        branches = item.get("Fn::If") if isinstance(item, dict) and len(item) == 1 else None
        if branches and NO_VALUE_REF in branches[1:]:
            chosen = branches[1] if conditions[branches[0]] else branches[2]
            if chosen != NO_VALUE_REF:
                kept.append(_drop_no_values(chosen, conditions))
            continue
        kept.append(_drop_no_values(item, conditions))
    return kept


def template_moto_deploys(parameters: dict[str, str]) -> str:
    """The template as JSON as moto's CloudFormation can deploy it for these parameters: less the outputs that read a
    Studio resource (moto skips those resources but fails on an output reading an attribute of a type it does not
    know: the domain's id), and with the conditional list items CloudFormation would drop dropped."""
    template = load_template()
    studio = {name for name, resource in template["Resources"].items() if resource["Type"] in STUDIO_ONLY}
    template["Outputs"] = {k: v for k, v in template["Outputs"].items() if not _referenced(v["Value"]) & studio}
    conditions = Renderer(template, "us-east-1", parameters, {}).conditions  # they read parameters only
    template["Resources"] = _drop_no_values(template["Resources"], conditions)
    return json.dumps(template)


def deploy_account(cf: Any, stack_name: str = "semif-workshop", **parameters: str) -> tuple[dict[str, str], set[str]]:
    """Create the stack (its VPC and subnets made up: moto checks neither); return its outputs and the resource types
    moto skipped (each one it warned about)."""
    given = {**NETWORK, **parameters}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cf.create_stack(StackName=stack_name, TemplateBody=template_moto_deploys(given), Capabilities=["CAPABILITY_NAMED_IAM"],
                        Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in given.items()])
    stack = cf.describe_stacks(StackName=stack_name)["Stacks"][0]
    if stack["StackStatus"] != "CREATE_COMPLETE":
        raise AssertionError(f"{stack_name}: {stack['StackStatus']} {stack.get('StackStatusReason', '')}")
    skipped = {t for t in STUDIO_ONLY if any(t in str(w.message) for w in caught)}
    return {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}, skipped


def moto_policy(document: Any) -> Any:
    """moto keeps a CloudFormation role's inline policy as the Python repr of the dict."""
    return document if isinstance(document, dict) else (json.loads(document) if document.startswith("{\"") else ast.literal_eval(document))


def role_policies(iam: Any, role_name: str) -> dict[str, dict[str, Any]]:
    """A role's inline policies as deployed: name -> document."""
    names = iam.list_role_policies(RoleName=role_name)["PolicyNames"]
    return {n: moto_policy(iam.get_role_policy(RoleName=role_name, PolicyName=n)["PolicyDocument"]) for n in names}


def attendee_policies(iam: Any, role_name: str) -> list[dict[str, Any]]:
    """Every policy the stack gave a role, as deployed: its managed policies' default versions (Studio's UI), then its inline ones."""
    documents = []
    for attached in iam.list_attached_role_policies(RoleName=role_name)["AttachedPolicies"]:
        version = iam.get_policy(PolicyArn=attached["PolicyArn"])["Policy"]["DefaultVersionId"]
        found = iam.get_policy_version(PolicyArn=attached["PolicyArn"], VersionId=version)["PolicyVersion"]["Document"]
        documents.append(moto_policy(found))
    return [*documents, *role_policies(iam, role_name).values()]


def amazon_sagemaker_full_access() -> dict[str, Any]:
    """AWS's AmazonSageMakerFullAccess (v29, tests/data/README.md): Studio's default role's policy."""
    return json.loads((ROOT / "tests" / "data" / "AmazonSageMakerFullAccess.json").read_text())["PolicyVersion"]["Document"]
