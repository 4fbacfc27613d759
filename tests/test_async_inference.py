"""Asynchronous Inference on moto: the async endpoint's config, a queued request answered and failed, its timeouts
inside botocore's bounds, scale to zero, and a cleanup that leaves nothing (checked as 99 checks, with describe calls).

moto answers InvokeEndpointAsync from a queue of prepared results (its async-endpoint-results API) written to a
bucket of its own; it never reads AsyncInferenceConfig or runs the image. What only a real account shows is in
docs/aws.md ("Asynchronous inference").
"""

from __future__ import annotations

import json

import pytest
import requests

ANSWER = {"id": "ticket", "answers": {"q": {"answer": True, "confidence": 0.9}}}


def _queue_async(*results: dict) -> None:
    requests.post("http://motoapi.amazonaws.com/moto-api/static/sagemaker/async-endpoint-results",
                  json={"results": list(results), "region": "us-east-1"}, timeout=10)


@pytest.fixture
def async_endpoint(state, aws_settings, fake_gguf):
    from semif_lib import workshop

    workshop.package_model(fake_gguf, settings=aws_settings, state=state, progress=False)
    workshop.build_adapter_image(settings=aws_settings, state=state, log=lambda _: None)
    workshop.deploy_decision_model(settings=aws_settings, state=state)
    return workshop.deploy_async_decision_model(settings=aws_settings, state=state)


def test_the_async_endpoint_queues_into_this_runs_prefix_with_a_deadline_inside_the_wait(async_endpoint, state, aws_settings):
    from semif_lib.aws.clients import make_client
    from semif_lib.contract import SESSIONS_ENABLED_ENV, answer_deadline_s

    sm = make_client("sagemaker", aws_settings)
    endpoint = sm.describe_endpoint(EndpointName=async_endpoint)
    assert async_endpoint == "semif-decision-async-t3st01" and endpoint["EndpointStatus"] == "InService"
    config = sm.describe_endpoint_config(EndpointConfigName=endpoint["EndpointConfigName"])
    out = config["AsyncInferenceConfig"]["OutputConfig"]
    bucket = state.get("bucket") or out["S3OutputPath"].split("/")[2]
    assert out["S3OutputPath"] == f"s3://{bucket}/semif-workshop/t3st01/batch/async/output/"
    assert out["S3FailurePath"] == f"s3://{bucket}/semif-workshop/t3st01/batch/async/failure/"
    assert config["AsyncInferenceConfig"]["ClientConfig"] == {"MaxConcurrentInvocationsPerInstance": 1}
    env = sm.describe_model(ModelName=endpoint["EndpointConfigName"])["PrimaryContainer"]["Environment"]
    deadline = answer_deadline_s(float(env["SEMIF_REQUEST_TIMEOUT_S"]))
    assert 3000 < deadline < 3600, "the adapter answers before SageMaker's 3600 s InvocationTimeoutSeconds, not at 58 s"
    assert SESSIONS_ENABLED_ENV not in env, "async requests come from SageMaker's queue, never in a session"
    real_time = sm.describe_endpoint_config(EndpointConfigName=sm.describe_endpoint(
        EndpointName="semif-decision-t3st01")["EndpointConfigName"])
    assert "AsyncInferenceConfig" not in real_time


def test_a_queued_request_is_answered_from_s3_and_its_objects_are_recorded(async_endpoint, state, aws_settings, monkeypatch):
    from semif_lib import workshop
    from semif_lib.aws import clients

    sent: list[dict] = []
    real = clients.make_client

    def observed(service, settings):  # the real (moto) client, recording what InvokeEndpointAsync is sent
        client = real(service, settings)
        if service == "sagemaker-runtime":
            client.meta.events.register("provide-client-params.sagemaker-runtime.InvokeEndpointAsync",
                                        lambda params, **_: sent.append(dict(params)))
        return client

    monkeypatch.setattr("semif_lib.aws.asyncinference.make_client", observed)
    _queue_async({"data": json.dumps(ANSWER)})
    request = {"id": "ticket", "state": "x", "questions": {"q": {"type": "noul", "instructions": "y?"}}}
    assert workshop.invoke_decision_async(request, settings=aws_settings, state=state) == ANSWER
    (params,) = sent
    assert params["InvocationTimeoutSeconds"] == 3600 and params["RequestTTLSeconds"] == 21600  # botocore validated both
    assert json.loads(params["Body"]) == request and "InputLocation" not in params  # small bodies go inline
    recorded = [e["name"] for e in state.find("s3_object")]
    assert any(name.endswith("response.json") for name in recorded), "the answer SageMaker writes is removed by cleanup"


def test_a_large_request_goes_through_s3_and_an_oversized_one_is_refused(async_endpoint, state, aws_settings):
    from semif_lib import workshop
    from semif_lib.aws.asyncinference import INLINE_BODY_BYTES
    from semif_lib.aws.clients import make_client

    _queue_async({"data": json.dumps(ANSWER)})
    big = {"id": "long", "state": "x" * (INLINE_BODY_BYTES + 10), "questions": {"q": {"type": "noul", "instructions": "y?"}}}
    assert workshop.invoke_decision_async(big, settings=aws_settings, state=state) == ANSWER
    (uploaded,) = [e for e in state.find("s3_object") if "/batch/async/input/" in e["name"]]
    body = make_client("s3", aws_settings).get_object(Bucket=uploaded["bucket"], Key=uploaded["key"])["Body"].read()
    assert json.loads(body)["id"] == "long"
    with pytest.raises(ValueError, match="6291456"):
        workshop.invoke_decision_async({"id": "huge", "state": "x" * 6_300_000, "questions": {}}, settings=aws_settings, state=state)


def test_a_failed_request_raises_what_sagemaker_wrote(async_endpoint, state, aws_settings):
    from semif_lib import workshop
    from semif_lib.aws.errors import ResourceFailedError

    _queue_async({"is_failure": True, "data": '{"error": {"message": "state: 9000 tokens, at most 8192"}}'})
    with pytest.raises(ResourceFailedError, match="Failed.*at most 8192.*written to s3://"):
        workshop.invoke_decision_async({"id": "f", "state": "x", "questions": {}}, settings=aws_settings, state=state)


def test_without_wait_the_locations_come_back_to_read_later(async_endpoint, state, aws_settings):
    from semif_lib import workshop
    from semif_lib.aws.asyncinference import read_async_answer

    _queue_async({"data": json.dumps(ANSWER)})
    located = workshop.invoke_decision_async({"id": "w", "state": "x", "questions": {}}, settings=aws_settings, state=state, wait=False)
    assert set(located) == {"inference_id", "output", "failure"} and located["output"].startswith("s3://")
    assert read_async_answer(located, settings=aws_settings, progress=False) == ANSWER


def test_scale_to_zero_then_cleanup_leaves_nothing(async_endpoint, state, aws_settings):
    from semif_lib import workshop
    from semif_lib.aws.clients import make_client

    scaling = workshop.enable_async_autoscaling(max_instances=2, settings=aws_settings, state=state)
    aas, cw = make_client("application-autoscaling", aws_settings), make_client("cloudwatch", aws_settings)
    resource = f"endpoint/{async_endpoint}/variant/AllTraffic"
    (target,) = aas.describe_scalable_targets(ServiceNamespace="sagemaker", ResourceIds=[resource])["ScalableTargets"]
    assert (target["MinCapacity"], target["MaxCapacity"]) == (0, 2)
    listed = aas.describe_scaling_policies(ServiceNamespace="sagemaker", ResourceId=resource)["ScalingPolicies"]
    policies = {p["PolicyType"]: p for p in listed}
    tracked = policies["TargetTrackingScaling"]["TargetTrackingScalingPolicyConfiguration"]["CustomizedMetricSpecification"]
    assert tracked["MetricName"] == "ApproximateBacklogSizePerInstance"
    assert tracked["Dimensions"] == [{"Name": "EndpointName", "Value": async_endpoint}]
    (alarm,) = cw.describe_alarms(AlarmNames=[scaling["wake_alarm"]])["MetricAlarms"]
    assert alarm["MetricName"] == "HasBacklogWithoutCapacity" and alarm["AlarmActions"] == [policies["StepScaling"]["PolicyARN"]]

    _queue_async({"data": json.dumps(ANSWER)})
    workshop.invoke_decision_async({"id": "c", "state": "x", "questions": {}}, settings=aws_settings, state=state)
    recorded = list(state.resources)
    before = workshop.find_still_billing(recorded, settings=aws_settings)
    assert f"endpoint {async_endpoint} is InService: its instances bill every hour until it is deleted" in before
    assert any(line.startswith("ECR repository semif-adapter-t3st01") for line in before)
    assert any(line.startswith(f"CloudWatch alarm {scaling['wake_alarm']}") for line in before)
    report = workshop.cleanup(settings=aws_settings, state=state)
    assert not report.failed, report
    assert workshop.find_still_billing(recorded, settings=aws_settings) == [], "99 checks with describe calls"
    assert not state.path.exists(), "checking after cleanup starts no new run"
    assert not cw.describe_alarms(AlarmNames=[scaling["wake_alarm"]])["MetricAlarms"]
    assert not aas.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"]
    assert not make_client("sagemaker", aws_settings).list_endpoints()["Endpoints"]
    assert f"cloudwatch_alarm {scaling['wake_alarm']}" in report.removed


def test_the_async_limits_are_botocores():
    import botocore.session

    from semif_lib.aws import asyncinference

    session = botocore.session.get_session()
    members = session.get_service_model("sagemaker-runtime").operation_model("InvokeEndpointAsync").input_shape.members
    assert members["InvocationTimeoutSeconds"].metadata["max"] == asyncinference.ASYNC_INVOCATION_TIMEOUT_S
    assert members["RequestTTLSeconds"].metadata["max"] == asyncinference.REQUEST_TTL_S
    assert members["Body"].metadata["max"] == asyncinference.INLINE_BODY_BYTES
    client = session.get_service_model("sagemaker").shape_for("AsyncInferenceClientConfig").members
    assert client["MaxConcurrentInvocationsPerInstance"].metadata["min"] <= asyncinference.MAX_CONCURRENT_PER_INSTANCE
    with pytest.raises(ValueError, match="1 to 3600"):
        asyncinference._check_timeout(3601)


def test_on_this_machine_the_decision_server_answers(tmp_path):
    from semif_lib import workshop
    from semif_lib.settings import Settings

    from support.stub_adapter import running_stub_adapter

    with running_stub_adapter() as adapter:
        local = Settings(target="local", state_file=tmp_path / "local.json", run_id="l0cal1")
        st = workshop.WorkshopState.load(local.state_file, "l0cal1")
        st.set("decision_endpoint", adapter.url)
        assert workshop.deploy_async_decision_model(settings=local, state=st) == adapter.url
        workshop.invoke_decision_async({"id": "a", "state": "x", "questions": {}}, settings=local, state=st)
        assert workshop.enable_async_autoscaling(settings=local, state=st) is None
    assert [path for path, _, _ in adapter.seen] == ["/invocations"]
