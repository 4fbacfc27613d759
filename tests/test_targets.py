"""The `Target` protocol and its three implementations, without a model: what each target answers for
each step, what it records and how it removes it (local: processes; container: a stand-in CLI; aws: moto)."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

from support.aws import make_fake_gguf
from support.stub_adapter import running_stub_adapter

PROTOCOL_METHODS = ("region", "check_permissions", "publish_model", "deploy_text_model", "build_adapter_image",
                    "deploy_decision_model", "invoke_decision", "chat", "stream_chat", "score_jsonlines",
                    "enable_autoscaling", "delete_resource")


def _settings(tmp_path, target: str, **extra):
    from semif_lib.settings import Settings

    return Settings(target=target, state_file=tmp_path / "state.json", run_id="tgt001", **extra)


# ------------------------------------------------------------------ the protocol
@pytest.mark.parametrize("name", ["LocalTarget", "ContainerTarget", "AwsTarget"])
def test_every_target_implements_the_protocol(name):
    from semif_lib import targets

    cls = getattr(targets, name)
    for method in PROTOCOL_METHODS:
        wanted = list(inspect.signature(getattr(targets.Target, method)).parameters)
        assert list(inspect.signature(getattr(cls, method)).parameters) == wanted, f"{name}.{method}"


def test_select_target_and_owner_of(tmp_path):
    from semif_lib import targets

    for name, cls in (("local", targets.LocalTarget), ("container", targets.ContainerTarget), ("aws", targets.AwsTarget)):
        chosen = targets.select_target(_settings(tmp_path, name))
        assert type(chosen) is cls and chosen.name == name
    local = _settings(tmp_path, "local")
    assert type(targets.owner_of("local_process", local)) is targets.LocalTarget
    assert type(targets.owner_of("local_container", local)) is targets.ContainerTarget
    assert type(targets.owner_of("sagemaker_endpoint", local)) is targets.AwsTarget  # who created it, not the target now
    assert targets.LOCAL_KINDS == {"local_process", "local_container"}


# ------------------------------------------------------------------ the targets on this machine, over HTTP
@pytest.fixture
def stub():
    """The stand-in adapter and text twin (`support.stub_adapter`): JSON, JSON Lines, and SSE when asked for a stream."""
    with running_stub_adapter() as adapter:
        yield adapter


@pytest.mark.parametrize("name", ["local", "container"])
def test_the_targets_on_this_machine_answer_over_http(name, tmp_path, stub):
    from semif_lib.registry import WorkshopState
    from semif_lib.targets import select_target

    target = select_target(_settings(tmp_path, name))
    state = WorkshopState.load(tmp_path / "state.json", "tgt001")
    said: list[str] = []
    assert target.region() is None and target.publish_model(object(), state, False) == {}
    assert target.check_permissions(state, said.append) is None and said == [f"target={name}: no AWS account or permissions needed"]
    assert target.enable_autoscaling(state, 1, 2, 60.0) is None
    assert target.invoke_decision(stub.url, b'{"x": 1}', "fresh") == {"answers": {}}
    assert target.chat(stub.url, b'{"messages": []}') == {"answers": {}}
    assert list(target.stream_chat(stub.url, b'{"stream": true}')) == ["he", "llo"]
    with pytest.raises(KeyError, match="04_deploy_decision_endpoint"):
        target.score_jsonlines(state, tmp_path / "r.jsonl", b'{"id": "a"}\n', True)
    state.set("decision_endpoint", stub.url)
    assert [r["id"] for r in target.score_jsonlines(state, tmp_path / "r.jsonl", b'{"id": "a"}\n{"id": "b"}\n', True)] == ["a", "b"]
    assert [(p, t) for p, t, _ in stub.seen] == [("/invocations?mode=fresh", "application/json"), ("/invocations", "application/json"),
                                                  ("/invocations", "application/json"), ("/invocations", "application/jsonlines")]


def test_a_machine_target_unpacks_the_model_package_once(tmp_path):
    from semif_lib.model.package import build_model_tarball
    from semif_lib.registry import WorkshopState
    from semif_lib.settings import Settings
    from semif_lib.targets import LocalTarget

    package = build_model_tarball(make_fake_gguf(tmp_path / "m.gguf"), out_dir=tmp_path / "packages", settings=Settings(_env_file=None))
    state = WorkshopState.load(tmp_path / "state.json", "tgt001")
    target = LocalTarget(_settings(tmp_path, "local"))
    with pytest.raises(KeyError, match="01_package_gguf_to_s3"):
        target.model_dir(state)
    state.set("model_package", {"tarball": str(package.tarball), "sha256": package.sha256})
    model_dir = target.model_dir(state)
    assert [p.name for p in model_dir.iterdir()] == ["m.gguf"] and model_dir.parent == tmp_path / "opt-ml-model"
    (model_dir / "m.gguf").write_bytes(b"GGUF kept")  # a second call does not unpack again
    assert target.model_dir(state) == model_dir and (model_dir / "m.gguf").read_bytes() == b"GGUF kept"


def test_local_target_builds_nothing_and_stops_what_it_started(tmp_path):
    from semif_lib.registry import WorkshopState
    from semif_lib.targets import LocalTarget

    target = LocalTarget(_settings(tmp_path, "local"))
    state = WorkshopState.load(tmp_path / "state.json", "tgt001")
    said: list[str] = []
    assert target.build_adapter_image(state, True, said.append) == "local:semif-adapter" and "no image to build" in said[0]
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    assert target.delete_resource({"kind": "local_process", "name": "decision-server", "pid": proc.pid}) is True
    assert proc.wait(timeout=10) is not None
    assert target.delete_resource({"kind": "local_process", "name": "decision-server", "pid": proc.pid}) is False


def test_container_target_refuses_an_image_it_cannot_run_and_removes_what_it_ran(tmp_path):
    from semif_lib.registry import WorkshopState
    from semif_lib.targets import ContainerTarget, LocalServerError, require_container_runtime

    target = ContainerTarget(_settings(tmp_path, "container"))
    state = WorkshopState.load(tmp_path / "state.json", "tgt001")
    for image in ("local:semif-adapter", "123456789012.dkr.ecr.us-east-1.amazonaws.com/semif-decision:abc"):
        state.set("image_uri", image)
        with pytest.raises(LocalServerError, match="is not a local image"):
            target.deploy_decision_model(state, True)
    with pytest.raises(LocalServerError, match="target=container needs a working docker or podman CLI"):
        require_container_runtime(_settings(tmp_path, "container", container_runtime="none"))  # SEMIF_CONTAINER_RUNTIME=none
    cli = tmp_path / "fake-docker"  # answers `container inspect` as for a container that is gone, and logs every call
    cli.write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path / 'calls'}\nexit 1\n")
    cli.chmod(0o755)
    entry = {"kind": "local_container", "name": "semif-decision-tgt001", "runtime": str(cli), "image": "x", "url": "http://127.0.0.1:1"}
    assert target.delete_resource(entry) is False
    assert (tmp_path / "calls").read_text().split() == ["container", "inspect", "semif-decision-tgt001"]


# ------------------------------------------------------------------ AWS, on moto
def test_aws_target_publishes_records_the_region_and_removes_on_moto(aws, aws_settings, fake_gguf):
    from semif_lib.model.package import build_model_tarball
    from semif_lib.targets import AwsTarget, load_state

    target = AwsTarget(aws_settings)
    state = load_state(aws_settings)
    assert state.region == target.region() == "us-east-1"
    package = build_model_tarball(fake_gguf, out_dir=aws_settings.state_file.parent / "packages", settings=aws_settings)
    published = target.publish_model(package, state, False)
    assert published["uploaded"] and published["model_data_url"].startswith("s3://")
    assert [e["kind"] for e in state.resources] == ["s3_bucket", "s3_object"]
    bucket, obj = state.resources
    assert target.delete_resource(obj) is True
    assert target.delete_resource(bucket) is True and target.delete_resource(bucket) is False  # the second finds it gone
    assert target.delete_resource({"kind": "sagemaker_endpoint", "name": "semif-text-tgt001"}) is False  # already gone
    with pytest.raises(ValueError, match="do not know how to delete"):
        target.delete_resource({"kind": "no_such_kind", "name": "x"})


def test_cleanup_settings_need_a_region_only_for_aws_resources(aws, aws_settings):
    from semif_lib.aws.errors import AwsSetupError
    from semif_lib.targets import load_state, settings_for_cleanup

    state = load_state(aws_settings)
    state.record("local_process", "decision-server", pid=1)
    assert settings_for_cleanup(aws_settings, state) is aws_settings  # only servers on this machine: no region needed
    state.record("sagemaker_endpoint", "semif-decision-tgt001")
    elsewhere = aws_settings.model_copy(update={"aws_region": "eu-west-1"})
    with pytest.raises(AwsSetupError, match="records run t3st01's resources in us-east-1, but this session is in eu-west-1"):
        settings_for_cleanup(elsewhere, state)
    assert settings_for_cleanup(aws_settings, state).aws_region == "us-east-1"
