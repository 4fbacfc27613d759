"""The IAM evaluator the AWS walk tests enforce identities with (support/iam_policy.py), checked against the cases of
AWS's documentation ("Policy evaluation logic", "Condition operators", "NotAction", "NotResource", "Policy
variables") and against the two documents the walk uses: AWS's AmazonSageMakerFullAccess (tests/data) and the
workshop's caller policy. The request mapping (support/aws_identity.py) is checked on the calls the walk makes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.iam_policy import evaluate

DATA = Path(__file__).resolve().parent / "data"


def _policy(*statements):
    return {"Version": "2012-10-17", "Statement": list(statements)}


def _allow(action, resource="*", **extra):
    return {"Effect": "Allow", "Action": action, "Resource": resource, **extra}


def _deny(action, resource="*", **extra):
    return {"Effect": "Deny", "Action": action, "Resource": resource, **extra}


def kind(policies, action, resource="*", context=None):
    return evaluate(policies, action, resource, context).kind


# ------------------------------------------------------------------ policy evaluation logic
def test_an_explicit_deny_in_any_policy_overrides_every_allow():
    allow_all = _policy(_allow("s3:*"))
    deny_delete = _policy(_deny("s3:DeleteBucket", "arn:aws:s3:::b"))
    assert kind([allow_all, deny_delete], "s3:DeleteBucket", "arn:aws:s3:::b") == "explicitDeny"
    assert kind([allow_all, deny_delete], "s3:DeleteBucket", "arn:aws:s3:::other") == "allowed"
    assert kind([deny_delete, allow_all], "s3:DeleteBucket", "arn:aws:s3:::b") == "explicitDeny"  # order does not matter


def test_a_request_no_statement_allows_is_implicitly_denied():
    assert kind([_policy(_allow("s3:GetObject"))], "s3:PutObject", "arn:aws:s3:::b/k") == "implicitDeny"
    assert kind([], "s3:GetObject", "arn:aws:s3:::b/k") == "implicitDeny"


def test_actions_match_case_insensitively_with_wildcards_and_resources_case_sensitively():
    p = [_policy(_allow("SageMaker:Describe*", "arn:aws:sagemaker:*:*:endpoint/semif-*"), _allow("iam:?etRole", "*"))]
    assert kind(p, "sagemaker:DescribeEndpoint", "arn:aws:sagemaker:us-east-1:1:endpoint/semif-x") == "allowed"
    assert kind(p, "sagemaker:describeendpoint", "arn:aws:sagemaker:us-east-1:1:endpoint/semif-x") == "allowed"
    assert kind(p, "sagemaker:DescribeEndpoint", "arn:aws:sagemaker:us-east-1:1:endpoint/SEMIF-x") == "implicitDeny"
    assert kind(p, "sagemaker:CreateEndpoint", "arn:aws:sagemaker:us-east-1:1:endpoint/semif-x") == "implicitDeny"
    assert kind(p, "iam:GetRole", "*") == "allowed" and kind(p, "iam:GetRoles", "*") == "implicitDeny"  # ? is one character
    # a `.` in a pattern is a dot, not any character
    assert kind([_policy(_allow("s3:*", "arn:aws:s3:::a.b"))], "s3:ListBucket", "arn:aws:s3:::axb") == "implicitDeny"


def test_an_action_without_resource_types_needs_resource_star():
    """Resource "*" in the request (ListBuckets, GetAuthorizationToken) is granted only by a statement whose pattern matches "*"."""
    assert kind([_policy(_allow("ecr:*", "arn:aws:ecr:*:*:repository/*"))], "ecr:GetAuthorizationToken", "*") == "implicitDeny"
    assert kind([_policy(_allow("ecr:*", "*"))], "ecr:GetAuthorizationToken", "*") == "allowed"


def test_not_action_and_not_resource():
    """NotAction with Allow allows every other action; with Deny it denies every other action (IAM User Guide, NotAction)."""
    everything_but_iam = _policy({"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"})
    assert kind([everything_but_iam], "s3:PutObject", "arn:aws:s3:::b/k") == "allowed"
    assert kind([everything_but_iam], "iam:CreateRole", "arn:aws:iam::1:role/r") == "implicitDeny"
    deny_but_reads = _policy(_allow("*"), {"Effect": "Deny", "NotAction": ["s3:Get*", "s3:List*"], "Resource": "*"})
    assert kind([deny_but_reads], "s3:PutObject", "arn:aws:s3:::b/k") == "explicitDeny"
    assert kind([deny_but_reads], "s3:GetObject", "arn:aws:s3:::b/k") == "allowed"
    not_admin = _policy({"Effect": "Allow", "Action": "sagemaker:*", "NotResource": ["arn:aws:sagemaker:*:*:domain/*"]})
    assert kind([not_admin], "sagemaker:DeleteDomain", "arn:aws:sagemaker:us-east-1:1:domain/d-1") == "implicitDeny"
    assert kind([not_admin], "sagemaker:CreateModel", "arn:aws:sagemaker:us-east-1:1:model/m") == "allowed"
    assert kind([not_admin], "sagemaker:ListModels", "*") == "allowed"


# ------------------------------------------------------------------ conditions
def test_condition_keys_and_and_values_or():
    p = [_policy(_allow("iam:PassRole", "arn:aws:iam::1:role/*", Condition={
        "StringEquals": {"iam:PassedToService": ["sagemaker.amazonaws.com", "codebuild.amazonaws.com"]},
        "StringLike": {"aws:PrincipalArn": "arn:aws:iam::1:role/team-*"}}))]
    role = "arn:aws:iam::1:role/r"
    ok = {"iam:PassedToService": "codebuild.amazonaws.com", "aws:PrincipalArn": "arn:aws:iam::1:role/team-a"}
    assert kind(p, "iam:PassRole", role, ok) == "allowed"
    assert kind(p, "iam:PassRole", role, {**ok, "iam:PassedToService": "ec2.amazonaws.com"}) == "implicitDeny"
    assert kind(p, "iam:PassRole", role, {**ok, "aws:PrincipalArn": "arn:aws:iam::1:role/other"}) == "implicitDeny"
    assert kind(p, "iam:PassRole", role, {"IAM:passedtoservice": "codebuild.amazonaws.com",  # key names are case-insensitive
                                          "aws:PrincipalArn": "arn:aws:iam::1:role/team-a"}) == "allowed"


def test_an_allow_whose_condition_fails_denies_nothing_explicitly():
    """moto's evaluator reads a failed condition on an Allow as a Deny; in IAM the statement simply does not apply."""
    p = [_policy(_allow("cloudwatch:DescribeAlarms", "*", Condition={"StringEquals": {"aws:RequestedRegion": "eu-west-1"}}),
                 _allow("cloudwatch:DescribeAlarms", "*"))]
    assert kind(p, "cloudwatch:DescribeAlarms", "*", {"aws:RequestedRegion": "us-east-1"}) == "allowed"


@pytest.mark.parametrize(("operator", "context", "expected"), [
    ("StringEquals", {}, "implicitDeny"),                      # a missing key fails a positive operator
    ("StringNotEquals", {}, "allowed"),                        # ... and satisfies a negated one
    ("StringNotLike", {}, "allowed"),
    ("ArnNotLike", {}, "allowed"),
    ("StringEqualsIfExists", {}, "allowed"),                   # IfExists: checked only when present
    ("StringEqualsIfExists", {"k": "other"}, "implicitDeny"),
    ("StringEqualsIfExists", {"k": "v"}, "allowed"),
    ("StringEqualsIgnoreCase", {"k": "V"}, "allowed"),
    ("StringEquals", {"k": "V"}, "implicitDeny"),
    ("StringLike", {"k": "v-anything"}, "implicitDeny"),
    ("ForAllValues:StringEquals", {}, "allowed"),              # ForAllValues holds on a missing key
    ("ForAnyValue:StringEquals", {}, "implicitDeny"),
    ("ForAnyValue:StringEquals", {"k": ["x", "v"]}, "allowed"),
    ("ForAllValues:StringEquals", {"k": ["x", "v"]}, "implicitDeny"),
])
def test_condition_operators_on_present_and_missing_keys(operator, context, expected):
    assert kind([_policy(_allow("s3:GetObject", "*", Condition={operator: {"k": "v"}}))], "s3:GetObject", "*", context) == expected


def test_null_and_bool_and_unknown_operators():
    null_true = [_policy(_allow("sagemaker:CreateApp", "*", Condition={"Null": {"sagemaker:OwnerUserProfileArn": "true"}}))]
    assert kind(null_true, "sagemaker:CreateApp") == "allowed"
    assert kind(null_true, "sagemaker:CreateApp", "*", {"sagemaker:OwnerUserProfileArn": "arn:x"}) == "implicitDeny"
    secure = [_policy(_allow("s3:GetObject", "*", Condition={"Bool": {"aws:SecureTransport": "true"}}))]
    assert kind(secure, "s3:GetObject", "*", {"aws:SecureTransport": True}) == "allowed"
    assert kind(secure, "s3:GetObject", "*", {"aws:SecureTransport": "false"}) == "implicitDeny"
    with pytest.raises(ValueError, match="NumericLessThan"):
        kind([_policy(_allow("s3:GetObject", "*", Condition={"NumericLessThan": {"s3:max-keys": "10"}}))], "s3:GetObject")


def test_policy_variables_are_replaced_from_the_context():
    p = [_policy(_allow("s3:*", "arn:aws:s3:::home-${aws:PrincipalAccount}/*",
                        Condition={"StringEquals": {"aws:ResourceAccount": "${aws:PrincipalAccount}"}}))]
    context = {"aws:PrincipalAccount": "111122223333", "aws:ResourceAccount": "111122223333"}
    assert kind(p, "s3:GetObject", "arn:aws:s3:::home-111122223333/k", context) == "allowed"
    assert kind(p, "s3:GetObject", "arn:aws:s3:::home-444455556666/k", context) == "implicitDeny"
    assert kind(p, "s3:GetObject", "arn:aws:s3:::home-/k", {}) == "implicitDeny"  # an unresolved variable matches nothing


# ------------------------------------------------------------------ the two documents of the walk
def studio_default_policy() -> dict:
    return json.loads((DATA / "AmazonSageMakerFullAccess.json").read_text())["PolicyVersion"]["Document"]


def test_amazon_sagemaker_full_access_as_the_walk_meets_it():
    p = [studio_default_policy()]
    role = "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole-1"
    sm = "arn:aws:sagemaker:us-east-1:123456789012"
    assert kind(p, "iam:PassRole", role, {"iam:PassedToService": "sagemaker.amazonaws.com"}) == "allowed"
    assert kind(p, "iam:PassRole", role, {"iam:PassedToService": "codebuild.amazonaws.com"}) == "implicitDeny"
    assert kind(p, "s3:PutObject", "arn:aws:s3:::semif-sagemaker-123456789012-us-east-1/semif-workshop/x") == "allowed"
    assert kind(p, "s3:PutObject", "arn:aws:s3:::semif-workshop-123456789012-us-east-1/x") == "implicitDeny"
    assert kind(p, "s3:PutBucketPublicAccessBlock", "arn:aws:s3:::semif-sagemaker-123456789012-us-east-1") == "implicitDeny"
    assert kind(p, "s3:DeleteBucket", "arn:aws:s3:::semif-sagemaker-123456789012-us-east-1") == "implicitDeny"
    assert kind(p, "sagemaker:CreateEndpoint", f"{sm}:endpoint/semif-text-r") == "allowed"
    assert kind(p, "sagemaker:DeleteDomain", f"{sm}:domain/d-1") == "implicitDeny"  # NotResource
    assert kind(p, "codebuild:CreateProject", "arn:aws:codebuild:us-east-1:123456789012:project/semif-adapter-build-r") == "implicitDeny"
    assert kind(p, "codebuild:StartBuild", "arn:aws:codebuild:us-east-1:123456789012:project/sagemaker-x") == "allowed"
    assert kind(p, "cloudwatch:DescribeAlarms", "*") == "allowed"  # what moto's own dry-call check read as denied
    assert kind(p, "logs:DeleteLogGroup", "arn:aws:logs:us-east-1:123456789012:log-group:/aws/sagemaker/Endpoints/x") == "implicitDeny"
    slr = "arn:aws:iam::123456789012:role/aws-service-role/sagemaker.application-autoscaling.amazonaws.com/" \
          "AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint"
    context = {"iam:AWSServiceName": "sagemaker.application-autoscaling.amazonaws.com"}
    assert kind(p, "iam:CreateServiceLinkedRole", slr, context) == "allowed"


def test_the_caller_policy_is_scoped_to_the_run(aws, aws_settings):
    from semif_lib.aws import preflight

    own = "arn:aws:iam::123456789012:role/workshop-attendee"
    p = [preflight.caller_policy(aws_settings, caller=own), preflight.build_policy(aws_settings)]
    sm = "arn:aws:sagemaker:us-east-1:123456789012"
    assert kind(p, "sagemaker:CreateModel", f"{sm}:model/semif-text-r-0123456789ab") == "allowed"
    assert kind(p, "sagemaker:CreateModel", f"{sm}:model/someone-else") == "implicitDeny"
    assert kind(p, "sagemaker:ListModels", "*") == "implicitDeny"
    run_roles = "arn:aws:iam::123456789012:role/semif-workshop"  # the path the run's roles are made under
    to_codebuild = {"iam:PassedToService": "codebuild.amazonaws.com"}
    assert kind(p, "iam:PassRole", f"{run_roles}/semif-codebuild-r", to_codebuild) == "allowed"
    assert kind(p, "iam:PassRole", "arn:aws:iam::123456789012:role/semif-codebuild-r", to_codebuild) == "implicitDeny"
    assert kind(p, "iam:PassRole", f"{run_roles}/semif-sagemaker-r", to_codebuild) == "implicitDeny", "each role to its own service"
    assert kind(p, "sagemaker:InvokeEndpointWithResponseStream", f"{sm}:endpoint/semif-text-r") == "implicitDeny", \
        "no such action is granted: streaming is authorised as sagemaker:InvokeEndpoint"
    scaling = {"application-autoscaling:service-namespace": "sagemaker",
               "application-autoscaling:scalable-dimension": "sagemaker:variant:DesiredInstanceCount"}
    target = "arn:aws:application-autoscaling:us-east-1:123456789012:scalable-target/0123abcd"
    assert kind(p, "application-autoscaling:RegisterScalableTarget", target, scaling) == "allowed"
    assert kind(p, "application-autoscaling:RegisterScalableTarget", target, {**scaling, "application-autoscaling:service-namespace":
                                                                             "ecs"}) == "implicitDeny"
    assert kind(p, "iam:SimulatePrincipalPolicy", own) == "allowed"
    assert kind(p, "iam:SimulatePrincipalPolicy", "arn:aws:iam::123456789012:role/admin") == "implicitDeny"
    assert kind(p, "iam:PutRolePolicy", "arn:aws:iam::123456789012:role/any/path/workshop-attendee") == "explicitDeny"


# ------------------------------------------------------------------ permissions boundaries
def test_a_boundary_caps_what_the_identity_policies_allow():
    """"Permissions boundaries for IAM entities": the effective permissions are where both allow; an explicit deny in
    either wins; a boundary grants nothing by itself."""
    boundary = [_policy(_allow("s3:*"), _deny("s3:DeleteBucket"))]
    everything = [_policy(_allow("*"))]
    assert evaluate(everything, "s3:GetObject", "arn:aws:s3:::b/k", boundary=boundary).kind == "allowed"
    assert evaluate(everything, "iam:CreateUser", "*", boundary=boundary).kind == "implicitDeny"
    assert evaluate(everything, "s3:DeleteBucket", "arn:aws:s3:::b", boundary=boundary).kind == "explicitDeny"
    assert evaluate([_policy(_allow("ec2:*"))], "s3:GetObject", "arn:aws:s3:::b/k", boundary=boundary).kind == "implicitDeny"
    assert evaluate([_policy(_allow("s3:*"), _deny("s3:GetObject"))], "s3:GetObject", "arn:aws:s3:::b/k", boundary=boundary
                    ).kind == "explicitDeny"


# ------------------------------------------------------------------ the request mapping
@pytest.mark.parametrize(("service", "op", "params", "expected"), [
    ("s3", "PutObject", {"Bucket": "b", "Key": "p/k"}, [("s3:PutObject", "arn:aws:s3:::b/p/k", {})]),
    ("s3", "HeadBucket", {"Bucket": "b"}, [("s3:ListBucket", "arn:aws:s3:::b", {})]),
    ("s3", "ListBuckets", {}, [("s3:ListBuckets", "*", {})]),
    ("sagemaker", "CreateModel", {"ModelName": "semif-text-r", "ExecutionRoleArn": "arn:aws:iam::1:role/x", "Tags": [{"Key": "a"}]},
     [("sagemaker:CreateModel", "arn:aws:sagemaker:us-east-1:1:model/semif-text-r", {"aws:TagKeys": ["a"], "aws:RequestTag/a": None}),
      ("sagemaker:AddTags", "arn:aws:sagemaker:us-east-1:1:model/semif-text-r", {"aws:TagKeys": ["a"], "aws:RequestTag/a": None}),
      ("iam:PassRole", "arn:aws:iam::1:role/x", {"iam:PassedToService": "sagemaker.amazonaws.com"})]),
    ("sagemaker", "CreateEndpoint", {"EndpointName": "E", "EndpointConfigName": "c"},
     # authorised on the endpoint and on the config it serves (Service Authorization Reference)
     [("sagemaker:CreateEndpoint", "arn:aws:sagemaker:us-east-1:1:endpoint/e", {}),
      ("sagemaker:CreateEndpoint", "arn:aws:sagemaker:us-east-1:1:endpoint-config/c", {})]),
    ("sagemaker", "DescribeEndpointConfig", {"EndpointConfigName": "c"},
     [("sagemaker:DescribeEndpointConfig", "arn:aws:sagemaker:us-east-1:1:endpoint-config/c", {})]),
    ("sagemaker-runtime", "InvokeEndpoint", {"EndpointName": "e"},
     [("sagemaker:InvokeEndpoint", "arn:aws:sagemaker:us-east-1:1:endpoint/e", {})]),
    ("iam", "GetRole", {"RoleName": "AmazonSageMaker-ExecutionRole-1"},
     [("iam:GetRole", "arn:aws:iam::1:role/service-role/AmazonSageMaker-ExecutionRole-1", {})]),
    ("codebuild", "BatchGetBuilds", {"ids": ["p:0000"]}, [("codebuild:BatchGetBuilds", "arn:aws:codebuild:us-east-1:1:project/p", {})]),
    ("ecr", "GetAuthorizationToken", {}, [("ecr:GetAuthorizationToken", "*", {})]),
    ("logs", "DeleteLogGroup", {"logGroupName": "/aws/x"}, [("logs:DeleteLogGroup", "arn:aws:logs:us-east-1:1:log-group:/aws/x", {})]),
    ("sts", "GetCallerIdentity", {}, []),
    # streaming is authorised as sagemaker:InvokeEndpoint (botocore's documentation of the operation)
    ("sagemaker-runtime", "InvokeEndpointWithResponseStream", {"EndpointName": "e"},
     [("sagemaker:InvokeEndpoint", "arn:aws:sagemaker:us-east-1:1:endpoint/e", {})]),
    # a build may run as another role than its project's: that passes the role
    ("codebuild", "StartBuild", {"projectName": "p", "serviceRoleOverride": "arn:aws:iam::1:role/admin"},
     [("codebuild:StartBuild", "arn:aws:codebuild:us-east-1:1:project/p", {"codebuild:serviceRole": "arn:aws:iam::1:role/admin"}),
      ("iam:PassRole", "arn:aws:iam::1:role/admin", {"iam:PassedToService": "codebuild.amazonaws.com"})]),
    ("iam", "CreateRole", {"RoleName": "semif-codebuild-r", "Path": "/semif-workshop/", "PermissionsBoundary": "arn:aws:iam::1:policy/b"},
     [("iam:CreateRole", "arn:aws:iam::1:role/semif-workshop/semif-codebuild-r", {"iam:PermissionsBoundary": "arn:aws:iam::1:policy/b"})]),
    ("application-autoscaling", "DeleteScalingPolicy", {"PolicyName": "x", "ServiceNamespace": "sagemaker",
                                                        "ResourceId": "endpoint/e/variant/AllTraffic",
                                                        "ScalableDimension": "sagemaker:variant:DesiredInstanceCount"},
     [("application-autoscaling:DeleteScalingPolicy", "arn:aws:application-autoscaling:us-east-1:1:scalable-target/"
       "f3744775ba488a799f2e61137af73dc3", {"application-autoscaling:service-namespace": "sagemaker",
                                           "application-autoscaling:scalable-dimension": "sagemaker:variant:DesiredInstanceCount"})]),
    ("sts", "AssumeRole", {"RoleArn": "arn:aws:iam::1:role/x", "RoleSessionName": "s"}, [("sts:AssumeRole", "arn:aws:iam::1:role/x", {})]),
])
def test_a_call_maps_to_the_actions_and_resources_aws_authorizes(service, op, params, expected):
    from support.aws_identity import authorization_for

    assert authorization_for(service, op, params, "us-east-1", "1", {"AmazonSageMaker-ExecutionRole-1": "/service-role/"}) == expected


# ------------------------------------------------------------------ the botocore hook
@pytest.fixture
def studio_session(aws, aws_settings, tmp_path):
    """A session deciding every call as Studio's default role (its hooks on this session only)."""
    from semif_lib.aws.clients import make_session

    from support.aws_identity import IdentityEnforcer

    role = "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole-1"
    enforcer = IdentityEnforcer(role, "arn:aws:sts::123456789012:assumed-role/AmazonSageMaker-ExecutionRole-1/SageMaker",
                                [studio_default_policy()], tmp_path / "decisions.jsonl")
    enforcer.register(make_session(aws_settings))
    return enforcer


def test_a_denied_call_raises_what_aws_raises(studio_session, aws_settings):
    from botocore.exceptions import ClientError

    from semif_lib.aws.clients import make_client

    s3 = make_client("s3", aws_settings)
    with pytest.raises(ClientError) as denied:
        s3.put_object(Bucket="someone-elses-bucket", Key="k", Body=b"x")
    error = denied.value.response
    assert error["Error"]["Code"] == "AccessDenied" and error["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert error["Error"]["Message"] == (
        "User: arn:aws:sts::123456789012:assumed-role/AmazonSageMaker-ExecutionRole-1/SageMaker is not authorized to perform: "
        "s3:PutObject on resource: arn:aws:s3:::someone-elses-bucket/k because no identity-based policy allows the s3:PutObject action")
    with pytest.raises(ClientError) as head:
        s3.head_object(Bucket="someone-elses-bucket", Key="k")
    assert head.value.response["Error"]["Code"] == "403"  # a HEAD answer has no body
    with pytest.raises(make_client("codebuild", aws_settings).exceptions.ClientError) as json_protocol:
        make_client("codebuild", aws_settings).batch_get_projects(names=["semif-adapter-build-r"])
    assert json_protocol.value.response["Error"]["Code"] == "AccessDeniedException"
    assert make_client("sagemaker", aws_settings).list_models()["Models"] == []  # allowed: it reached moto
    bucket = "semif-sagemaker-123456789012-us-east-1"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")  # allowed by AllowS3ObjectActions
    kinds = [(d["action"], d["decision"]) for d in map(json.loads, studio_session.log_file.read_text().splitlines())]
    assert kinds[0] == ("s3:PutObject", "implicitDeny") and kinds[-1] == ("s3:PutObject", "allowed")


def test_the_simulator_is_answered_for_the_identity_and_denied_to_it(studio_session, aws_settings):
    """Studio's role may not run iam:SimulatePrincipalPolicy (the check falls back to dry calls); an identity that may
    gets IAM's answer from the same evaluator (moto has no simulator)."""
    from botocore.exceptions import ClientError

    from semif_lib.aws.clients import make_client

    iam = make_client("iam", aws_settings)
    with pytest.raises(ClientError, match="iam:SimulatePrincipalPolicy"):
        iam.simulate_principal_policy(PolicySourceArn=studio_session.principal, ActionNames=["s3:PutObject"])
    studio_session.policies.append(_policy(_allow("iam:SimulatePrincipalPolicy", "arn:aws:iam::123456789012:role/*")))
    answer = iam.simulate_principal_policy(
        PolicySourceArn=studio_session.principal, ActionNames=["iam:PassRole"], ResourceArns=[studio_session.principal],
        ContextEntries=[{"ContextKeyName": "iam:PassedToService", "ContextKeyValues": ["codebuild.amazonaws.com"],
                         "ContextKeyType": "string"}])
    assert [r["EvalDecision"] for r in answer["EvaluationResults"]] == ["implicitDeny"]
