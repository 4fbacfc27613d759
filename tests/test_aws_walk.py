"""The attendee's walk when AWS fails: a cell rerun after a Failed endpoint, a rerun while the endpoint
is still Creating/Updating, an autoscaled endpoint redeployed, quota errors as one line, the runtime client's
timeouts. moto's endpoints are InService at once and it has no UpdateEndpoint: the states SageMaker would
report are scripted on botocore's event hooks of the one session every client (the SDK's too) comes from."""

from __future__ import annotations

import json

import pytest

from support.aws import client_error, own_repositories


class _Http:
    status_code = 200
    headers: dict = {}


def _script(settings, statuses: list[str]) -> list[tuple]:
    """DescribeEndpoint answers `statuses` first (then moto's own); UpdateEndpoint is answered here (moto has
    none) and later describes show the config it moved to. Returns the calls in order."""
    from semif_lib.aws.clients import make_session

    calls: list[tuple] = []
    events = make_session(settings).events

    def describe(parsed, **_):
        if "EndpointStatus" not in parsed:
            return
        if statuses:
            parsed["EndpointStatus"] = statuses.pop(0)
        updates = [c for c in calls if c[0] == "update"]
        if updates:
            parsed["EndpointConfigName"] = updates[-1][1]["EndpointConfigName"]
        calls.append(("describe", parsed["EndpointStatus"]))

    events.register("after-call.sagemaker.DescribeEndpoint", describe)
    events.register("before-parameter-build.sagemaker.UpdateEndpoint", lambda params, **_: calls.append(("update", dict(params))))
    events.register("before-call.sagemaker.UpdateEndpoint",
                    lambda **_: (_Http(), {"EndpointArn": "arn:aws:sagemaker:us-east-1:123456789012:endpoint/x"}))
    for op in ("CreateEndpoint", "DeleteEndpoint"):
        events.register(f"before-parameter-build.sagemaker.{op}", lambda params, op=op, **_: calls.append((op, params["EndpointName"])))
    return calls


@pytest.fixture
def deployed(state, aws_settings, fake_gguf, monkeypatch):
    from semif_lib.aws import deployment
    from semif_lib.workshop import deploy_text_model, package_model

    monkeypatch.setattr(deployment, "ENDPOINT_POLL_S", 0.01)
    statuses: list[str] = []
    calls = _script(aws_settings, statuses)  # before any client exists: the SDK caches its clients
    package_model(fake_gguf, settings=aws_settings, state=state, progress=False)
    name = deploy_text_model(settings=aws_settings, state=state)
    calls.clear()
    return name, statuses, calls


def test_a_failed_endpoint_is_deleted_and_created_again_on_rerun(deployed, state, aws_settings):
    """SageMaker: "DeleteEndpoint is the only operation that can be performed on a failed endpoint"."""
    from semif_lib.aws.clients import make_client
    from semif_lib.workshop import deploy_text_model

    deployed, statuses, calls = deployed
    statuses.append("Failed")
    assert deploy_text_model(settings=aws_settings, state=state) == deployed  # the unchanged rerun after a quota was raised
    ops = [c[0] for c in calls if c[0] != "describe"]
    assert ops == ["DeleteEndpoint", "CreateEndpoint"]
    assert make_client("sagemaker", aws_settings).describe_endpoint(EndpointName=deployed)["EndpointStatus"] == "InService"


def test_a_rerun_while_updating_waits_then_updates(deployed, state, aws_settings):
    from semif_lib.workshop import deploy_text_model

    _, statuses, calls = deployed
    statuses.extend(["Updating", "Creating"])
    deploy_text_model(settings=aws_settings, state=state, llama_settings={"ctx_size": 1024})  # a changed spec
    first_update = next(i for i, c in enumerate(calls) if c[0] == "update")
    assert [c[1] for c in calls[:first_update]][:2] == ["Updating", "Creating"]
    assert calls[first_update - 1] == ("describe", "InService")  # the update is sent only once SageMaker accepts it
    assert sum(c[0] == "update" for c in calls) == 1 and "DeleteEndpoint" not in [c[0] for c in calls]


def _autoscale(settings, endpoint: str) -> None:
    from semif_lib.aws.clients import make_client

    make_client("application-autoscaling", settings).register_scalable_target(
        ServiceNamespace="sagemaker", ResourceId=f"endpoint/{endpoint}/variant/AllTraffic",
        ScalableDimension="sagemaker:variant:DesiredInstanceCount", MinCapacity=1, MaxCapacity=2)


def test_an_autoscaled_endpoint_keeps_its_count_and_a_type_change_deregisters(deployed, state, aws_settings):
    from semif_lib.aws.clients import make_client
    from semif_lib.workshop import deploy_text_model

    deployed, _, calls = deployed
    deploy_text_model(settings=aws_settings, state=state, llama_settings={"ctx_size": 1024})
    assert [c[1].get("RetainAllVariantProperties") for c in calls if c[0] == "update"] == [False]  # not autoscaled: plain update

    _autoscale(aws_settings, deployed)
    deploy_text_model(settings=aws_settings, state=state, llama_settings={"ctx_size": 2048})
    assert [c[1].get("RetainAllVariantProperties") for c in calls if c[0] == "update"][-1] is True  # the scaled count is kept

    bigger = aws_settings.model_copy(update={"instance_type": "ml.m5.xlarge"})
    deploy_text_model(settings=bigger, state=state, llama_settings={"ctx_size": 2048})
    assert [c[1].get("RetainAllVariantProperties") for c in calls if c[0] == "update"][-1] is False
    aas = make_client("application-autoscaling", aws_settings)
    assert aas.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"] == []  # deregistered before the type change


# ------------------------------------------------------------------ quotas as one line
@pytest.mark.parametrize(("code", "message", "expected"), [
    ("ResourceLimitExceeded", "The account-level service limit 'ml.c6i.xlarge for endpoint usage' is 0 Instances, with current "
     "utilization of 0 Instances and a request delta of 1 Instances. Please use AWS Service Quotas to request an increase for this quota.",
     "quota 'ml.c6i.xlarge for endpoint usage' is 0"),
    ("AccountLimitExceededException", "Cannot have more than 0 builds in queue for the account",
     "CodeBuild's concurrent-build quota"),
])
def test_a_quota_error_is_one_line_naming_the_quota(code, message, expected):
    from semif_lib.aws.errors import AwsQuotaError, aws_errors

    with pytest.raises(AwsQuotaError) as info:
        with aws_errors("deploy_text_model (02)"):
            raise client_error(code, message, "CreateEndpoint")
    text = str(info.value)
    assert "\n" not in text and expected in text and "Service Quotas" in text, text
    assert info.value.__cause__ is None


# ------------------------------------------------------------------ the runtime client
def test_the_runtime_client_waits_80_s_and_never_resends_a_slow_invocation(aws_credentials, aws_settings):
    """A real HTTP server on 127.0.0.1 that answers too late: one request reaches it, not eight."""
    import http.server
    import threading
    import time

    from botocore.exceptions import ReadTimeoutError

    from semif_lib.aws.clients import runtime_client

    assert runtime_client(aws_settings).meta.config.read_timeout == 80
    hits: list[str] = []

    class Slow(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            hits.append(self.path)
            time.sleep(1.5)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *_):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        local = aws_settings.model_copy(update={"aws_endpoint_url": f"http://127.0.0.1:{server.server_port}"})
        with pytest.raises(ReadTimeoutError):
            runtime_client(local, read_timeout_s=0.5).invoke_endpoint(EndpointName="e", Body=b"{}", ContentType="application/json")
        time.sleep(0.3)
        assert len(hits) == 1
    finally:
        server.shutdown()


# ------------------------------------------------------------------ the adapter's deadline: a real-time invocation's 60 s, or the job's
def test_a_transform_container_waits_as_long_as_the_transform(state, aws_settings, monkeypatch):
    """A 6 MB MultiRecord mini-batch may take most of InvocationsTimeoutInSeconds (3600 s); the adapter's own deadline
    (58 s on a real-time endpoint) moves just inside it through CreateTransformJob.Environment."""
    from semif_lib.aws import scaling
    from semif_lib.aws.clients import make_client
    from semif_lib.contract import answer_deadline_s
    from semif_lib.settings import load_settings

    sm = make_client("sagemaker", aws_settings)
    sm.create_model(ModelName="m", ExecutionRoleArn="arn:aws:iam::123456789012:role/r",
                    PrimaryContainer={"Image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/x:1"})
    job = scaling.create_batch_transform("m", "s3://b/in/", "s3://b/out/", settings=aws_settings, state=state)
    desc = sm.describe_transform_job(TransformJobName=job)
    wait = desc["ModelClientConfig"]["InvocationsTimeoutInSeconds"]
    for key, value in desc["Environment"].items():
        monkeypatch.setenv(key, value)
    inside = load_settings()  # as the container reads its Environment
    assert wait == 3600 and 3000 < answer_deadline_s(inside.request_timeout_s) < wait
    # the job's own mini-batches are JSON Lines, read only because its Environment asks (an endpoint refuses them, 415)
    assert inside.accept_jsonlines and inside.max_records == 100_000


def test_the_adapters_deadline_on_an_endpoint_is_inside_60_s():
    """SageMaker gives a real-time invocation 60 s; the adapter's deadline was 2 x 55 s = 110 s, so a slow request kept
    computing for 50 s after the client had its ModelError (notebook 05's fresh reference met it)."""
    from semif_lib.contract import answer_deadline_s
    from semif_lib.settings import Settings

    default = Settings.model_fields["request_timeout_s"].default
    assert answer_deadline_s(default) <= 58 < 60
    assert answer_deadline_s(1.0) == 2.0  # a short timeout keeps its 2x (the supervision tests hold requests past it)
    assert answer_deadline_s(1785.0) == 1785.0  # a wait chosen past 60 s (Batch Transform) is the deadline itself


def test_notebook_05s_fresh_reference_goes_one_question_per_call(monkeypatch):
    """mode=fresh with all of a long state's questions took 71 s in one call: past a real-time invocation's 60 s. The
    reference now goes one question per call, and the merged response sums times and tokens and says how many calls."""
    from semif_lib import notebook, workshop

    request = notebook.load_workload_request(0, 8)
    sent: list[tuple[list[str], str]] = []

    def invoke(body, settings=None, state=None, mode=None):
        ids = list(body["questions"])
        sent.append((ids, mode))
        return {"model": "m", "answers": {i: {"probabilities": {"a": 1.0}} for i in ids},
                "usage": {"input_tokens": 1500, "output_tokens": 0, "x_cached_tokens": 0},
                "x_timing": {"mode": "fresh", "prefix_tokens": 1400, "prefill_s": 0.0, "total_s": 8.5}}

    monkeypatch.setattr(workshop, "invoke_decision", invoke)
    fresh = notebook.score_fresh_reference(request)
    assert [ids for ids, _ in sent] == [[qid] for qid in request["questions"]] and {m for _, m in sent} == {"fresh"}
    assert list(fresh["answers"]) == list(request["questions"])
    assert fresh["usage"]["input_tokens"] == 8 * 1500 and fresh["x_timing"]["total_s"] == 8 * 8.5
    assert fresh["x_timing"]["prefix_tokens"] == 1400 and fresh["x_calls"] == 8
    assert notebook.describe_reference(fresh).startswith("fresh: 8 calls of one question")


# ------------------------------------------------------------------ quotas in the preflight
def _answer_quotas(settings, answer) -> None:
    """moto 5.2.5 has no ListServiceQuotas (only ListAWSDefaultServiceQuotas / GetServiceQuota): answered here, in
    botocore's output shape, per ServiceCode; `answer` is a dict of quota lists or an error code."""
    from semif_lib.aws.clients import make_session

    class Http:
        status_code = 200 if isinstance(answer, dict) else 400
        headers: dict = {}

    def call(params, **_):  # params: the serialized request; its JSON body carries ServiceCode
        if isinstance(answer, dict):
            code = json.loads(params["body"])["ServiceCode"]
            return Http(), {"Quotas": [{"QuotaName": n, "Value": v, "ServiceCode": code} for n, v in answer.get(code, {}).items()]}
        return Http(), {"Error": {"Code": answer, "Message": "not authorized to perform: servicequotas:ListServiceQuotas"}}

    make_session(settings).events.register("before-call.service-quotas.ListServiceQuotas", call)


def test_quotas_against_the_runs_peak(aws, aws_settings):
    """A new account's 0 for endpoint usage reads NO; the peak counts blue/green (3 held, 5 while the scaled endpoint updates)."""
    from semif_lib.aws.quotas import check_quotas, describe_quotas

    _answer_quotas(aws_settings, {"sagemaker": {"ml.m5.large for endpoint usage": 0.0, "ml.m5.large for transform job usage": 1.0,
                                                "ml.g4dn.xlarge for endpoint usage": 4.0},
                                  "codebuild": {"Concurrently running builds for Linux/Medium environment": 1.0}})
    rows = {r["quota"]: r for r in check_quotas(aws_settings)}
    assert rows["ml.m5.large for endpoint usage"] | {} == {**rows["ml.m5.large for endpoint usage"], "value": 0.0, "steady": 3, "peak": 5,
                                                          "ok": False}
    assert rows["ml.m5.large for transform job usage"]["ok"] is True
    assert rows["Concurrently running builds for Linux/Medium environment"]["ok"] is True
    assert "NO  ml.m5.large for endpoint usage: 0 (this run holds 3, 5 during a blue/green update); request an increase" in "\n".join(
        describe_quotas(list(rows.values())))
    cuda = {r["quota"]: r for r in check_quotas(aws_settings.model_copy(update={"dlc_variant": "cuda"}))}
    assert cuda["ml.g4dn.xlarge for endpoint usage"]["ok"] is False and cuda["ml.g4dn.xlarge for endpoint usage"]["value"] == 4.0


def test_unreadable_quotas_are_question_marks(aws, aws_settings):
    from semif_lib.aws.quotas import check_quotas

    _answer_quotas(aws_settings, "AccessDeniedException")
    rows = check_quotas(aws_settings)
    assert {r["ok"] for r in rows} == {None} and {r["how"] for r in rows} == {"no servicequotas:ListServiceQuotas"}


def test_moto_without_list_service_quotas_reads_question_marks(aws, aws_settings):
    """What moto itself answers (no ListServiceQuotas): `?`, never a stop."""
    from semif_lib.aws.quotas import check_quotas

    rows = check_quotas(aws_settings)
    assert rows and {r["ok"] for r in rows} == {None}


def test_a_log_group_the_role_may_not_delete_is_reported_kept(aws, aws_settings):
    """Studio's default role has no logs:DeleteLogGroup: cleanup says the endpoint's log group stays, not silence."""
    from semif_lib.aws import teardown
    from semif_lib.aws.clients import make_session

    class Http:
        status_code = 400
        headers: dict = {}

    make_session(aws_settings).events.register(
        "before-call.cloudwatch-logs.DeleteLogGroup",
        lambda **_: (Http(), {"Error": {"Code": "AccessDeniedException", "Message": "not authorized to perform: logs:DeleteLogGroup"}}))
    lines: list[str] = []
    teardown._delete_log_group("/aws/sagemaker/Endpoints/semif-text-t3st01", aws_settings, log=lines.append)
    assert lines == ["log group /aws/sagemaker/Endpoints/semif-text-t3st01: kept: no logs:DeleteLogGroup permission (delete it in the "
                     "CloudWatch console, or attach container/iam/workshop-caller-policy.json)"]


# ------------------------------------------------------------------ SEMIF_KMS_KEY_ID
def test_a_kms_key_encrypts_the_bucket_the_objects_and_the_repository(state, aws_settings, fake_gguf):
    """An account that enforces SSE-KMS refuses SSE-S3 uploads: with SEMIF_KMS_KEY_ID every write names the key."""
    from semif_lib.aws.clients import make_client
    from semif_lib.workshop import build_adapter_image, load_state, package_model

    key = make_client("kms", aws_settings).create_key()["KeyMetadata"]["Arn"]
    settings = aws_settings.model_copy(update={"kms_key_id": key})
    st = load_state(settings)
    url = package_model(fake_gguf, settings=settings, state=st, progress=False)["model_data_url"]
    s3 = make_client("s3", settings)
    bucket, object_key = url.split("/", 3)[2], url.split("/", 3)[3]
    head = s3.head_object(Bucket=bucket, Key=object_key)
    assert head["ServerSideEncryption"] == "aws:kms" and head["SSEKMSKeyId"] == key
    rule = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"][0]["ApplyServerSideEncryptionByDefault"]
    assert rule == {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": key}
    build_adapter_image(settings=settings, state=st, log=lambda _: None)
    repo = own_repositories(make_client("ecr", settings))[0]
    assert repo["encryptionConfiguration"] == {"encryptionType": "KMS", "kmsKey": key}
    build_zip = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"] if o["Key"].endswith(".zip")][0]
    assert s3.head_object(Bucket=bucket, Key=build_zip)["SSEKMSKeyId"] == key


# ------------------------------------------------------------------ what an event team pre-provisions
def test_a_provisioned_codebuild_role_is_used_not_created(state, aws_settings, fake_gguf):
    from semif_lib.aws import permissions
    from semif_lib.aws.clients import make_client
    from semif_lib.workshop import build_adapter_image, load_state

    iam = make_client("iam", aws_settings)
    role = iam.create_role(RoleName="event-codebuild", AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "codebuild.amazonaws.com"}, "Action": "sts:AssumeRole"}]}))["Role"]["Arn"]
    settings = aws_settings.model_copy(update={"codebuild_role_arn": role})
    st = load_state(settings)
    build_adapter_image(settings=settings, state=st, log=lambda _: None)
    project = make_client("codebuild", settings).batch_get_projects(names=["semif-adapter-build-t3st01"])["projects"][0]
    assert project["serviceRole"] == role
    assert [r["RoleName"] for r in iam.list_roles()["Roles"]] == ["event-codebuild"] and not st.find("iam_role")
    rows = permissions.needs_in_context(settings, st)
    assert [n.resource for n in rows if n.action == "iam:PassRole" and n.step.startswith("03")] == [role]
    assert not any("semif-codebuild-" in n.resource for n in rows)


def test_a_prebuilt_adapter_image_skips_step_03(state, aws_settings, fake_gguf):
    from semif_lib.aws import permissions
    from semif_lib.aws.clients import make_client
    from semif_lib.workshop import build_adapter_image, deploy_decision_model, load_state, package_model

    image = "123456789012.dkr.ecr.us-east-1.amazonaws.com/event-adapter@sha256:" + "0123456789abcdef" * 4
    settings = aws_settings.model_copy(update={"adapter_image_uri": image})
    st = load_state(settings)
    assert build_adapter_image(settings=settings, state=st, log=lambda _: None) == image
    assert own_repositories(make_client("ecr", settings)) == []
    assert make_client("codebuild", settings).list_projects()["projects"] == []
    assert not any(n.step.startswith("03") for n in permissions.needs_in_context(settings, st))
    fresh = load_state(settings.model_copy(update={"state_file": settings.state_file.with_name("no-03.json")}))
    package_model(fake_gguf, settings=settings, state=fresh, progress=False)
    name = deploy_decision_model(settings=settings, state=fresh)  # without notebook 03's state
    sm = make_client("sagemaker", settings)
    config = sm.describe_endpoint_config(EndpointConfigName=sm.describe_endpoint(EndpointName=name)["EndpointConfigName"])
    assert sm.describe_model(ModelName=config["ProductionVariants"][0]["ModelName"])["PrimaryContainer"]["Image"] == image


# ------------------------------------------------------------------ a stopping transform job and its output
def _script_transform(aws_settings, statuses: list[str]) -> list[str]:
    """DescribeTransformJob answers `statuses` in turn (the last one from then on), StopTransformJob is answered, and
    every call and S3 delete is recorded in order (moto's jobs finish at once)."""
    from semif_lib.aws.clients import make_session

    events, order = make_session(aws_settings).events, []

    def describe(**_):
        status = statuses.pop(0) if len(statuses) > 1 else statuses[0]
        order.append(f"describe {status}")
        return _Http(), {"TransformJobName": "semif-batch-t3st01-1", "TransformJobStatus": status}

    events.register("before-call.sagemaker.DescribeTransformJob", describe)
    events.register("before-call.sagemaker.StopTransformJob", lambda **_: (order.append("stop"), (_Http(), {}))[1])
    events.register("before-parameter-build.s3.DeleteObject", lambda params, **_: order.append(f"delete {params['Key']}"))
    return order


def _job_and_output(state, aws_settings) -> str:
    """What run_batch_transform records: the output object first (so cleanup finds it even if the kernel stops), then the
    job, then the job on the object's record."""
    from semif_lib.aws.clients import make_client

    bucket, key = "semif-sagemaker-123456789012-us-east-1", "semif-workshop/t3st01/batch/output/1/requests.jsonl.out"
    make_client("s3", aws_settings).create_bucket(Bucket=bucket)
    make_client("s3", aws_settings).put_object(Bucket=bucket, Key=key, Body=b"{}\n")
    state.record("s3_object", f"s3://{bucket}/{key}", bucket=bucket, key=key)
    state.record("transform_job", "semif-batch-t3st01-1")
    state.record("s3_object", f"s3://{bucket}/{key}", transform_job="semif-batch-t3st01-1")
    return key


def test_cleanup_waits_for_a_stopping_transform_job_before_deleting_its_output(state, aws_settings, monkeypatch):
    """A job cleanup stops goes on writing until it has stopped: its output is deleted only after `Stopped`."""
    from semif_lib.aws import teardown
    from semif_lib.workshop import cleanup

    monkeypatch.setattr(teardown.time, "sleep", lambda _: None)
    order = _script_transform(aws_settings, ["InProgress", "Stopping", "Stopping", "Stopped"])
    key = _job_and_output(state, aws_settings)
    report = cleanup(settings=aws_settings, state=state)
    assert not report.failed and report.removed == ["transform_job semif-batch-t3st01-1", f"s3_object s3://semif-sagemaker-123456789012-"
                                                                                        f"us-east-1/{key}"]
    assert order == ["describe InProgress", "stop", "describe Stopping", "describe Stopping", "describe Stopped", "describe Stopped",
                     f"delete {key}"]


def test_a_job_that_will_not_stop_keeps_its_output_for_the_next_cleanup(state, aws_settings, monkeypatch):
    from semif_lib.aws import teardown
    from semif_lib.workshop import cleanup

    monkeypatch.setattr(teardown, "TRANSFORM_STOP_WAIT_S", 0)
    monkeypatch.setattr(teardown.time, "sleep", lambda _: None)
    order = _script_transform(aws_settings, ["Stopping"])
    key = _job_and_output(state, aws_settings)
    report = cleanup(settings=aws_settings, state=state)
    assert [line.split(": ")[0] for line in report.failed] == ["transform_job semif-batch-t3st01-1",
                                                              f"s3_object s3://semif-sagemaker-123456789012-us-east-1/{key}"]
    assert "its output is kept until it stops; run cleanup again" in report.failed[0]
    assert not any(step.startswith("delete") for step in order) and len(state.find("s3_object")) == 1
