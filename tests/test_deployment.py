"""Container environment limits, endpoints, invocation and SSE streaming (the DLC image URIs: test_dlc.py)."""

from __future__ import annotations

import json

import pytest

from support.paths import ROOT


# ------------------------------------------------------------------ environment
def test_container_env_uses_the_twin_translation():
    from semif_lib.aws.deployment import build_container_env
    from semif_lib.invocation import default_text_settings
    from semif_lib.llama_flags import translate_sm_env

    env = build_container_env(default_text_settings("cuda"))
    assert env == {"SM_LLAMA_CPP_CTX_SIZE": "4096", "SM_LLAMA_CPP_JINJA": "true", "SM_LLAMA_CPP_N_GPU_LAYERS": "999"}
    assert translate_sm_env(env) == ["--ctx-size", "4096", "--jinja", "--n-gpu-layers", "999"]


def test_container_env_limits():
    from semif_lib.aws.deployment import build_container_env, validate_container_env

    assert len(validate_container_env({f"K{i}": "v" for i in range(100)})) == 100
    with pytest.raises(ValueError, match="at most 100"):
        validate_container_env({f"K{i}": "v" for i in range(101)})
    assert validate_container_env({"K": "x" * 1024})
    with pytest.raises(ValueError, match="1025 characters"):
        validate_container_env({"K": "x" * 1025})
    for bad in ("1ABC", "A-B", "A B", ""):
        with pytest.raises(ValueError, match="does not match"):
            validate_container_env({bad: "v"})
    with pytest.raises(ValueError):
        build_container_env({f"flag_{i}": i for i in range(101)})
    with pytest.raises(ValueError):  # extra entries count towards the limits too
        build_container_env({"ctx_size": 4096}, extra={"BAD-KEY": "1"})


# ------------------------------------------------------------------ SSE streaming
def _events(raw: bytes, cut: list[int]) -> list[dict]:
    """A botocore response EventStream as it iterates: PayloadPart dicts, split at arbitrary bytes."""
    parts, start = [], 0
    for end in cut + [len(raw)]:
        parts.append({"PayloadPart": {"Bytes": raw[start:end]}})
        start = end
    return parts


def test_stream_parsing_survives_any_split():
    from semif_lib.aws.invocations import iter_payload_parts
    from semif_lib.invocation import iter_chat_deltas, iter_sse_events

    chunks = ["Hel", "lo, ", "wörld", "!"]
    raw = b"".join(
        b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": c}}]}, ensure_ascii=False).encode() + b"\n\n"
        for c in chunks
    )
    raw = b": keep-alive\n\n" + raw + b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    umlaut = raw.index("ö".encode()) + 1  # split inside a UTF-8 character too
    for cut in ([], [1, 7, 30], [umlaut], list(range(1, len(raw)))):
        text = "".join(iter_chat_deltas(iter_sse_events(iter_payload_parts(_events(raw, cut)))))
        assert text == "Hello, wörld!"


def test_stream_errors_raise():
    from semif_lib.aws.invocations import iter_payload_parts

    stream = [{"PayloadPart": {"Bytes": b"data: {}\n"}}, {"ModelStreamError": {"ErrorCode": "ModelError", "Message": "boom"}}]
    with pytest.raises(RuntimeError, match="ModelError boom"):
        list(iter_payload_parts(stream))


def test_payload_encoding_is_compact_and_bounded():
    from semif_lib.invocation import build_chat_request, encode_payload

    body = encode_payload(build_chat_request("hi", stream=True, temperature=0))
    assert body == b'{"messages":[{"role":"user","content":"hi"}],"max_tokens":256,"temperature":0,"stream":true}'
    assert encode_payload(body) is body
    with pytest.raises(ValueError, match="6291456"):
        encode_payload(b"x" * 6_291_457)


# ------------------------------------------------------------------ endpoints (moto)
def test_text_endpoint_on_the_dlc(state, aws_settings, fake_gguf):
    from semif_lib.aws.clients import make_client
    from semif_lib.workshop import deploy_text_model, package_model

    package_model(fake_gguf, settings=aws_settings, state=state, progress=False)
    name = deploy_text_model(settings=aws_settings, state=state)
    sm = make_client("sagemaker", aws_settings)
    endpoint = sm.describe_endpoint(EndpointName=name)
    assert name == "semif-text-t3st01" and endpoint["EndpointStatus"] == "InService"
    config = sm.describe_endpoint_config(EndpointConfigName=endpoint["EndpointConfigName"])
    variant = config["ProductionVariants"][0]
    assert variant["ContainerStartupHealthCheckTimeoutInSeconds"] == 600
    assert variant["InstanceType"] == "ml.m5.large"
    model = sm.describe_model(ModelName=variant["ModelName"])
    container = model["PrimaryContainer"]
    assert container["Image"] == state.get("dlc_image_cpu")  # the tag the aws fixture published, pinned to its digest for the run
    assert container["Image"].startswith("763104351884.dkr.ecr.us-east-1.amazonaws.com/llama-cpp@sha256:")
    assert container["ModelDataUrl"] == state.get("model_data_url")
    assert container["Environment"]["SM_LLAMA_CPP_CTX_SIZE"] == "4096"
    role = model["ExecutionRoleArn"]
    assert role.endswith(":role/semif-workshop/semif-sagemaker-t3st01")  # the run's own role, under the path its policies name
    made = make_client("iam", aws_settings).get_role(RoleName="semif-sagemaker-t3st01")["Role"]
    assert "sagemaker.amazonaws.com" in json.dumps(made["AssumeRolePolicyDocument"])
    boundary = "arn:aws:iam::123456789012:policy/semif-workshop-role-boundary-us-east-1"  # the boundary names its region
    assert made["PermissionsBoundary"]["PermissionsBoundaryArn"] == boundary
    tags = {t["Key"]: t["Value"] for t in sm.list_tags(ResourceArn=endpoint["EndpointArn"])["Tags"]}
    assert tags["semif-run-id"] == "t3st01"
    # an unchanged redeploy creates nothing new
    assert deploy_text_model(settings=aws_settings, state=state) == name
    assert len(sm.list_models()["Models"]) == 1 and len(sm.list_endpoint_configs()["EndpointConfigs"]) == 1


def test_cuda_variant_sets_gpu_options(aws, aws_settings, fake_gguf):
    from semif_lib.aws.clients import make_client
    from semif_lib.workshop import deploy_text_model, load_state, package_model

    settings = aws_settings.model_copy(update={"dlc_variant": "cuda"})
    st = load_state(settings)
    package_model(fake_gguf, settings=settings, state=st, progress=False)
    name = deploy_text_model(settings=settings, state=st)
    sm = make_client("sagemaker", settings)
    config_name = sm.describe_endpoint(EndpointName=name)["EndpointConfigName"]
    variant = sm.describe_endpoint_config(EndpointConfigName=config_name)["ProductionVariants"][0]
    assert variant["InstanceType"] == "ml.g4dn.xlarge"
    model = sm.describe_model(ModelName=variant["ModelName"])["PrimaryContainer"]
    images = make_client("ecr", settings).batch_get_image(registryId="763104351884", repositoryName="llama-cpp",
                                                         imageIds=[{"imageTag": "server-sagemaker-cuda-v1"}])["images"]
    cuda = images[0]["imageId"]["imageDigest"]
    assert model["Image"] == f"763104351884.dkr.ecr.us-east-1.amazonaws.com/llama-cpp@{cuda}"  # the cuda tag's digest
    assert model["Environment"]["SM_LLAMA_CPP_N_GPU_LAYERS"] == "999"


def test_decision_endpoint_answers_the_jev_request(state, aws_settings, fake_gguf, example_requests):
    """moto's runtime returns what is queued through its API: this checks the call path and decoding."""
    import requests

    from semif_lib.aws.clients import make_client
    from semif_lib.contract import SESSIONS_ENABLED_ENV
    from semif_lib.workshop import (
        build_adapter_image,
        deploy_decision_model,
        invoke_decision,
        open_decision_session,
        package_model,
    )

    package_model(fake_gguf, settings=aws_settings, state=state, progress=False)
    build_adapter_image(settings=aws_settings, state=state, log=lambda _: None)
    name = deploy_decision_model(settings=aws_settings, state=state)
    answer = {"model": "m", "answers": {"q": {"type": "noul", "noul": 0.7}}, "usage": {"input_tokens": 3, "output_tokens": 0}}
    queued = {"results": [{"Body": json.dumps(answer), "ContentType": "application/json", "InvokedProductionVariant": "AllTraffic"}],
              "region": "us-east-1"}
    requests.post("http://motoapi.amazonaws.com/moto-api/static/sagemaker/endpoint-results", json=queued, timeout=10)
    assert invoke_decision(example_requests[0], settings=aws_settings, state=state) == answer
    assert name == "semif-decision-t3st01"
    sm = make_client("sagemaker", aws_settings)
    variant = sm.describe_endpoint_config(EndpointConfigName=sm.describe_endpoint(EndpointName=name)["EndpointConfigName"])[
        "ProductionVariants"][0]
    assert variant["RoutingConfig"] == {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"}  # the setting's default
    env = sm.describe_model(ModelName=variant["ModelName"])["PrimaryContainer"]["Environment"]
    assert env[SESSIONS_ENABLED_ENV] == "true"  # the adapter opens stateful sessions on SageMaker
    # SessionId passes botocore's validation; moto routes nothing and answers no NewSessionId, as a container with
    # sessions off would: opening one then says what turns them on (what a real endpoint answers: docs/aws.md)
    requests.post("http://motoapi.amazonaws.com/moto-api/static/sagemaker/endpoint-results", json=queued, timeout=10)
    assert invoke_decision(example_requests[0], settings=aws_settings, state=state, session="s-1") == answer
    with pytest.raises(ValueError, match=SESSIONS_ENABLED_ENV):
        open_decision_session(settings=aws_settings, state=state)


def test_routing_strategies_are_sagemakers(aws_settings):
    """The routing strategies the settings offer are values of botocore's RoutingStrategy enum (a value it drops would
    be refused by CreateEndpointConfig), and docs/aws.md names every value botocore knows today, so that a new one
    (PREFIX_AWARE and KV_AWARE arrived after AWS_FACTS' two) is read and decided on, not missed."""
    from typing import get_args

    import botocore.session

    from semif_lib.settings import AwsSettings

    model = botocore.session.get_session().get_service_model("sagemaker")
    known = set(model.shape_for("ProductionVariantRoutingConfig").members["RoutingStrategy"].enum)
    offered = set(get_args(AwsSettings.model_fields["routing_strategy"].annotation))
    assert offered <= known and {"LEAST_OUTSTANDING_REQUESTS", "RANDOM"} <= offered
    docs = (ROOT / "docs" / "aws.md").read_text(encoding="utf-8")
    assert all(f"`{value}`" in docs for value in known), sorted(v for v in known if f"`{v}`" not in docs)


def test_endpoint_tracing_is_named_as_not_used(state, aws_settings, fake_gguf):
    """botocore 1.44.18 added `CreateEndpointConfig.TracingConfig`: sampled requests with their payloads (the attendees'
    states) go to the log group `/aws/sagemaker/Endpoints/<name>/traces`, which cleanup would then have to delete. The
    workshop does not use it: no endpoint config it sends sets it, and docs/aws.md says so, quoting the botocore version
    it was checked against (whose model has the option, if the one installed here is that version or newer)."""
    import re

    import botocore
    import botocore.session

    from semif_lib import workshop
    from semif_lib.aws.clients import make_session

    docs = (ROOT / "docs" / "aws.md").read_text(encoding="utf-8")
    checked = re.search(r"TracingConfig` \(checked\s+against botocore (\d+)\.(\d+)\.(\d+)", docs)
    assert checked and "**Endpoint request tracing is not used.**" in docs
    installed = tuple(int(part) for part in botocore.__version__.split(".")[:3])
    members = botocore.session.get_session().get_service_model("sagemaker").operation_model("CreateEndpointConfig").input_shape.members
    if installed >= tuple(int(part) for part in checked.groups()):
        assert "TracingConfig" in members and "/aws/sagemaker/Endpoints/<name>/traces" in docs
    sent: list[dict] = []
    make_session(aws_settings).events.register("before-parameter-build.sagemaker.CreateEndpointConfig",
                                               lambda params, **_: sent.append(dict(params)))
    workshop.package_model(fake_gguf, settings=aws_settings, state=state, progress=False)
    workshop.deploy_text_model(settings=aws_settings, state=state)
    state.set("image_uri", "123456789012.dkr.ecr.us-east-1.amazonaws.com/semif-adapter@sha256:" + "1" * 64)
    workshop.deploy_decision_model(settings=aws_settings, state=state)
    workshop.deploy_async_decision_model(settings=aws_settings, state=state)
    assert len(sent) == 3 and not [config["EndpointConfigName"] for config in sent if "TracingConfig" in config]


# ------------------------------------------------------------------ GPU settings, rollbacks
def test_cuda_text_endpoint_merges_the_notebooks_settings(aws, aws_settings, fake_gguf):
    """Notebook 02 passes its own llama settings: they update the cuda defaults, GPU offload stays."""
    from semif_lib.aws.clients import make_client
    from semif_lib.workshop import deploy_text_model, load_state, package_model

    settings = aws_settings.model_copy(update={"dlc_variant": "cuda"})
    st = load_state(settings)
    package_model(fake_gguf, settings=settings, state=st, progress=False)
    name = deploy_text_model(settings=settings, state=st, llama_settings={"ctx_size": 2048, "jinja": True})
    sm = make_client("sagemaker", settings)
    config = sm.describe_endpoint_config(EndpointConfigName=sm.describe_endpoint(EndpointName=name)["EndpointConfigName"])
    env = sm.describe_model(ModelName=config["ProductionVariants"][0]["ModelName"])["PrimaryContainer"]["Environment"]
    assert env == {"SM_LLAMA_CPP_CTX_SIZE": "2048", "SM_LLAMA_CPP_JINJA": "true", "SM_LLAMA_CPP_N_GPU_LAYERS": "999"}


def test_text_settings_merge_and_drop():
    from semif_lib.invocation import text_settings

    assert text_settings("cuda", {"ctx_size": 1024}) == {"ctx_size": 1024, "jinja": True, "n_gpu_layers": 999}
    assert text_settings("cuda", {"n_gpu_layers": None}) == {"ctx_size": 4096, "jinja": True}  # None drops a default
    assert text_settings("cpu", None) == {"ctx_size": 4096, "jinja": True}


def test_gpu_endpoint_prefers_the_al2023_ami(aws, aws_settings, fake_gguf):
    """The DLC's CUDA 13.0 wants driver 580: al2023-ami-sagemaker-inference-gpu-4-1 has it natively."""
    import botocore.session

    from semif_lib.aws import dlc

    enum = botocore.session.get_session().get_service_model("sagemaker").shape_for("ProductionVariantInferenceAmiVersion").enum
    assert dlc.GPU_INFERENCE_AMI in enum and dlc.GPU_INFERENCE_AMI.startswith("al2023-") and dlc.GPU_INFERENCE_AMI.endswith("gpu-4-1")


class _Http:
    status_code = 200
    headers: dict = {}


def _script_endpoint_update(settings, statuses: list[str], reason: str) -> list[dict]:
    """moto has no UpdateEndpoint: answer it here, then let DescribeEndpoint walk through `statuses` before
    moto's own answer (InService on the config it never left) with `reason` as the FailureReason.
    Registered before the first client exists, so the SDK's clients see it too."""
    from semif_lib.aws.clients import make_session

    updates: list[dict] = []
    events = make_session(settings).events

    def update(**_):
        return _Http(), {"EndpointArn": "arn:aws:sagemaker:us-east-1:123456789012:endpoint/x"}

    def describe(parsed, **_):
        if updates and statuses:
            parsed["EndpointStatus"] = statuses.pop(0)
        if updates:
            parsed["FailureReason"] = reason

    events.register("before-parameter-build.sagemaker.UpdateEndpoint", lambda params, **_: updates.append(dict(params)))
    events.register("before-call.sagemaker.UpdateEndpoint", update)
    events.register("after-call.sagemaker.DescribeEndpoint", describe)
    return updates


def _deploy_then_change_env(settings, st, gguf, monkeypatch):
    from semif_lib.aws import deployment
    from semif_lib.workshop import deploy_text_model, package_model

    monkeypatch.setattr(deployment, "ENDPOINT_POLL_S", 0.01, raising=False)
    package_model(gguf, settings=settings, state=st, progress=False)
    deploy_text_model(settings=settings, state=st)
    return lambda: deploy_text_model(settings=settings, state=st, llama_settings={"ctx_size": 1024})


def test_an_update_that_rolls_back_is_a_failure(state, aws_settings, fake_gguf, monkeypatch):
    """Updating -> RollingBack -> InService on the old config: the new config never served."""
    from semif_lib.aws.errors import AwsSetupError

    updates = _script_endpoint_update(aws_settings, ["Updating", "RollingBack"], "health check failed on the new variant")
    redeploy = _deploy_then_change_env(aws_settings, state, fake_gguf, monkeypatch)
    with pytest.raises(AwsSetupError, match="rolled back; it still serves semif-text-t3st01-.*health check failed") as info:
        redeploy()
    assert len(updates) == 1 and updates[0]["EndpointConfigName"] in str(info.value)


@pytest.mark.timeout(60)
def test_update_rollback_failed_fails_at_once(state, aws_settings, fake_gguf, monkeypatch):
    from semif_lib.aws.errors import AwsSetupError

    _script_endpoint_update(aws_settings, ["Updating", "UpdateRollbackFailed"], "rollback could not restore capacity")
    redeploy = _deploy_then_change_env(aws_settings, state, fake_gguf, monkeypatch)
    with pytest.raises(AwsSetupError, match="is UpdateRollbackFailed: rollback could not restore capacity"):
        redeploy()
