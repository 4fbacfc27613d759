"""Helpers for the AWS tests on moto: a GGUF without weights, the errors moto does not raise, the SDK patch.

The fixtures (`aws`, `aws_credentials`, `aws_settings`, `state`, `fake_gguf`) are in
`support/fixtures_aws.py`, registered for every test module by `tests/conftest.py`.

moto's SageMaker describe responses carry empty structures (`VpcConfig: {}`, `DataCaptureConfig: {}`)
where AWS leaves the member out, and the SageMaker SDK's v3 resources (`sagemaker.core.resources`)
reject them when they parse a description. `patch_sessions()` strips empty structures from every
SageMaker response before the SDK sees it, so the SDK code path itself runs on moto, writes a transform job's
output when the job is created (moto runs no container), so the step that reads it back runs too, and pushes what
an adapter image build would push, exporting its digest as container/buildspec.yml does (moto's builds run nothing).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

REGION = "us-east-1"
DLC_ACCOUNT = "763104351884"  # the DLC registry of us-east-1 (semif_lib.aws.dlc.DLC_ACCOUNTS)


def publish_dlc_images(ecr: Any, account: str = DLC_ACCOUNT) -> dict[str, str]:
    """What AWS publishes in the region: the DLC's repositories under its registry account, each SageMaker tag on an image.

    moto keeps `registryId` on a repository, so BatchGetImage with the DLC's registry id answers as AWS does; a run
    stops where the image is not published (`dlc.read_dlc_digest`), so every AWS test needs these, as every account
    sees them. Returns variant -> digest."""
    import hashlib
    import json

    from semif_lib.aws.dlc import DLC_IMAGES

    digests = {}
    for variant, (repository, tag) in DLC_IMAGES.items():
        if repository not in [r["repositoryName"] for r in ecr.describe_repositories(registryId=account)["repositories"]]:
            ecr.create_repository(repositoryName=repository, registryId=account)
        config = "sha256:" + hashlib.sha256(f"{repository}:{tag}".encode()).hexdigest()
        manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                               "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "size": 1, "digest": config},
                               "layers": [{"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip", "size": 1, "digest": config}]})
        try:
            digests[variant] = ecr.put_image(registryId=account, repositoryName=repository, imageManifest=manifest,
                                             imageTag=tag)["image"]["imageId"]["imageDigest"]
        except ecr.exceptions.ImageAlreadyExistsException:  # published before in this moto backend (it outlives a server)
            digests[variant] = ecr.batch_get_image(registryId=account, repositoryName=repository,
                                                   imageIds=[{"imageTag": tag}])["images"][0]["imageId"]["imageDigest"]
    return digests


def own_repositories(ecr: Any) -> list[dict[str, Any]]:
    """The account's own ECR repositories: AWS's DescribeRepositories answers for the caller's registry, moto's for all."""
    from semif_lib.aws.dlc import DLC_ACCOUNTS

    return [r for r in ecr.describe_repositories()["repositories"] if r["registryId"] not in DLC_ACCOUNTS.values()]


def make_fake_gguf(path: Path, size: int = 64 << 10, shards: int = 1, arch: str | None = None,
                   chat_template: str | None = None) -> Path:
    """A real GGUF without weights: the embedded SmolLM2's metadata, tokenizer and chat template (or `arch` /
    `chat_template` instead), and a tensor no model reads that pads it to at least `size` bytes (2 MB at least).
    `shards` > 1 writes a split GGUF beside `path` (`<stem>-00001-of-0000N.gguf`, through gguf's own writer) and
    returns its first shard.

    Packaging inspects a model before anything is written or uploaded (`decision.inspection.refuse_unworkable`: llama.cpp
    loads its vocabulary, the answer slots verify), so the AWS tests package what that gate lets through, in 2 MB.
    """
    built = _vocab_only_gguf(size, shards, arch, chat_template)
    path.parent.mkdir(parents=True, exist_ok=True)
    targets = [path] if shards == 1 else [path.with_name(f"{path.stem}-{i:05d}-of-{shards:05d}.gguf") for i in range(1, shards + 1)]
    for source, target in zip(built, targets, strict=True):
        shutil.copyfile(source, target)
    return targets[0]


@functools.lru_cache(maxsize=1)
def _embedded_reader():
    """gguf's reader on the embedded GGUF: parsing its 49k-token vocabulary is the slow part (seconds), so once per process."""
    import gguf

    from semif_lib.model.locate import find_embedded_model

    return gguf.GGUFReader(find_embedded_model(), "r")


@functools.lru_cache(maxsize=16)
def _vocab_only_gguf(size: int, shards: int, arch: str | None, chat_template: str | None) -> tuple[Path, ...]:
    """Written once per variant and process with gguf's writer (into a folder removed at exit); the tests copy it."""
    import gguf
    import numpy as np

    reader = _embedded_reader()
    folder = Path(tempfile.mkdtemp(prefix="semif-vocab-gguf-"))
    atexit.register(shutil.rmtree, folder, True)
    writer = gguf.GGUFWriter(folder / "vocab.gguf", arch=arch or reader.fields["general.architecture"].contents(),
                             split_max_tensors=1 if shards > 1 else 0)
    for item in reader.fields.values():
        if item.name.startswith("GGUF.") or item.name == "general.architecture":
            continue
        kind = item.types[0]
        value = chat_template if chat_template and item.name == gguf.Keys.Tokenizer.CHAT_TEMPLATE else item.contents()
        writer.add_key_value(item.name, value, kind, sub_type=item.types[-1] if kind == gguf.GGUFValueType.ARRAY else None)
    for i in range(shards):
        writer.add_tensor(f"semif.padding.{i}", np.zeros(max(16, size // shards // 2), dtype=np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return tuple(sorted(folder.glob("vocab*.gguf")))


def client_error(code: str, message: str = "x", operation: str = "Op"):
    """The botocore error AWS would raise: for the answers moto does not give (expired tokens, denials)."""
    from botocore.exceptions import ClientError

    return ClientError({"Error": {"Code": code, "Message": message}}, operation)


def _without_empty_structures(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_empty_structures(v) for k, v in value.items() if not (isinstance(v, dict) and not v)}
    if isinstance(value, list):
        return [_without_empty_structures(v) for v in value]
    return value


def omit_empty_structures(parsed: Any = None, **_: Any) -> None:
    """botocore `after-call.sagemaker` hook: drop `{}` members, as AWS omits them (moto does not)."""
    if isinstance(parsed, dict):
        cleaned = _without_empty_structures(parsed)
        parsed.clear()
        parsed.update(cleaned)


def transform_answer(request: Any) -> dict[str, Any]:
    """What the adapter answers one request line with, in its shape (moto runs no container): the first option of each
    choice at 0.6, each yes/no at 0.6."""
    if not isinstance(request, dict):
        return {"id": None, "detail": {"message": "not a request", "field": "body"}}
    answers = {}
    for qid, question in (request.get("questions") or {}).items():
        if question.get("type") == "choice":
            options = list(question["criteria"])
            answers[qid] = {"type": "choice", "choice": options[0], "confidence": 0.6,
                            "probabilities": {o: 0.6 if i == 0 else 0.4 / max(len(options) - 1, 1) for i, o in enumerate(options)}}
        else:
            answers[qid] = {"type": "noul", "noul": 0.6, "x_probabilities": {"true": 0.6, "false": 0.4}}
    return {"id": request.get("id"), "model": "SmolLM2-135M-Instruct.Q4_1", "answers": answers}


def answer_transform_jobs(made: Any) -> None:
    """moto records a transform job and runs nothing: on each CreateTransformJob that succeeds, write what the job would, one answer per
    input line in `<S3OutputPath><input name>.out` (`transform_answer`), so the step that reads the output back runs."""
    import json

    def keep(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["transform_params"] = dict(params)

    def write(parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if "Error" in parsed or "transform_params" not in context:
            return  # a job AWS refused (an identity's denial answers before the call) runs nothing, and reads nothing
        params = context["transform_params"]
        source = params["TransformInput"]["DataSource"]["S3DataSource"]["S3Uri"]
        bucket, _, key = source.removeprefix("s3://").partition("/")
        out_bucket, _, out_prefix = params["TransformOutput"]["S3OutputPath"].removeprefix("s3://").partition("/")
        s3 = made.client("s3")
        try:
            lines = s3.get_object(Bucket=bucket, Key=key)["Body"].read().decode().splitlines()
        except Exception:  # noqa: BLE001 - an input that is not there (a test's made-up URI): no output either
            return
        body = "".join(json.dumps(transform_answer(json.loads(line))) + "\n" for line in lines if line.strip())
        s3.put_object(Bucket=out_bucket, Key=f"{out_prefix.rstrip('/')}/{key.rsplit('/', 1)[-1]}.out", Body=body.encode())

    made.events.register("before-parameter-build.sagemaker.CreateTransformJob", keep)
    made.events.register("after-call.sagemaker.CreateTransformJob", write)


DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
# What each adapter image build pushed (`run_image_builds`): build id -> ("SUCCEEDED", digest) or ("FAILED", why).
BUILD_RESULTS: dict[str, tuple[str, str]] = {}


def run_image_builds(made: Any) -> None:
    """moto records a CodeBuild build and runs nothing (BatchGetBuilds answers SUCCEEDED, exporting nothing): on each
    StartBuild, push what container/buildspec.yml would, as the build's role (a session of its own, so an identity a
    test enforces is not asked): a Docker v2 manifest, one per source, base and tag, into the project's `IMAGE_REPO_URI`
    under the build's `IMAGE_TAG`. BatchGetBuilds then exports its digest (`exportedEnvironmentVariables` IMAGE_DIGEST),
    or answers the build FAILED where the push would fail (a tag an IMMUTABLE repository already holds)."""
    import hashlib
    import json

    import boto3
    from botocore.exceptions import ClientError

    def keep(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["semif_start_build"] = dict(params)

    def push(parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        params, build = context.get("semif_start_build"), parsed.get("build")
        if not params or not build:  # refused (an identity's policy, a quota): nothing ran
            return
        as_build = boto3.session.Session(region_name=made.region_name)
        endpoint = {"endpoint_url": made.semif_endpoint_url} if getattr(made, "semif_endpoint_url", None) else {}
        project = as_build.client("codebuild", **endpoint).batch_get_projects(names=[params["projectName"]])["projects"][0]
        env = {v["name"]: v["value"] for v in project["environment"].get("environmentVariables", [])}
        env |= {v["name"]: v["value"] for v in params.get("environmentVariablesOverride", [])}
        if not {"IMAGE_REPO_URI", "IMAGE_TAG"} <= env.keys():  # not an adapter image build (another project's)
            return
        built_from = f"{params.get('sourceLocationOverride')} {env.get('BASE_IMAGE')} {env['IMAGE_TAG']}"
        config = "sha256:" + hashlib.sha256(built_from.encode()).hexdigest()
        manifest = json.dumps({"schemaVersion": 2, "mediaType": DOCKER_MANIFEST,
                               "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "size": 1, "digest": config},
                               "layers": [{"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip", "size": 1, "digest": config}]})
        try:
            pushed = as_build.client("ecr", **endpoint).put_image(repositoryName=env["IMAGE_REPO_URI"].split("/", 1)[1],
                                                                  imageManifest=manifest, imageTag=env["IMAGE_TAG"])
            BUILD_RESULTS[build["id"]] = ("SUCCEEDED", pushed["image"]["imageId"]["imageDigest"])
        except ClientError as exc:
            BUILD_RESULTS[build["id"]] = ("FAILED", f"docker push: {exc.response['Error'].get('Message', '')}")

    def export(parsed: dict[str, Any], **_: Any) -> None:
        for build in parsed.get("builds", []):
            status, value = BUILD_RESULTS.get(build.get("id"), ("", ""))
            if status == "SUCCEEDED" and build.get("buildStatus") == "SUCCEEDED":
                build["exportedEnvironmentVariables"] = [{"name": "IMAGE_DIGEST", "value": value}]
            elif status == "FAILED":
                build.update(buildStatus="FAILED", currentPhase="COMPLETED", buildComplete=True, phases=[
                    {"phaseType": "BUILD", "phaseStatus": "FAILED", "contexts": [{"statusCode": "COMMAND_EXECUTION_ERROR",
                                                                               "message": value}]}])

    made.events.register("before-parameter-build.codebuild.StartBuild", keep)
    made.events.register("after-call.codebuild.StartBuild", push)
    made.events.register("after-call.codebuild.BatchGetBuilds", export)


# What every session `semif_lib.aws.clients` hands out gets, once patched: moto's `{}` members stripped, transform jobs
# answered, image builds pushed, and what a test adds (support.aws_identity.enforce_identity: an identity's policies decided
# on every call).
SESSION_HOOKS: list[Callable[[Any], None]] = [lambda made: made.events.register("after-call.sagemaker", omit_empty_structures),
                                             answer_transform_jobs, run_image_builds]


def patch_sessions() -> None:
    """Make every session `semif_lib.aws.clients` hands out run `SESSION_HOOKS` (see the module doc)."""
    from semif_lib.aws import clients

    if getattr(clients._session, "moto_patched", False):
        return
    original = clients._session.__wrapped__

    @functools.lru_cache(maxsize=16)
    def session(*key):  # (region, endpoint URL)
        made = original(*key)
        for hook in SESSION_HOOKS:
            hook(made)
        return made

    session.moto_patched = True
    session.__wrapped__ = original
    clients._session = session


@contextlib.contextmanager
def denied_on_the_dlc(tmp_path, action: str):
    """Every AWS call this test makes is decided by an identity policy (evaluated on moto by tests/support/aws_identity.py)
    that allows everything but `action` on the DLC registry's repositories: a narrow role or an SCP, as AWS answers it."""
    from semif_lib.aws import clients

    from support.aws_identity import IdentityEnforcer

    policy = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "*", "Resource": "*"},
        {"Effect": "Deny", "Action": action, "Resource": f"arn:aws:ecr:*:{DLC_ACCOUNT}:repository/*"}]}
    enforcer = IdentityEnforcer("arn:aws:iam::123456789012:role/event-team", "arn:aws:sts::123456789012:assumed-role/event-team/s",
                                [policy], tmp_path / "calls.jsonl")
    SESSION_HOOKS.append(enforcer.register)
    clients.reset_sessions()
    try:
        yield
    finally:
        SESSION_HOOKS.remove(enforcer.register)
        clients.reset_sessions()
