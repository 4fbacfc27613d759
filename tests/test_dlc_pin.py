"""The DLC tag pinned for a run (issue 22): AWS moves `server-sagemaker-cpu-v1` to newer llama.cpp builds, so the text
endpoint (02) and the adapter's base (03) take one digest, read once and recorded in the state file.

moto holds the DLC's repository in the same backend, under the DLC's registry id (moto keeps `registryId` on a
repository), so BatchGetImage with that registry id answers as the DLC registry would.
"""

from __future__ import annotations

import json

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

    ecr = make_client("ecr", aws_settings)
    ecr.create_repository(repositoryName="llama-cpp", registryId=DLC)
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
    assert uri.endswith(":" + adapter_image_tag("cpu", build_source_zip()[1], pinned))
    assert adapter_image_tag("cpu", "s", pinned) != adapter_image_tag("cpu", "s", pinned.replace(first, moved))


def test_an_unreadable_tag_is_said_and_kept_for_both_steps(state, aws_settings):
    """No DLC repository to read (here: moto has none; on AWS: ecr:BatchGetImage denied): a warning, and the tag recorded."""
    from semif_lib.aws.dlc import pin_dlc_image

    lines: list[str] = []
    uri = pin_dlc_image(aws_settings, state, lines.append)
    assert uri == f"{DLC}.dkr.ecr.us-east-1.amazonaws.com/llama-cpp:server-sagemaker-cpu-v1"
    assert len(lines) == 1 and lines[0].startswith(f"warning: cannot pin {uri} to a digest")
    assert pin_dlc_image(aws_settings, state, lines.append) == uri and len(lines) == 1, "said once, then read from the state"
