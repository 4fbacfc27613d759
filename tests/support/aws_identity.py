"""An AWS identity enforced on every call the workshop makes, for the walk tests on moto.

moto authorizes only a few services, so `enforce_identity` decides every request itself before it leaves
botocore: a `before-parameter-build` hook keeps the call's parameters, a `before-call` hook maps the call
to the IAM actions and resource ARNs AWS authorizes it against (`authorization_for`; the actions come from
the product's own `permissions.iam_action_for`) and evaluates the identity's policy documents
(`support.iam_policy.evaluate`). A denied call gets the answer AWS gives: HTTP 403 with the protocol's
error code (`AccessDenied` for query and REST-XML services, `AccessDeniedException` for JSON ones, a bare
`403` for S3's HEAD requests) and AWS's message ("User: ... is not authorized to perform: ... on resource:
... because no identity-based policy allows the ... action"), raised by botocore as the ClientError an
attendee would see. `iam:SimulatePrincipalPolicy`, which moto lacks, is answered for the identity's own
principal by the same evaluator, as IAM's simulator evaluates the principal's policies.

Every decision is appended to a JSON Lines file, so the test reads what was called and what was denied.
Resource ARNs follow the services' authorization references; where AWS's choice is not documented
(CloudWatch's DescribeAlarms by name prefix) the request is evaluated against "*".
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.util
import json
import sys
import threading
from pathlib import Path
from typing import Any

from support.iam_policy import EXPLICIT_DENY, evaluate

__all__ = ["authorization_for", "enforce_identity"]

# iam:CreateServiceLinkedRole: the role AWS creates for a service the first time it is used
SERVICE_LINKED_ROLES = {"sagemaker.application-autoscaling.amazonaws.com": "AWSServiceRoleForApplicationAutoScaling_SageMakerEndpoint"}
PASSED_TO = {"sagemaker": "sagemaker.amazonaws.com", "codebuild": "codebuild.amazonaws.com",
             "application-autoscaling": "application-autoscaling.amazonaws.com"}
_SAGEMAKER_NOUNS = (("EndpointConfig", "EndpointConfigName", "endpoint-config"), ("Endpoint", "EndpointName", "endpoint"),
                    ("TransformJob", "TransformJobName", "transform-job"), ("TrainingJob", "TrainingJobName", "training-job"),
                    ("ProcessingJob", "ProcessingJobName", "processing-job"),
                    ("NotebookInstance", "NotebookInstanceName", "notebook-instance"),
                    ("StudioLifecycleConfig", "StudioLifecycleConfigName", "studio-lifecycle-config"), ("Model", "ModelName", "model"))
# the request keys Application Auto Scaling authorises its scalable-target actions with (Service Authorization Reference)
_AUTOSCALING_KEYS = {"ServiceNamespace": "application-autoscaling:service-namespace",
                     "ScalableDimension": "application-autoscaling:scalable-dimension"}
# IAM actions on a role whose `iam:PermissionsBoundary` key is the role's current boundary (PutRolePermissionsBoundary's is the new one)
_BOUNDARY_KEYED = {"PutRolePolicy", "DeleteRolePolicy", "AttachRolePolicy", "DetachRolePolicy", "DeleteRolePermissionsBoundary"}


def _names(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value or [])


def _s3(op: str, p: dict[str, Any]) -> list[str]:
    if "Bucket" not in p:
        return ["*"]
    bucket = f"arn:aws:s3:::{p['Bucket']}"
    if op == "DeleteObjects":
        return [f"{bucket}/{o['Key']}" for o in p.get("Delete", {}).get("Objects", [])]
    return [f"{bucket}/{p['Key']}"] if "Key" in p else [bucket]


def _sagemaker(op: str, p: dict[str, Any], sm: str) -> list[str]:
    if "ResourceArn" in p:
        return [p["ResourceArn"]]
    if "UserProfileName" in p and "DomainId" in p and "Space" not in op and "App" not in op:  # DescribeUserProfile, presigned URLs
        return [f"{sm}:user-profile/{p['DomainId']}/{p['UserProfileName']}".lower()]
    if op == "DescribeDomain":
        return [f"{sm}:domain/{p['DomainId']}".lower()]
    if not op.startswith("List"):
        for noun, key, kind in _SAGEMAKER_NOUNS:
            if noun in op and key in p:
                return [f"{sm}:{kind}/{p[key]}".lower()]
    return ["*"]


def _iam(op: str, p: dict[str, Any], account: str, role_paths: dict[str, str]) -> list[str]:
    if op == "SimulatePrincipalPolicy":
        return [p["PolicySourceArn"]]
    if "PolicyArn" in p and "RoleName" not in p and "UserName" not in p:
        return [p["PolicyArn"]]
    if op == "CreatePolicy":
        return [f"arn:aws:iam::{account}:policy{p.get('Path') or '/'}{p['PolicyName']}"]
    if op == "CreateServiceLinkedRole":
        service = p["AWSServiceName"]
        return [f"arn:aws:iam::{account}:role/aws-service-role/{service}/{SERVICE_LINKED_ROLES.get(service, '*')}"]
    if "RoleName" in p:
        path = p.get("Path") or role_paths.get(p["RoleName"], "/")
        return [f"arn:aws:iam::{account}:role{path}{p['RoleName']}"]
    if "UserName" in p:
        return [f"arn:aws:iam::{account}:user{p.get('Path') or '/'}{p['UserName']}"]
    return ["*"]


def _regional(service: str, op: str, p: dict[str, Any], region: str, account: str) -> list[str]:
    base = f"arn:aws:{service}:{region}:{p.get('registryId') or account}"  # ECR: another account's registry (the DLC's)
    if service == "ecr":
        if "resourceArn" in p:
            return [p["resourceArn"]]
        names = _names(p.get("repositoryNames") or p.get("repositoryName"))
        return [f"{base}:repository/{n}" for n in names] or ["*"]
    if service == "codebuild":
        names = _names(p.get("names") or p.get("name") or p.get("projectName"))
        names += [i.split(":")[0] for i in _names(p.get("ids"))]  # a build id is <project>:<uuid>
        return [f"{base}:project/{n}" for n in names] or ["*"]
    if service == "logs" and "logGroupName" in p:
        return [f"{base}:log-group:{p['logGroupName']}"]
    if service == "cloudwatch":
        names = _names(p.get("AlarmNames") or p.get("AlarmName"))
        return [f"{base}:alarm:{n}" for n in names] or ["*"]
    if service == "application-autoscaling" and not op.startswith("Describe") and "ResourceId" in p:
        # a scalable target's ARN ends in an id Application Auto Scaling assigns (not the resource's name): one per target here
        target = hashlib.sha256(f"{p.get('ServiceNamespace')} {p['ResourceId']} {p.get('ScalableDimension')}".encode()).hexdigest()
        return [f"{base}:scalable-target/{target[:32]}"]
    if service == "sts" and "RoleArn" in p:
        return [p["RoleArn"]]
    return ["*"]


def _resources(service: str, op: str, p: dict[str, Any], region: str, account: str, role_paths: dict[str, str]) -> list[str]:
    if service == "s3":
        return _s3(op, p)
    if service in ("sagemaker", "sagemaker-runtime"):
        return _sagemaker(op, p, f"arn:aws:sagemaker:{region}:{account}")
    if service == "iam":
        return _iam(op, p, account, role_paths)
    return _regional(service, op, p, region, account)


# CodeBuild's condition keys (Service Authorization Reference) and the request fields they read: a project's, or a build's override
_CODEBUILD_KEYS = {"codebuild:environment.computeType": (("environment", "computeType"), ("computeTypeOverride",)),
                   "codebuild:environment.image": (("environment", "image"), ("imageOverride",)),
                   "codebuild:source.location": (("source", "location"), ("sourceLocationOverride",)),
                   "codebuild:serviceRole": (("serviceRole",), ("serviceRoleOverride",))}


def _dig(params: dict[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        params = params.get(key) if isinstance(params, dict) else None  # type: ignore[assignment]
    return params


def request_keys(service: str, op: str, params: dict[str, Any], region: str, account: str) -> dict[str, Any]:
    """The service-specific condition keys AWS puts in this request's context, from what it carries: the models and instances
    a SageMaker config or job runs, a Studio app's or space's owner and sharing, the actions an alarm fires, the compute,
    image, source and role a CodeBuild project or build uses, the tags a create sends."""
    keys: dict[str, Any] = {}
    sm = f"arn:aws:sagemaker:{region}:{account}"
    if service == "sagemaker":
        variants = params.get("ProductionVariants") or []
        models = [v["ModelName"] for v in variants if v.get("ModelName")] + ([params["ModelName"]] if op == "CreateTransformJob" else [])
        if op in ("CreateEndpointConfig", "CreateTransformJob") and models:
            keys["sagemaker:ModelArn"] = [f"{sm}:model/{m}".lower() for m in models]
        types = [v["InstanceType"] for v in variants if v.get("InstanceType")]
        types += [t for t in [_dig(params, ("TransformResources", "InstanceType")), _dig(params, ("ResourceSpec", "InstanceType")),
                              _dig(params, ("SpaceSettings", "JupyterLabAppSettings", "DefaultResourceSpec", "InstanceType"))] if t]
        if types:
            keys["sagemaker:InstanceTypes"] = types
        owner = _dig(params, ("OwnershipSettings", "OwnerUserProfileName"))
        if owner and params.get("DomainId"):
            keys["sagemaker:OwnerUserProfileArn"] = f"{sm}:user-profile/{params['DomainId']}/{owner}".lower()
        sharing = _dig(params, ("SpaceSharingSettings", "SharingType"))
        if sharing:
            keys["sagemaker:SpaceSharingType"] = sharing
    if service == "cloudwatch" and op == "PutMetricAlarm" and params.get("AlarmActions"):
        keys["cloudwatch:AlarmActions"] = list(params["AlarmActions"])
    if service == "codebuild" and op in ("CreateProject", "UpdateProject", "StartBuild"):
        for key, (field, override) in _CODEBUILD_KEYS.items():
            value = _dig(params, override if op == "StartBuild" else field)
            if value is not None:
                keys[key] = value
    tags = params.get("Tags") or params.get("tags") or []
    if op.startswith("Create") and tags:
        pairs = {t.get("Key", t.get("key")): t.get("Value", t.get("value")) for t in tags}
        keys["aws:TagKeys"] = list(pairs)
        keys.update({f"aws:RequestTag/{k}": v for k, v in pairs.items()})
    return keys


def _autoscaling_targets(op: str, params: dict[str, Any], region: str, account: str) -> list[tuple[str, str, dict[str, Any]]]:
    """What Application Auto Scaling checks of the caller on the target (its "Permissions required" table): registering a
    SageMaker variant needs sagemaker:DescribeEndpoint and UpdateEndpointWeightsAndCapacities on that endpoint; a target
    tracking policy needs cloudwatch:PutMetricAlarm and DescribeAlarms on the alarms it makes, which fire that policy."""
    if params.get("ServiceNamespace") != "sagemaker" or "ResourceId" not in params:
        return []
    endpoint = params["ResourceId"].split("/")[1]
    arn = f"arn:aws:sagemaker:{region}:{account}:endpoint/{endpoint}".lower()
    if op == "RegisterScalableTarget":
        return [("sagemaker:DescribeEndpoint", arn, {}), ("sagemaker:UpdateEndpointWeightsAndCapacities", arn, {})]
    if op == "PutScalingPolicy" and params.get("PolicyType") == "TargetTrackingScaling":
        alarm = f"arn:aws:cloudwatch:{region}:{account}:alarm:TargetTracking-{params['ResourceId']}-AlarmHigh-0123"
        policy = (f"arn:aws:autoscaling:{region}:{account}:scalingPolicy:0123:resource/sagemaker/{params['ResourceId']}:"
                  f"policyName/{params['PolicyName']}")
        return [("cloudwatch:PutMetricAlarm", alarm, {"cloudwatch:AlarmActions": [policy]}), ("cloudwatch:DescribeAlarms", alarm, {})]
    return []


# Operations SageMaker authorises against a second resource besides their own (Service Authorization Reference)
_ALSO_ON_CONFIG = {"CreateEndpoint", "UpdateEndpoint"}


def authorization_for(service: str, op: str, params: dict[str, Any], region: str, account: str,
                      role_paths: dict[str, str] | None = None,
                      role_boundaries: dict[str, str] | None = None) -> list[tuple[str, str, dict[str, Any]]]:
    """(action, resource, condition context) triples AWS authorizes this call against; each must be allowed.
    `role_boundaries`: role name -> its permissions boundary, the `iam:PermissionsBoundary` key of writes to that role."""
    from semif_lib.aws.permissions import iam_action_for

    role_paths = role_paths or {}
    primary = _resources(service, op, params, region, account, role_paths)
    keys = {key: params[name] for name, key in _AUTOSCALING_KEYS.items() if service == "application-autoscaling" and name in params}
    if service == "iam" and op in ("CreateRole", "PutRolePermissionsBoundary") and params.get("PermissionsBoundary"):
        keys["iam:PermissionsBoundary"] = params["PermissionsBoundary"]
    if service == "iam" and op in _BOUNDARY_KEYED and (role_boundaries or {}).get(params.get("RoleName")):
        keys["iam:PermissionsBoundary"] = role_boundaries[params["RoleName"]]  # type: ignore[index]
    keys.update(request_keys(service, op, params, region, account))
    if service == "sagemaker" and op in _ALSO_ON_CONFIG and params.get("EndpointConfigName"):
        primary = [*primary, f"arn:aws:sagemaker:{region}:{account}:endpoint-config/{params['EndpointConfigName']}".lower()]
    checks: list[tuple[str, str, dict[str, Any]]] = []
    for action in iam_action_for(service, op, params):
        if action == "iam:PassRole":
            role = next(params[k] for k in ("ExecutionRoleArn", "serviceRoleOverride", "serviceRole", "RoleArn") if k in params)
            checks.append((action, role, {"iam:PassedToService": PASSED_TO.get(service, f"{service}.amazonaws.com")}))
        elif action == "iam:CreateServiceLinkedRole":
            checks += [(action, r, {"iam:AWSServiceName": params["AWSServiceName"]}) for r in primary]
        else:
            checks += [(action, r, dict(keys)) for r in primary]
    if service == "application-autoscaling" and op == "RegisterScalableTarget" and params.get("ServiceNamespace") == "sagemaker":
        # the first registration creates SageMaker's service-linked role for Application Auto Scaling, as the caller
        service_name = "sagemaker.application-autoscaling.amazonaws.com"
        checks.append(("iam:CreateServiceLinkedRole", _iam("CreateServiceLinkedRole", {"AWSServiceName": service_name}, account, {})[0],
                       {"iam:AWSServiceName": service_name}))
    if service == "application-autoscaling":
        checks += _autoscaling_targets(op, params, region, account)
    return checks


class _Forbidden:
    """What botocore reads of an HTTP response that a `before-call` hook answers."""

    status_code = 403
    headers: dict[str, str] = {}
    content = b""
    raw = None


class _Ok(_Forbidden):
    status_code = 200


def _error_code(model: Any) -> str:
    service = model.service_model
    if service.protocol in ("query", "rest-xml", "ec2") or service.metadata.get("awsQueryCompatible") is not None:
        return "AccessDenied"
    return "AccessDeniedException"


class IdentityEnforcer:
    """The hooks for one identity: `principal` (the role ARN its policies belong to), `caller` (the ARN AWS names
    in its messages: the assumed-role session), `policies` (its identity-based policy documents)."""

    def __init__(self, principal: str, caller: str, policies: list[dict[str, Any]], log_file: Path,
                 context: dict[str, Any] | None = None, role_boundaries: dict[str, str] | None = None) -> None:
        self.principal, self.caller, self.policies, self.log_file = principal, caller, policies, Path(log_file)
        self.account = principal.split(":")[4]
        name = principal.split(":role", 1)[1]
        self.role_paths = {name.rsplit("/", 1)[1]: name.rsplit("/", 1)[0] + "/"}
        self.extra_context = dict(context or {})  # what the session carries besides the principal (Studio's keys, aws:SourceIdentity)
        self.role_boundaries = dict(role_boundaries or {})  # roles that exist with a boundary (and those created here)
        # the roles this identity created, as IAM keeps them: every kernel of a walk reads what an earlier one made
        self.roles_file = self.log_file.with_name(self.log_file.stem + "-roles.json")
        if self.roles_file.is_file():
            made = json.loads(self.roles_file.read_text())
            self.role_paths.update(made["paths"])
            self.role_boundaries.update(made["boundaries"])
        self._lock = threading.Lock()

    def _remember_role(self, name: str, path: str, boundary: str | None) -> None:
        with self._lock:
            self.role_paths[name] = path
            if boundary:
                self.role_boundaries[name] = boundary
            made = json.loads(self.roles_file.read_text()) if self.roles_file.is_file() else {"paths": {}, "boundaries": {}}
            made["paths"][name] = path
            if boundary:
                made["boundaries"][name] = boundary
            self.roles_file.write_text(json.dumps(made))

    def keep_params(self, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["iam_enforced_params"] = dict(params)

    def _log(self, record: dict[str, Any]) -> None:
        with self._lock, self.log_file.open("a") as out:
            out.write(json.dumps(record) + "\n")

    def _context(self, region: str) -> dict[str, Any]:
        return {"aws:PrincipalArn": self.principal, "aws:PrincipalAccount": self.account, "aws:RequestedRegion": region,
                **self.extra_context}

    def decide(self, model: Any, context: dict[str, Any], **_: Any) -> tuple[Any, dict[str, Any]] | None:
        service, op = model.service_model.service_name, model.name
        params = context.get("iam_enforced_params", {})
        region = context.get("client_region") or "us-east-1"
        checks = authorization_for(service, op, params, region, self.account, self.role_paths, self.role_boundaries)
        for action, resource, keys in checks:
            decision = evaluate(self.policies, action, resource, {**self._context(region), **keys})
            self._log({"service": service, "operation": op, "action": action, "resource": resource, "decision": decision.kind})
            if not decision.allowed:
                return self._denied(model, action, resource, decision.kind)
        if service == "iam" and op == "CreateRole":
            self._remember_role(params["RoleName"], params.get("Path") or "/", params.get("PermissionsBoundary"))
        if service == "iam" and op == "SimulatePrincipalPolicy" and params.get("PolicySourceArn") == self.principal:
            return _Ok(), self._simulate(params, region)
        return None

    def _denied(self, model: Any, action: str, resource: str, kind: str) -> tuple[Any, dict[str, Any]]:
        why = ("with an explicit deny in an identity-based policy" if kind == EXPLICIT_DENY
               else f"because no identity-based policy allows the {action} action")
        message = f"User: {self.caller} is not authorized to perform: {action} on resource: {resource} {why}"
        code = _error_code(model)
        if model.service_model.service_name == "s3" and model.http.get("method") == "HEAD":
            code, message = "403", "Forbidden"  # a HEAD response has no body to carry a code
        return _Forbidden(), {"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": 403}}

    def _simulate(self, params: dict[str, Any], region: str) -> dict[str, Any]:
        keys = {e["ContextKeyName"]: e["ContextKeyValues"] if e.get("ContextKeyType", "").endswith("List") else e["ContextKeyValues"][0]
                for e in params.get("ContextEntries", [])}
        results = []
        for action in params["ActionNames"]:
            for resource in params.get("ResourceArns") or ["*"]:
                decision = evaluate(self.policies, action, resource, {**self._context(region), **keys})
                results.append({"EvalActionName": action, "EvalResourceName": resource, "EvalDecision": decision.kind})
        return {"EvaluationResults": results, "IsTruncated": False, "ResponseMetadata": {"HTTPStatusCode": 200}}

    def register(self, session: Any) -> None:
        session.events.register("before-parameter-build", self.keep_params, unique_id="iam-enforcer-params")
        session.events.register_first("before-call", self.decide, unique_id="iam-enforcer-decide")


def enforce_identity(identity_file: str | Path) -> IdentityEnforcer:
    """Enforce the identity described in `identity_file` (JSON: principal, caller, policies, log_file, and
    studio_metadata when it plays SageMaker Studio) on every session `semif_lib.aws.clients` hands out."""
    from semif_lib.aws import clients

    from support.aws import SESSION_HOOKS, patch_sessions

    identity = json.loads(Path(identity_file).read_text())
    enforcer = IdentityEnforcer(identity["principal"], identity["caller"], identity["policies"], identity["log_file"],
                                identity.get("context"), identity.get("role_boundaries"))
    SESSION_HOOKS.append(enforcer.register)
    patch_sessions()
    clients.reset_sessions()
    if identity.get("studio_metadata"):  # inside Studio: the notebook's own role, found by the SDK from this file
        from semif_lib.aws import iamroles

        iamroles.STUDIO_METADATA_FILE = identity["studio_metadata"]
        when_imported("sagemaker.core.helper.session_helper",
                      lambda session_helper: setattr(session_helper, "NOTEBOOK_METADATA_FILE", identity["studio_metadata"]))
    return enforcer


def when_imported(name: str, patch: Any) -> None:
    """`patch(module)` as soon as module `name` is imported (now, if it is already): the SageMaker SDK takes seconds to
    import, and a kernel whose notebook never uses it should not import it for the test's sake."""
    if name in sys.modules:
        patch(sys.modules[name])
        return

    class PatchOnImport(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
            if fullname != name:
                return None
            sys.meta_path.remove(self)  # once, and the real finders find the module
            spec = importlib.util.find_spec(fullname)
            execute = spec.loader.exec_module

            def exec_module(module: Any) -> None:
                execute(module)
                patch(module)

            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, PatchOnImport())


STUDIO_ROLE = "AmazonSageMaker-ExecutionRole-20261202T000000"  # the name and path the console gives Studio's default role
TRUST_SAGEMAKER = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"},
                                                           "Action": "sts:AssumeRole"}]}


def create_identity(endpoint_url: str, region: str, folder: Path, policies: list[dict[str, Any]],
                    studio: bool, role: str | None = None, context: dict[str, Any] | None = None) -> tuple[dict[str, str], Path]:
    """Make the identity's role on moto, assume it, and write the identity file `enforce_identity` reads: its policies
    live there, not attached in moto (moto enforces none of them, and its policy validator refuses the caller
    policy's `arn:aws:iam::<account>:*`, a resource whose path IAM's own message allows as "*"). Returns the
    credentials the kernels run with (the assumed-role session's) and the identity file (its `log_file` receives
    the decisions). `studio`: the console's
    AmazonSageMaker-ExecutionRole under /service-role/ (or `role`, an existing one: an event team's stack made it),
    with the metadata file a Studio kernel has; `context`: what its session carries (Studio's keys, the source identity)."""
    import boto3

    admin = {"endpoint_url": endpoint_url, "region_name": region, "aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
    iam, sts = boto3.client("iam", **admin), boto3.client("sts", **admin)
    name, path = (STUDIO_ROLE, "/service-role/") if studio else ("workshop-attendee", "/")
    if role is None:
        role = iam.create_role(RoleName=name, Path=path, AssumeRolePolicyDocument=json.dumps(TRUST_SAGEMAKER))["Role"]["Arn"]
    session = sts.assume_role(RoleArn=role, RoleSessionName="SageMaker" if studio else "attendee")
    folder.mkdir(parents=True, exist_ok=True)
    identity = {"principal": role, "caller": session["AssumedRoleUser"]["Arn"], "policies": policies,
                "log_file": str(folder / "decisions.jsonl"), "context": context or {}}
    if studio:
        metadata = folder / "resource-metadata.json"
        metadata.write_text(json.dumps({"ResourceName": "default", "ExecutionRoleArn": role}))
        identity["studio_metadata"] = str(metadata)
    (folder / "identity.json").write_text(json.dumps(identity))
    credentials = session["Credentials"]
    return ({"AWS_ACCESS_KEY_ID": credentials["AccessKeyId"], "AWS_SECRET_ACCESS_KEY": credentials["SecretAccessKey"],
             "AWS_SESSION_TOKEN": credentials["SessionToken"]}, folder / "identity.json")


def read_decisions(identity_file: Path) -> list[dict[str, str]]:
    """Every decision `enforce_identity` logged for this identity, in order."""
    path = Path(json.loads(Path(identity_file).read_text())["log_file"])
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []
