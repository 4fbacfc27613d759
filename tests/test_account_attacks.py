"""An attendee who tries to take the account over: the escalation paths docs/aws.md walks through, and the ones
IAM's documentation lists for the actions these policies touch (iam:PassRole, iam:PutRolePolicy, permissions
boundaries, iam:SimulatePrincipalPolicy), is tried with real boto3 calls on moto and must be refused, under both
identities an attendee can hold:

- **template**: the event team's account, container/cfn/workshop-account.yaml deployed on moto; the attendee is
  its Studio role with what the stack gave it (AmazonSageMakerFullAccess for Studio's UI, the caller policy, the
  guardrails), read back from moto, in a Studio session (the domain and user profile keys, the source identity);
- **standalone**: an account without the template; the attendee holds the caller policy and the provisioning
  policy, and an administrator made the permissions boundary.

Every call is decided by the identity-policy evaluator the notebook walks use (support.aws_identity: the same
request mapping, AWS's 403). What IAM's evaluation alone cannot show (a role the attacker may create under the
boundary and write `*` into) is shown on the effective permissions: the role's policy capped by the boundary.

Two attendees of the template account share one role; what keeps them apart is their user profile, which Studio sends
as `aws:SourceIdentity` and which every name they may touch carries: another attendee's endpoint, objects, repository
and build project are refused by name. The whole surface, every operation of every service the policies reach, is
decided in tests/test_operations.py; these paths are its readable examples.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest

ACCOUNT, REGION = "123456789012", "us-east-1"
OWNER, OTHER = "attendee", "attendee2"  # the attacker's user profile (its run id) and another attendee's
ADMIN = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
ANYONE = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}]}
SERVICES = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"Service": [
    "sagemaker.amazonaws.com", "codebuild.amazonaws.com", "lambda.amazonaws.com", "glue.amazonaws.com"]}}]}
ADMIN_ACCESS = "arn:aws:iam::aws:policy/AdministratorAccess"
DENIED_CODES = {"AccessDenied", "AccessDeniedException", "403"}


@dataclass
class Account:
    """What the attacker aims at, and the attacker's own identity and clients."""

    name: str
    own_role: str  # the attendee's role name
    own_arn: str
    execution_role: str  # what endpoints run as (the run's or the stack's), a role an attendee may pass to SageMaker
    shared_codebuild_role: str  # a CodeBuild role others build with, made by the event team or an administrator
    bucket: str
    client: Callable[[str], Any]
    enforcer: Any
    boundary: str = ""
    admin_role_arn: str = f"arn:aws:iam::{ACCOUNT}:role/event-admin"
    extra: dict[str, Any] = field(default_factory=dict)


def _admin(service: str) -> Any:
    import boto3

    return boto3.client(service, region_name=REGION)  # the test's own session on moto: never enforced


def _the_rest_of_the_account(bucket: str | None) -> None:
    """What lives in the account besides the workshop: an administrator role any service may assume, another project's
    endpoint, an attendee's adapter repository, a KMS key; the workshop bucket when no stack made it."""
    iam, sm = _admin("iam"), _admin("sagemaker")
    iam.create_role(RoleName="event-admin", AssumeRolePolicyDocument=json.dumps(SERVICES))
    iam.put_role_policy(RoleName="event-admin", PolicyName="admin", PolicyDocument=json.dumps(ADMIN))
    image = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/event:latest"
    sm.create_model(ModelName="event-model", ExecutionRoleArn=f"arn:aws:iam::{ACCOUNT}:role/event-admin",
                    PrimaryContainer={"Image": image})
    sm.create_endpoint_config(EndpointConfigName="event-config", ProductionVariants=[
        {"VariantName": "AllTraffic", "ModelName": "event-model", "InitialInstanceCount": 1, "InstanceType": "ml.m5.large"}])
    sm.create_endpoint(EndpointName="event-demo", EndpointConfigName="event-config")
    _admin("ecr").create_repository(repositoryName="semif-adapter-other1")
    if bucket:
        _admin("s3").create_bucket(Bucket=bucket)


def _enforce(aws_settings, tmp_path, principal: str, caller: str, policies: list[dict], context: dict | None = None):
    from semif_lib.aws.clients import make_client, make_session

    from support.aws_identity import IdentityEnforcer

    enforcer = IdentityEnforcer(principal, caller, policies, tmp_path / "decisions.jsonl", context)
    enforcer.register(make_session(aws_settings))
    return enforcer, (lambda service: make_client(service, aws_settings))


@pytest.fixture
def template_account(aws, aws_settings, tmp_path) -> Account:
    from semif_lib.aws.clients import make_client

    from support.workshop_account import attendee_policies, deploy_account

    outputs, _ = deploy_account(make_client("cloudformation", aws_settings))
    _the_rest_of_the_account(None)
    studio = f"semif-studio-{REGION}"
    policies = attendee_policies(_admin("iam"), studio)
    studio_session = {"sagemaker:DomainId": "d-workshop", "sagemaker:UserProfileName": OWNER, "aws:SourceIdentity": OWNER}
    enforcer, client = _enforce(aws_settings, tmp_path, outputs["StudioExecutionRoleArn"],
                                f"arn:aws:sts::{ACCOUNT}:assumed-role/{studio}/SageMaker", policies, studio_session)
    return Account("template", studio, outputs["StudioExecutionRoleArn"], outputs["SageMakerExecutionRoleArn"],
                   f"semif-codebuild-{REGION}", outputs["BucketName"], client, enforcer)


@pytest.fixture
def standalone_account(aws, aws_settings, tmp_path) -> Account:
    from semif_lib.aws import iamroles, preflight
    from semif_lib.aws.packaging import default_bucket

    iam = _admin("iam")
    bucket = default_bucket(aws_settings)
    _the_rest_of_the_account(bucket)
    document = iamroles.boundary_document(aws_settings)  # what an administrator makes once
    boundary = iam.create_policy(PolicyName=iamroles.boundary_name(REGION), PolicyDocument=json.dumps(document))["Policy"]["Arn"]
    iam.create_role(RoleName="semif-codebuild-shared", AssumeRolePolicyDocument=json.dumps(SERVICES))  # an administrator's, for everyone
    own = iam.create_role(RoleName="workshop-attendee", AssumeRolePolicyDocument=json.dumps(SERVICES))["Role"]["Arn"]
    policies = [preflight.caller_policy(aws_settings, caller=own), preflight.build_policy(aws_settings),
                preflight.provisioning_policy(aws_settings, caller=own)]
    enforcer, client = _enforce(aws_settings, tmp_path, own, f"arn:aws:sts::{ACCOUNT}:assumed-role/workshop-attendee/attendee", policies)
    return Account("standalone", "workshop-attendee", own, f"arn:aws:iam::{ACCOUNT}:role/semif-workshop/semif-sagemaker-r1",
                   "semif-codebuild-shared", bucket, client, enforcer, boundary=boundary, extra={"boundary_document": document})


def _paths(a: Account) -> dict[str, list[Callable[[], Any]]]:
    """Each escalation path: the calls an attacker makes; every one must be refused."""
    iam, s3, sm, cb = a.client("iam"), a.client("s3"), a.client("sagemaker"), a.client("codebuild")
    admin, own, shared = a.admin_role_arn, a.own_role, a.shared_codebuild_role
    project = {"source": {"type": "NO_SOURCE", "buildspec": "version: 0.2"}, "artifacts": {"type": "NO_ARTIFACTS"},
               "environment": {"type": "LINUX_CONTAINER", "image": "aws/codebuild/amazonlinux-x86_64-standard:5.0",
                               "computeType": "BUILD_GENERAL1_SMALL"}}
    container = {"Image": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/semif-adapter-x:1"}
    paths: dict[str, list[Callable[[], Any]]] = {
        "put an admin policy on one's own role": [
            lambda: iam.put_role_policy(RoleName=own, PolicyName="pwn", PolicyDocument=json.dumps(ADMIN)),
            lambda: iam.attach_role_policy(RoleName=own, PolicyArn=ADMIN_ACCESS),
            lambda: iam.update_assume_role_policy(RoleName=own, PolicyDocument=json.dumps(ANYONE)),
            lambda: iam.put_role_permissions_boundary(RoleName=own, PermissionsBoundary=ADMIN_ACCESS),
            lambda: iam.delete_role_permissions_boundary(RoleName=own)],
        "create an admin role (no boundary, or another path)": [
            lambda: iam.create_role(RoleName="semif-x", AssumeRolePolicyDocument=json.dumps(SERVICES)),
            lambda: iam.create_role(RoleName="semif-codebuild-x", Path="/semif-workshop/", AssumeRolePolicyDocument=json.dumps(SERVICES)),
            lambda: iam.create_role(RoleName="semif-codebuild-x", Path="/semif-workshop/", AssumeRolePolicyDocument=json.dumps(SERVICES),
                                    PermissionsBoundary=ADMIN_ACCESS)],
        "pass an existing admin role to CodeBuild": [
            lambda: cb.create_project(name="semif-adapter-build-x", serviceRole=admin, **project),
            lambda: cb.start_build(projectName="semif-adapter-build-x", serviceRoleOverride=admin)],
        "pass one's own role to CodeBuild": [lambda: cb.create_project(name="semif-adapter-build-y", serviceRole=a.own_arn, **project)],
        "pass an admin role to SageMaker (AmazonSageMakerFullAccess passes role/*)": [
            lambda: sm.create_model(ModelName="semif-x", ExecutionRoleArn=admin, PrimaryContainer=container),
            lambda: sm.create_training_job(TrainingJobName="semif-x", RoleArn=admin, AlgorithmSpecification={
                "TrainingImage": container["Image"], "TrainingInputMode": "File"}, OutputDataConfig={"S3OutputPath": f"s3://{a.bucket}/x"},
                ResourceConfig={"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
                StoppingCondition={"MaxRuntimeInSeconds": 60}),
            lambda: sm.create_notebook_instance(NotebookInstanceName="semif-x", InstanceType="ml.t3.medium", RoleArn=a.execution_role)],
        "edit or delete the shared CodeBuild role": [
            lambda: iam.put_role_policy(RoleName=shared, PolicyName="pwn", PolicyDocument=json.dumps(ADMIN)),
            lambda: iam.delete_role_policy(RoleName=shared, PolicyName="codebuild-service-policy"),
            lambda: iam.attach_role_policy(RoleName=shared, PolicyArn=ADMIN_ACCESS),
            lambda: iam.update_assume_role_policy(RoleName=shared, PolicyDocument=json.dumps(ANYONE)),
            lambda: iam.delete_role(RoleName=shared)],
        "change the shared bucket's public access block or policy": [
            lambda: s3.put_public_access_block(Bucket=a.bucket, PublicAccessBlockConfiguration={
                "BlockPublicAcls": False, "IgnorePublicAcls": False, "BlockPublicPolicy": False, "RestrictPublicBuckets": False}),
            lambda: s3.delete_public_access_block(Bucket=a.bucket),
            lambda: s3.put_bucket_policy(Bucket=a.bucket, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{a.bucket}/*"}]})),
            lambda: s3.put_bucket_acl(Bucket=a.bucket, ACL="public-read"),
            lambda: s3.put_bucket_ownership_controls(Bucket=a.bucket, OwnershipControls={"Rules": [{"ObjectOwnership": "ObjectWriter"}]})],
        "read another principal's permissions": [
            lambda: iam.simulate_principal_policy(PolicySourceArn=admin, ActionNames=["iam:PassRole"]),
            lambda: iam.get_role_policy(RoleName="event-admin", PolicyName="admin"),
            lambda: iam.list_attached_role_policies(RoleName="event-admin"),
            lambda: iam.get_account_authorization_details()],
        "delete, change or call another project's endpoint": [
            lambda: sm.delete_endpoint(EndpointName="event-demo"),
            lambda: sm.update_endpoint_weights_and_capacities(EndpointName="event-demo", DesiredWeightsAndCapacities=[
                {"VariantName": "AllTraffic", "DesiredInstanceCount": 10}]),
            lambda: a.client("sagemaker-runtime").invoke_endpoint(EndpointName="event-demo", Body=b"{}"),
            lambda: a.client("sagemaker-runtime").invoke_endpoint_async(EndpointName="event-demo", Body=b"{}"),
            lambda: sm.delete_model(ModelName="event-model")],
        "point an alarm at another project's scaling policy": [lambda: a.client("cloudwatch").put_metric_alarm(
            AlarmName="event-demo-wake", MetricName="HasBacklogWithoutCapacity", Namespace="AWS/SageMaker", Statistic="Average",
            Period=60, EvaluationPeriods=1, Threshold=0.0, ComparisonOperator="GreaterThanOrEqualToThreshold",
            AlarmActions=[f"arn:aws:autoscaling:{REGION}:{ACCOUNT}:scalingPolicy:x:resource/sagemaker/endpoint/event-demo:policyName/up"]),
            lambda: a.client("cloudwatch").set_alarm_state(AlarmName="event-demo-high", StateValue="ALARM", StateReason="x"),
            lambda: a.client("cloudwatch").delete_alarms(AlarmNames=["event-demo-high"])],
        "autoscale another service": [lambda: a.client("application-autoscaling").register_scalable_target(
            ServiceNamespace="dynamodb", ResourceId="table/orders", ScalableDimension="dynamodb:table:ReadCapacityUnits",
            MinCapacity=1, MaxCapacity=40000)],
        "push an image into another attendee's adapter repository": [
            lambda: a.client("ecr").put_image(repositoryName="semif-adapter-other1", imageTag="latest", imageManifest=json.dumps(
                {"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json", "layers": []})),
            lambda: a.client("ecr").set_repository_policy(repositoryName="semif-adapter-other1", policyText=json.dumps(ANYONE))],
        "stay after the event (users, keys, assumed roles)": [
            lambda: iam.create_user(UserName="backdoor"),
            lambda: iam.create_access_key(UserName="backdoor"),
            lambda: a.client("sts").assume_role(RoleArn=admin, RoleSessionName="xx"),
            lambda: a.client("sts").assume_role(RoleArn=a.execution_role, RoleSessionName="xx")],
        "run code as a role through Lambda or Glue": [
            lambda: a.client("lambda").create_function(FunctionName="x", Role=admin, Code={"ZipFile": b"x"}, Runtime="python3.12",
                                                       Handler="x.h"),
            lambda: a.client("glue").create_job(Name="x", Role=admin, Command={"Name": "glueetl", "ScriptLocation": "s3://x/y.py"})],
        "remove the stack, the audit trail or a key": [
            lambda: a.client("cloudformation").delete_stack(StackName="semif-workshop"),
            lambda: a.client("cloudtrail").stop_logging(Name="management-events"),
            lambda: a.client("kms").schedule_key_deletion(KeyId="1234abcd-12ab-34cd-56ef-1234567890ab")],
        # issue 43's reviewer, on the template as it was: each of these was allowed under AmazonSageMakerFullAccess
        "run another project's model, and its role, under a workshop name": [
            lambda: sm.create_endpoint_config(EndpointConfigName=f"semif-steal-{OWNER}-0123456789ab", ProductionVariants=[
                {"VariantName": "AllTraffic", "ModelName": "event-model", "InitialInstanceCount": 1, "InstanceType": "ml.m5.large"}]),
            lambda: sm.create_transform_job(TransformJobName=f"semif-steal-{OWNER}-1", ModelName="event-model", TransformInput={
                "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": f"s3://{a.bucket}/x"}}},
                TransformOutput={"S3OutputPath": f"s3://{a.bucket}/y"},
                TransformResources={"InstanceType": "ml.m5.large", "InstanceCount": 1})],
        "spend without limit (a p5 endpoint, a GPU Studio app, a 2xlarge build)": [
            lambda: sm.create_endpoint_config(EndpointConfigName=f"semif-text-{OWNER}-0123456789ab", ProductionVariants=[
                {"VariantName": "AllTraffic", "ModelName": f"semif-text-{OWNER}-0123456789ab", "InitialInstanceCount": 1,
                 "InstanceType": "ml.p5.48xlarge"}]),
            lambda: sm.create_app(DomainId="d-workshop", SpaceName="mine", AppType="JupyterLab", AppName="default",
                                  ResourceSpec={"InstanceType": "ml.p5.48xlarge"}),
            lambda: cb.create_project(name=f"semif-adapter-build-{OWNER}", serviceRole=f"arn:aws:iam::{ACCOUNT}:role/{shared}",
                                      **{**project, "environment": {**project["environment"], "computeType": "BUILD_GENERAL1_2XLARGE"}})],
        "forge endpoint metrics, or scale another project's variant": [
            lambda: a.client("cloudwatch").put_metric_data(Namespace="AWS/SageMaker", MetricData=[
                {"MetricName": "InvocationsPerInstance", "Value": 1e6, "Dimensions": [{"Name": "EndpointName", "Value": "event-demo"}]}]),
            lambda: a.client("application-autoscaling").put_scheduled_action(
                ServiceNamespace="sagemaker", ResourceId="endpoint/event-demo/variant/AllTraffic", ScheduledActionName="x",
                ScalableDimension="sagemaker:variant:DesiredInstanceCount", Schedule="rate(1 minute)",
                ScalableTargetAction={"MinCapacity": 10, "MaxCapacity": 10}),
            lambda: a.client("application-autoscaling").register_scalable_target(
                ServiceNamespace="sagemaker", ResourceId="endpoint/event-demo/variant/AllTraffic",
                ScalableDimension="sagemaker:variant:DesiredInstanceCount", MinCapacity=10, MaxCapacity=10)],
        "delete the event team's prebuilt image, or write another bucket's model": [
            lambda: a.client("ecr").delete_repository(repositoryName="semif-event-adapter", force=True),
            lambda: s3.put_object(Bucket=f"sagemaker-{REGION}-{ACCOUNT}", Key="other/model.tar.gz", Body=b"x")],
    }
    if a.name == "template":
        # attendees share one role: the names their profile is part of keep them apart
        paths["touch another attendee's endpoint, objects, repository or build"] = [
            lambda: sm.delete_endpoint(EndpointName=f"semif-text-{OTHER}"),
            lambda: a.client("sagemaker-runtime").invoke_endpoint(EndpointName=f"semif-decision-{OTHER}", Body=b"{}"),
            lambda: s3.put_object(Bucket=a.bucket, Key=f"semif-workshop/{OTHER}/models/model.tar.gz", Body=b"x"),
            lambda: s3.get_object(Bucket=a.bucket, Key=f"semif-workshop/{OTHER}/batch/out.jsonl.out"),
            lambda: a.client("ecr").delete_repository(repositoryName=f"semif-adapter-{OTHER}", force=True),
            lambda: cb.update_project(name=f"semif-adapter-build-{OTHER}", source={
                "type": "S3", "location": f"{a.bucket}/semif-workshop/{OWNER}/build/adapter.zip"})]
        paths["open another attendee's Studio"] = [
            lambda: sm.create_presigned_domain_url(DomainId="d-workshop", UserProfileName="another-attendee")]
        paths["replace the domain's lifecycle configuration (code in every space)"] = [
            lambda: sm.delete_studio_lifecycle_config(StudioLifecycleConfigName="semif-workshop-settings"),
            lambda: sm.create_studio_lifecycle_config(StudioLifecycleConfigName="semif-x", StudioLifecycleConfigContent="eA==",
                                                      StudioLifecycleConfigAppType="JupyterLab")]
        paths["edit the endpoints' execution role"] = [
            lambda: iam.put_role_policy(RoleName=f"semif-sagemaker-{REGION}", PolicyName="pwn", PolicyDocument=json.dumps(ADMIN))]
    return paths


def _walk(a: Account) -> dict[str, list[str]]:
    """Try every path; return, per path, how each call ended (the evaluator's decision, or what went through)."""
    from botocore.exceptions import ClientError

    results: dict[str, list[str]] = {}
    for name, calls in _paths(a).items():
        ends = []
        for call in calls:
            try:
                call()
                ends.append("ALLOWED")
            except ClientError as exc:
                error, message = exc.response["Error"], exc.response["Error"].get("Message", "")
                refused = error["Code"] in DENIED_CODES and exc.response["ResponseMetadata"]["HTTPStatusCode"] == 403
                ends.append(("explicit deny" if "explicit deny" in message else "implicit deny") if refused
                            else f"NOT REFUSED BY IAM: {error['Code']}")
        results[name] = ends
    return results


@pytest.mark.parametrize("identity", ["template_account", "standalone_account"])
def test_every_escalation_path_is_denied(identity, request):
    account: Account = request.getfixturevalue(identity)
    results = _walk(account)
    print(f"\n{identity}:\n" + "\n".join(f"  {name}: {', '.join(ends)}" for name, ends in results.items()))
    open_paths = {name: ends for name, ends in results.items() if any(not e.endswith("deny") for e in ends)}
    assert open_paths == {}, f"{identity}: paths IAM does not refuse: {open_paths}"
    decisions = [json.loads(line) for line in account.enforcer.log_file.read_text().splitlines()]
    assert sum(d["decision"] != "allowed" for d in decisions) == sum(len(e) for e in results.values()), "each refusal is IAM's"


def test_a_role_made_under_the_boundary_can_do_no_more_than_a_run_role(standalone_account):
    """The standalone attendee may create a run role under /semif-workshop/ with the boundary, write `*` into it and pass
    it to CodeBuild (that is its job); the buildspec then runs with that role's policy capped by the boundary: the
    workshop's prefix, ECR's semif-adapter-*, logs. Nothing in IAM, no other bucket, no other role."""
    from botocore.exceptions import ClientError

    from support.iam_policy import evaluate

    a = standalone_account
    iam, cb = a.client("iam"), a.client("codebuild")
    role = iam.create_role(RoleName="semif-codebuild-evil", Path="/semif-workshop/", AssumeRolePolicyDocument=json.dumps(SERVICES),
                           PermissionsBoundary=a.boundary)["Role"]["Arn"]
    iam.put_role_policy(RoleName="semif-codebuild-evil", PolicyName="pwn", PolicyDocument=json.dumps(ADMIN))
    source = {"type": "S3", "location": f"{a.bucket}/semif-workshop/r1/build/adapter.zip"}  # the policy: only from the workshop's prefix
    cb.create_project(name="semif-adapter-build-evil", serviceRole=role, source=source,
                      artifacts={"type": "NO_ARTIFACTS"}, environment={"type": "LINUX_CONTAINER", "computeType": "BUILD_GENERAL1_SMALL",
                                                                       "image": "aws/codebuild/amazonlinux-x86_64-standard:5.0"})
    boundary = [a.extra["boundary_document"]]
    context = {"aws:PrincipalArn": role}
    for action, resource in [("iam:PutRolePolicy", a.own_arn), ("iam:AttachRolePolicy", role), ("iam:CreateUser", "*"),
                             ("iam:PassRole", a.admin_role_arn), ("sts:AssumeRole", a.admin_role_arn),
                             ("s3:PutBucketPolicy", f"arn:aws:s3:::{a.bucket}"), ("s3:GetObject", "arn:aws:s3:::another-bucket/secret"),
                             ("s3:DeleteObject", f"arn:aws:s3:::{a.bucket}/semif-workshop/r1/models/model.tar.gz"),
                             ("ecr:PutImage", f"arn:aws:ecr:{REGION}:{ACCOUNT}:repository/event"),
                             ("sagemaker:DeleteEndpoint", f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:endpoint/event-demo"),
                             ("secretsmanager:GetSecretValue", "*"), ("ec2:RunInstances", "*"), ("lambda:CreateFunction", "*")]:
        assert not evaluate([ADMIN], action, resource, context, boundary=boundary).allowed, f"{action} on {resource}"
    own_repository = f"arn:aws:ecr:{REGION}:{ACCOUNT}:repository/semif-adapter-r1"
    assert evaluate([ADMIN], "ecr:PutImage", own_repository, context, boundary=boundary).allowed, "what a build role is for"
    for call in (lambda: iam.delete_role_permissions_boundary(RoleName="semif-codebuild-evil"),
                 lambda: iam.put_role_permissions_boundary(RoleName="semif-codebuild-evil", PermissionsBoundary=ADMIN_ACCESS),
                 lambda: iam.create_policy_version(PolicyArn=a.boundary, PolicyDocument=json.dumps(ADMIN), SetAsDefault=True),
                 lambda: iam.delete_policy(PolicyArn=a.boundary)):
        with pytest.raises(ClientError, match="explicit deny"):
            call()


# ------------------------------------------------------------------ no role pattern with a write action matches one's own role
ROLE_WRITES = ["iam:CreateRole", "iam:PutRolePolicy", "iam:DeleteRolePolicy", "iam:AttachRolePolicy", "iam:DetachRolePolicy",
               "iam:UpdateAssumeRolePolicy", "iam:UpdateRole", "iam:UpdateRoleDescription", "iam:PutRolePermissionsBoundary",
               "iam:DeleteRolePermissionsBoundary", "iam:DeleteRole", "iam:TagRole", "iam:UntagRole"]


def _patterns_meet(a: str, b: str) -> bool:
    """Whether two IAM wildcard patterns (`*`, `?`) can match one same string."""
    from functools import lru_cache

    @lru_cache(maxsize=None)
    def meet(i: int, j: int) -> bool:
        if i == len(a) and j == len(b):
            return True
        if i < len(a) and a[i] == "*":
            return meet(i + 1, j) or (j < len(b) and meet(i, j + 1))
        if j < len(b) and b[j] == "*":
            return meet(i, j + 1) or (i < len(a) and meet(i + 1, j))
        return i < len(a) and j < len(b) and (a[i] == b[j] or "?" in (a[i], b[j])) and meet(i + 1, j + 1)

    return meet(0, 0)


def _allow_statements(documents: list[dict]) -> list[dict]:
    return [s for d in documents for s in d["Statement"] if s["Effect"] == "Allow"]


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_the_patterns_meet_as_iam_wildcards_do():
    assert _patterns_meet("arn:aws:iam::1:role/semif-*", "arn:aws:iam::1:role/semif-studio-us-east-1")
    assert _patterns_meet("role/semif-*", "role/*-studio-*") and _patterns_meet("role/a?c", "role/abc")
    assert not _patterns_meet("role/semif-workshop/semif-*", "role/semif-studio-us-east-1")
    assert not _patterns_meet("role/semif-sagemaker-*", "role/semif-studio-*")


def test_no_role_pattern_with_a_write_action_can_match_the_callers_own_role(aws, aws_settings):
    """The template's attendee role is `<NamePrefix>-studio-<region>` for any prefix and region; no Allow statement in
    its inline policies that writes a role (or passes one) names a pattern that could ever match it. The standalone
    caller is any role: every role write on its own role is an explicit deny, whatever its name, even one the
    provisioning patterns match (a caller that is itself a run role), and so is passing it to anything but SageMaker."""
    from cfnlint.decode.cfn_yaml import loads

    from semif_lib.aws import preflight
    from semif_lib.aws.iamroles import boundary_arn

    from support.iam_policy import EXPLICIT_DENY, evaluate
    from support.workshop_account import TEMPLATE

    resources = loads(TEMPLATE.read_text())["Resources"]
    studio = json.dumps(resources["StudioExecutionRole"]["Properties"]["Policies"])
    template_statements = [s for p in json.loads(studio) if isinstance(p, dict) and "PolicyDocument" in p
                           for s in p["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"]
    own_family = "arn:*:iam::*:role/*-studio-*"
    writes = set(ROLE_WRITES) | {"iam:PassRole"}
    for statement in template_statements:
        if not writes & {a for a in _as_list(statement.get("Action", []))}:
            continue
        for resource in _as_list(statement["Resource"]):
            text = resource if isinstance(resource, str) else json.dumps(resource)
            if "GetAtt" in text:  # one of the two service roles, `<NamePrefix>-sagemaker|codebuild-<region>`: never `-studio-`
                assert "StudioExecutionRole" not in text
                continue
            assert not _patterns_meet(text.replace("${AWS::Partition}", "*").replace("${AWS::AccountId}", "*"), own_family), statement

    for own in ("arn:aws:iam::123456789012:role/workshop-attendee", "arn:aws:iam::123456789012:role/semif-sagemaker-me",
                "arn:aws:iam::123456789012:role/semif-workshop/semif-codebuild-r1", "arn:aws:iam::123456789012:role/semif-studio-us-east-1",
                "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole-1"):
        standalone = [preflight.caller_policy(aws_settings, caller=own), preflight.build_policy(aws_settings),
                      preflight.provisioning_policy(aws_settings, caller=own)]
        for action in ROLE_WRITES:
            context = {"iam:PermissionsBoundary": boundary_arn(aws_settings)}
            assert evaluate(standalone, action, own, context).kind == EXPLICIT_DENY, (own, action)
        assert evaluate(standalone, "iam:PassRole", own, {"iam:PassedToService": "codebuild.amazonaws.com"}).kind == EXPLICIT_DENY, own
    for statement in _allow_statements(standalone):  # the standalone patterns: only the run roles' own path
        if writes & set(_as_list(statement["Action"])):
            assert all(":role/semif-workshop/semif-" in r for r in _as_list(statement["Resource"])), statement
