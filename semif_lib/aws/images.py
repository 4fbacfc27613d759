"""Images by digest: what ECR holds under a tag or a digest, whether SageMaker takes it, which image a decision endpoint
runs, and whether an endpoint runs the image it was given.

A tag names whatever was pushed under it last: anyone who may push to the repository, or delete it and make it again
with mutable tags, can put another image there. So the adapter image is deployed as `<repository uri>@sha256:<64 hex>`
(docs/aws.md, "Images by digest"): `imagebuild` returns the digest its build exported, `SEMIF_ADAPTER_IMAGE_URI` is
taken by digest only (`settings.require_image_digest`), and a deploy checks the digest its endpoint resolved.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..registry import WorkshopState
from ..settings import IMAGE_BY_DIGEST, Settings, require_image_digest
from .clients import make_client
from .errors import ResourceFailedError

__all__ = ["BUILD_STEP", "DOCKER_MANIFEST", "check_deployed_images", "check_manifest", "check_model_image", "decision_image",
           "image_details"]

BUILD_STEP = "03_build_adapter_image (workshop.build_adapter_image)"

# The only image manifest SageMaker's CreateModel takes: it refuses OCI manifests and indexes ("Unsupported manifest
# media type application/vnd.oci.image.manifest.v1+json"; aws/amazon-sagemaker-feedback#180), which Docker 29 with the
# containerd image store pushes, and which buildx's provenance attestations turn any image into.
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"


def image_details(repository: str, image_id: dict[str, str], settings: Settings) -> dict[str, Any] | None:
    """DescribeImages for one `{"imageTag": ...}` or `{"imageDigest": ...}`; None when there is no such image."""
    ecr = make_client("ecr", settings)
    try:
        details = ecr.describe_images(repositoryName=repository, imageIds=[image_id])["imageDetails"]
    except (ecr.exceptions.ImageNotFoundException, ecr.exceptions.RepositoryNotFoundException):
        return None
    return details[0] if details else None


def check_manifest(image_uri: str, details: dict[str, Any] | None, digest: str) -> None:
    """Refuse, naming it, an image that is not `digest` (what this run built), or whose manifest SageMaker would refuse,
    before an endpoint is created from it (container/buildspec.yml fails the build on the same checks; this catches an
    image replaced or pushed some other way). `details`: DescribeImages' answer for the tag or digest looked up."""
    if details is None:
        raise ResourceFailedError(f"{image_uri}: ECR has no such image (deleted since it was built?): run this step again")
    if details.get("imageDigest") != digest:
        raise ResourceFailedError(
            f"{image_uri}: ECR holds {details.get('imageDigest')} there, not {digest}, the image this run built: it was replaced. "
            f"Delete the repository (aws ecr delete-repository --repository-name {details.get('repositoryName')} --force) and "
            "run this step again")
    media = details.get("imageManifestMediaType")
    if media and media != DOCKER_MANIFEST:
        raise ResourceFailedError(
            f"{image_uri} was pushed as {media}; SageMaker's CreateModel takes only {DOCKER_MANIFEST}. Delete that image "
            "(aws ecr batch-delete-image) and build it again with docker build --provenance=false --sbom=false "
            "(container/buildspec.yml passes them when docker buildx is there)")


def decision_image(settings: Settings, state: WorkshopState) -> str:
    """The adapter image the decision endpoints run, by digest only: `SEMIF_ADAPTER_IMAGE_URI`, else the one notebook 03
    built and recorded (`image_uri`). A tag is refused: what it names can change between the build and the deploy."""
    if settings.adapter_image_uri:
        return require_image_digest(settings.adapter_image_uri)  # a settings object made without validation too
    image = str(state.require("image_uri", BUILD_STEP))
    if not IMAGE_BY_DIGEST.match(image):
        raise ResourceFailedError(f"the recorded adapter image {image} is not named by digest (a build not waited for, or a state "
                                  f"file from before images were): run {BUILD_STEP} again, to its end")
    return image


def check_model_image(name: str, found: str | None, image: str) -> None:
    """Refuse to reuse model `name` (named by its spec's hash) when its image is not the planned one: not a run's model."""
    if found != image:
        raise ResourceFailedError(f"model {name} exists with image {found}, not {image}: it was not made by this run. Delete it "
                                  f"(aws sagemaker delete-model --model-name {name}) and deploy again")


def check_deployed_images(desc: Mapping[str, Any], image_uri: str) -> None:
    """Refuse an endpoint whose instances run another image than `image_uri` (when it names a digest): DescribeEndpoint's
    `ProductionVariants[].DeployedImages[].ResolvedImage` is the digest each variant's image resolved to (moto answers
    none, AWS does once instances run)."""
    if "@sha256:" not in image_uri:
        return  # a floating DLC tag (its digest could not be read): nothing fixed to compare with
    digest = image_uri.rpartition("@")[2]
    for variant in desc.get("ProductionVariants") or []:
        for deployed in variant.get("DeployedImages") or []:
            resolved = deployed.get("ResolvedImage") or ""
            if resolved and resolved.rpartition("@")[2] != digest:
                raise ResourceFailedError(
                    f"endpoint {desc.get('EndpointName')}: variant {variant.get('VariantName')} runs {resolved}, not {image_uri}, the "
                    "image deployed (its model names that digest): do not send it requests; delete it (cleanup) and deploy again")
