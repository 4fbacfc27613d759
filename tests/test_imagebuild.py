"""Adapter image: build context zip, ECR repository settings, CodeBuild project and role, the build flow (moto)."""

from __future__ import annotations

import io
import json
import re
import zipfile

import pytest

from support.dockerfile import dockerfile_base


def test_source_zip_is_the_build_context_and_reproducible():
    from semif_lib.aws.imagebuild import build_source_zip

    data, sha = build_source_zip()
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    for needed in ("container/Dockerfile", "container/buildspec.yml", "container/entrypoint.sh", "pyproject.toml",
                   "README.md", "semif_lib/__init__.py", "semif_lib/serving/app.py", "semif_lib/decision/engine.py"):
        assert needed in names
    assert not [n for n in names if "__pycache__" in n or n.endswith((".pyc", ".so"))]
    info = zipfile.ZipFile(io.BytesIO(data)).getinfo("container/entrypoint.sh")
    assert (info.external_attr >> 16) & 0o111, "the entrypoint keeps its executable bit"
    assert build_source_zip() == (data, sha)


def test_codebuild_flow(state, aws_settings):
    from semif_lib.aws.clients import make_client
    from semif_lib.workshop import build_adapter_image

    lines: list[str] = []
    uri = build_adapter_image(settings=aws_settings, state=state, log=lines.append)
    assert uri.startswith("123456789012.dkr.ecr.us-east-1.amazonaws.com/semif-adapter-t3st01:cpu-")
    assert any("SUCCEEDED" in line for line in lines), lines

    ecr = make_client("ecr", aws_settings)
    repo = ecr.describe_repositories(repositoryNames=["semif-adapter-t3st01"])["repositories"][0]
    assert repo["imageTagMutability"] == "IMMUTABLE"
    assert repo["imageScanningConfiguration"]["scanOnPush"] is True

    cb = make_client("codebuild", aws_settings)
    project = cb.batch_get_projects(names=["semif-adapter-build-t3st01"])["projects"][0]
    assert project["environment"]["privilegedMode"] is True
    assert project["environment"]["type"] == "LINUX_CONTAINER"
    assert project["source"]["type"] == "S3" and project["source"]["buildspec"] == "container/buildspec.yml"
    bucket, _, key = project["source"]["location"].partition("/")
    assert make_client("s3", aws_settings).head_object(Bucket=bucket, Key=key)["ServerSideEncryption"] == "AES256"
    env = {v["name"]: v["value"] for v in project["environment"]["environmentVariables"]}
    assert env["BASE_IMAGE"] == state.get("dlc_image_cpu")  # the published tag, pinned to its digest for the run
    assert env["BASE_IMAGE"].startswith("763104351884.dkr.ecr.us-east-1.amazonaws.com/llama-cpp@sha256:")
    assert env["DLC_REGISTRY"] == "763104351884.dkr.ecr.us-east-1.amazonaws.com"
    assert env["IMAGE_REPO_URI"] == repo["repositoryUri"]

    iam = make_client("iam", aws_settings)
    role = iam.get_role(RoleName="semif-codebuild-t3st01")["Role"]
    assert project["serviceRole"] == role["Arn"]
    assert "codebuild.amazonaws.com" in json.dumps(role["AssumeRolePolicyDocument"])
    policy = iam.get_role_policy(RoleName="semif-codebuild-t3st01", PolicyName="semif-least-privilege")["PolicyDocument"]
    text = json.dumps(policy)
    assert "${" not in text and "semif-adapter-t3st01" in text and bucket in text
    assert state.get("image_build_id")


def test_failed_build_is_described():
    """moto's builds always succeed, so the failure text is checked on a batch_get_builds-shaped record."""
    from semif_lib.aws.imagebuild import describe_build_failure

    build = {"id": "p:1", "buildStatus": "FAILED", "logs": {"deepLink": "https://console/log"},
             "phases": [{"phaseType": "PRE_BUILD", "phaseStatus": "SUCCEEDED"},
                        {"phaseType": "BUILD", "phaseStatus": "FAILED", "contexts": [{"message": "docker build exited 1"}]}]}
    assert describe_build_failure(build) == "CodeBuild p:1 FAILED: BUILD: FAILED docker build exited 1 https://console/log"


def test_a_failed_build_prints_the_last_lines_of_its_log(state, aws_settings):
    """A failed build shows the last lines of its CloudWatch log (moto's CloudWatch Logs holds them), not
    only phase names and a link. moto's builds always succeed, so BatchGetBuilds is turned into a failure on a
    botocore hook, naming the log group and stream CodeBuild writes (`logs.groupName` / `streamName`)."""
    import time

    from semif_lib.aws.clients import make_client, make_session
    from semif_lib.aws.errors import ResourceFailedError
    from semif_lib.aws.imagebuild import BUILD_LOG_TAIL_LINES
    from semif_lib.workshop import build_adapter_image

    group, stream = "/aws/codebuild/semif-adapter-build-t3st01", "0123abcd-build"
    logs = make_client("logs", aws_settings)
    logs.create_log_group(logGroupName=group)
    logs.create_log_stream(logGroupName=group, logStreamName=stream)
    lines = [f"step {i}: pip install ..." for i in range(60)] + ["semif: FATAL: llama.cpp b10999 has no verified llama-cpp-python binding"]
    now = int(time.time() * 1000)  # CloudWatch Logs (and moto) drop events older than 14 days
    logs.put_log_events(logGroupName=group, logStreamName=stream,
                        logEvents=[{"timestamp": now + i, "message": line + "\n"} for i, line in enumerate(lines)])

    def fail(parsed, **_):
        for build in parsed.get("builds", []):
            build.update(buildStatus="FAILED", buildComplete=True, currentPhase="COMPLETED",
                         logs={"groupName": group, "streamName": stream, "deepLink": "https://console/log"},
                         phases=[{"phaseType": "BUILD", "phaseStatus": "FAILED", "contexts": [{"message": "COMMAND_EXECUTION_ERROR"}]}])

    make_session(aws_settings).events.register("after-call.codebuild.BatchGetBuilds", fail)
    printed: list[str] = []
    with pytest.raises(ResourceFailedError) as failed:
        build_adapter_image(settings=aws_settings, state=state, log=printed.append)
    assert "(log: semif: FATAL: llama.cpp b10999 has no verified llama-cpp-python binding)" in str(failed.value)
    assert str(failed.value).endswith("https://console/log")
    shown = next(p for p in printed if p.startswith(f"last {BUILD_LOG_TAIL_LINES} lines of the build log:")).splitlines()[1:]
    assert shown == lines[-BUILD_LOG_TAIL_LINES:]


def test_unchanged_source_is_not_rebuilt(state, aws_settings):
    from semif_lib.aws import imagebuild
    from semif_lib.aws.clients import make_client
    from semif_lib.aws.dlc import pin_dlc_image

    _, sha = imagebuild.build_source_zip()
    tag = imagebuild.adapter_image_tag("cpu", sha, pin_dlc_image(aws_settings, state))  # the digest the run builds FROM
    repo = imagebuild.ensure_ecr_repository("semif-adapter-t3st01", aws_settings, state)
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                           "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "size": 1,
                                      "digest": "sha256:" + "0" * 64},
                           "layers": []})
    make_client("ecr", aws_settings).put_image(repositoryName="semif-adapter-t3st01", imageManifest=manifest, imageTag=tag)
    lines: list[str] = []
    uri = imagebuild.build_adapter_image(settings=aws_settings, state=state, log=lines.append)
    assert uri == f"{repo['repositoryUri']}:{tag}"
    assert lines == [f"{uri} already built from this source: no build needed"]
    assert not make_client("codebuild", aws_settings).list_projects()["projects"]


# ------------------------------------------------------------------ the Dockerfile's DLC variants (arm64 has its own repository)
def test_every_dlc_variant_builds_on_its_own_repository():
    """`--build-arg DLC_VARIANT=arm64` starts from llama-cpp-arm64 (the arm64 repository), cpu and cuda from llama-cpp,
    and CodeBuild's BASE_IMAGE wins whatever the variant."""
    from semif_lib.aws.dlc import DLC_IMAGES, resolve_dlc_image_uri

    assert dockerfile_base({}) == resolve_dlc_image_uri("us-east-1", "cpu")
    for variant in DLC_IMAGES:
        assert dockerfile_base({"DLC_VARIANT": variant}) == resolve_dlc_image_uri("us-east-1", variant), variant
        registry = "364406365360.dkr.ecr.ap-northeast-3.amazonaws.com"
        assert dockerfile_base({"DLC_VARIANT": variant, "DLC_REGISTRY": registry}) == resolve_dlc_image_uri("ap-northeast-3", variant)
    given = resolve_dlc_image_uri("eu-south-2", "cuda")
    assert dockerfile_base({"BASE_IMAGE": given}) == dockerfile_base({"BASE_IMAGE": given, "DLC_VARIANT": "arm64"}) == given


# ------------------------------------------------------------------ a manifest SageMaker's CreateModel takes (Docker v2)
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"


def test_an_image_sagemaker_would_refuse_is_named_before_an_endpoint_is_made(state, aws_settings):
    """SageMaker's CreateModel refuses OCI manifests and indexes (what Docker 29's containerd store and BuildKit's
    attestations push): an adapter image stored so is refused here, naming its media type and the fix."""
    from semif_lib.aws import imagebuild
    from semif_lib.aws.clients import make_client
    from semif_lib.aws.dlc import pin_dlc_image
    from semif_lib.aws.errors import ResourceFailedError

    _, sha = imagebuild.build_source_zip()
    tag = imagebuild.adapter_image_tag("cpu", sha, pin_dlc_image(aws_settings, state))
    imagebuild.ensure_ecr_repository("semif-adapter-t3st01", aws_settings, state)
    manifest = json.dumps({"schemaVersion": 2, "mediaType": OCI_MANIFEST, "layers": [],
                           "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "size": 1, "digest": "sha256:" + "1" * 64}})
    make_client("ecr", aws_settings).put_image(repositoryName="semif-adapter-t3st01", imageManifest=manifest, imageTag=tag)
    refusal = re.escape(f"was pushed as {OCI_MANIFEST}; SageMaker's CreateModel takes only {imagebuild.DOCKER_MANIFEST}.")
    with pytest.raises(ResourceFailedError, match=refusal + ".*--provenance=false --sbom=false"):
        imagebuild.build_adapter_image(settings=aws_settings, state=state, log=lambda _: None)
    imagebuild.check_manifest("x", {"imageManifestMediaType": imagebuild.DOCKER_MANIFEST})  # the one it takes
    imagebuild.check_manifest("x", None)  # nothing pushed (moto's builds push nothing): nothing to refuse


STAND_IN_DOCKER = """#!/bin/bash
echo "docker $*" >> "$CALLS"
case "$1 $2" in
  "buildx version") [ "$BUILDX" != none ] || exit 1 ;;
  "buildx build") if [ "$3" = --help ]; then [ "$BUILDX" = new ] && echo "      --provenance string   Shorthand"; echo "  -t, --tag"; fi ;;
esac
"""
STAND_IN_AWS = """#!/bin/bash
echo "aws $*" >> "$CALLS"
[ "$2" = describe-images ] && echo "$MEDIA_TYPE"
exit 0
"""


def _run_buildspec(tmp_path, buildx: str, media_type: str) -> tuple[int, list[str], str]:
    """container/buildspec.yml's pre_build and build commands, in order as CodeBuild runs them (a failing command fails
    the phase), with docker and aws stand-ins that record their calls; returns (exit status, calls, output)."""
    import subprocess

    import yaml

    from semif_lib.paths import repo_root

    spec = yaml.safe_load((repo_root() / "container" / "buildspec.yml").read_text())
    tools = tmp_path / "bin"
    tools.mkdir()
    for name, body in {"docker": STAND_IN_DOCKER, "aws": STAND_IN_AWS}.items():
        (tools / name).write_text(body)
        (tools / name).chmod(0o755)
    calls = tmp_path / "calls.log"
    env = {"PATH": f"{tools}:/usr/bin:/bin", "CALLS": str(calls), "BUILDX": buildx, "MEDIA_TYPE": media_type, **spec["env"]["variables"],
           "AWS_DEFAULT_REGION": "us-east-1", "IMAGE_TAG": "cpu-0123456789ab",
           "BASE_IMAGE": "763104351884.dkr.ecr.us-east-1.amazonaws.com/x",
           "IMAGE_REPO_URI": "123456789012.dkr.ecr.us-east-1.amazonaws.com/semif-adapter-r1",
           "DLC_REGISTRY": "763104351884.dkr.ecr.us-east-1.amazonaws.com"}
    output = ""
    for command in spec["phases"]["pre_build"]["commands"] + spec["phases"]["build"]["commands"]:
        done = subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=30)
        output += done.stdout + done.stderr
        if done.returncode:
            return done.returncode, calls.read_text().splitlines(), output
    return 0, calls.read_text().splitlines(), output


@pytest.mark.parametrize(("buildx", "flags"), [("new", True), ("old", False), ("none", False)],
                         ids=["buildx-with-provenance", "buildx-without-the-flags", "no-buildx"])
def test_the_buildspec_builds_without_attestations_where_docker_can(tmp_path, buildx, flags):
    """Where `docker buildx build` knows --provenance, the build turns provenance and SBOM off and exports Docker media
    types; an older docker gets the classic builder, which makes neither attestations nor OCI media types (and would
    refuse the flags)."""
    status, calls, _ = _run_buildspec(tmp_path, buildx, "application/vnd.docker.distribution.manifest.v2+json")
    assert status == 0
    built = [c for c in calls if c.startswith(("docker build ", "docker buildx build ")) and "--help" not in c]
    assert len(built) == 1 and built[0].endswith("-t semif-adapter:cpu-0123456789ab .")
    assert built[0].startswith("docker buildx build --provenance=false --sbom=false --output type=docker -f container/Dockerfile")  \
        if flags else built[0].startswith("docker build -f container/Dockerfile --build-arg BASE_IMAGE=")
    assert calls[-1] == ("aws ecr describe-images --region us-east-1 --repository-name semif-adapter-r1 --image-ids "
                         "imageTag=cpu-0123456789ab --query imageDetails[0].imageManifestMediaType --output text")


@pytest.mark.parametrize("media_type", [OCI_MANIFEST, "application/vnd.oci.image.index.v1+json",
                                        "application/vnd.docker.distribution.manifest.list.v2+json"])
def test_the_buildspec_fails_the_build_when_ecr_holds_a_manifest_sagemaker_refuses(tmp_path, media_type):
    status, _, output = _run_buildspec(tmp_path, "new", media_type)
    assert status != 0
    assert (f"FATAL: 123456789012.dkr.ecr.us-east-1.amazonaws.com/semif-adapter-r1:cpu-0123456789ab was pushed as {media_type}; "
            "SageMaker's CreateModel takes only application/vnd.docker.distribution.manifest.v2+json") in output
