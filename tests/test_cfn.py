"""container/cfn/workshop-account.yaml, the event team's account: its policies are container/iam/'s, it deploys on
moto, and the settings its Studio lifecycle configuration writes are what a notebook kernel then reads.

moto's CloudFormation creates the bucket and the two roles; it skips AWS::SageMaker::Domain, UserProfile and
StudioLifecycleConfig (no moto support: it warns and leaves them out), so the Studio half is checked by reading
the template, and the lifecycle script is rendered from it and run here with bash.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import warnings
from typing import Any

import pytest

from support.paths import ROOT

TEMPLATE = ROOT / "container" / "cfn" / "workshop-account.yaml"
ACCOUNT = "123456789012"
NO_VALUE = object()
STUDIO_ONLY = {"AWS::SageMaker::Domain", "AWS::SageMaker::UserProfile", "AWS::SageMaker::StudioLifecycleConfig"}


def load_template() -> dict[str, Any]:
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
        return re.sub(r"\$\{([^}!]+)\}", lambda m: str({**self.refs, **extra}[m.group(1)]), str(text))


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


def account_values(region: str, bucket: str, kms_key: str = "") -> dict[str, dict[str, str]]:
    """The placeholders of each container/iam/ file as the template writes them: for every run of the account
    (the run's prefix, repository and project become wildcards; the caller policy's prefix is the account's)."""
    from semif_lib.aws.clients import partition_for
    from semif_lib.aws.dlc import dlc_account

    common = {"PARTITION": partition_for(region)[0], "REGION": region, "ACCOUNT": ACCOUNT, "BUCKET": bucket,
              "DLC_ACCOUNT": dlc_account(region), "KMS_KEY_ARN": kms_key}
    run = {**common, "PREFIX": "semif-workshop/*", "REPOSITORY": "semif-adapter-*", "PROJECT": "semif-adapter-build-*"}
    return {"workshop-caller-policy": {**common, "PREFIX": "semif-workshop"}, "sagemaker-execution-policy": run,
            "codebuild-service-policy": run, "kms-key-policy": common, "sagemaker-trust-policy": common, "codebuild-trust-policy": common}


ROLES = {  # role -> (its trust policy file, its inline policy files without / with a KMS key)
    "StudioExecutionRole": ("sagemaker-trust-policy", ["workshop-caller-policy", "sagemaker-execution-policy"]),
    "CodeBuildServiceRole": ("codebuild-trust-policy", ["codebuild-service-policy"]),
}


@pytest.mark.parametrize("region", ["us-east-1", "ap-northeast-3", "cn-north-1"])
@pytest.mark.parametrize("kms_key", ["", "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"], ids=["sse", "kms"])
def test_every_policy_in_the_template_is_its_container_iam_file(region, kms_key):
    """The caller policy lives in container/iam/ alone: the template's copy, rendered, must equal it (and the other files)."""
    from semif_lib.aws.clients import load_policy
    from semif_lib.aws.dlc import DLC_ACCOUNTS

    template = load_template()
    bucket = f"semif-sagemaker-{ACCOUNT}-{region}"
    attributes = {"WorkshopBucket": bucket}
    renderer = Renderer(template, region, {"KmsKeyArn": kms_key}, attributes)
    values = account_values(region, bucket, kms_key)
    for role, (trust, policies) in ROLES.items():
        properties = renderer.render(template["Resources"][role]["Properties"])
        assert properties["AssumeRolePolicyDocument"] == load_policy(trust, **values[trust]), role
        names = [p["PolicyName"] for p in properties["Policies"]]
        assert names == policies + (["kms-key-policy"] if kms_key else []), role
        for policy in properties["Policies"]:
            name = policy["PolicyName"]
            assert policy["PolicyDocument"] == load_policy(name, **values[name]), f"{role}: {name} drifted from container/iam/{name}.json"
        assert properties["RoleName"].startswith("semif-"), "the caller policy passes only semif-* roles"
    assert {r: m["Account"] for r, m in template["Mappings"]["DlcAccounts"].items()} == DLC_ACCOUNTS


def test_studio_uses_the_role_and_the_lifecycle_configuration_by_reading_the_template():
    """What moto cannot deploy: the domain's and profile's execution role, and the JupyterLab lifecycle configuration."""
    resources = load_template()["Resources"]
    domain = resources["StudioDomain"]["Properties"]
    role = {"Fn::GetAtt": ["StudioExecutionRole", "Arn"]}
    config = {"Fn::GetAtt": ["WorkshopSettings", "StudioLifecycleConfigArn"]}
    assert domain["DefaultUserSettings"]["ExecutionRole"] == role and domain["DefaultSpaceSettings"]["ExecutionRole"] == role
    lab = domain["DefaultUserSettings"]["JupyterLabAppSettings"]
    assert lab["DefaultResourceSpec"]["LifecycleConfigArn"] == config and lab["LifecycleConfigArns"] == [config]
    assert resources["WorkshopSettings"]["Properties"]["StudioLifecycleConfigAppType"] == "JupyterLab"
    profile = resources["AttendeeProfile"]["Properties"]
    assert profile["DomainId"] == {"Fn::GetAtt": ["StudioDomain", "DomainId"]} and profile["UserSettings"]["ExecutionRole"] == role
    assert {r["Type"] for r in resources.values()} >= STUDIO_ONLY


def _moto_policy(document: Any) -> Any:
    """moto keeps a CloudFormation role's inline policy as the Python repr of the dict."""
    return document if isinstance(document, dict) else (json.loads(document) if document.startswith("{\"") else ast.literal_eval(document))


def test_the_stack_deploys_on_moto_and_a_kernel_reads_its_settings(aws, aws_settings, tmp_path, monkeypatch, fake_gguf):
    """Deploy (moto), run the lifecycle script the template writes, then notebook 03's step with what a kernel reads:
    the stack's CodeBuild role and bucket are used, no role is created, and the upload is encrypted with the stack's key."""
    from semif_lib.aws.clients import load_policy, make_client
    from semif_lib.settings import load_settings, setting_source
    from semif_lib.workshop import build_adapter_image, load_state

    region = aws_settings.aws_region
    key = make_client("kms", aws_settings).create_key()["KeyMetadata"]["Arn"]
    cf = make_client("cloudformation", aws_settings)
    parameters = {"VpcId": "vpc-0123456789abcdef0", "SubnetIds": "subnet-0123456789abcdef0", "KmsKeyArn": key}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cf.create_stack(StackName="semif-workshop", TemplateBody=TEMPLATE.read_text(), Capabilities=["CAPABILITY_NAMED_IAM"],
                        Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in parameters.items()])
    stack = cf.describe_stacks(StackName="semif-workshop")["Stacks"][0]
    assert stack["StackStatus"] == "CREATE_COMPLETE"
    skipped = {t for t in STUDIO_ONLY if any(t in str(w.message) for w in caught)}
    assert skipped == STUDIO_ONLY, "moto now deploys a Studio resource: test it here instead of by reading"
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}

    iam, bucket = make_client("iam", aws_settings), outputs["BucketName"]
    values = account_values(region, bucket, key)
    for role, (_, policies) in ROLES.items():
        name = iam.get_role(RoleName=f"semif-{'studio' if role.startswith('Studio') else 'codebuild'}-{region}")["Role"]["RoleName"]
        for policy in [*policies, "kms-key-policy"]:
            got = _moto_policy(iam.get_role_policy(RoleName=name, PolicyName=policy)["PolicyDocument"])
            assert got == load_policy(policy, **values[policy]), f"{name}: {policy}"
    rule = make_client("s3", aws_settings).get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"][0]
    assert rule["ApplyServerSideEncryptionByDefault"] == {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": key}

    # the JupyterLab lifecycle script, rendered as CloudFormation would, run with a fresh home
    template = load_template()
    attributes = {"WorkshopBucket": bucket, "StudioExecutionRole.Arn": outputs["StudioExecutionRoleArn"],
                  "CodeBuildServiceRole.Arn": outputs["CodeBuildRoleArn"]}
    script = Renderer(template, region, parameters, attributes).render(
        template["Resources"]["WorkshopSettings"]["Properties"]["StudioLifecycleConfigContent"])
    home = tmp_path / "home"
    home.mkdir()
    subprocess.run(["bash", "-c", script], env={"HOME": str(home), "PATH": "/usr/bin:/bin"}, check=True, timeout=30)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SEMIF_SETTINGS_FILE")
    for variable in ("SEMIF_TARGET", "SEMIF_ROLE_ARN", "SEMIF_CODEBUILD_ROLE_ARN", "SEMIF_S3_BUCKET", "SEMIF_KMS_KEY_ID"):
        monkeypatch.delenv(variable, raising=False)
    settings = load_settings(state_file=aws_settings.state_file, run_id="t3st01")
    assert (settings.target, settings.aws_region, settings.s3_bucket, settings.kms_key_id) == ("aws", region, bucket, key)
    assert (settings.role_arn, settings.codebuild_role_arn) == (outputs["StudioExecutionRoleArn"], outputs["CodeBuildRoleArn"])
    assert setting_source("target") == f"SEMIF_TARGET in {home / '.semif' / 'settings.env'}"

    state = load_state(settings)
    build_adapter_image(settings=settings, state=state, log=lambda _: None)
    project = make_client("codebuild", settings).batch_get_projects(names=["semif-adapter-build-t3st01"])["projects"][0]
    assert project["serviceRole"] == outputs["CodeBuildRoleArn"]
    assert not state.find("iam_role") and not any(r["RoleName"].endswith("t3st01") for r in iam.list_roles()["Roles"])
    zips = make_client("s3", settings).list_objects_v2(Bucket=bucket, Prefix="semif-workshop/t3st01/build/")["Contents"]
    head = make_client("s3", settings).head_object(Bucket=bucket, Key=zips[0]["Key"])
    assert head["ServerSideEncryption"] == "aws:kms" and head["SSEKMSKeyId"] == key


def test_a_kms_key_grants_its_use_to_every_role_a_run_creates_and_to_the_caller(aws, aws_settings):
    """The same kms-key-policy.json the template adds: on the role a run creates (an alias is resolved to the key ARN, as
    IAM needs) and in the caller policy notebook 01 prints; without SEMIF_KMS_KEY_ID, no KMS statement."""
    from semif_lib.aws import preflight
    from semif_lib.aws.clients import make_client
    from semif_lib.aws.iamroles import ensure_role
    from semif_lib.workshop import load_state

    kms = make_client("kms", aws_settings)
    key = kms.create_key()["KeyMetadata"]["Arn"]
    kms.create_alias(AliasName="alias/workshop", TargetKeyId=key)
    settings = aws_settings.model_copy(update={"kms_key_id": "alias/workshop"})
    state = load_state(settings)
    ensure_role("semif-codebuild-t3st01", "codebuild-trust-policy", "codebuild-service-policy", settings, state, "test")
    policy = _moto_policy(make_client("iam", settings).get_role_policy(RoleName="semif-codebuild-t3st01",
                                                                        PolicyName="semif-least-privilege")["PolicyDocument"])
    kms_statements = [s for s in policy["Statement"] if s["Sid"] in ("UseWorkshopKmsKey", "EcrGrantsOnWorkshopKmsKey")]
    assert [s["Resource"] for s in kms_statements] == [key, key]
    assert set(kms_statements[0]["Action"]) == {"kms:GenerateDataKey", "kms:Decrypt", "kms:DescribeKey"}
    assert [s["Resource"] for s in preflight.caller_policy(settings)["Statement"] if s["Sid"] == "UseWorkshopKmsKey"] == [key]
    assert not [s for s in preflight.caller_policy(aws_settings)["Statement"] if s["Sid"].endswith("KmsKey")]
