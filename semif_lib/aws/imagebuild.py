"""Build the decision adapter image in the cloud: S3 zip -> CodeBuild (privileged, Docker) -> ECR.

No Docker is needed where the notebook runs. The zip holds `container/` (Dockerfile, buildspec,
entrypoint) and the package source; its sha256 names the image tag, so an unchanged source is
never rebuilt and the repository can keep IMMUTABLE tags.

An image is deployed by digest only (`<repository uri>@sha256:<64 hex>`), never by its tag: the build exports the
digest it pushed (`IMAGE_DIGEST`, container/buildspec.yml's `exported-variables`), the run records it under the tag
(`adapter_images` in the state), and an image found under the tag is reused only when it is that digest. A tag this
run's builds did not push is refused, whoever pushed it: anyone who may push to the repository, or delete it and make
it again, could otherwise put an image of theirs where this run looks for its own.
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
import time
import zipfile
from pathlib import Path
from typing import Any, Callable

from ..containers.runtime import image_exists
from ..paths import repo_root
from ..registry import WorkshopState
from ..settings import Settings, require_image_digest
from .clients import get_account_id, get_region, in_region, make_client
from .dlc import dlc_account, dlc_registry, pin_dlc_image, require_dlc_region, resolve_dlc_image_uri
from .errors import DENIED_CODES, ResourceFailedError, error_code, is_not_found
from .iamroles import ensure_role
from .images import check_manifest, image_details
from .packaging import ensure_bucket, sse_args
from .runrecord import settings_and_state
from .waits import retry_while_role_propagates, sleep_with_bar, status_bar

__all__ = [
    "IMAGE_DIGEST_VARIABLE",
    "build_adapter_image",
    "build_source_zip",
    "ensure_codebuild_project",
    "ensure_ecr_repository",
    "read_build_digest",
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
IMAGE_DIGEST_VARIABLE = "IMAGE_DIGEST"  # what container/buildspec.yml exports: the digest `docker push` reported
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
BUILT_IMAGES = "adapter_images"  # state value: {tag: digest} of the images this run's own builds pushed


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
    """ECR repository with scan on push, IMMUTABLE tags, AES256 encryption (KMS with `SEMIF_KMS_KEY_ID`) and the run's tags.

    One that exists with tags that can be moved (MUTABLE, or IMMUTABLE with exclusions) is not one a run made: it is
    refused, naming how to delete it."""
    ecr = make_client("ecr", settings)
    try:
        repo = ecr.describe_repositories(repositoryNames=[name])["repositories"][0]
        if repo.get("imageTagMutability") != "IMMUTABLE":
            raise ResourceFailedError(
                f"ECR repository {name} has {repo.get('imageTagMutability')} tags, and a run makes its repository IMMUTABLE: "
                "someone else made this one (or deleted the run's and made it again), so nothing in it is trusted. Delete it "
                f"(aws ecr delete-repository --repository-name {name} --force) and run this step again")
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


def read_build_digest(build: dict[str, Any]) -> str:
    """The digest a finished build pushed: its exported `IMAGE_DIGEST` (batch_get_builds' `exportedEnvironmentVariables`,
    `[{"name", "value"}]`), which container/buildspec.yml reads from `docker push` and checks against ECR."""
    exported = {v.get("name"): v.get("value") for v in build.get("exportedEnvironmentVariables") or []}
    digest = exported.get(IMAGE_DIGEST_VARIABLE) or ""
    if not DIGEST.match(digest):
        raise ResourceFailedError(
            f"CodeBuild {build.get('id')} exported no image digest ({IMAGE_DIGEST_VARIABLE}={digest!r}), so the image it "
            "pushed cannot be named by digest: its buildspec is not container/buildspec.yml of this checkout (env: "
            f"exported-variables: [{IMAGE_DIGEST_VARIABLE}]), or its project was changed since this run made it")
    return digest


def build_adapter_image(settings: Settings, state: WorkshopState | None = None, wait: bool = True,
                        log: Callable[[str], None] = print, progress: bool = True) -> str:
    """Zip, upload, ensure ECR + role + project, build and push; return `<repo uri>@sha256:<digest>`, the image the build
    pushed, and record its digest under its tag (`adapter_images` in the state).

    The tag is `adapter_image_tag` of the source zip and the run's pinned DLC image: an image already under it is
    returned without a build when it is the digest this run's own build of that tag exported, and refused otherwise
    (see the module doc). `SEMIF_ADAPTER_IMAGE_URI` (by digest only) is returned as given. With `wait=False` the build
    is started and `<repo uri>:<tag>` returned, which no deployment takes: run this again to wait and get the digest.
    """
    settings, state = settings_and_state(settings, state)
    require_dlc_region(get_region(settings))  # before anything is created
    if settings.adapter_image_uri:  # pre-built by an event team: nothing to build, no CodeBuild or IAM rights needed
        image = require_image_digest(settings.adapter_image_uri)  # a settings object made without validation too
        log(f"{image}: pre-built (SEMIF_ADAPTER_IMAGE_URI), by digest: no build")
        return image
    data, sha = build_source_zip()
    base = pin_dlc_image(settings, state, log)
    tag = adapter_image_tag(settings.dlc_variant, sha, base)
    repo_name = state.name("adapter")
    repo = ensure_ecr_repository(repo_name, settings, state)
    tagged = f"{repo['repositoryUri']}:{tag}"
    built = _own_build_digest(tag, settings, state, wait, log, progress)
    if built == "":
        return tagged  # this run's build of the tag still runs and wait=False
    existing = image_details(repo_name, {"imageTag": tag}, settings)
    if existing is not None:
        if built is None:
            raise ResourceFailedError(
                f"{tagged} exists ({existing.get('imageDigest')}), but no build of this run exported that image, so it is not "
                "used: another identity pushed it, or a build of this run failed after its push. Delete it (aws ecr "
                f"batch-delete-image --repository-name {repo_name} --image-ids imageTag={tag}) and run this step again")
        image = f"{repo['repositoryUri']}@{built}"
        check_manifest(f"{tagged} ({image})", existing, built)
        _remember_digest(state, tag, built)
        log(f"{image} ({tag}) already built by this run from this source: no build needed")
        return image
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
    state.set("image_build_tag", tag)
    log(f"started CodeBuild {build_id}")
    if not wait:
        return tagged
    return _record_build(wait_for_build(build_id, settings, log=log, progress=progress), repo, tag, settings, state, log)


def _own_build_digest(tag: str, settings: Settings, state: WorkshopState, wait: bool, log: Callable[[str], None],
                      progress: bool) -> str | None:
    """The digest this run's own build of `tag` pushed: recorded, or read from the build this run started for it and did
    not see finish (`wait=False`, a kernel stopped while it waited), waiting for it if it still runs. None: no build of
    this run pushed the tag (none started, or it failed); "": it still runs and `wait` is False."""
    recorded = (state.get(BUILT_IMAGES) or {}).get(tag)
    if recorded or state.get("image_build_tag") != tag or not state.get("image_build_id"):
        return recorded
    build_id = state.get("image_build_id")
    build = make_client("codebuild", settings).batch_get_builds(ids=[build_id])["builds"]
    status = build[0].get("buildStatus") if build else None
    if status == "IN_PROGRESS" and not wait:
        log(f"CodeBuild {build_id} still builds {tag}: run this step again to wait for it")
        return ""
    if status not in ("IN_PROGRESS", "SUCCEEDED"):
        return None  # failed, stopped, timed out, or gone: a new build is started
    return read_build_digest(wait_for_build(build_id, settings, log=log, progress=progress))


def _record_build(build: dict[str, Any], repo: dict[str, Any], tag: str, settings: Settings, state: WorkshopState,
                  log: Callable[[str], None]) -> str:
    """The finished build's image by digest, once ECR holds that digest under `tag` as a manifest SageMaker takes; its
    digest is recorded under the tag (`adapter_images`)."""
    digest = read_build_digest(build)
    image = f"{repo['repositoryUri']}@{digest}"
    details = image_details(repo["repositoryName"], {"imageDigest": digest}, settings)
    check_manifest(image, details, digest)
    if tag not in (details or {}).get("imageTags", []):
        raise ResourceFailedError(f"{image}: ECR has it, but not under {tag}, the tag CodeBuild {build.get('id')} pushed: run this "
                                  "step again")
    _remember_digest(state, tag, digest)
    log(f"CodeBuild pushed {image} ({tag})")
    return image


def _remember_digest(state: WorkshopState, tag: str, digest: str) -> None:
    state.set(BUILT_IMAGES, {**(state.get(BUILT_IMAGES) or {}), tag: digest})


def pull_dlc_image(runtime: Any, region: str, variant: str = "cpu", *, settings: Settings) -> str:
    """The llama.cpp DLC image in the local container store, for target=container.

    Already there: nothing to do. Otherwise log in to the DLC registry with this session's AWS
    credentials (`ecr:GetAuthorizationToken` on the DLC account) and pull it; any failure (no
    credentials, no permission, no network) raises, and the caller falls back to the replica.
    """
    uri = resolve_dlc_image_uri(region, variant)
    if image_exists(runtime, uri):
        return uri
    settings = in_region(settings, region)
    auth = make_client("ecr", settings, max_attempts=2).get_authorization_token(registryIds=[dlc_account(region)])
    user, password = base64.b64decode(auth["authorizationData"][0]["authorizationToken"]).decode().split(":", 1)
    runtime.run("login", "--username", user, "--password-stdin", dlc_registry(region), input=password)
    runtime.run("pull", uri, timeout_s=1800)
    return uri
