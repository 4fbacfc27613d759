"""Shared accounts and regions: runs that share an account's bucket keep apart, a
run's cleanup deletes only what it recorded (the bucket only when empty and its own), and cleanup works in
the region the state file records, refusing a session in another one (moto, two regions)."""

from __future__ import annotations

import pytest


def _run(aws_settings, run_id: str, region: str = "us-east-1"):
    from semif_lib import workshop

    settings = aws_settings.model_copy(update={"run_id": run_id, "aws_region": region,
                                               "state_file": aws_settings.state_file.with_name(f"{run_id}.json")})
    return settings, workshop.load_state(settings)


def _keys(settings, bucket: str) -> list[str]:
    from semif_lib.aws.clients import make_client

    return sorted(o["Key"] for o in make_client("s3", settings).list_objects_v2(Bucket=bucket).get("Contents", []))


def _two_runs_share_the_bucket(aws_settings, fake_gguf, tmp_path):
    from semif_lib import workshop

    (a, st_a), (b, st_b) = _run(aws_settings, "runaa1"), _run(aws_settings, "runbb2")
    first = workshop.package_model(fake_gguf, settings=a, state=st_a, progress=False)
    second = workshop.package_model(fake_gguf, settings=b, state=st_b, progress=False)  # the same GGUF
    bucket = first["model_data_url"].split("/")[2]
    assert second["model_data_url"].split("/")[2] == bucket and second["uploaded"], "each run uploads under its own prefix"
    assert st_a.has("s3_bucket", bucket) and not st_b.find("s3_bucket"), "only the run that created the bucket records it"
    return (a, st_a), (b, st_b), bucket


def test_each_run_writes_under_its_own_prefix(aws, aws_settings, fake_gguf, tmp_path):
    (a, st_a), (b, st_b), bucket = _two_runs_share_the_bucket(aws_settings, fake_gguf, tmp_path)
    keys = _keys(a, bucket)
    assert len(keys) == 2 and {k.split("/")[1] for k in keys} == {"runaa1", "runbb2"}
    assert all(e["key"].startswith("semif-workshop/runaa1/") for e in st_a.find("s3_object"))


def test_the_creators_cleanup_keeps_a_bucket_others_still_use(aws, aws_settings, fake_gguf, tmp_path):
    from semif_lib.workshop import cleanup

    (a, st_a), (b, st_b), bucket = _two_runs_share_the_bucket(aws_settings, fake_gguf, tmp_path)
    report = cleanup(settings=a, state=st_a)
    assert not report.failed and [line.split(":")[0] for line in report.kept] == [f"s3_bucket {bucket}"], report
    assert _keys(b, bucket) == [st_b.find("s3_object")[0]["key"]], "run B's model is still there"
    assert not a.state_file.exists()
    b_object = st_b.find("s3_object")[0]["name"]
    report = cleanup(settings=b, state=st_b)
    assert not report.failed and not report.kept and report.removed == [f"s3_object {b_object}"]
    assert _keys(b, bucket) == []  # B deleted only its own object; the bucket it never created stays


def test_the_bucket_goes_with_the_last_run_that_created_it(aws, aws_settings, fake_gguf, tmp_path):
    from semif_lib.aws.clients import make_client
    from semif_lib.workshop import cleanup

    (a, st_a), (b, st_b), bucket = _two_runs_share_the_bucket(aws_settings, fake_gguf, tmp_path)
    assert not cleanup(settings=b, state=st_b).failed
    assert len(_keys(a, bucket)) == 1
    report = cleanup(settings=a, state=st_a)
    assert f"s3_bucket {bucket}" in report.removed and not report.kept
    assert make_client("s3", a).list_buckets()["Buckets"] == []


def test_cleanup_refuses_a_session_in_another_region(aws, aws_settings, fake_gguf, monkeypatch):
    """The run lives in us-east-1; a cleanup from eu-west-1 would find nothing and forget the billing endpoints."""
    from semif_lib.aws.clients import make_client, reset_sessions
    from semif_lib.aws.errors import AwsSetupError
    from semif_lib.settings import Settings
    from semif_lib.workshop import cleanup, deploy_text_model, package_model

    east, st = _run(aws_settings, "reg1on", "us-east-1")
    package_model(fake_gguf, settings=east, state=st, progress=False)
    name = deploy_text_model(settings=east, state=st)
    recorded = list(st.resources)
    west = east.model_copy(update={"aws_region": "eu-west-1"})
    with pytest.raises(AwsSetupError, match="records run reg1on's resources in us-east-1, but this session is in eu-west-1"):
        cleanup(settings=west, state=st)
    assert st.resources == recorded and east.state_file.exists()
    assert make_client("sagemaker", east).describe_endpoint(EndpointName=name)["EndpointStatus"] == "InService"

    monkeypatch.setenv("AWS_REGION", "eu-west-1")  # no SEMIF_AWS_REGION: the session's region decides, and differs
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    reset_sessions()
    unset = Settings(target="aws", state_file=east.state_file, run_id="reg1on", instance_type="ml.m5.large")
    with pytest.raises(AwsSetupError, match="SEMIF_AWS_REGION=us-east-1"):
        cleanup(settings=unset)

    monkeypatch.setenv("SEMIF_AWS_REGION", "us-east-1")  # what the message says to do
    report = cleanup(settings=unset.model_copy(update={"aws_region": "us-east-1"}))
    assert not report.failed and f"sagemaker_endpoint {name}" in report.removed and not report.already_gone
    assert make_client("sagemaker", east).list_endpoints()["Endpoints"] == []


def test_cli_cleanup_names_the_region_to_use(aws, aws_settings, fake_gguf, monkeypatch, capsys):
    from semif_lib.cli import main
    from semif_lib.workshop import package_model

    east, st = _run(aws_settings, "cl1reg", "us-east-1")
    package_model(fake_gguf, settings=east, state=st, progress=False)
    monkeypatch.setenv("SEMIF_STATE_FILE", str(east.state_file))
    monkeypatch.setenv("SEMIF_TARGET", "aws")
    monkeypatch.setenv("SEMIF_AWS_REGION", "ap-northeast-3")
    assert main(["workshop", "cleanup"]) == 2
    assert "SEMIF_AWS_REGION=us-east-1" in capsys.readouterr().err
    assert east.state_file.exists()
