"""Studio's default role and the caller's permissions: the shipped caller policy grants
exactly what the workshop calls, and notebook 01's check reports, before anything is created, which
needed actions the caller has (IAM policy simulation where allowed, otherwise dry calls)."""

from __future__ import annotations

import fnmatch
import json
import re
from pathlib import Path

import pytest

from support.aws import client_error


def _values(settings, run_id):
    return {"partition": "aws", "region": settings.aws_region, "account": "123456789012",
            "bucket": f"semif-sagemaker-123456789012-{settings.aws_region}", "prefix": "semif-workshop", "run": run_id,
            "dlc_account": "763104351884", "dlc_repository": "llama-cpp",  # the DLC registry of us-east-1: its tag's digest is read
            "boundary": f"arn:aws:iam::123456789012:policy/semif-workshop-role-boundary-{settings.aws_region}",
            "spec": "0123456789ab", "job": "1205120000", "instance_type": settings.instance_type,
            "transform_instance_type": settings.transform_instance_type, "build_compute": settings.codebuild_compute_type,
            "build_image": "aws/codebuild/standard:7.0",
            "codebuild_role": f"arn:aws:iam::123456789012:role/semif-workshop/semif-codebuild-{run_id}"}


def _as_list(value):
    return value if isinstance(value, list) else [value]


def allows(policy: dict, action: str, resource: str, context: dict[str, str] | None = None) -> bool:
    """The walk's evaluator (support.iam_policy) on one policy: actions, resources, conditions and the session's variables."""
    from support.iam_policy import evaluate

    return evaluate([policy], action, resource, context or {}).allowed


def test_the_caller_policy_grants_every_needed_action(aws, aws_settings):
    """Each row is granted by the file it names (the caller policy, or the provisioning policy where no event team made
    the bucket and roles); the one row no file grants is optional (a bucket's public access block: S3's default)."""
    from semif_lib.aws import permissions, preflight

    policy = preflight.caller_policy(aws_settings)
    policies = {permissions.CALLER_POLICY: policy, permissions.BUILD_POLICY: preflight.build_policy(aws_settings),
                permissions.PROVISIONING_POLICY: preflight.provisioning_policy(aws_settings)}
    for document in policies.values():  # every placeholder filled in
        assert re.findall(r"\$\{([^}]+)\}", json.dumps(document)) == []
    values = _values(aws_settings, "t3st01")
    missing = [f"{n.action} on {n.resource.format(**values)}" for n in permissions.NEEDS if not n.optional
               and not allows(policies[n.policy], n.action, n.resource.format(**values), {k: v.format(**values) for k, v in n.context})]
    assert missing == []
    assert [n.action for n in permissions.NEEDS if n.policy is None] == ["s3:PutBucketPublicAccessBlock"]
    # a role of another project, or one passed to another service, is not covered
    assert not allows(policy, "iam:PassRole", "arn:aws:iam::123456789012:role/admin", {"iam:PassedToService": "codebuild.amazonaws.com"})
    assert not allows(policy, "iam:PassRole", "arn:aws:iam::123456789012:role/semif-codebuild-t3st01",
                      {"iam:PassedToService": "ec2.amazonaws.com"})
    assert not allows(policy, "s3:GetObject", "arn:aws:s3:::someone-elses-bucket/semif-workshop/x")


def _record_calls(settings) -> list[tuple[str, str, dict]]:
    from semif_lib.aws.clients import make_session

    calls: list[tuple[str, str, dict]] = []

    def hook(params, model, **_):
        calls.append((model.service_model.service_name, model.name, dict(params)))

    make_session(settings).events.register("before-parameter-build", hook)
    return calls


def test_every_call_the_workshop_makes_is_in_the_caller_policy(aws, aws_settings, fake_gguf, tmp_path, example_requests):
    """Record every AWS API call of a whole run (all steps, the check, cleanup) and map it to its IAM action."""
    from semif_lib import workshop
    from semif_lib.aws import permissions, preflight

    calls = _record_calls(aws_settings)
    st = workshop.load_state(aws_settings)
    workshop.check_permissions(settings=aws_settings, state=st, log=lambda _: None)
    workshop.package_model(fake_gguf, settings=aws_settings, state=st, progress=False)
    workshop.deploy_text_model(settings=aws_settings, state=st)
    import requests

    queued = {"results": [{"Body": "{}", "ContentType": "application/json"}], "region": aws_settings.aws_region}
    requests.post("http://motoapi.amazonaws.com/moto-api/static/sagemaker/endpoint-results", json=queued, timeout=10)
    workshop.chat("hi", settings=aws_settings, state=st)
    workshop.build_adapter_image(settings=aws_settings, state=st, log=lambda _: None)
    workshop.deploy_decision_model(settings=aws_settings, state=st)
    workshop.enable_autoscaling(settings=aws_settings, state=st)
    requests_file = tmp_path / "requests.jsonl"
    requests_file.write_text(json.dumps(example_requests[0]) + "\n")
    workshop.score_jsonlines(requests_file, settings=aws_settings, state=st)
    assert not workshop.cleanup(settings=aws_settings, state=st).failed
    granted = [s for p in (preflight.caller_policy(aws_settings), preflight.build_policy(aws_settings),
                           preflight.provisioning_policy(aws_settings))
               for s in p["Statement"] if s["Effect"] == "Allow"]
    needed = {a for service, op, params in calls for a in permissions.iam_action_for(service, op, params)}
    probes = {"iam:SimulatePrincipalPolicy", "servicequotas:ListServiceQuotas"}  # the check itself; optional (`?` without)
    optional = {n.action for n in permissions.NEEDS if n.optional}  # the step goes on without it (S3's default)
    administrator = {"iam:CreatePolicy"}  # the permissions boundary: made once per account by an administrator (moto's here)
    uncovered = sorted(a for a in needed - probes - optional - administrator if not any(
        fnmatch.fnmatchcase(a.lower(), x.lower()) for s in granted for x in _as_list(s["Action"])))
    assert uncovered == []
    assert {"codebuild:CreateProject", "iam:CreateRole", "iam:PassRole", "sagemaker:CreateModel", "s3:PutObject",
            "iam:CreatePolicy"} <= needed
    assert sorted(needed - {n.action for n in permissions.NEEDS} - probes - administrator) == [], "the check's table lists every action"


def test_the_check_runs_dry_calls_on_moto_and_creates_nothing(aws, aws_settings):
    from semif_lib import workshop
    from semif_lib.aws import permissions
    from semif_lib.aws.clients import make_client

    st = workshop.load_state(aws_settings)
    lines: list[str] = []
    check = workshop.check_permissions(settings=aws_settings, state=st, log=lines.append)
    assert check.method == "dry calls"  # moto has no iam:SimulatePrincipalPolicy
    assert [r["action"] for r in check.rows] == [n.action for n in permissions.NEEDS]
    assert check.missing == [] and check.unchecked
    assert all(r["allowed"] is True for r in check.rows if r["how"].startswith("dry call"))
    assert lines[0] == check.summary() and "needed actions allowed" in lines[0]
    assert lines[1] == "quotas this run needs (Service Quotas):" and len(lines) == 2 + len(check.quotas)  # then one line per quota
    assert check.quotas and all(q["ok"] is None for q in check.quotas)  # moto has no ListServiceQuotas: `?`
    assert st.resources == [] and make_client("s3", aws_settings).list_buckets()["Buckets"] == []
    assert make_client("iam", aws_settings).list_roles()["Roles"] == []
    from semif_lib.notebook import tabulate_permissions

    table = tabulate_permissions(check)
    assert list(table.columns) == ["step", "action", "allowed", "how", "resource", "policy"] and len(table) == len(permissions.NEEDS)
    assert set(table["policy"]) == {"workshop-caller-policy.json", "workshop-build-policy.json", "workshop-provisioning-policy.json", ""}
    looks = list(table["allowed"] != "yes")
    assert 0 < sum(looks) < len(table) and looks == sorted(looks, reverse=True), "every row to look at comes before the yeses"
    assert len(table) > 60, "longer than pandas shows by default: notebook 01 raises display.max_rows for it"



def test_the_check_uses_policy_simulation_where_allowed(aws, aws_settings, monkeypatch):
    """A Studio role with the caller policy attached, minus CodeBuild: simulation marks exactly those rows."""
    from semif_lib.aws import permissions, preflight

    st = __import__("semif_lib.workshop", fromlist=["x"]).load_state(aws_settings)
    asked: list[dict] = []

    class FakeIam:
        def simulate_principal_policy(self, **kwargs):
            asked.append(kwargs)
            return {"EvaluationResults": [{"EvalActionName": a, "EvalDecision": "implicitDeny" if a.startswith("codebuild:") else "allowed"}
                                          for a in kwargs["ActionNames"]]}

        def get_role(self, RoleName):
            return {"Role": {"Arn": f"arn:aws:iam::123456789012:role/service-role/{RoleName}"}}

    class FakeSts:
        def get_caller_identity(self):
            return {"Arn": "arn:aws:sts::123456789012:assumed-role/AmazonSageMaker-ExecutionRole-1/SageMaker", "Account": "123456789012"}

    real = preflight.make_client
    monkeypatch.setattr(preflight, "make_client",
                        lambda service, s, **kw: {"iam": FakeIam(), "sts": FakeSts()}.get(service) or real(service, s, **kw))
    check = preflight.check_permissions(aws_settings, st)
    assert check.method == "IAM policy simulation"
    assert check.principal == "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole-1"
    codebuild = sorted({n.action for n in permissions.NEEDS if n.action.startswith("codebuild:")})
    assert sorted({r["action"] for r in check.missing}) == codebuild
    assert check.unchecked == []
    passes = [a for a in asked if "iam:PassRole" in a["ActionNames"]]
    assert {e["ContextKeyValues"][0] for a in passes for e in a["ContextEntries"] if e["ContextKeyName"] == "iam:PassedToService"} == \
        {"sagemaker.amazonaws.com", "codebuild.amazonaws.com"}
    # every simulation carries the session's source identity: in an event team's account, the user profile the names carry
    assert all({"ContextKeyName": "aws:SourceIdentity", "ContextKeyValues": [st.run_id], "ContextKeyType": "string"} in a["ContextEntries"]
               for a in asked)
    assert "Attach container/iam/workshop-build-policy.json" in check.summary()


def deny_dry_call(monkeypatch, service: str, operation: str, action: str) -> list[dict]:
    """The preflight's `service` client (real, on moto) answers `operation` as AWS does for a denied identity;
    returns the calls it refused, as they were asked."""
    from semif_lib.aws import preflight

    asked: list[dict] = []
    real = preflight.make_client

    def client(name, settings, **kwargs):
        made = real(name, settings, **kwargs)
        if name == service:
            def denied(**call):
                asked.append(call)
                raise client_error("AccessDeniedException", f"not authorized to perform: {action}")
            setattr(made, operation, denied)
        return made

    monkeypatch.setattr(preflight, "make_client", client)
    return asked


def test_a_denied_dry_call_is_reported_not_raised(aws, aws_settings, monkeypatch):
    """Without simulation, a read the caller may not make shows as NO (Studio's role has no CodeBuild at all)."""
    from semif_lib.aws import preflight
    from semif_lib.workshop import load_state

    st = load_state(aws_settings)
    deny_dry_call(monkeypatch, "codebuild", "batch_get_projects", "codebuild:BatchGetProjects")
    check = preflight.check_permissions(aws_settings, st)
    assert [r["action"] for r in check.missing] == ["codebuild:BatchGetProjects"]
    assert check.missing[0]["how"] == "dry call: access denied"


def test_reading_the_dlc_manifest_has_a_dry_call(aws, aws_settings, monkeypatch):
    """ecr:BatchGetImage on the DLC registry (what pins its digest) is checked, not left unchecked: denied shows as NO,
    and the call asks AWS's registry for the variant's tag."""
    from semif_lib.aws import preflight
    from semif_lib.aws.dlc import DLC_IMAGES, dlc_account
    from semif_lib.workshop import load_state

    st = load_state(aws_settings)
    asked = deny_dry_call(monkeypatch, "ecr", "batch_get_image", "ecr:BatchGetImage")
    check = preflight.check_permissions(aws_settings, st)
    assert [(r["action"], r["how"]) for r in check.missing] == [("ecr:BatchGetImage", "dry call: access denied")]
    assert "ecr:BatchGetImage" not in {r["action"] for r in check.unchecked}
    repository, tag = DLC_IMAGES[aws_settings.dlc_variant]
    assert asked == [{"registryId": dlc_account("us-east-1"), "repositoryName": repository, "imageIds": [{"imageTag": tag}]}]


def test_studio_role_comes_from_the_sdk(aws, aws_settings, tmp_path, monkeypatch, fake_gguf):
    """In Studio the execution role is what `sagemaker.core`'s get_execution_role finds (metadata file ->
    DescribeUserProfile / DescribeDomain); no role is created."""
    pytest.importorskip("sagemaker.core")
    from sagemaker.core.helper import session_helper

    from semif_lib import workshop
    from semif_lib.aws import iamroles
    from semif_lib.aws.clients import make_client

    role = make_client("iam", aws_settings).create_role(
        RoleName="AmazonSageMaker-ExecutionRole-1", Path="/service-role/",
        AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"}, "Action": "sts:AssumeRole"}]}))["Role"]["Arn"]
    metadata = tmp_path / "resource-metadata.json"
    metadata.write_text(json.dumps({"ResourceName": "default", "ExecutionRoleArn": role}))
    monkeypatch.setattr(iamroles, "STUDIO_METADATA_FILE", str(metadata))
    monkeypatch.setattr(session_helper, "NOTEBOOK_METADATA_FILE", str(metadata))
    st = workshop.load_state(aws_settings)
    workshop.package_model(fake_gguf, settings=aws_settings, state=st, progress=False)
    workshop.deploy_text_model(settings=aws_settings, state=st)
    assert st.get("execution_role_arn") == role and not st.find("iam_role")


def _studio_default_role_credentials(monkeypatch, settings) -> None:
    """An identity holding exactly AWS's AmazonSageMakerFullAccess (the document moto ships), as Studio's default role does."""
    from moto.iam.aws_managed_policies import aws_managed_policies_data

    from semif_lib.aws.clients import make_client, reset_sessions

    iam = make_client("iam", settings)
    document = json.loads(aws_managed_policies_data)["AmazonSageMakerFullAccess"]["Document"]
    arn = iam.create_policy(PolicyName="AmazonSageMakerFullAccess", PolicyDocument=json.dumps(document))["Policy"]["Arn"]
    iam.create_user(UserName="studio")
    iam.attach_user_policy(UserName="studio", PolicyArn=arn)
    key = iam.create_access_key(UserName="studio")["AccessKey"]
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", key["AccessKeyId"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", key["SecretAccessKey"])
    monkeypatch.delenv("AWS_SESSION_TOKEN")
    reset_sessions()


def test_studio_default_role_packages_into_the_default_bucket(aws, aws_settings, fake_gguf, monkeypatch):
    """moto enforces the real AmazonSageMakerFullAccess document on S3: the `*sagemaker*` default bucket takes the
    model; a bucket named like the old default (`semif-workshop-<account>-<region>`) refuses the upload."""
    from moto.core import set_initial_no_auth_action_count

    from semif_lib import workshop
    from semif_lib.aws.errors import AwsPermissionError

    _studio_default_role_credentials(monkeypatch, aws_settings)
    old_name = aws_settings.model_copy(update={"s3_bucket": "semif-workshop-123456789012-us-east-1",
                                               "state_file": aws_settings.state_file.with_name("old.json")})

    @set_initial_no_auth_action_count(0)
    def as_studio():
        st = workshop.load_state(aws_settings)
        check = workshop.check_permissions(settings=aws_settings, state=st, log=lambda _: None)
        denied = {r["action"] for r in check.missing}
        assert {"codebuild:BatchGetProjects", "iam:GetRole"} <= denied, "no CodeBuild and no IAM roles in Studio's default role"
        assert not any(a.startswith("s3:") for a in denied)
        info = workshop.package_model(fake_gguf, settings=aws_settings, state=st, progress=False)
        assert info["uploaded"] and "/semif-sagemaker-" in info["model_data_url"]
        with pytest.raises(AwsPermissionError, match="access denied"):
            workshop.package_model(fake_gguf, settings=old_name, state=workshop.load_state(old_name), progress=False)
        # that role may delete its objects but not buckets: cleanup keeps the empty bucket and says why
        report = workshop.cleanup(settings=aws_settings, state=st)
        assert not report.failed and len(report.removed) == 1
        assert report.kept == [f"s3_bucket {info['model_data_url'].split('/')[2]}: kept, empty: no s3:DeleteBucket permission "
                               "(delete it in the S3 console, or attach container/iam/workshop-provisioning-policy.json)"]

    as_studio()


# ------------------------------------------------------------------ the check per step, rows in context
def test_each_step_stops_only_on_its_own_rows(aws, aws_settings, fake_gguf, monkeypatch):
    """Studio's default role (moto's AmazonSageMakerFullAccess document, enforced on S3 and IAM): notebook 01's step
    passes and says which later steps will stop; step 03 stops on CodeBuild, in one line naming the actions and the fix."""
    from moto.core import set_initial_no_auth_action_count

    from semif_lib import workshop
    from semif_lib.aws.errors import AwsPermissionError

    _studio_default_role_credentials(monkeypatch, aws_settings)

    @set_initial_no_auth_action_count(0)
    def as_studio():
        st = workshop.load_state(aws_settings)
        check = workshop.check_permissions(settings=aws_settings, state=st, log=lambda _: None)
        warnings: list[str] = []
        check.require(step="01", log=warnings.append)  # does not raise: 01's rows are S3 in a *sagemaker* bucket
        assert any(w.startswith("warning: step 03 image build will stop on ") and "codebuild:BatchGetProjects" in w for w in warnings)
        assert not any("step 01" in w for w in warnings)
        assert workshop.package_model(fake_gguf, settings=aws_settings, state=st, progress=False)["uploaded"]
        with pytest.raises(AwsPermissionError) as info:
            check.require(step="03", log=None)
        message = str(info.value)
        assert "\n" not in message and message.startswith("step 03 image build: ")
        assert "codebuild:BatchGetProjects" in message and "workshop-build-policy.json" in message
        with pytest.raises(AwsPermissionError):
            check.require(log=None)  # every step: the old behaviour

    as_studio()


def test_rows_the_context_does_not_need_are_dropped(aws, aws_settings, tmp_path, monkeypatch):
    """SEMIF_ROLE_ARN set, or inside Studio: no semif-sagemaker-<run> role is made, so its IAM rows go;
    iam:PassRole stays, on the role that is passed."""
    from semif_lib import workshop
    from semif_lib.aws import iamroles, permissions, preflight

    role = "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole-1"
    given = aws_settings.model_copy(update={"role_arn": role})
    check = preflight.check_permissions(given, workshop.load_state(given))
    sagemaker_role_rows = [r for r in check.rows if "semif-sagemaker-" in r["resource"] and ":role/" in r["resource"]]
    assert sagemaker_role_rows == []
    passes = [r for r in check.rows if r["action"] == "iam:PassRole"]
    assert [r["resource"] for r in passes if r["step"].startswith("02")] == [role]
    made_by_the_run = [n for n in permissions.NEEDS if n.made_by_run == "sagemaker-role"]  # the role's four rows and its boundary's
    assert [n.action for n in made_by_the_run] == ["iam:GetRole", "iam:TagRole", "iam:CreateRole", "iam:PutRolePolicy", "iam:GetPolicy"]
    assert len(check.rows) == len(permissions.NEEDS) - len(made_by_the_run)

    metadata = tmp_path / "resource-metadata.json"
    metadata.write_text("{}")
    monkeypatch.setattr(iamroles, "STUDIO_METADATA_FILE", str(metadata))
    studio = preflight.check_permissions(aws_settings, workshop.load_state(aws_settings))
    assert [r["resource"] for r in studio.rows if r["action"] == "iam:PassRole" and r["step"].startswith("02")] == [
        "arn:aws:iam::123456789012:role/service-role/*"]
    assert len(studio.rows) == len(permissions.NEEDS) - len(made_by_the_run)


def test_the_table_has_the_tag_and_build_zip_rows():
    """Creating a tagged endpoint config or endpoint also needs sagemaker:AddTags on it; step 03 uploads its build zip."""
    from semif_lib.aws import permissions

    rows = {(n.step, n.action, n.resource.split(":")[-1].split("/")[0]) for n in permissions.NEEDS}
    assert {("02 text endpoint", "sagemaker:AddTags", "endpoint-config"), ("02 text endpoint", "sagemaker:AddTags", "endpoint")} <= rows
    assert any(n.step.startswith("03") and n.action == "s3:PutObject" and "/build/" in n.resource for n in permissions.NEEDS)


def test_the_policies_command_prints_what_the_readme_checklist_attaches(aws, monkeypatch, capsys):
    """`semif workshop policies` (the README's AWS step 4): the caller and build policies, filled in for the identity
    asking, each as JSON under a line naming its file; both fit inline on one role, as the README's steps attach them."""
    from semif_lib.cli import main

    monkeypatch.setenv("SEMIF_AWS_REGION", "us-east-1")
    monkeypatch.setenv("SEMIF_SETTINGS_FILE", "/nonexistent/settings.env")
    assert main(["workshop", "policies"]) == 0
    out = capsys.readouterr().out
    blocks = [b for b in out.split("# container/iam/")[1:]]
    assert [b.split(".json", 1)[0] for b in blocks] == ["workshop-caller-policy", "workshop-build-policy"]
    sizes = []
    for block in blocks:
        document = json.loads(block.split("\n", 1)[1])
        assert document["Version"] == "2012-10-17" and re.findall(r"\$\{([^}]+)\}", json.dumps(document)) == []
        sizes.append(len(re.sub(r"\s", "", json.dumps(document))))  # IAM counts a policy's size without whitespace
    assert max(sizes) <= 6144, sizes  # each fits a managed policy too
    assert sum(sizes) <= 10240, sizes  # both inline on one role (the README's console steps): IAM's aggregate for a role
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    assert "semif workshop policies" in "\n".join(readme.splitlines()[:60])
