"""What a person sees when AWS says no, and while AWS works:
missing or expired credentials and access denials as one `SemifError` line, SageMaker's `ResourceNotFound`,
bounded retries while a new IAM role propagates, and `tqdm.auto` progress on every long wait."""

from __future__ import annotations

import pytest

from support.aws import client_error


def assert_one_line(exc: BaseException) -> str:
    message = str(exc)
    assert "\n" not in message and len(message) < 400, message
    assert exc.__cause__ is None and (exc.__context__ is None or exc.__suppress_context__), "no boto traceback chained"
    return message


# ------------------------------------------------------------------ credentials and permissions
def test_no_credentials_is_one_line_that_says_what_to_do(tmp_path, monkeypatch, fake_gguf):
    from semif_lib import workshop
    from semif_lib.aws.clients import reset_sessions
    from semif_lib.aws.errors import AwsCredentialsError
    from semif_lib.settings import Settings

    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    reset_sessions()
    settings = Settings(target="aws", aws_region="us-east-1", state_file=tmp_path / "s.json", run_id="n0cred")
    st = workshop.load_state(settings)
    with pytest.raises(AwsCredentialsError) as info:
        workshop.package_model(fake_gguf, settings=settings, state=st, progress=False)
    message = assert_one_line(info.value)
    assert message.startswith("package_model (01): no usable AWS credentials") and "aws sso login" in message
    reset_sessions()


def _answer(settings, operation: str, code: str, message: str) -> None:
    """Make every `operation` call of this session's clients fail with `code` (registered before any client exists)."""
    from semif_lib.aws.clients import make_session

    class Http:
        status_code = 400
        headers: dict = {}

    service, op = operation.split(".")
    make_session(settings).events.register(f"before-call.{service}.{op}",
                                           lambda **_: (Http(), {"Error": {"Code": code, "Message": message}}))


def test_an_expired_token_is_one_line(aws, aws_settings, fake_gguf):
    from semif_lib import workshop
    from semif_lib.aws.errors import AwsCredentialsError

    _answer(aws_settings, "sts.GetCallerIdentity", "ExpiredToken", "The security token included in the request is expired")
    st = workshop.load_state(aws_settings)
    with pytest.raises(AwsCredentialsError) as info:
        workshop.package_model(fake_gguf, settings=aws_settings, state=st, progress=False)
    assert "have expired (ExpiredToken)" in assert_one_line(info.value)


def test_an_access_denial_names_the_caller_policy(aws, aws_settings, fake_gguf):
    from semif_lib import workshop
    from semif_lib.aws.errors import AwsPermissionError

    _answer(aws_settings, "s3.CreateBucket", "AccessDenied", "User: arn:aws:sts::123456789012:assumed-role/x/y is not authorized "
            "to perform: s3:CreateBucket")
    st = workshop.load_state(aws_settings)
    with pytest.raises(AwsPermissionError) as info:
        workshop.package_model(fake_gguf, settings=aws_settings, state=st, progress=False)
    message = assert_one_line(info.value)
    assert "s3:CreateBucket" in message and "container/iam/workshop-caller-policy.json" in message


def test_cleanup_keeps_going_and_reports_expired_credentials_per_resource(aws, aws_settings, fake_gguf):
    from semif_lib import workshop

    st = workshop.load_state(aws_settings)
    workshop.package_model(fake_gguf, settings=aws_settings, state=st, progress=False)
    _answer(aws_settings, "s3.DeleteObject", "ExpiredToken", "expired")  # clients made from now on see it
    report = workshop.cleanup(settings=aws_settings, state=st)
    assert report.failed and "your AWS credentials have expired" in report.failed[0]
    assert aws_settings.state_file.exists(), "kept for a retry"


# ------------------------------------------------------------------ not found
def test_resource_not_found_is_not_found():
    from semif_lib.aws.errors import is_not_found

    assert is_not_found(client_error("ResourceNotFound", "Could not find requested job", "DescribeTransformJob"))
    assert not is_not_found(client_error("ThrottlingException", "slow down"))


def test_cleanup_of_a_missing_transform_job_is_already_gone(aws, aws_settings, monkeypatch):
    """SageMaker answers DescribeTransformJob for an unknown job with ResourceNotFound (moto: ValidationException)."""
    from semif_lib import workshop
    from semif_lib.aws import teardown

    st = workshop.load_state(aws_settings)
    st.record("transform_job", "semif-batch-t3st01-0101000000")
    real = teardown.make_client

    def client(service, settings):
        made = real(service, settings)
        if service == "sagemaker":
            def missing(**_):
                raise client_error("ResourceNotFound", "Could not find requested job with name semif-batch-t3st01-0101000000")
            made.describe_transform_job = missing
        return made

    monkeypatch.setattr(teardown, "make_client", client)
    report = workshop.cleanup(settings=aws_settings, state=st)
    assert report.already_gone == ["transform_job semif-batch-t3st01-0101000000"] and not report.failed


# ------------------------------------------------------------------ IAM propagation
def test_role_propagation_is_retried_with_bounded_backoff():
    from semif_lib.aws.errors import AwsSetupError
    from semif_lib.aws.waits import retry_while_role_propagates

    slept: list[float] = []
    answers = [client_error("InvalidInputException", "CodeBuild is not authorized to perform: sts:AssumeRole on arn:aws:iam::1:role/r"),
               client_error("ValidationException", "Could not assume role arn:aws:iam::1:role/r. Please ensure that the role exists")]

    def call():
        if answers:
            raise answers.pop(0)
        return "made"

    assert retry_while_role_propagates(call, "project p", sleep=slept.append, log=None) == "made"
    assert slept == [2.0, 4.0]

    def never():
        raise client_error("ValidationException", "Could not assume role arn:aws:iam::1:role/r")

    slept.clear()
    with pytest.raises(AwsSetupError, match="still not assumable"):
        retry_while_role_propagates(never, "model m", timeout_s=0.5, first_delay_s=0.1,
                                    sleep=lambda s: (slept.append(s), __import__("time").sleep(s)), log=None)
    assert 1 <= len(slept) <= 4

    def other():
        raise client_error("ValidationException", "Invalid instance type")

    with pytest.raises(Exception, match="Invalid instance type"):
        retry_while_role_propagates(other, "model m", sleep=slept.append, log=None)


def test_a_new_codebuild_role_is_waited_for_not_slept_on(state, aws_settings, monkeypatch, capsys):
    """CreateProject with a role IAM has not propagated yet fails; the build retries it, and never sleeps a fixed 10 s."""
    import time

    from semif_lib.aws import imagebuild

    sleeps: list[float] = []
    monkeypatch.setattr(time, "sleep", lambda s: sleeps.append(s))
    failures = [client_error("InvalidInputException", "CodeBuild is not authorized to perform: sts:AssumeRole on arn:...")]
    real = imagebuild.make_client

    def client(service, settings):
        made = real(service, settings)
        if service == "codebuild":
            create = made.create_project

            def flaky(**kwargs):
                if failures:
                    raise failures.pop(0)
                return create(**kwargs)
            made.create_project = flaky
        return made

    monkeypatch.setattr(imagebuild, "make_client", client)
    lines: list[str] = []
    imagebuild.build_adapter_image(settings=aws_settings, state=state, log=lines.append, progress=False)
    assert not failures and sleeps == [2.0]
    assert "IAM role not assumable yet (IAM is eventually consistent); retrying in 2 s" in capsys.readouterr().out


# ------------------------------------------------------------------ progress
def test_endpoint_and_transform_waits_show_status_and_elapsed_time(capsys):
    from semif_lib.aws.errors import ResourceFailedError
    from semif_lib.aws.waits import poll_status

    statuses = iter(["Creating", "Creating", "InService"])
    poll_status(lambda: {"EndpointStatus": next(statuses)}, "EndpointStatus", "InService", ("Failed",), "endpoint e",
                60, 0.01, log=None, progress=True)
    err = capsys.readouterr().err
    assert "endpoint e: Creating" in err and "endpoint e: InService" in err and "[00:00]" in err
    with pytest.raises(ResourceFailedError, match="transform job j is Failed: ClientError: 400"):
        poll_status(lambda: {"TransformJobStatus": "Failed", "FailureReason": "ClientError: 400"}, "TransformJobStatus", "Completed",
                    ("Failed", "Stopped"), "transform job j", 60, 0.01, log=None, progress=True)
    assert "transform job j: Failed" in capsys.readouterr().err


def test_codebuild_wait_shows_each_phase(monkeypatch, capsys, aws_settings):
    from semif_lib.aws import imagebuild

    phases = iter([("QUEUED", "IN_PROGRESS"), ("PROVISIONING", "IN_PROGRESS"), ("BUILD", "IN_PROGRESS"), ("COMPLETED", "SUCCEEDED")])

    class FakeCodeBuild:
        def batch_get_builds(self, ids):
            phase, status = next(phases)
            return {"builds": [{"id": ids[0], "currentPhase": phase, "buildStatus": status, "buildComplete": status != "IN_PROGRESS"}]}

    monkeypatch.setattr(imagebuild, "make_client", lambda service, settings: FakeCodeBuild())
    lines: list[str] = []
    imagebuild.wait_for_build("semif-adapter-build-t3st01:abcdef12-0000", aws_settings, poll_s=0.01, log=lines.append)
    assert [line.split("phase ")[1].split(",")[0] for line in lines] == ["QUEUED", "PROVISIONING", "BUILD", "COMPLETED"]
    err = capsys.readouterr().err
    assert "CodeBuild abcdef12: BUILD" in err and "11/11" in err
