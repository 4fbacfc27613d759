"""The AWS llama.cpp Deep Learning Container: where its image lives in each region, and its names.

A leaf of the AWS wing. The registry account differs by region, and three modules need it:
deployment (the endpoint's image), imagebuild (CodeBuild pulls the DLC as its base) and iamroles
(the policies allow pulling from that account). A region missing from the table is refused
early, with its name, before anything is created.
"""

from __future__ import annotations

import json
import re
import urllib.request
from dataclasses import dataclass
from typing import Callable

from ..containers.runtime import find_container_runtime, read_image_version
from ..llamabuilds import (
    DLC_RELEASES,
    UPSTREAM_RELEASES,
    VERIFIED_BINDINGS,
    BindingMismatchError,
    covering_pair,
    describe_pair,
    follow_release,
    name_build,
    pair_for_build,
    release_at,
)
from ..registry import WorkshopState
from ..settings import Settings
from .clients import get_region, make_client, partition_for
from .errors import DENIED_CODES, AwsSetupError, error_code, is_not_found

__all__ = [
    "DLC_ACCOUNTS",
    "DLC_IMAGES",
    "GPU_INFERENCE_AMI",
    "CUDA_TRANSFORM_VERIFIED",
    "GPU_TRANSFORM_AMI",
    "DlcCheck",
    "DlcRegionError",
    "check_dlc",
    "dlc_account",
    "dlc_registry",
    "pin_dlc_image",
    "read_dlc_digest",
    "require_dlc_region",
    "resolve_dlc_image_uri",
]

# The DLC registry account of every region where the Deep Learning Containers are published.
# Source: aws/deep-learning-containers, docs/reference/region_availability.md ("Deep Learning
# Containers" table, 37 regions, read 2026-11). The SageMaker SDK's own table for this image,
# sagemaker/core/image_uri_config/llama-cpp.json and llama-cpp-arm64.json in sagemaker-core 2.27,
# names the same account for each of these regions (tests/test_dlc.py checks it when the SDK is
# installed); it also lists GovCloud, ISO and EUSC regions that the DLC's table does not, which
# are refused here.
DLC_ACCOUNTS = {
    "us-east-1": "763104351884", "us-east-2": "763104351884", "us-west-1": "763104351884", "us-west-2": "763104351884",
    "ap-south-1": "763104351884", "ap-northeast-1": "763104351884", "ap-northeast-2": "763104351884",
    "ap-southeast-1": "763104351884", "ap-southeast-2": "763104351884", "ca-central-1": "763104351884",
    "eu-central-1": "763104351884", "eu-west-1": "763104351884", "eu-west-2": "763104351884", "eu-west-3": "763104351884",
    "eu-north-1": "763104351884", "sa-east-1": "763104351884",
    "af-south-1": "626614931356",
    "ap-east-1": "871362719292",
    "ap-east-2": "975050140332",
    "ap-south-2": "772153158452",
    "ap-southeast-3": "907027046896",
    "ap-southeast-4": "457447274322",
    "ap-southeast-5": "550225433462",
    "ap-southeast-6": "633930458069",
    "ap-southeast-7": "590183813437",
    "ap-northeast-3": "364406365360",
    "ca-west-1": "204538143572",
    "eu-south-1": "692866216735",
    "eu-south-2": "503227376785",
    "eu-central-2": "380420809688",
    "il-central-1": "780543022126",
    "mx-central-1": "637423239942",
    "me-south-1": "217643126080",
    "me-west-1": "124382933778",
    "me-central-1": "914824155844",
    "cn-north-1": "727897471807",  # China: partition aws-cn, registry domain amazonaws.com.cn
    "cn-northwest-1": "727897471807",
}
# The DLC's build files (aws/deep-learning-containers at e0ecedea, 2026-08-21, the v1.0.0 release, read with the
# search tools): one Dockerfile per variant, stage llama-cpp-sagemaker, then llama.cpp b10433 (LLAMA_CPP_REF below; the
# tags carry v0.4.1 = b10964 since 2026-09-25: llamabuilds.DLC_RELEASES),
# Python 3.12 on Amazon Linux 2023 (CUDA 13.0.2 on cuda). container/README.md and the replica cite these.
DLC_DOCKERFILES = {"cpu": "docker/llama_cpp/Dockerfile.cpu", "cuda": "docker/llama_cpp/Dockerfile.gpu",
                   "arm64": "docker/llama_cpp/Dockerfile.arm64"}
DLC_LLAMA_CPP_REF = "9b05354ec6fb58b4e665e9a39ebc40285c015638"  # b10433
DLC_IMAGES = {  # variant -> (repository, SageMaker tag)
    "cpu": ("llama-cpp", "server-sagemaker-cpu-v1"),
    "cuda": ("llama-cpp", "server-sagemaker-cuda-v1"),
    "arm64": ("llama-cpp-arm64", "server-sagemaker-cpu-v1"),
}
# The DLC's CUDA 13.0.2 runtime wants NVIDIA driver >= 580: the AL2023 GPU inference AMI ships
# driver 580 / CUDA 13.0 natively (the AL2 gpu-3-1 AMI has 550 / CUDA 12.4).
GPU_INFERENCE_AMI = "al2023-ami-sagemaker-inference-gpu-4-1"
# Batch Transform has its own AMI list (botocore: TransformResources.TransformAmiVersion documents only
# al2-ami-sagemaker-batch-gpu-470 and -535, NVIDIA drivers 470 and 535); the newest is driver 535 (no 580 batch AMI yet).
GPU_TRANSFORM_AMI = "al2-ami-sagemaker-batch-gpu-535"
GPU_TRANSFORM_DRIVER = 535
DLC_CUDA = "13.0.2"  # aws/deep-learning-containers docker/llama_cpp/Dockerfile.gpu, CUDA_VERSION
DLC_CUDA_MIN_DRIVER = 580  # CUDA 13.0's minimum driver without forward compatibility
# CUDA 13 on driver 535 needs forward compatibility (the image's cuda-compat package, data-center GPUs only):
# no run has shown a cuda transform job on a GPU, and ggml would fall back to the CPU without a word (the
# adapter now refuses that at start-up). cuda Batch Transform stays refused until a real account shows it works;
# then set this True (and record the job in docs/aws.md).
CUDA_TRANSFORM_VERIFIED = False
REGION_PATTERN = re.compile(r"[a-z]{2}(-gov|-iso[a-z]?|sc)?-[a-z]+-\d")


class DlcRegionError(AwsSetupError, ValueError):
    """The AWS llama.cpp DLC is not published in this region."""

    error_type = "dlc_region"


def require_dlc_region(region: str) -> str:
    """`region` if the DLC is published there; else a `DlcRegionError` naming it and where to go instead."""
    if not REGION_PATTERN.fullmatch(region or ""):
        raise DlcRegionError(f"{region!r} is not an AWS region name")
    if region not in DLC_ACCOUNTS:
        raise DlcRegionError(
            f"the AWS llama.cpp DLC is not published in region {region} (aws/deep-learning-containers "
            "docs/reference/region_availability.md): set AWS_REGION or SEMIF_AWS_REGION to one of "
            f"{', '.join(sorted(DLC_ACCOUNTS))}")
    return region


def dlc_account(region: str) -> str:
    return DLC_ACCOUNTS[require_dlc_region(region)]


def dlc_registry(region: str) -> str:
    """`<account>.dkr.ecr.<region>.amazonaws.com` (`.com.cn` in China): what `docker login` needs."""
    return f"{dlc_account(region)}.dkr.ecr.{region}.{partition_for(region)[1]}"


def resolve_dlc_image_uri(region: str, variant: str = "cpu") -> str:
    """The AWS llama.cpp DLC SageMaker image for `region` and `variant` (cpu, cuda, arm64)."""
    if variant not in DLC_IMAGES:
        raise ValueError(f"variant must be one of {sorted(DLC_IMAGES)}, not {variant!r}")
    repository, tag = DLC_IMAGES[variant]
    return f"{dlc_registry(region)}/{repository}:{tag}"


# The manifest types BatchGetImage may answer with for the DLC (an image index on multi-arch repositories).
MANIFEST_TYPES = ["application/vnd.docker.distribution.manifest.v2+json", "application/vnd.oci.image.manifest.v1+json",
                  "application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json"]


def pin_dlc_image(settings: Settings, state: WorkshopState, log: Callable[[str], None] = print) -> str:
    """The DLC image both paths of this run use: `<registry>/<repository>@sha256:<digest>`, resolved once and recorded.

    The SageMaker tags (`server-sagemaker-cpu-v1`) float: AWS moves them to newer llama.cpp builds (b10433 -> v0.4.1 on
    2026-09-25). The text endpoint (02) and the adapter image's base (03) both take the digest recorded here, so a tag
    moved between the two steps cannot give them different builds; the adapter's binding is then chosen from the build
    that image reports (`llama-server --version`, `serving.llamabinding`). `SEMIF_DLC_IMAGE` (a digest an event team
    checked with `semif dlc check`) is used as given. A region where the image is not published stops here, naming it;
    where the digest cannot be read (ecr:BatchGetImage denied) the tag is recorded instead, with a warning line.
    """
    key = f"dlc_image_{settings.dlc_variant}"
    if state.get(key):
        return str(state.get(key))
    if settings.dlc_image:
        return str(state.set(key, settings.dlc_image))
    digest, why = read_dlc_digest(settings, settings.dlc_variant)
    region = get_region(settings)
    repository, _ = DLC_IMAGES[settings.dlc_variant]
    if digest:
        return str(state.set(key, f"{dlc_registry(region)}/{repository}@{digest}"))
    floating = resolve_dlc_image_uri(region, settings.dlc_variant)
    log(f"warning: cannot pin {floating} to a digest ({why}): the text endpoint and the adapter use the floating tag, "
        "so a tag AWS moves between notebooks 02 and 03 gives them different llama.cpp builds (allow ecr:BatchGetImage on the DLC, "
        "or set SEMIF_DLC_IMAGE to a digest `semif dlc check` printed)")
    return str(state.set(key, floating))


def read_dlc_digest(settings: Settings, variant: str) -> tuple[str | None, str]:
    """(digest of the variant's tag, "") from the DLC registry's manifest; (None, why) when it is denied.

    A repository or tag the registry does not have is a `DlcRegionError`: the image is not published in this region,
    and a floating tag would only fail later, at CreateModel or in CodeBuild's pull."""
    region = get_region(settings)
    repository, tag = DLC_IMAGES[variant]
    try:
        answer = make_client("ecr", settings, max_attempts=2).batch_get_image(
            registryId=dlc_account(region), repositoryName=repository, imageIds=[{"imageTag": tag}], acceptedMediaTypes=MANIFEST_TYPES)
    except Exception as exc:  # botocore ClientError, imported lazily
        if is_not_found(exc):
            raise not_published(region, repository, tag, error_code(exc)) from exc
        if error_code(exc) not in DENIED_CODES:
            raise
        return None, error_code(exc)
    if answer.get("images"):
        return str(answer["images"][0]["imageId"]["imageDigest"]), ""
    raise not_published(region, repository, tag, "; ".join(f.get("failureCode", "") for f in answer.get("failures", [])) or "no image")


def not_published(region: str, repository: str, tag: str, why: str) -> DlcRegionError:
    return DlcRegionError(f"the AWS llama.cpp DLC image {repository}:{tag} is not published in region {region} ({why}): choose a region "
                          "where it is (SEMIF_AWS_REGION), or set SEMIF_DLC_IMAGE to a DLC image pinned by digest that you can pull")


@dataclass(frozen=True)
class DlcCheck:
    """What `semif dlc check` found about the image a run would build on."""

    image: str  # the tag (or the image given)
    pinned: str | None  # <registry>/<repository>@sha256:... where the digest was read
    created: str | None  # the image config's `created`, where it could be read
    build: int | None  # read from the image's llama-server (`--run`) or inferred from `created`
    read: bool  # True: `build` was read from the binary; False: inferred, or unknown
    binding: str | None  # the verified llama-cpp-python for `build`, None where there is none
    notes: tuple[str, ...] = ()
    version: str | None = None  # what its llama-server printed (`0.7.0`): names a release whose build no table records

    def lines(self) -> list[str]:
        out = [f"image    {self.image}"]
        out += [f"digest   {self.pinned}"] if self.pinned else []
        out += [f"created  {self.created}"] if self.created else []
        out.append(self._build_line())
        out += self._binding_lines()
        out += [f"note     {n}" for n in self.notes]
        if self.pinned and self.binding:
            out.append(f"pin it   SEMIF_DLC_IMAGE={self.pinned}")
        out.append(f"known    {', '.join(f'{r.name} = b{r.build} from {r.date}' for r in DLC_RELEASES)} (AWS's changelog); upstream since: "
                   + ", ".join(f"{r.name}{f' = b{r.build}' if r.build else ''}" for r in UPSTREAM_RELEASES))
        return out

    def _build_line(self) -> str:
        """The build and the release it is (the DLC's, upstream's, or the one a nightly follows), and how it was found."""
        if self.build is None and self.version is None:
            return "build    unknown: run `semif dlc check --run` where docker or podman can pull the image (llama-server --version)"
        how = "read from its llama-server --version" if self.read else "inferred from its date only"
        shown = f"b{self.build}" if self.build is not None else f"version {self.version}"
        named = name_build(self.build, self.version)
        if named:
            return f"build    {shown} ({named}), {how}"
        nightly = follow_release(self.build, self.version)
        return f"build    {shown}, {how}" + (f"; {nightly}" if nightly else "")

    def _binding_lines(self) -> list[str]:
        """Which verified pair the adapter image takes for this build, or that none is verified and what to do."""
        pair = covering_pair(self.build)
        if self.binding and pair is not None:
            return [f"binding  llama-cpp-python {self.binding}, the verified pair {describe_pair(pair)}: "
                    "notebook 03's adapter image builds on it"]
        if self.build is None and self.version is None:
            return []
        known = ", ".join(describe_pair(p) for p in VERIFIED_BINDINGS)
        what = f"b{self.build}" if self.build is not None else f"version {self.version} (no build number recorded)"
        return [f"binding  none verified for {what} (verified: {known}): notebook 03's image build will stop; pin a digest of "
                "a known build with SEMIF_DLC_IMAGE, or bring a prebuilt adapter (SEMIF_ADAPTER_IMAGE_URI); `semif dlc newest` "
                "says whether PyPI has a newer build to verify"]


def check_dlc(settings: Settings, image: str | None = None, run: bool = False) -> DlcCheck:
    """Which llama.cpp build the DLC image of this region and variant carries, and whether the adapter binds it.

    For event teams, before attendees arrive: the tag's digest from the registry (ecr:BatchGetImage, the pull right
    every account has on the DLC), the image's creation date from its config where ecr:GetDownloadUrlForLayer allows,
    and, with `run`, the build its own llama-server prints (docker or podman, logged in to the DLC registry). `image`
    (any reference, e.g. a local replica) skips the registry."""
    notes: list[str] = []
    pinned = created = None
    if image is None:
        image, pinned, created = _read_registry(settings, notes)
    build, read, version = _find_build(pinned or image, created, run, notes, settings)
    try:
        binding = pair_for_build(build).binding if build is not None else None
    except BindingMismatchError:
        binding = None
    return DlcCheck(image, pinned, created, build, read, binding, tuple(notes), version)


def _read_registry(settings: Settings, notes: list[str]) -> tuple[str, str | None, str | None]:
    """(the tag or SEMIF_DLC_IMAGE, the reference pinned by digest, the image's creation date) as the registry tells
    them; what could not be read is added to `notes`."""
    image = settings.dlc_image or resolve_dlc_image_uri(get_region(settings), settings.dlc_variant)
    created = None
    if settings.dlc_image:
        pinned = settings.dlc_image
        notes.append("SEMIF_DLC_IMAGE is set: the run uses this digest, not the tag")
    else:
        digest, why = read_dlc_digest(settings, settings.dlc_variant)
        pinned = f"{image.rsplit(':', 1)[0]}@{digest}" if digest else None
        notes += [] if digest else [f"the digest could not be read ({why})"]
    if pinned:
        created, why = read_dlc_created(settings, pinned)
        notes += [why] if why else []
    return image, pinned, created


def _find_build(image: str, created: str | None, run: bool, notes: list[str], settings: Settings) -> tuple[int | None, bool, str | None]:
    """(the llama.cpp build, whether it was read from the image's llama-server, the version it printed): read with `run`
    where a container runtime is here, else inferred from the creation date's DLC release, else unknown (None)."""
    build, read, version = None, False, None
    if run:
        runtime = find_container_runtime(settings)
        if runtime is None:
            notes.append("--run: no docker or podman here")
        else:
            found = read_image_version(runtime, image)
            build, read, version = found.build, True, found.version
    if build is None and version is None and created:
        release = release_at(created)
        build = release.build if release else None
    return build, read, version


def read_dlc_created(settings: Settings, pinned: str) -> tuple[str | None, str]:
    """(the image config's `created`, "") for a pinned DLC image; (None, why) where the config cannot be read."""
    from botocore.exceptions import BotoCoreError, ClientError

    registry, _, rest = pinned.partition("/")
    repository, _, digest = rest.partition("@")
    ecr = make_client("ecr", settings, max_attempts=2)
    try:
        manifest = json.loads(ecr.batch_get_image(registryId=registry.split(".")[0], repositoryName=repository,
                                                  imageIds=[{"imageDigest": digest}], acceptedMediaTypes=MANIFEST_TYPES)
                              ["images"][0]["imageManifest"])
        if "manifests" in manifest:  # an image index: the amd64/arm64 entry is enough for a date
            return None, "the tag names an image index; its per-platform configs are not read here"
        url = ecr.get_download_url_for_layer(registryId=registry.split(".")[0], repositoryName=repository,
                                             layerDigest=manifest["config"]["digest"])["downloadUrl"]
        with urllib.request.urlopen(url, timeout=30) as answer:  # an https URL ECR just signed
            config = json.loads(answer.read(1 << 20))
    except (ClientError, BotoCoreError, OSError, KeyError, IndexError, ValueError) as exc:  # said, not fatal: the date is a hint
        return None, f"the image's creation date could not be read ({error_code(exc) or type(exc).__name__})"
    return str(config.get("created", ""))[:19] or None, ""
