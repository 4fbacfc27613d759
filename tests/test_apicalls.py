"""The requests a step prints are the requests it sends (on moto, read off botocore's hooks of the one session every
client, the SageMaker SDK's too, comes from), and a local run prints the same requests as a plan."""

from __future__ import annotations

import ast
import re

import pytest

CREATES = ("CreateModel", "CreateEndpointConfig", "CreateEndpoint", "CreateTransformJob", "RegisterScalableTarget",
           "PutScalingPolicy")


def _printed(text: str) -> dict[str, dict]:
    """Each `Operation: boto3.client(...).method(**{...})` block printed, its request parsed back."""
    calls = {}
    for match in re.finditer(r"^(\w+): boto3\.client\('([\w-]+)'\)\.(\w+)\(\*\*(.*?)\)$", text, re.M | re.S):
        calls[match.group(1)] = ast.literal_eval(match.group(4))
    return calls


def _capture_sent(settings) -> dict[str, dict]:
    from semif_lib.aws.clients import make_session

    sent: dict[str, dict] = {}
    events = make_session(settings).events
    for op in CREATES:
        events.register(f"before-parameter-build.{'application-autoscaling' if 'Scal' in op else 'sagemaker'}.{op}",
                        lambda params, op=op, **_: sent.setdefault(op, dict(params)))
    return sent


def test_a_printed_request_reads_back_as_the_request():
    from semif_lib.aws.apicalls import EndpointSpec, endpoint_config_call, model_call

    spec = EndpointSpec("img:1", "s3://b/p/files/", {"SM_LLAMA_CPP_CTX_SIZE": "4096"}, "ml.g6.xlarge", 1, 600, gpu=True,
                        routing_strategy="LEAST_OUTSTANDING_REQUESTS")
    model = model_call("m", spec, "arn:aws:iam::1:role/r", [{"Key": "k", "Value": "v"}])
    assert model.method == "create_model"
    assert model.request["PrimaryContainer"]["ModelDataSource"]["S3DataSource"]["CompressionType"] == "None"
    config = endpoint_config_call("c", "m", spec, [])
    variant = config.request["ProductionVariants"][0]
    assert variant["InferenceAmiVersion"].startswith("al2023")
    assert variant["RoutingConfig"] == {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"}
    assert _printed(f"{model}\n{config}") == {"CreateModel": model.request, "CreateEndpointConfig": config.request}


@pytest.mark.aws
def test_the_deploy_prints_what_it_sends(state, aws_settings, fake_gguf, capsys):
    """CreateModel, CreateEndpointConfig and CreateEndpoint through the SageMaker SDK's resources, the transform job and
    both autoscaling requests through boto3: each printed request equals the one botocore was given, field for field."""
    from semif_lib import workshop

    sent = _capture_sent(aws_settings)  # before any client exists: the SDK caches its clients
    workshop.package_model(fake_gguf, settings=aws_settings, state=state, progress=False)
    state.set("image_uri", "123456789012.dkr.ecr.us-east-1.amazonaws.com/semif-adapter@sha256:" + "1" * 64)
    endpoint = workshop.deploy_decision_model(settings=aws_settings, state=state)
    workshop.enable_autoscaling(settings=aws_settings, state=state)
    from semif_lib.aws import scaling

    scaling.create_batch_transform(f"{endpoint}-x", "s3://b/in/", "s3://b/out/", settings=aws_settings, state=state)
    printed = _printed(capsys.readouterr().out)
    assert set(printed) == set(CREATES), printed.keys()
    for op in CREATES:
        assert printed[op] == sent[op], op
    # what SageMaker recorded is what was printed
    from semif_lib.aws.clients import make_client

    model = make_client("sagemaker", aws_settings).describe_model(ModelName=printed["CreateModel"]["ModelName"])
    assert model["PrimaryContainer"]["Environment"] == printed["CreateModel"]["PrimaryContainer"]["Environment"]
    assert model["ExecutionRoleArn"] == printed["CreateModel"]["ExecutionRoleArn"]


@pytest.mark.aws
def test_a_rerun_sends_nothing_and_says_so(state, aws_settings, fake_gguf, capsys):
    from semif_lib import workshop

    workshop.package_model(fake_gguf, settings=aws_settings, state=state, progress=False)
    workshop.deploy_text_model(settings=aws_settings, state=state)
    capsys.readouterr()
    sent = _capture_sent(aws_settings)
    workshop.deploy_text_model(settings=aws_settings, state=state)
    out = capsys.readouterr().out
    assert not sent and not _printed(out)
    assert "CreateModel not sent" in out and "CreateEndpointConfig not sent" in out and "nothing sent" in out


def test_the_local_plan_is_the_aws_request_with_placeholders(tmp_path, fake_gguf):
    """What target=local prints for 04: the requests deploy_decision_endpoint would send, built by the same code, with
    `<placeholders>` only where an account is needed (the role, the image 03 builds, the bucket's account)."""
    from semif_lib import workshop
    from semif_lib.aws import deployment
    from semif_lib.aws.apicalls import PLACEHOLDER_ROLE
    from semif_lib.settings import Settings

    settings = Settings(target="local", aws_region="eu-west-1", state_file=tmp_path / "state.json", run_id="l0cal1")
    state = workshop.load_state(settings)
    workshop.package_model(fake_gguf, settings=settings, state=state, progress=False)
    model, config, endpoint = deployment.plan_decision_endpoint(settings, state)
    container = model.request["PrimaryContainer"]
    assert model.request["ExecutionRoleArn"] == PLACEHOLDER_ROLE and container["Image"] == deployment.PLACEHOLDER_IMAGE
    sha = state.get("model_package")["sha256"][:12]
    assert re.fullmatch(rf"s3://semif-sagemaker-<account>-eu-west-1/.+/models/{sha}/model\.tar\.gz", container["ModelDataUrl"])
    assert container["Environment"] == deployment.decision_env(settings.dlc_variant, settings.mode)
    assert config.request["ProductionVariants"][0]["ModelName"] == model.request["ModelName"]
    assert endpoint.request == {"EndpointName": state.name("decision"), "EndpointConfigName": config.request["EndpointConfigName"],
                                "Tags": state.tags()}
    # the same spec on AWS gets the same hash: only the placeholders change the names
    real = deployment.plan_endpoint("decision", container["Image"], container["ModelDataUrl"], container["Environment"],
                                    settings=settings, state=state, role="arn:aws:iam::1:role/r",
                                    routing_strategy=settings.routing_strategy, log=lambda _: None)
    assert real.model.request["ModelName"] == model.request["ModelName"]
    assert {**real.model.request, "ExecutionRoleArn": PLACEHOLDER_ROLE} == model.request

def test_a_local_plan_is_printed_once_then_one_line_while_unchanged(tmp_path, fake_gguf, capsys):
    """04 prints the plan in full; 05's redeploy of the same endpoint says in one line that AWS would get nothing new."""
    from semif_lib import workshop
    from semif_lib.settings import Settings
    from semif_lib.targets.plans import print_decision_plan

    settings = Settings(target="local", state_file=tmp_path / "state.json", run_id="l0cal2")
    state = workshop.load_state(settings)
    workshop.package_model(fake_gguf, settings=settings, state=state, progress=False)
    print_decision_plan("local", settings, state)
    first = capsys.readouterr().out
    print_decision_plan("local", settings, state)
    second = capsys.readouterr().out
    assert set(_printed(first)) == {"CreateModel", "CreateEndpointConfig", "CreateEndpoint"}
    assert not _printed(second) and "would now send nothing" in second
    print_decision_plan("local", settings.model_copy(update={"routing_strategy": "RANDOM"}), state)  # a changed spec
    assert set(_printed(capsys.readouterr().out)) == {"CreateModel", "CreateEndpointConfig", "CreateEndpoint"}
