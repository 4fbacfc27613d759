"""The DLC's whole region table: every region's registry account and variant, China's domain, and an
early refusal, naming the region, where the DLC is not published (moto, two regions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.aws import publish_dlc_images

# aws/deep-learning-containers docs/reference/region_availability.md: regions with their own registry account
OWN_ACCOUNTS = {
    "af-south-1": "626614931356", "ap-east-1": "871362719292", "ap-east-2": "975050140332", "ap-south-2": "772153158452",
    "ap-southeast-3": "907027046896", "ap-southeast-4": "457447274322", "ap-southeast-5": "550225433462",
    "ap-southeast-6": "633930458069", "ap-southeast-7": "590183813437", "ap-northeast-3": "364406365360",
    "ca-west-1": "204538143572", "eu-south-1": "692866216735", "eu-south-2": "503227376785", "eu-central-2": "380420809688",
    "il-central-1": "780543022126", "mx-central-1": "637423239942", "me-south-1": "217643126080", "me-west-1": "124382933778",
    "me-central-1": "914824155844", "cn-north-1": "727897471807", "cn-northwest-1": "727897471807",
}


def test_the_table_has_every_dlc_region():
    from semif_lib.aws.dlc import DLC_ACCOUNTS

    assert len(DLC_ACCOUNTS) == 37
    assert {r: a for r, a in DLC_ACCOUNTS.items() if a != "763104351884"} == OWN_ACCOUNTS
    source = (Path(__file__).resolve().parents[1] / "semif_lib" / "aws" / "dlc.py").read_text()
    assert "docs/reference/region_availability.md" in source, "the table names its source"


@pytest.mark.parametrize(("region", "variant", "uri"), [
    ("us-east-1", "cpu", "763104351884.dkr.ecr.us-east-1.amazonaws.com/llama-cpp:server-sagemaker-cpu-v1"),
    ("eu-west-1", "cuda", "763104351884.dkr.ecr.eu-west-1.amazonaws.com/llama-cpp:server-sagemaker-cuda-v1"),
    ("us-west-2", "arm64", "763104351884.dkr.ecr.us-west-2.amazonaws.com/llama-cpp-arm64:server-sagemaker-cpu-v1"),
    ("af-south-1", "cpu", "626614931356.dkr.ecr.af-south-1.amazonaws.com/llama-cpp:server-sagemaker-cpu-v1"),
    ("eu-south-1", "cuda", "692866216735.dkr.ecr.eu-south-1.amazonaws.com/llama-cpp:server-sagemaker-cuda-v1"),
    ("me-south-1", "arm64", "217643126080.dkr.ecr.me-south-1.amazonaws.com/llama-cpp-arm64:server-sagemaker-cpu-v1"),
    ("ap-northeast-3", "cpu", "364406365360.dkr.ecr.ap-northeast-3.amazonaws.com/llama-cpp:server-sagemaker-cpu-v1"),
    ("me-central-1", "cuda", "914824155844.dkr.ecr.me-central-1.amazonaws.com/llama-cpp:server-sagemaker-cuda-v1"),
    ("il-central-1", "arm64", "780543022126.dkr.ecr.il-central-1.amazonaws.com/llama-cpp-arm64:server-sagemaker-cpu-v1"),
    ("cn-north-1", "cpu", "727897471807.dkr.ecr.cn-north-1.amazonaws.com.cn/llama-cpp:server-sagemaker-cpu-v1"),
    ("cn-northwest-1", "cuda", "727897471807.dkr.ecr.cn-northwest-1.amazonaws.com.cn/llama-cpp:server-sagemaker-cuda-v1"),
])
def test_each_region_and_variant_uses_its_registry(region, variant, uri):
    from semif_lib.aws.dlc import resolve_dlc_image_uri

    assert resolve_dlc_image_uri(region, variant) == uri


def test_an_unknown_variant_or_region_is_refused():
    from semif_lib.aws.dlc import resolve_dlc_image_uri

    with pytest.raises(ValueError, match="variant"):
        resolve_dlc_image_uri("us-east-1", "tpu")
    with pytest.raises(ValueError, match="region"):
        resolve_dlc_image_uri("moon-1", "cpu")


@pytest.mark.parametrize("region", ["us-gov-west-1", "eu-central-3", "us-isob-east-1"])
def test_a_region_without_the_dlc_is_refused_by_name(region):
    from semif_lib.aws.dlc import resolve_dlc_image_uri
    from semif_lib.aws.errors import AwsSetupError

    with pytest.raises(AwsSetupError, match=f"not published in region {region}"):
        resolve_dlc_image_uri(region)


def test_the_sdk_table_agrees():
    """sagemaker-core ships its own table for these images: same account in every region both list."""
    resources = pytest.importorskip("importlib.resources")
    from semif_lib.aws.dlc import DLC_ACCOUNTS

    pytest.importorskip("sagemaker.core")
    for name in ("llama-cpp.json", "llama-cpp-arm64.json"):
        config = json.loads((resources.files("sagemaker.core") / "image_uri_config" / name).read_text())
        registries = config["versions"]["1"]["registries"]
        assert {r: registries[r] for r in DLC_ACCOUNTS} == DLC_ACCOUNTS, name


def _settings(aws_settings, region):
    return aws_settings.model_copy(update={"aws_region": region, "state_file": aws_settings.state_file.with_name(f"{region}.json")})


@pytest.mark.parametrize(("region", "account"), [("ap-northeast-3", "364406365360"), ("eu-south-2", "503227376785")])
def test_text_endpoint_and_build_use_the_regions_registry(aws, aws_settings, fake_gguf, region, account):
    """In an opt-in region CreateModel, the CodeBuild pull and the IAM policies all name that region's DLC account."""
    from semif_lib import workshop
    from semif_lib.aws.clients import make_client

    settings = _settings(aws_settings, region)
    digest = publish_dlc_images(make_client("ecr", settings), account)["cpu"]  # published there, under that region's account
    st = workshop.load_state(settings)
    workshop.package_model(fake_gguf, settings=settings, state=st, progress=False)
    name = workshop.deploy_text_model(settings=settings, state=st)
    sm = make_client("sagemaker", settings)
    config = sm.describe_endpoint_config(EndpointConfigName=sm.describe_endpoint(EndpointName=name)["EndpointConfigName"])
    image = sm.describe_model(ModelName=config["ProductionVariants"][0]["ModelName"])["PrimaryContainer"]["Image"]
    assert image == f"{account}.dkr.ecr.{region}.amazonaws.com/llama-cpp@{digest}"  # the tag, pinned to its digest for the run
    workshop.build_adapter_image(settings=settings, state=st, log=lambda _: None)
    project = make_client("codebuild", settings).batch_get_projects(names=[st.name("adapter-build")])["projects"][0]
    env = {v["name"]: v["value"] for v in project["environment"]["environmentVariables"]}
    assert env["DLC_REGISTRY"] == f"{account}.dkr.ecr.{region}.amazonaws.com" and env["BASE_IMAGE"].startswith(env["DLC_REGISTRY"])
    iam = make_client("iam", settings)
    for role in (st.name("sagemaker"), st.name("codebuild")):
        policy = json.dumps(iam.get_role_policy(RoleName=role, PolicyName="semif-least-privilege")["PolicyDocument"])
        assert f"arn:aws:ecr:{region}:{account}:repository/llama-cpp" in policy and "763104351884" not in policy


@pytest.mark.parametrize("region", ["us-gov-west-1", "eu-central-3"])
def test_unpublished_region_fails_before_anything_is_created(aws, aws_settings, fake_gguf, region):
    from semif_lib import workshop
    from semif_lib.aws.clients import make_client
    from semif_lib.aws.errors import AwsSetupError

    settings = _settings(aws_settings, region)
    st = workshop.load_state(settings)
    for step in (lambda: workshop.package_model(fake_gguf, settings=settings, state=st, progress=False),
                 lambda: workshop.check_permissions(settings=settings, state=st, log=lambda _: None),
                 lambda: workshop.build_adapter_image(settings=settings, state=st, log=lambda _: None)):
        with pytest.raises(AwsSetupError, match=f"region {region}"):
            step()
    assert st.resources == []
    assert make_client("s3", _settings(aws_settings, "us-east-1")).list_buckets()["Buckets"] == []


def test_the_container_docs_cite_the_dlcs_current_build_files():
    """The DLC's files are Dockerfile.cpu/.gpu/.arm64 with Python 3.12, and AWS moves its tags: they carry v0.4.1 = b10964
    since 2026-09-25, b10433 before (read in aws/deep-learning-containers, so this checks the docs against the recorded
    facts, not against AWS)."""
    from semif_lib.aws.dlc import DLC_DOCKERFILES, DLC_LLAMA_CPP_REF
    from semif_lib.llamabuilds import DLC_BUILD

    root = Path(__file__).resolve().parents[1]
    readme = (root / "container" / "README.md").read_text()
    replica = (root / "container" / "replica" / "Dockerfile").read_text()
    for path in DLC_DOCKERFILES.values():
        assert Path(path).name in readme, path
    assert DLC_DOCKERFILES["cpu"] in replica and f"b{DLC_BUILD}" in replica and DLC_LLAMA_CPP_REF in readme
    for stale in ("Dockerfile.amzn2023", "b10075"):
        assert stale not in readme and stale not in replica, stale
    assert "python3.12" in readme and DLC_BUILD == 10964
    table = (root / "docs" / "containers.md").read_text()
    assert "| llama.cpp 1.0.0 (v0.4.1), 2026-09-25: **today** | v0.4.1 = b10964 | 0.3.36" in table
    assert "| llama.cpp 1.0.0 (b10433), 2026-08-21 | b10433 | 0.3.35" in table
