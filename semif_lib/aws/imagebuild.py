"""Build the decision adapter image in the cloud: S3 zip -> CodeBuild (privileged, Docker) -> ECR.

No Docker is needed where the notebook runs. The zip holds `container/` (Dockerfile, buildspec,
entrypoint) and the package source; its sha256 names the image tag, so an unchanged source is
never rebuilt and the repository can keep IMMUTABLE tags.
"""

from __future__ import annotations

import base64
import hashlib
import io
import time
import zipfile
from pathlib import Path
from typing import Any, Callable

from ..containers.runtime import image_exists
from ..paths import repo_root
from ..registry import WorkshopState
from ..settings import Settings, load_settings
from .clients import get_account_id, get_region, in_region, make_client
from .dlc import dlc_account, dlc_registry, pin_dlc_image, require_dlc_region, resolve_dlc_image_uri
from .errors import DENIED_CODES, ResourceFailedError, error_code, is_not_found
from .iamroles import ensure_role
from .packaging import ensure_bucket, sse_args
from .runrecord import settings_and_state
from .waits import retry_while_role_propagates, sleep_with_bar, status_bar

__all__ = [
    "DOCKER_MANIFEST",
    "build_adapter_image",
    "build_source_zip",
    "check_manifest",
    "ensure_codebuild_project",
    "ensure_ecr_repository",
    "start_image_build",
    "wait_for_build",
]

REPO_ROOT = repo_root()
SOURCE_FILES = ("pyproject.toml", "README.md")
SOURCE_DIRS = ("container", "semif_lib")
SKIP_PARTS = {"__pycache__", ".pytest_cache", ".ipynb_checkpoints"}
SKIP_SUFFIXES = {".pyc", ".so", ".log"}
BUILD_IMAGE = "aws/codebuild/amazonlinux-x86_64-standard:5.0"
BUILD_IMAGE_ARM = "aws/codebuild/amazonlinux-aarch64-standard:3.0"
ZIP_EPOCH = (2020, 1, 1, 0, 0, 0)


def build_source_zip(root: Path = REPO_ROOT) -> tuple[bytes, str]:
    """The build context as a reproducible zip (fixed timestamps, sorted names) and its sha256."""
    files: list[Path] = [root / name for name in SOURCE_FILES if (root / name).is_file()]
    for folder in SOURCE_DIRS:
        files += [p for p in (root / folder).rglob("*") if p.is_file()
                  and not (SKIP_PARTS & set(p.relative_to(root).parts)) and p.suffix not in SKIP_SUFFIXES
                  and ".so." not in p.name]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(files):
            info = zipfile.ZipInfo(path.relative_to(root).as_posix(), ZIP_EPOCH)
            info.external_attr = (0o755 if path.stat().st_mode & 0o111 else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, path.read_bytes())
    data = buffer.getvalue()
    return data, hashlib.sha256(data).hexdigest()


def adapter_image_tag(variant: str, source_sha: str, base_image: str) -> str:
    """`<variant>-<12 hex>` of the source zip and the DLC image it is built FROM: the same source on a DLC tag that
    AWS has moved (another digest) is another image, never the old one found under an unchanged tag."""
    return f"{variant}-{hashlib.sha256(f'{source_sha} {base_image}'.encode()).hexdigest()[:12]}"


def ensure_ecr_repository(name: str, settings: Settings, state: WorkshopState) -> dict[str, Any]:
    """ECR repository with scan on push, IMMUTABLE tags, AES256 encryption (KMS with `SEMIF_KMS_KEY_ID`) and the run's tags."""
    ecr = make_client("ecr", settings)
    try:
        repo = ecr.describe_repositories(repositoryNames=[name])["repositories"][0]
    except ecr.exceptions.RepositoryNotFoundException:
        repo = ecr.create_repository(
            repositoryName=name, imageTagMutability="IMMUTABLE",
            imageScanningConfiguration={"scanOnPush": True}, encryptionConfiguration=(
                {"encryptionType": "KMS", "kmsKey": settings.kms_key_id} if settings.kms_key_id else {"encryptionType": "AES256"}),
            tags=[{"Key": t["Key"], "Value": t["Value"]} for t in state.tags()])["repository"]
    state.record("ecr_repository", name, uri=repo["repositoryUri"], arn=repo["repositoryArn"])
    return repo


def ensure_codebuild_project(name: str, source_location: str, repo_uri: str, role_arn: str, settings: Settings,
                             state: WorkshopState, base_image: str | None = None) -> str:
    """Privileged LINUX_CONTAINER project that runs `container/buildspec.yml` from the S3 zip, FROM `base_image`
    (default: the run's pinned DLC image, `dlc.pin_dlc_image`)."""
    cb = make_client("codebuild", settings)
    region = get_region(settings)
    arm = settings.dlc_variant == "arm64"
    env_vars = {
        "AWS_ACCOUNT_ID": get_account_id(settings),
        "IMAGE_REPO_URI": repo_uri,
        "BASE_IMAGE": base_image or pin_dlc_image(settings, state),
        "DLC_REGISTRY": dlc_registry(region),
    }
    project = {
        "name": name,
        "description": "semif workshop: builds the decision adapter image on the AWS llama.cpp DLC",
        "source": {"type": "S3", "location": source_location, "buildspec": "container/buildspec.yml"},
        "artifacts": {"type": "NO_ARTIFACTS"},
        "environment": {
            "type": "ARM_CONTAINER" if arm else "LINUX_CONTAINER",
            "image": BUILD_IMAGE_ARM if arm else BUILD_IMAGE,
            "computeType": "BUILD_GENERAL1_LARGE" if arm else settings.codebuild_compute_type,
            "privilegedMode": True,  # docker build needs the Docker daemon
            "environmentVariables": [{"name": k, "value": v, "type": "PLAINTEXT"} for k, v in env_vars.items()],
        },
        "serviceRole": role_arn,
        "timeoutInMinutes": 60,
        "logsConfig": {"cloudWatchLogs": {"status": "ENABLED", "groupName": f"/aws/codebuild/{name}"}},
        "tags": [{"key": t["Key"], "value": t["Value"]} for t in state.tags()],
    }
    if cb.batch_get_projects(names=[name]).get("projects"):
        project.pop("tags")
        retry_while_role_propagates(lambda: cb.update_project(**project), f"CodeBuild project {name}")
    else:
        retry_while_role_propagates(lambda: cb.create_project(**project), f"CodeBuild project {name}")
    state.record("codebuild_project", name)
    return name


def start_image_build(project: str, image_tag: str, source_location: str, settings: Settings) -> str:
    cb = make_client("codebuild", settings)
    build = cb.start_build(projectName=project, sourceLocationOverride=source_location,
                           environmentVariablesOverride=[{"name": "IMAGE_TAG", "value": image_tag, "type": "PLAINTEXT"}])
    return build["build"]["id"]


# CodeBuild's phases in order (batch_get_builds `currentPhase`): the progress bar counts through them.
BUILD_PHASES = ("SUBMITTED", "QUEUED", "PROVISIONING", "DOWNLOAD_SOURCE", "INSTALL", "PRE_BUILD", "BUILD", "POST_BUILD",
                "UPLOAD_ARTIFACTS", "FINALIZING", "COMPLETED")


def wait_for_build(build_id: str, settings: Settings, timeout_s: float = 3600, poll_s: float = 10,
                   log: Callable[[str], None] = print, progress: bool = True) -> dict[str, Any]:
    """Report each phase change of a build until it finishes (a `tqdm.auto` bar counts the phases, with
    the elapsed time); raise unless it SUCCEEDED."""
    cb = make_client("codebuild", settings)
    start = time.monotonic()
    seen: tuple[str, str] | None = None
    bar = status_bar(f"CodeBuild {build_id.split(':')[-1][:8]}", enabled=progress, total=len(BUILD_PHASES))
    try:
        while True:
            build = cb.batch_get_builds(ids=[build_id])["builds"][0]
            now = (build.get("currentPhase", ""), build.get("buildStatus", ""))
            if now != seen:
                log(f"[{time.monotonic() - start:6.0f} s] build {build_id.split(':')[-1][:8]}: phase {now[0]}, status {now[1]}")
                bar.set_description_str(f"CodeBuild {build_id.split(':')[-1][:8]}: {now[0] or 'starting'}")
                bar.update(BUILD_PHASES.index(now[0]) + 1 - bar.n if now[0] in BUILD_PHASES else 0)
                seen = now
            if build.get("buildComplete") or now[1] not in ("IN_PROGRESS", ""):
                if now[1] != "SUCCEEDED":
                    tail = read_build_log_tail(build, settings)
                    if tail:
                        log(f"last {len(tail)} lines of the build log:\n" + "\n".join(tail))
                    raise ResourceFailedError(describe_build_failure(build, tail))
                return build
            if time.monotonic() - start > timeout_s:
                raise TimeoutError(f"CodeBuild {build_id} still {now} after {timeout_s:.0f} s")
            sleep_with_bar(bar, poll_s)
    finally:
        bar.close()


BUILD_LOG_TAIL_LINES = 25  # enough for a failed `docker build` step and the binding check's FATAL line


def read_build_log_tail(build: dict[str, Any], settings: Settings, lines: int = BUILD_LOG_TAIL_LINES) -> list[str]:
    """The last `lines` lines of a build's CloudWatch log (batch_get_builds' `logs.groupName` / `streamName`).

    Empty when the build wrote no log yet, or the identity may not read it (logs:GetLogEvents, in the
    caller policy): the failure then names the console link only.
    """
    group, stream = build.get("logs", {}).get("groupName"), build.get("logs", {}).get("streamName")
    if not group or not stream:
        return []
    try:
        events = make_client("logs", settings, max_attempts=2).get_log_events(
            logGroupName=group, logStreamName=stream, limit=lines, startFromHead=False)["events"]
    except Exception as exc:  # botocore ClientError, imported lazily
        if error_code(exc) in DENIED_CODES or is_not_found(exc):
            return []
        raise
    return [line for event in events for line in event["message"].rstrip("\n").splitlines()][-lines:]


def describe_build_failure(build: dict[str, Any], log_tail: list[str] | None = None) -> str:
    """The failed phases and their messages, the log's last line (its full tail is logged before), and the log link."""
    failed = [p for p in build.get("phases", []) if p.get("phaseStatus") not in (None, "SUCCEEDED")]
    detail = "; ".join(f"{p['phaseType']}: {p.get('phaseStatus')} {(p.get('contexts') or [{}])[0].get('message', '')}".strip()
                       for p in failed)
    last = next((line.strip() for line in reversed(log_tail or []) if line.strip()), "")
    logs = build.get("logs", {}).get("deepLink", "")
    return (f"CodeBuild {build.get('id')} {build.get('buildStatus')}: {detail or 'see the build log'}"
            f"{f' (log: {last})' if last else ''} {logs}").strip()


# The only image manifest SageMaker's CreateModel takes: it refuses OCI manifests and indexes ("Unsupported manifest
# media type application/vnd.oci.image.manifest.v1+json"; aws/amazon-sagemaker-feedback#180), which Docker 29 with the
# containerd image store pushes, and which buildx's provenance attestations turn any image into.
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"


def _image_details(repository: str, tag: str, settings: Settings) -> dict[str, Any] | None:
    ecr = make_client("ecr", settings)
    try:
        details = ecr.describe_images(repositoryName=repository, imageIds=[{"imageTag": tag}])["imageDetails"]
    except (ecr.exceptions.ImageNotFoundException, ecr.exceptions.RepositoryNotFoundException):
        return None
    return details[0] if details else None


def check_manifest(image_uri: str, details: dict[str, Any] | None) -> None:
    """Refuse an image whose manifest SageMaker would refuse, naming it, before an endpoint is created from it
    (container/buildspec.yml fails the build on the same check; this catches an image pushed some other way)."""
    media = (details or {}).get("imageManifestMediaType")
    if media and media != DOCKER_MANIFEST:
        raise ResourceFailedError(
            f"{image_uri} was pushed as {media}; SageMaker's CreateModel takes only {DOCKER_MANIFEST}. Delete that image "
            "(aws ecr batch-delete-image) and build it again with docker build --provenance=false --sbom=false "
            "(container/buildspec.yml passes them when docker buildx is there)")


def build_adapter_image(settings: Settings | None = None, state: WorkshopState | None = None, wait: bool = True,
                        log: Callable[[str], None] = print, progress: bool = True) -> str:
    """Zip, upload, ensure ECR + role + project, build and push; return `<repo uri>:<tag>`.

    The tag is `adapter_image_tag` of the source zip and the run's pinned DLC image: an image already pushed for
    this source on this base is returned without a build.
    """
    settings, state = settings_and_state(settings, state)
    require_dlc_region(get_region(settings))  # before anything is created
    if settings.adapter_image_uri:  # pre-built by an event team: nothing to build, no CodeBuild or IAM rights needed
        log(f"{settings.adapter_image_uri}: pre-built (SEMIF_ADAPTER_IMAGE_URI), no build")
        return settings.adapter_image_uri
    data, sha = build_source_zip()
    base = pin_dlc_image(settings, state, log)
    tag = adapter_image_tag(settings.dlc_variant, sha, base)
    repo_name = state.name("adapter")
    repo = ensure_ecr_repository(repo_name, settings, state)
    image_uri = f"{repo['repositoryUri']}:{tag}"
    existing = _image_details(repo_name, tag, settings)
    if existing is not None:
        check_manifest(image_uri, existing)
        log(f"{image_uri} already built from this source: no build needed")
        return image_uri
    bucket = ensure_bucket(settings, state)
    key = f"{state.prefix(settings)}/build/adapter-{sha[:12]}.zip"
    s3 = make_client("s3", settings)
    s3.put_object(Bucket=bucket, Key=key, Body=data, **sse_args(settings), Metadata={"source-sha256": sha})
    state.record("s3_object", f"s3://{bucket}/{key}", bucket=bucket, key=key)
    log(f"uploaded build context ({len(data) / 1024:.0f} KiB) to s3://{bucket}/{key}")

    role = settings.codebuild_role_arn or ensure_role(
        state.name("codebuild"), "codebuild-trust-policy", "codebuild-service-policy", settings, state,
        "semif workshop: CodeBuild reads the build zip, pulls the DLC and pushes the adapter image")
    project = ensure_codebuild_project(state.name("adapter-build"), f"{bucket}/{key}", repo["repositoryUri"], role, settings, state,
                                       base_image=base)
    build_id = start_image_build(project, tag, f"{bucket}/{key}", settings)
    state.set("image_build_id", build_id)
    log(f"started CodeBuild {build_id}")
    if wait:
        wait_for_build(build_id, settings, log=log, progress=progress)
        check_manifest(image_uri, _image_details(repo_name, tag, settings))
    return image_uri


def pull_dlc_image(runtime: Any, region: str, variant: str = "cpu", settings: Settings | None = None) -> str:
    """The llama.cpp DLC image in the local container store, for target=container.

    Already there: nothing to do. Otherwise log in to the DLC registry with this session's AWS
    credentials (`ecr:GetAuthorizationToken` on the DLC account) and pull it; any failure (no
    credentials, no permission, no network) raises, and the caller falls back to the replica.
    """
    uri = resolve_dlc_image_uri(region, variant)
    if image_exists(runtime, uri):
        return uri
    settings = in_region(settings or load_settings(), region)
    auth = make_client("ecr", settings, max_attempts=2).get_authorization_token(registryIds=[dlc_account(region)])
    user, password = base64.b64decode(auth["authorizationData"][0]["authorizationToken"]).decode().split(":", 1)
    runtime.run("login", "--username", user, "--password-stdin", dlc_registry(region), input=password)
    runtime.run("pull", uri, timeout_s=1800)
    return uri
