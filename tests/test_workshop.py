"""The workshop run end to end on moto: every step, Batch Transform, autoscaling, and a cleanup that leaves nothing."""

from __future__ import annotations

import pytest

from support.aws import own_repositories, publish_dlc_images
from support.stub_adapter import running_stub_adapter


def _run_every_aws_step(settings, st, gguf, tmp_path):
    from semif_lib import workshop

    workshop.package_model(gguf, settings=settings, state=st, progress=False)
    workshop.deploy_text_model(settings=settings, state=st)
    workshop.build_adapter_image(settings=settings, state=st, log=lambda _: None)
    workshop.deploy_decision_model(settings=settings, state=st)
    workshop.enable_autoscaling(settings=settings, state=st)
    requests_file = tmp_path / "requests.jsonl"
    requests_file.write_text('{"id": "a", "state": "x", "questions": {"q": {"type": "noul", "instructions": "y?"}}}\n')
    return workshop.score_jsonlines(requests_file, settings=settings, state=st, wait=False)


def _tagged_leftovers(settings, run_id: str) -> list[str]:
    """Every resource of any kind the workshop creates that still carries this run's tag (or name)."""
    from semif_lib.aws.clients import make_client

    left: list[str] = []
    sm = make_client("sagemaker", settings)
    for kind, call, key, arn in (("model", sm.list_models, "Models", "ModelArn"),
                                 ("endpoint-config", sm.list_endpoint_configs, "EndpointConfigs", "EndpointConfigArn"),
                                 ("endpoint", sm.list_endpoints, "Endpoints", "EndpointArn")):
        for item in call()[key]:
            tags = {t["Key"]: t["Value"] for t in sm.list_tags(ResourceArn=item[arn])["Tags"]}
            if tags.get("semif-run-id") == run_id:
                left.append(f"{kind} {item[arn]}")
    s3 = make_client("s3", settings)
    left += [f"bucket {b['Name']}" for b in s3.list_buckets()["Buckets"]]
    left += [f"ecr {r['repositoryName']}" for r in own_repositories(make_client("ecr", settings))]
    left += [f"codebuild {p}" for p in make_client("codebuild", settings).list_projects()["projects"]]
    iam = make_client("iam", settings)
    left += [f"role {r['RoleName']}" for r in iam.list_roles()["Roles"] if run_id in r["RoleName"]]
    aas = make_client("application-autoscaling", settings)
    left += [f"scalable {t['ResourceId']}" for t in aas.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"]]
    left += [f"policy {p['PolicyName']}" for p in aas.describe_scaling_policies(ServiceNamespace="sagemaker")["ScalingPolicies"]]
    return left


def test_batch_transform_job(state, aws_settings, fake_gguf, tmp_path):
    from semif_lib.aws.clients import make_client

    job = _run_every_aws_step(aws_settings, state, fake_gguf, tmp_path)
    desc = make_client("sagemaker", aws_settings).describe_transform_job(TransformJobName=job)
    assert desc["BatchStrategy"] == "MultiRecord"
    assert desc["TransformInput"]["SplitType"] == "Line"
    assert desc["TransformInput"]["ContentType"] == "application/jsonlines"
    assert desc["TransformOutput"]["AssembleWith"] == "Line" and desc["TransformOutput"]["Accept"] == "application/jsonlines"
    assert desc["ModelName"].startswith("semif-decision-t3st01-")
    assert desc["TransformResources"]["InstanceType"] == "ml.m5.large"
    s3_input = desc["TransformInput"]["DataSource"]["S3DataSource"]["S3Uri"]
    bucket, key = s3_input[5:].split("/", 1)
    assert make_client("s3", aws_settings).get_object(Bucket=bucket, Key=key)["Body"].read().startswith(b'{"id": "a"')


def test_autoscaling_tracks_invocations_per_instance(state, aws_settings, fake_gguf, tmp_path):
    from semif_lib.aws.clients import make_client

    _run_every_aws_step(aws_settings, state, fake_gguf, tmp_path)
    aas = make_client("application-autoscaling", aws_settings)
    target = aas.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"][0]
    assert target["ResourceId"] == "endpoint/semif-decision-t3st01/variant/AllTraffic"
    assert target["ScalableDimension"] == "sagemaker:variant:DesiredInstanceCount"
    assert (target["MinCapacity"], target["MaxCapacity"]) == (1, 2)
    policy = aas.describe_scaling_policies(ServiceNamespace="sagemaker")["ScalingPolicies"][0]
    assert policy["PolicyType"] == "TargetTrackingScaling"
    spec = policy["TargetTrackingScalingPolicyConfiguration"]
    assert spec["PredefinedMetricSpecification"]["PredefinedMetricType"] == "SageMakerVariantInvocationsPerInstance"
    assert spec["TargetValue"] == 60.0


def test_cleanup_leaves_no_tagged_resource(state, aws_settings, fake_gguf, tmp_path):
    from semif_lib.workshop import cleanup

    _run_every_aws_step(aws_settings, state, fake_gguf, tmp_path)
    before = _tagged_leftovers(aws_settings, "t3st01")
    assert len(before) >= 10, before
    recorded = [(e["kind"], e["name"]) for e in state.resources]
    report = cleanup(settings=aws_settings, state=state)
    assert not report.failed, report
    assert len(report.removed) == len(recorded)
    # newest first: the endpoint goes before its config, the config before its model, objects before the bucket
    order = [line.split(" ", 1)[0] for line in report.removed]
    assert (order.index("scaling_target") < order.index("sagemaker_endpoint") < order.index("sagemaker_endpoint_config")
            < order.index("sagemaker_model"))
    assert order[-1] == "s3_bucket"
    assert _tagged_leftovers(aws_settings, "t3st01") == []
    assert not aws_settings.state_file.exists()
    # a second cleanup finds nothing to do
    assert str(cleanup(settings=aws_settings)).startswith("removed 0, already gone 0, failed 0")


def test_cleanup_reports_what_was_already_gone(state, aws_settings, fake_gguf):
    from semif_lib.aws.clients import make_client
    from semif_lib.workshop import cleanup, deploy_text_model, package_model

    package_model(fake_gguf, settings=aws_settings, state=state, progress=False)
    name = deploy_text_model(settings=aws_settings, state=state)
    make_client("sagemaker", aws_settings).delete_endpoint(EndpointName=name)  # someone used the console
    report = cleanup(settings=aws_settings, state=state)
    assert f"sagemaker_endpoint {name}" in report.already_gone and not report.failed


def test_state_file_carries_values_between_notebooks(aws, aws_settings, fake_gguf):
    from semif_lib.workshop import WorkshopState, load_state, package_model

    info = package_model(fake_gguf, settings=aws_settings, state=load_state(aws_settings), progress=False)
    again = WorkshopState.load(aws_settings.state_file)  # a new kernel reads the file
    assert again.run_id == "t3st01" and again.get("model_data_url") == info["model_data_url"]
    assert [e["kind"] for e in again.resources] == ["s3_bucket", "s3_object"]
    with pytest.raises(KeyError, match="03_build_adapter_image"):
        again.require("image_uri", "03_build_adapter_image")
    with pytest.raises(ValueError, match="belongs to run"):
        WorkshopState.load(aws_settings.state_file, run_id="other1")


def test_the_aws_path_through_a_moto_server(aws_credentials, tmp_path, fake_gguf):
    """Notebooks reach moto through SEMIF_AWS_ENDPOINT_URL: the same code over real HTTP."""
    from moto.server import ThreadedMotoServer

    from semif_lib.settings import Settings
    from semif_lib.workshop import cleanup, deploy_text_model, load_state, package_model

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    try:
        host, port = server.get_host_and_port()
        settings = Settings(target="aws", aws_region="us-east-1", aws_endpoint_url=f"http://{host}:{port}",
                            state_file=tmp_path / "state.json", instance_type="ml.m5.large", run_id="srv001")
        from semif_lib.aws.clients import make_client

        publish_dlc_images(make_client("ecr", settings))
        st = load_state(settings)
        info = package_model(fake_gguf, settings=settings, state=st, progress=False)
        assert info["uploaded"]
        assert deploy_text_model(settings=settings, state=st) == "semif-text-srv001"
        report = cleanup(settings=settings, state=st)
        assert not report.failed and len(report.removed) == 6, report
        assert _tagged_leftovers(settings, "srv001") == []
    finally:
        server.stop()


def test_local_and_aws_send_the_same_bytes(aws, tmp_path, example_requests, monkeypatch):
    import requests

    from semif_lib.aws import invocations
    from semif_lib.settings import Settings
    from semif_lib.workshop import WorkshopState, invoke_decision

    with running_stub_adapter() as adapter:  # records what the local-mode client sends (the local adapter's stand-in, not AWS's)
        local = Settings(target="local", state_file=tmp_path / "local.json", run_id="byt3s1")
        st = WorkshopState.load(local.state_file, "byt3s1")
        st.set("decision_endpoint", adapter.url)
        invoke_decision(example_requests[0], settings=local, state=st)
    (path, content_type, local_body), = adapter.seen

    sent: list[bytes] = []
    real_runtime_client = invocations.runtime_client

    def observed(settings):  # the real (moto) client, with a hook that records the request body
        client = real_runtime_client(settings)
        client.meta.events.register("before-send.sagemaker-runtime.InvokeEndpoint", lambda request, **_: sent.append(request.body))
        return client

    monkeypatch.setattr(invocations, "runtime_client", observed)  # where invoke_decision_endpoint looks it up
    remote = Settings(target="aws", aws_region="us-east-1", state_file=tmp_path / "aws.json", run_id="byt3s1")
    st_aws = WorkshopState.load(remote.state_file, "byt3s1")
    st_aws.set("decision_endpoint", "semif-decision-byt3s1")
    queued = {"results": [{"Body": '{"answers": {}}', "ContentType": "application/json"}], "region": "us-east-1"}
    requests.post("http://motoapi.amazonaws.com/moto-api/static/sagemaker/endpoint-results", json=queued, timeout=10)
    try:
        invoke_decision(example_requests[0], settings=remote, state=st_aws)
    except Exception:  # noqa: BLE001 - moto may not know the endpoint; the bytes were sent already
        pass
    assert (path, content_type) == ("/invocations", "application/json")
    assert sent == [local_body]


def test_cli_status_and_cleanup(tmp_path, monkeypatch, capsys):
    from semif_lib.cli import main
    from semif_lib.workshop import WorkshopState

    monkeypatch.setenv("SEMIF_STATE_FILE", str(tmp_path / "state.json"))
    assert main(["workshop", "status"]) == 0 and "no workshop state" in capsys.readouterr().out
    state = WorkshopState.load(tmp_path / "state.json", "cl1abc")
    state.record("local_process", "decision-server", pid=2 ** 22 + 7)  # a pid that is not running
    assert main(["workshop", "status"]) == 0 and '"run_id": "cl1abc"' in capsys.readouterr().out
    assert main(["workshop", "cleanup", "--target", "local"]) == 0
    assert "already gone local_process decision-server" in capsys.readouterr().out
    assert not (tmp_path / "state.json").exists()


# ------------------------------------------------------------------ Batch Transform follows the image variant
def _variant_settings(aws_settings, variant: str):
    return aws_settings.model_copy(update={"dlc_variant": variant, "arm_instance_type": "ml.m5.large",
                                           "state_file": aws_settings.state_file.with_name(f"{variant}.json")})


def test_batch_transform_refuses_the_arm64_image(aws, aws_settings, fake_gguf, tmp_path):
    """No Graviton transform instance exists: say so before uploading anything, instead of an x86 job."""
    from semif_lib import workshop
    from semif_lib.aws.clients import make_client
    from semif_lib.aws.errors import AwsSetupError

    settings = _variant_settings(aws_settings, "arm64")
    st = workshop.load_state(settings)
    workshop.package_model(fake_gguf, settings=settings, state=st, progress=False)
    workshop.build_adapter_image(settings=settings, state=st, log=lambda _: None)
    workshop.deploy_decision_model(settings=settings, state=st)
    objects = len(st.find("s3_object"))
    requests_file = tmp_path / "requests.jsonl"
    requests_file.write_text('{"id": "a", "state": "x", "questions": {"q": {"type": "noul", "instructions": "y?"}}}\n')
    with pytest.raises(AwsSetupError, match="Batch Transform cannot run the arm64 \\(Graviton\\) image"):
        workshop.score_jsonlines(requests_file, settings=settings, state=st)
    assert make_client("sagemaker", settings).list_transform_jobs()["TransformJobSummaries"] == []
    assert len(st.find("s3_object")) == objects, "nothing uploaded"


def test_cuda_batch_transform_is_refused_with_its_reason(aws, aws_settings):
    """The batch GPU AMIs' driver 535 is below what the DLC's CUDA 13 needs; refused until a real account shows it works."""
    from semif_lib.aws.errors import AwsSetupError
    from semif_lib.aws.scaling import transform_resources

    with pytest.raises(AwsSetupError, match="refused until a real account.*al2-ami-sagemaker-batch-gpu-535 \\(NVIDIA driver 535\\), "
                                            "below the 580 that the DLC's CUDA 13.0.2 needs"):
        transform_resources(_variant_settings(aws_settings, "cuda"))


def test_batch_transform_runs_the_cuda_image_on_a_gpu(aws, aws_settings, fake_gguf, tmp_path, monkeypatch):
    """Once a real account shows cuda Batch Transform works (dlc.CUDA_TRANSFORM_VERIFIED): the job's GPU resources."""
    from semif_lib.aws import dlc
    from semif_lib.aws.clients import make_client
    from semif_lib.aws.dlc import GPU_TRANSFORM_AMI

    monkeypatch.setattr(dlc, "CUDA_TRANSFORM_VERIFIED", True)
    settings = _variant_settings(aws_settings, "cuda")
    from semif_lib.workshop import load_state

    job = _run_every_aws_step(settings, load_state(settings), fake_gguf, tmp_path)
    desc = make_client("sagemaker", settings).describe_transform_job(TransformJobName=job)
    assert desc["TransformResources"]["InstanceType"] == "ml.g4dn.xlarge"  # moto's list; the real default is ml.g6.xlarge
    assert desc["TransformResources"]["TransformAmiVersion"] == GPU_TRANSFORM_AMI == "al2-ami-sagemaker-batch-gpu-535"
    assert desc["ModelClientConfig"] == {"InvocationsTimeoutInSeconds": 3600, "InvocationsMaxRetries": 1}
    assert desc["MaxPayloadInMB"] == 6


def test_the_real_transform_defaults_exist_in_botocore():
    import botocore.session

    from semif_lib.settings import Settings

    enum = botocore.session.get_session().get_service_model("sagemaker").shape_for("TransformInstanceType").enum
    assert Settings().transform_instance_type in enum and Settings().gpu_transform_instance_type in enum
    assert not [t for t in enum if t.split(".")[1].endswith("g") or "gd." in t or "gn." in t], "no Graviton transform types"


def test_cpu_batch_transform_sets_the_client_config(state, aws_settings, fake_gguf, tmp_path):
    from semif_lib.aws.clients import make_client

    job = _run_every_aws_step(aws_settings, state, fake_gguf, tmp_path)
    desc = make_client("sagemaker", aws_settings).describe_transform_job(TransformJobName=job)
    assert desc["ModelClientConfig"]["InvocationsTimeoutInSeconds"] == 3600 and "TransformAmiVersion" not in desc["TransformResources"]
