"""The DLC tag pinned for a run: AWS moves `server-sagemaker-cpu-v1` to newer llama.cpp builds, so the text
endpoint (02) and the adapter's base (03) take one digest, read once and recorded in the state file.

moto holds the DLC's repository in the same backend, under the DLC's registry id (moto keeps `registryId` on a
repository), so BatchGetImage with that registry id answers as the DLC registry would.
"""

from __future__ import annotations

import json

from support.aws import denied_on_the_dlc

DLC = "763104351884"


def _push(ecr, config_digest: str) -> str:
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                           "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "size": 1, "digest": config_digest},
                           "layers": [{"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip", "size": 1,
                                       "digest": config_digest}]})
    return ecr.put_image(registryId=DLC, repositoryName="llama-cpp", imageManifest=manifest,
                         imageTag="server-sagemaker-cpu-v1")["image"]["imageId"]["imageDigest"]


def test_both_paths_run_the_digest_the_tag_named_when_the_run_began(state, aws_settings, fake_gguf):
    from semif_lib import workshop
    from semif_lib.aws.clients import make_client
    from semif_lib.aws.imagebuild import adapter_image_tag, build_source_zip

    ecr = make_client("ecr", aws_settings)  # the aws fixture publishes the DLC's repositories, as AWS does
    first = _push(ecr, "sha256:" + "1" * 64)
    workshop.package_model(fake_gguf, settings=aws_settings, state=state, progress=False)
    name = workshop.deploy_text_model(settings=aws_settings, state=state)
    pinned = f"{DLC}.dkr.ecr.us-east-1.amazonaws.com/llama-cpp@{first}"
    sagemaker = make_client("sagemaker", aws_settings)
    config = sagemaker.describe_endpoint_config(EndpointConfigName=sagemaker.describe_endpoint(EndpointName=name)["EndpointConfigName"])
    assert sagemaker.describe_model(ModelName=config["ProductionVariants"][0]["ModelName"])["PrimaryContainer"]["Image"] == pinned

    moved = _push(ecr, "sha256:" + "2" * 64)  # AWS moves the tag between notebooks 02 and 03
    assert moved != first
    uri = workshop.build_adapter_image(settings=aws_settings, state=state, log=lambda _: None)
    project = make_client("codebuild", aws_settings).batch_get_projects(names=["semif-adapter-build-t3st01"])["projects"][0]
    assert {v["name"]: v["value"] for v in project["environment"]["environmentVariables"]}["BASE_IMAGE"] == pinned
    assert uri.endswith("@" + state.get("adapter_images")[adapter_image_tag("cpu", build_source_zip()[1], pinned)])
    assert adapter_image_tag("cpu", "s", pinned) != adapter_image_tag("cpu", "s", pinned.replace(first, moved))


def test_a_region_where_the_image_is_not_published_stops_instead_of_floating(state, aws_settings):
    """eu-west-1 has the DLC registry's account but (on this moto) no llama-cpp image: the run stops naming the region
    and what to do, instead of recording a floating tag CreateModel or CodeBuild would fail on later."""
    import pytest

    from semif_lib.aws.dlc import DlcRegionError, pin_dlc_image

    settings = aws_settings.model_copy(update={"aws_region": "eu-west-1"})
    with pytest.raises(DlcRegionError, match=r"llama-cpp:server-sagemaker-cpu-v1 is not published in region eu-west-1 "
                                             r"\(RepositoryNotFoundException\).*SEMIF_DLC_IMAGE"):
        pin_dlc_image(settings, state, print)
    assert state.get("dlc_image_cpu") is None


def test_a_denied_manifest_read_is_said_and_the_tag_kept_for_both_steps(state, aws_settings, tmp_path):
    """ecr:BatchGetImage denied by policy (an SCP or a narrow role, here an identity policy evaluated on moto): one warning
    naming the fix, and the tag recorded once for both steps."""
    from semif_lib.aws.dlc import pin_dlc_image

    lines: list[str] = []
    with denied_on_the_dlc(tmp_path, "ecr:BatchGetImage"):
        uri = pin_dlc_image(aws_settings, state, lines.append)
    assert uri == f"{DLC}.dkr.ecr.us-east-1.amazonaws.com/llama-cpp:server-sagemaker-cpu-v1"
    assert len(lines) == 1 and lines[0].startswith(f"warning: cannot pin {uri} to a digest (AccessDeniedException)")
    assert "SEMIF_DLC_IMAGE" in lines[0]
    assert pin_dlc_image(aws_settings, state, lines.append) == uri and len(lines) == 1, "said once, then read from the state"


def test_an_event_teams_pinned_digest_is_used_as_given(state, aws_settings):
    """SEMIF_DLC_IMAGE: the digest `semif dlc check` printed; no registry read, and both steps take it."""
    import pytest
    from pydantic import ValidationError

    from semif_lib.aws.dlc import pin_dlc_image

    pinned = f"{DLC}.dkr.ecr.us-east-1.amazonaws.com/llama-cpp@sha256:" + "a" * 64
    settings = aws_settings.model_copy(update={"dlc_image": pinned, "aws_region": "eu-west-1"})  # not even a published region
    assert pin_dlc_image(settings, state, print) == pinned == state.get("dlc_image_cpu")
    from semif_lib.settings import Settings

    with pytest.raises(ValidationError, match="dlc_image"):
        Settings(dlc_image=f"{DLC}.dkr.ecr.us-east-1.amazonaws.com/llama-cpp:server-sagemaker-cpu-v1")  # a tag is not a pin


def test_dlc_check_reads_the_digest_and_says_what_it_cannot_know(aws, aws_settings, tmp_path):
    """The tag's digest is read; the image config is not (ecr:GetDownloadUrlForLayer denied here; moto does not implement
    it, so the date path itself is checked only on a real account), so the build is unknown and said so, with the
    command that reads it, and no pin is offered."""
    from semif_lib.aws.clients import make_client
    from semif_lib.aws.dlc import check_dlc

    images = make_client("ecr", aws_settings).batch_get_image(registryId=DLC, repositoryName="llama-cpp",
                                                            imageIds=[{"imageTag": "server-sagemaker-cpu-v1"}])["images"]
    digest = images[0]["imageId"]["imageDigest"]
    with denied_on_the_dlc(tmp_path, "ecr:GetDownloadUrlForLayer"):
        result = check_dlc(aws_settings)
    assert result.pinned == f"{DLC}.dkr.ecr.us-east-1.amazonaws.com/llama-cpp@{digest}"
    assert result.build is None and result.binding is None
    text = "\n".join(result.lines())
    assert "build    unknown: run `semif dlc check --run`" in text and "creation date could not be read" in text
    assert "v0.4.1 = b10964 from 2026-09-25, b10433 = b10433 from 2026-08-21" in text


def test_dlc_check_infers_a_release_from_the_date_and_names_the_binding():
    """What the lines say for a date after each move, for an unverified build, and for a reading."""
    from semif_lib.aws.dlc import DlcCheck
    from semif_lib.llamabuilds import release_at

    assert release_at("2026-10-02T11:00:00") .build == 10964 and release_at("2026-09-01").build == 10433
    assert release_at("2026-08-01") is None
    inferred = "\n".join(DlcCheck("img:tag", "img@sha256:1", "2026-10-02T11:00:00", 10964, False, "0.3.36").lines())
    assert "b10964 (v0.4.1, the DLC's release of 2026-09-25), inferred from its date only" in inferred
    assert "binding  llama-cpp-python 0.3.36" in inferred and "pin it   SEMIF_DLC_IMAGE=img@sha256:1" in inferred
    unknown = "\n".join(DlcCheck("img:tag", "img@sha256:2", None, 11200, True, None).lines())
    assert "b11200, read from its llama-server --version" in unknown and "none verified for b11200" in unknown
    assert "pin it" not in unknown and "SEMIF_ADAPTER_IMAGE_URI" in unknown


def test_semif_dlc_check_on_a_region_without_the_image_is_one_line(aws, capsys):
    from semif_lib.cli import main

    assert main(["dlc", "check", "--region", "eu-west-1"]) == 2
    assert "is not published in region eu-west-1" in capsys.readouterr().err
