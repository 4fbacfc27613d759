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
    """The build exports the digest it pushed; the image is returned and recorded by that digest, under its tag."""
    from semif_lib.aws.clients import make_client
    from semif_lib.workshop import build_adapter_image

    lines: list[str] = []
    uri = build_adapter_image(settings=aws_settings, state=state, log=lines.append)
    assert re.fullmatch(r"123456789012\.dkr\.ecr\.us-east-1\.amazonaws\.com/semif-adapter-t3st01@sha256:[0-9a-f]{64}", uri)
    assert any("SUCCEEDED" in line for line in lines), lines
    assert state.get("image_uri") == uri

    ecr = make_client("ecr", aws_settings)
    repo = ecr.describe_repositories(repositoryNames=["semif-adapter-t3st01"])["repositories"][0]
    assert repo["imageTagMutability"] == "IMMUTABLE"
    (tag, digest), = state.get("adapter_images").items()
    assert tag.startswith("cpu-") and uri.endswith(f"@{digest}") and state.get("image_build_tag") == tag
    held = ecr.describe_images(repositoryName="semif-adapter-t3st01", imageIds=[{"imageTag": tag}])["imageDetails"][0]
    assert held["imageDigest"] == digest
    build = make_client("codebuild", aws_settings).batch_get_builds(ids=[state.get("image_build_id")])["builds"][0]
    assert build["exportedEnvironmentVariables"] == [{"name": "IMAGE_DIGEST", "value": digest}]  # what the buildspec exports
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


def _put_image(aws_settings, tag: str, config: str, media_type: str = "application/vnd.docker.distribution.manifest.v2+json") -> str:
    """An image pushed under `tag` into the run's repository by someone other than its build; returns its digest."""
    from semif_lib.aws.clients import make_client

    manifest = json.dumps({"schemaVersion": 2, "mediaType": media_type, "layers": [],
                           "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "size": 1, "digest": config}})
    return make_client("ecr", aws_settings).put_image(repositoryName="semif-adapter-t3st01", imageManifest=manifest,
                                                      imageTag=tag)["image"]["imageId"]["imageDigest"]


def _this_runs_tag(state, aws_settings) -> str:
    from semif_lib.aws import imagebuild
    from semif_lib.aws.dlc import pin_dlc_image

    return imagebuild.adapter_image_tag("cpu", imagebuild.build_source_zip()[1], pin_dlc_image(aws_settings, state))


def _builds(aws_settings) -> list[str]:
    from semif_lib.aws.clients import make_client

    return make_client("codebuild", aws_settings).list_builds_for_project(projectName="semif-adapter-build-t3st01")["ids"]


def test_unchanged_source_is_not_rebuilt(state, aws_settings):
    """The tag this run's own build pushed, still holding the digest that build exported: no second build."""
    from semif_lib.aws import imagebuild

    uri = imagebuild.build_adapter_image(settings=aws_settings, state=state, log=lambda _: None)
    lines: list[str] = []
    assert imagebuild.build_adapter_image(settings=aws_settings, state=state, log=lines.append) == uri
    assert lines == [f"{uri} ({state.get('image_build_tag')}) already built by this run from this source: no build needed"]
    assert len(_builds(aws_settings)) == 1


def test_a_tag_this_run_did_not_push_is_refused(state, aws_settings):
    """Another identity pushes its image under the tag this run's build would push (the tag is a hash of the source, so
    anyone with the same checkout knows it): it is refused, not deployed, and nothing is built."""
    from semif_lib.aws import imagebuild
    from semif_lib.aws.clients import make_client
    from semif_lib.aws.errors import ResourceFailedError

    tag = _this_runs_tag(state, aws_settings)
    imagebuild.ensure_ecr_repository("semif-adapter-t3st01", aws_settings, state)
    theirs = _put_image(aws_settings, tag, "sha256:" + "0" * 64)
    with pytest.raises(ResourceFailedError) as refused:
        imagebuild.build_adapter_image(settings=aws_settings, state=state, log=lambda _: None)
    assert str(refused.value) == (
        f"123456789012.dkr.ecr.us-east-1.amazonaws.com/semif-adapter-t3st01:{tag} exists ({theirs}), but no build of this run "
        "exported that image, so it is not used: another identity pushed it, or a build of this run failed after its push. "
        f"Delete it (aws ecr batch-delete-image --repository-name semif-adapter-t3st01 --image-ids imageTag={tag}) and run this "
        "step again")
    assert not make_client("codebuild", aws_settings).list_projects()["projects"] and not state.get("image_uri")


def test_an_image_replaced_under_this_runs_tag_is_refused(state, aws_settings):
    """The run built and recorded its digest; the tag is freed (the image deleted) and another image pushed under it:
    what the tag names now is not what this run built."""
    from semif_lib.aws import imagebuild
    from semif_lib.aws.clients import make_client
    from semif_lib.aws.errors import ResourceFailedError

    uri = imagebuild.build_adapter_image(settings=aws_settings, state=state, log=lambda _: None)
    tag = state.get("image_build_tag")
    make_client("ecr", aws_settings).batch_delete_image(repositoryName="semif-adapter-t3st01", imageIds=[{"imageTag": tag}])
    theirs = _put_image(aws_settings, tag, "sha256:" + "2" * 64)
    with pytest.raises(ResourceFailedError, match=re.escape(
            f"({uri}): ECR holds {theirs} there, not {uri.rpartition('@')[2]}, the image this run built: it was replaced")):
        imagebuild.build_adapter_image(settings=aws_settings, state=state, log=lambda _: None)
    assert len(_builds(aws_settings)) == 1


def test_a_tag_taken_while_the_build_starts_fails_the_build(state, aws_settings):
    """Another identity pushes under the tag between the run's check and its build's push: the repository's tags are
    IMMUTABLE, so the build's push fails (and the build with it) instead of either image taking the other's place."""
    from semif_lib.aws.clients import make_session
    from semif_lib.aws.errors import ResourceFailedError
    from semif_lib.workshop import build_adapter_image

    def take_the_tag(**_):
        _put_image(aws_settings, _this_runs_tag(state, aws_settings), "sha256:" + "3" * 64)  # returns None: the call goes on

    make_session(aws_settings).events.register("before-call.codebuild.StartBuild", take_the_tag)
    with pytest.raises(ResourceFailedError, match=r"FAILED: BUILD: FAILED docker push: .*already exists"):
        build_adapter_image(settings=aws_settings, state=state, log=lambda _: None)
    assert not state.get("adapter_images") and not state.get("image_uri")


def test_a_repository_whose_tags_can_move_is_refused(state, aws_settings):
    """A run makes its repository IMMUTABLE: one under its name with MUTABLE tags was made by someone else (the run's
    force-deleted and made again), and is refused before anything is built into it."""
    from semif_lib.aws import imagebuild
    from semif_lib.aws.clients import make_client
    from semif_lib.aws.errors import ResourceFailedError

    make_client("ecr", aws_settings).create_repository(repositoryName="semif-adapter-t3st01", imageTagMutability="MUTABLE")
    with pytest.raises(ResourceFailedError, match=re.escape(
            "ECR repository semif-adapter-t3st01 has MUTABLE tags, and a run makes its repository IMMUTABLE: someone else made "
            "this one") + ".*" + re.escape("(aws ecr delete-repository --repository-name semif-adapter-t3st01 --force)")):
        imagebuild.build_adapter_image(settings=aws_settings, state=state, log=lambda _: None)
    assert not make_client("codebuild", aws_settings).list_projects()["projects"]


def test_a_build_that_exports_no_digest_is_refused(state, aws_settings):
    """A project whose buildspec exports no IMAGE_DIGEST (changed since the run made it, or an older buildspec): the
    image it pushed cannot be named by digest, so it is not returned."""
    from semif_lib.aws.clients import make_session
    from semif_lib.aws.errors import ResourceFailedError
    from semif_lib.workshop import build_adapter_image

    def unexported(parsed, **_):
        for build in parsed.get("builds", []):
            build.pop("exportedEnvironmentVariables", None)

    make_session(aws_settings).events.register("after-call.codebuild.BatchGetBuilds", unexported)
    with pytest.raises(ResourceFailedError, match=r"exported no image digest \(IMAGE_DIGEST=''\).*exported-variables: \[IMAGE_DIGEST\]"):
        build_adapter_image(settings=aws_settings, state=state, log=lambda _: None)
    assert not state.get("adapter_images") and not state.get("image_uri")


def test_a_build_not_waited_for_is_resumed_by_its_digest(state, aws_settings, fake_gguf):
    """wait=False returns the tag, which no deployment takes; the next call waits for that same build (not a second one)
    and returns the digest it exported."""
    from semif_lib import workshop
    from semif_lib.aws.errors import ResourceFailedError

    tagged = workshop.build_adapter_image(settings=aws_settings, state=state, wait=False, log=lambda _: None)
    assert tagged.endswith(f":{state.get('image_build_tag')}") and not state.get("adapter_images")
    workshop.package_model(fake_gguf, settings=aws_settings, state=state, progress=False)
    with pytest.raises(ResourceFailedError, match=re.escape(f"the recorded adapter image {tagged} is not named by digest")):
        workshop.deploy_decision_model(settings=aws_settings, state=state)
    uri = workshop.build_adapter_image(settings=aws_settings, state=state, log=lambda _: None)
    assert uri.startswith(tagged.rpartition(":")[0] + "@sha256:") and len(_builds(aws_settings)) == 1


def test_the_decision_endpoint_runs_the_digest_the_build_exported(state, aws_settings, fake_gguf):
    """The model's Image is the image by digest; an endpoint whose instances resolved another digest (DescribeEndpoint's
    DeployedImages, which AWS answers and moto does not) is refused, and so is a model under the run's name with
    another image."""
    from semif_lib import workshop
    from semif_lib.aws import deployment, images
    from semif_lib.aws.clients import make_client, make_session
    from semif_lib.aws.errors import ResourceFailedError

    workshop.package_model(fake_gguf, settings=aws_settings, state=state, progress=False)
    uri = workshop.build_adapter_image(settings=aws_settings, state=state, log=lambda _: None)
    name = workshop.deploy_decision_model(settings=aws_settings, state=state)
    sm = make_client("sagemaker", aws_settings)
    config = sm.describe_endpoint_config(EndpointConfigName=sm.describe_endpoint(EndpointName=name)["EndpointConfigName"])
    assert sm.describe_model(ModelName=config["ProductionVariants"][0]["ModelName"])["PrimaryContainer"]["Image"] == uri

    other = uri.rpartition("@")[0] + "@sha256:" + "9" * 64

    def resolved_elsewhere(parsed, **_):
        for variant in parsed.get("ProductionVariants", []):
            variant["DeployedImages"] = [{"SpecifiedImage": uri, "ResolvedImage": other}]

    make_session(aws_settings).events.register("after-call.sagemaker.DescribeEndpoint", resolved_elsewhere)
    with pytest.raises(ResourceFailedError, match=re.escape(f"variant AllTraffic runs {other}, not {uri}")):
        workshop.deploy_decision_model(settings=aws_settings, state=state)
    images.check_deployed_images({"ProductionVariants": [{"DeployedImages": [{"ResolvedImage": uri}]}]}, uri)

    planned = deployment.plan_decision_endpoint(aws_settings.model_copy(update={"adapter_image_uri": other}), state)[0].request
    sm.create_model(ModelName=planned["ModelName"], ExecutionRoleArn="arn:aws:iam::123456789012:role/x",
                    PrimaryContainer={**planned["PrimaryContainer"], "Image": uri})
    with pytest.raises(ResourceFailedError, match=re.escape(f"model {planned['ModelName']} exists with image {uri}, not {other}")):
        workshop.deploy_decision_model(settings=aws_settings.model_copy(update={"adapter_image_uri": other}), state=state)


# ------------------------------------------------------------------ an event team's image: by digest only
EVENT_IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/semif-adapter-event"


def test_a_prebuilt_image_is_taken_by_digest_only(monkeypatch, tmp_path):
    """SEMIF_ADAPTER_IMAGE_URI names an image by digest; a tag is refused in one line that gives the command reading the
    digest it names, and the reference to set instead."""
    from semif_lib.errors import InvalidRequestError
    from semif_lib.settings import load_settings

    monkeypatch.setenv("SEMIF_SETTINGS_FILE", str(tmp_path / "none.env"))
    pinned = f"{EVENT_IMAGE}@sha256:{'0123456789abcdef' * 4}"
    monkeypatch.setenv("SEMIF_ADAPTER_IMAGE_URI", pinned)
    assert load_settings().adapter_image_uri == pinned
    monkeypatch.setenv("SEMIF_ADAPTER_IMAGE_URI", f"{EVENT_IMAGE}:cpu-0123456789ab")
    with pytest.raises(InvalidRequestError) as refused:
        load_settings()
    line = str(refused.value)
    assert "\n" not in line and line.startswith(f"SEMIF_ADAPTER_IMAGE_URI='{EVENT_IMAGE}:cpu-0123456789ab'")
    assert ("read the digest with `aws ecr describe-images --region us-east-1 --registry-id 111122223333 --repository-name "
            "semif-adapter-event --image-ids imageTag=cpu-0123456789ab --query 'imageDetails[0].imageDigest' --output text` "
            f"and use {EVENT_IMAGE}@<that digest>") in line
    for given in (EVENT_IMAGE, f"{EVENT_IMAGE}@sha256:abc", f"{EVENT_IMAGE}:cpu@sha256:{'0' * 64}x"):
        monkeypatch.setenv("SEMIF_ADAPTER_IMAGE_URI", given)
        with pytest.raises(InvalidRequestError, match="is not an image by digest"):
            load_settings()


def test_a_prebuilt_image_skips_the_build_by_digest_only(state, aws_settings):
    """A settings object made without validation (model_copy) is checked again where the image is used."""
    from semif_lib.aws import imagebuild, images

    pinned = f"{EVENT_IMAGE}@sha256:{'0' * 64}"
    lines: list[str] = []
    assert imagebuild.build_adapter_image(aws_settings.model_copy(update={"adapter_image_uri": pinned}), state, log=lines.append) == pinned
    assert lines == [f"{pinned}: pre-built (SEMIF_ADAPTER_IMAGE_URI), by digest: no build"]
    tagged = aws_settings.model_copy(update={"adapter_image_uri": f"{EVENT_IMAGE}:cpu-1"})
    for use in (lambda: imagebuild.build_adapter_image(tagged, state), lambda: images.decision_image(tagged, state)):
        with pytest.raises(ValueError, match="imageTag=cpu-1"):
            use()


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
    from semif_lib.aws import imagebuild, images
    from semif_lib.aws.errors import ResourceFailedError

    tag = _this_runs_tag(state, aws_settings)
    imagebuild.ensure_ecr_repository("semif-adapter-t3st01", aws_settings, state)
    digest = _put_image(aws_settings, tag, "sha256:" + "1" * 64, OCI_MANIFEST)
    state.set("adapter_images", {tag: digest})  # as if this run's build had pushed it (the buildspec would have failed)
    refusal = re.escape(f"was pushed as {OCI_MANIFEST}; SageMaker's CreateModel takes only {images.DOCKER_MANIFEST}.")
    with pytest.raises(ResourceFailedError, match=refusal + ".*--provenance=false --sbom=false"):
        imagebuild.build_adapter_image(settings=aws_settings, state=state, log=lambda _: None)
    images.check_manifest("x", {"imageDigest": digest, "imageManifestMediaType": images.DOCKER_MANIFEST}, digest)  # it takes that
    with pytest.raises(ResourceFailedError, match="x: ECR has no such image"):
        images.check_manifest("x", None, digest)


PUSHED = "sha256:" + "ab" * 32  # the digest the stand-in docker push reports


STAND_IN_DOCKER = """#!/bin/bash
echo "docker $*" >> "$CALLS"
case "$1 $2" in
  "buildx version") [ "$BUILDX" != none ] || exit 1 ;;
  "buildx build") if [ "$3" = --help ]; then [ "$BUILDX" = new ] && echo "      --provenance string   Shorthand"; echo "  -t, --tag"; fi ;;
esac
if [ "$1" = push ]; then
  [ "$PUSH" = fails ] && { echo "tag invalid: The image tag '${2##*:}' already exists and cannot be overwritten" >&2; exit 1; }
  echo "${2##*:}: digest: $PUSHED size: 1234"
fi
exit 0
"""
STAND_IN_AWS = """#!/bin/bash
echo "aws $*" >> "$CALLS"
[ "$2" = describe-images ] && printf '%s\\t%s\\n' "$HELD_DIGEST" "$MEDIA_TYPE"
exit 0
"""


def _run_buildspec(tmp_path, buildx: str, media_type: str, held: str = PUSHED, push: str = "works") -> tuple[int, list[str], str, str]:
    """container/buildspec.yml's pre_build and build commands, in order as CodeBuild runs them: in one shell of the
    buildspec's `env: shell` (a variable one command exports is there for the next, and for `exported-variables`), a
    failing command failing the phase, with docker and aws stand-ins that record their calls (ECR holding `held` under the
    tag, as `media_type`); returns (exit status, calls, output, the exported IMAGE_DIGEST)."""
    import shlex
    import subprocess

    import yaml

    from semif_lib.paths import repo_root

    spec = yaml.safe_load((repo_root() / "container" / "buildspec.yml").read_text())
    assert spec["env"]["shell"] == "bash" and spec["env"]["exported-variables"] == ["IMAGE_DIGEST"]
    tools = tmp_path / "bin"
    tools.mkdir()
    for name, body in {"docker": STAND_IN_DOCKER, "aws": STAND_IN_AWS}.items():
        (tools / name).write_text(body)
        (tools / name).chmod(0o755)
    calls = tmp_path / "calls.log"
    env = {"PATH": f"{tools}:/usr/bin:/bin", "CALLS": str(calls), "BUILDX": buildx, "MEDIA_TYPE": media_type, "HELD_DIGEST": held,
           "PUSHED": PUSHED, "PUSH": push, **spec["env"]["variables"],
           "AWS_DEFAULT_REGION": "us-east-1", "IMAGE_TAG": "cpu-0123456789ab",
           "BASE_IMAGE": "763104351884.dkr.ecr.us-east-1.amazonaws.com/x",
           "IMAGE_REPO_URI": "123456789012.dkr.ecr.us-east-1.amazonaws.com/semif-adapter-r1",
           "DLC_REGISTRY": "763104351884.dkr.ecr.us-east-1.amazonaws.com"}
    commands = spec["phases"]["pre_build"]["commands"] + spec["phases"]["build"]["commands"]
    script = "".join(f"eval {shlex.quote(command)} || exit $?\n" for command in commands)
    script += 'echo "exported IMAGE_DIGEST=$IMAGE_DIGEST"\n'
    done = subprocess.run([spec["env"]["shell"], "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    output = done.stdout + done.stderr
    exported = next((line.partition("=")[2] for line in done.stdout.splitlines() if line.startswith("exported IMAGE_DIGEST=")), "")
    return done.returncode, calls.read_text().splitlines(), output, exported


@pytest.mark.parametrize(("buildx", "flags"), [("new", True), ("old", False), ("none", False)],
                         ids=["buildx-with-provenance", "buildx-without-the-flags", "no-buildx"])
def test_the_buildspec_builds_without_attestations_where_docker_can(tmp_path, buildx, flags):
    """Where `docker buildx build` knows --provenance, the build turns provenance and SBOM off and exports Docker media
    types; an older docker gets the classic builder, which makes neither attestations nor OCI media types (and would
    refuse the flags). The digest the push reported is exported, once ECR holds it under the tag."""
    status, calls, _, exported = _run_buildspec(tmp_path, buildx, "application/vnd.docker.distribution.manifest.v2+json")
    assert status == 0 and exported == PUSHED
    built = [c for c in calls if c.startswith(("docker build ", "docker buildx build ")) and "--help" not in c]
    assert len(built) == 1 and built[0].endswith("-t semif-adapter:cpu-0123456789ab .")
    assert built[0].startswith("docker buildx build --provenance=false --sbom=false --output type=docker -f container/Dockerfile")  \
        if flags else built[0].startswith("docker build -f container/Dockerfile --build-arg BASE_IMAGE=")
    assert calls[-2:] == ["docker push 123456789012.dkr.ecr.us-east-1.amazonaws.com/semif-adapter-r1:cpu-0123456789ab",
                          "aws ecr describe-images --region us-east-1 --repository-name semif-adapter-r1 --image-ids "
                          "imageTag=cpu-0123456789ab --query imageDetails[0].[imageDigest,imageManifestMediaType] --output text"]


@pytest.mark.parametrize("media_type", [OCI_MANIFEST, "application/vnd.oci.image.index.v1+json",
                                        "application/vnd.docker.distribution.manifest.list.v2+json"])
def test_the_buildspec_fails_the_build_when_ecr_holds_a_manifest_sagemaker_refuses(tmp_path, media_type):
    status, _, output, _ = _run_buildspec(tmp_path, "new", media_type)
    assert status != 0
    assert (f"FATAL: 123456789012.dkr.ecr.us-east-1.amazonaws.com/semif-adapter-r1:cpu-0123456789ab was pushed as {media_type}; "
            "SageMaker's CreateModel takes only application/vnd.docker.distribution.manifest.v2+json") in output


def test_the_buildspec_fails_the_build_when_the_tag_holds_another_digest_or_the_push_fails(tmp_path):
    """ECR holding another image under the tag than the push reported (a repository whose tags move): the build fails
    naming both. A push ECR refuses (a tag an IMMUTABLE repository already holds) fails the build through `tee`."""
    other = "sha256:" + "cd" * 32
    status, _, output, _ = _run_buildspec(tmp_path, "new", "application/vnd.docker.distribution.manifest.v2+json", held=other)
    assert status != 0
    assert (f"FATAL: 123456789012.dkr.ecr.us-east-1.amazonaws.com/semif-adapter-r1:cpu-0123456789ab is {other} in ECR, not {PUSHED}: "
            "the image pushed cannot be named by digest") in output
    (tmp_path / "again").mkdir()
    status, calls, output, exported = _run_buildspec(tmp_path / "again", "new", "application/vnd.docker.distribution.manifest.v2+json",
                                                     push="fails")
    assert status != 0 and "already exists and cannot be overwritten" in output and not exported
    assert calls[-1].startswith("docker push "), "nothing after a failed push"
