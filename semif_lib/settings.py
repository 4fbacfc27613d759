"""Every `SEMIF_*` environment variable the project reads, in one place, one class per concern.

The settings object is a read-only snapshot: code receives a `Settings` and never
reads `os.environ` itself, so tests can build one explicitly.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal, get_args

from dotenv import dotenv_values  # pydantic-settings' own .env reader
from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from .contract import KILL_AFTER_S, MAX_PAYLOAD_BYTES, MODEL_DIR, PORT, SESSIONS_ENABLED_ENV, SESSIONS_EXPIRATION_ENV, SESSIONS_EXPIRATION_S
from .errors import InvalidRequestError

ENV_PREFIX = "SEMIF_"
# validate_by_name: a field SageMaker names (`validation_alias`, read from that variable) is still set by its name in code
SETTINGS_CONFIG = SettingsConfigDict(env_prefix=ENV_PREFIX, frozen=True, extra="ignore", validate_by_name=True, validate_by_alias=True)
# After the drain window (`drain_s`) uvicorn waits this much longer, then the worker's last decode
# gets what is left; both end a second before SageMaker's SIGKILL (`serving.runner.Drain`).
DRAIN_TAIL_S = 2.0
RESERVED_RUN_IDS = frozenset({"text", "decision", "async", "batch", "adapter", "build", "sagemaker", "codebuild"})

Mode = Literal["fresh", "serial", "parallel"]
MODES: tuple[str, ...] = get_args(Mode)  # the execution modes a request may ask for (see decision.engine)
Debias = Literal["none", "rotations", "prior"]  # how a choice question's option order is debiased (x_debias, SEMIF_DEFAULT_DEBIAS)


def detect_cpu_count() -> int:
    """CPUs this process may really use: affinity mask and cgroup quota, not `os.cpu_count()`.

    Inside a container with a CPU quota `os.cpu_count()` reports the host's cores, and
    llama.cpp with too many threads spins on cores it does not get.
    """
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        count = os.cpu_count() or 1
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            count = min(count, max(1, int(int(quota) // int(period))))
    except (OSError, ValueError):
        pass
    return max(1, count)


# An image named by its digest: what SageMaker pulls is then the very image that was built or given, whoever may push.
IMAGE_BY_DIGEST = re.compile(r"^[a-z0-9.-]+/[a-z0-9._/-]+@sha256:[0-9a-f]{64}$")
ECR_REGISTRY = re.compile(r"^(?P<account>[0-9]{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(\.cn)?$")


def require_image_digest(uri: str) -> str:
    """`uri` when it names an image by digest (`<registry>/<repository>@sha256:<64 hex>`); else a one-line `ValueError`
    that gives the AWS CLI command reading the digest of the tag it names (a tag is refused: anyone who may push to
    the repository, or delete and recreate it, can put another image under it)."""
    if IMAGE_BY_DIGEST.match(uri):
        return uri
    registry, _, path = uri.partition("/")
    repository, _, tag = path.partition("@")[0].rpartition(":") if ":" in path else (path, "", "")
    ecr = ECR_REGISTRY.match(registry)
    where = f"--region {ecr['region']} --registry-id {ecr['account']} " if ecr else ""
    read = (f"aws ecr describe-images {where}--repository-name {repository or '<repository>'} --image-ids imageTag={tag or '<tag>'} "
            "--query 'imageDetails[0].imageDigest' --output text")
    raise ValueError(f"{uri!r} is not an image by digest: give <registry>/<repository>@sha256:<64 hex>, never a tag (anyone who "
                     f"may push can move a tag to another image); read the digest with `{read}` and use "
                     f"{registry or '<registry>'}/{repository or '<repository>'}@<that digest>")


class EngineSettings(BaseSettings):
    """The engine: which GGUF, the llama.cpp context, the prefix cache, the default mode, the work one request may ask for
    (over a limit: 413 naming it), and the calibration applied to answers."""

    model_config = SETTINGS_CONFIG

    model_path: Path | None = Field(None, description="Explicit GGUF file; wins over everything else.")
    model_dir: Path = Field(Path(MODEL_DIR), description="Searched two levels deep for the first *.gguf.")
    n_ctx: int = Field(8192, ge=512, le=131072, description="KV cells shared by the prefix cache and all branches.")
    n_batch: int = Field(2048, ge=64, le=16384, description="Largest batch handed to one llama_decode.")
    n_ubatch: int = Field(512, ge=32, le=4096, description="Physical micro-batch; above 512 was slower on CPU.")
    n_seq_max: int = Field(64, ge=2, le=256, description="KV sequences: cached prefixes plus parallel branches.")
    threads: int = Field(default_factory=detect_cpu_count, ge=1, le=512, description="llama.cpp threads.")
    flash_attn: Literal["auto", "on", "off"] = Field("auto", description="Flash attention type.")
    n_gpu_layers: int = Field(0, ge=-1, description="Layers offloaded to a GPU build (999 = all).")
    cache_tokens: int = Field(4096, ge=0, description="Token budget of the cross-request prefix cache (host memory when spilled).")
    cache_spill: bool = Field(True, description="Spill cached prefixes to host memory between requests; false keeps them in KV cells "
                              "(no restore copy, but every resident cell slows other requests' decodes), within n_ctx/2.")
    round_tokens: int = Field(0, ge=0, description="Branch tokens that concurrent requests may share one round with "
                              "(0: one micro-batch, n_ubatch); a request larger than that gets a round of its own.")
    mode: Mode = Field("parallel", description="Default execution mode.")
    default_debias: Debias = Field(
        "none", description="x_debias for choice questions that do not set one: `rotations` scores SEMIF_DEFAULT_ROTATIONS "
                            "cyclic orders of the options as branches on the same prefix and averages them; `prior` divides out "
                            "the position prior the calibration file (SEMIF_CALIBRATION) holds for the option count, at no extra "
                            "work; a request opts out with x_debias: none.")
    default_rotations: int = Field(
        4, ge=2, le=8, description="Cyclic orders a rotated choice question scores when it does not set x_rotations "
                                   "(at most one per option).")
    batch_invariant: bool = Field(
        False, description="Answer every request as x_batch_invariant does: each question decoded alone on its state's prefix at "
                           "the canonical KV placement, so its probabilities are bit-identical alone, beside any questions, in any "
                           "order, cold or cached (serial's cost); a request opts out with x_batch_invariant: false.")
    preamble_readout: bool = Field(
        False, description="Answer every request as x_preamble does: where the most likely first token is not an option but "
                           "the options follow it (`**`, a newline), the options read after it are added to those read first; "
                           "a request opts out with x_preamble: false.")
    verbose: bool = Field(False, description="Let llama.cpp log more than errors.")
    max_questions: int = Field(128, ge=1, le=256, description="Questions in one request (the 37x21 workload asks 21).")
    max_options: int = Field(255, ge=2, le=255, description="Options of one choice question.")
    max_branch_tokens: int = Field(
        16384, ge=64, description="Tokens decoded after the prefix for one request (sequence readouts add one branch per option).")
    calibration: Path | None = Field(None, description="Calibration file applied to every answer.")


class ServerSettings(BaseSettings):
    """The adapter server (`semif serve`): where it listens, who may call it, its queue, body limit, drain and deadline."""

    model_config = SETTINGS_CONFIG

    host: str = Field("127.0.0.1", description="Bind address; the container sets 0.0.0.0.")
    port: int = Field(PORT, ge=1, le=65535, description="SageMaker's contract port.")
    api_key: str | None = Field(None, description="Bearer token checked when set (local use only).")
    model_aliases: str = Field(
        "", description="More names a request's `model` may send, comma-separated ('*': any name); the model's id, file name, hub "
                        "reference and jev-latest are always accepted, any other name is a 404 (serving.modelnames).")
    queue_size: int = Field(64, ge=1, le=100000, description="Requests waiting for the worker before 503.")
    max_body_bytes: int = Field(MAX_PAYLOAD_BYTES, ge=1024, description="SageMaker's real-time payload limit.")
    drain_s: float = Field(
        25.0, gt=0, le=KILL_AFTER_S - DRAIN_TAIL_S - 1,
        description="After SIGTERM, a request still unanswered this long gets a 503 shutting_down "
                    "(SageMaker sends SIGKILL 30 s after SIGTERM).")
    request_timeout_s: float = Field(
        55.0, gt=0, le=3600, description="A request still waiting this long when its turn comes gets a 503 (SageMaker gives up at 60 s).")
    # The work one body may hold the single inference worker with (`limits`): a body over one is a 413 naming it.
    accept_jsonlines: bool = Field(
        False, description="Read application/jsonlines bodies on /invocations (one request per line): what a Batch Transform "
                           "job's Environment sets; otherwise such a body is a 415 naming this variable.")
    max_records: int = Field(1024, ge=1, le=100000, description="JSON Lines records in one body.")
    max_submission_tokens: int = Field(
        262144, ge=1024, le=1 << 24, description="Prompt tokens the records of one JSON Lines body may need together (one request "
                                                 "is bounded by SEMIF_N_CTX and SEMIF_MAX_BRANCH_TOKENS).")
    # Stateful sessions: SageMaker's two variables (AWS's container standard), then the adapter's bounds on them.
    stateful_sessions: bool = Field(
        False, validation_alias=SESSIONS_ENABLED_ENV, description="Open SageMaker stateful sessions ({\"requestType\": "
        "\"NEW_SESSION\"}); a session keeps the states its requests use cached on this instance until it closes or expires.")
    sessions_expiration_s: int = Field(
        SESSIONS_EXPIRATION_S, ge=1, validation_alias=SESSIONS_EXPIRATION_ENV, description="A session's lifetime in seconds, "
        "fixed when it opens (its Expires).")
    max_sessions: int = Field(256, ge=1, le=100000, description="Sessions open at once; one more is refused 429.")
    empty_session_s: int = Field(
        60, ge=1, description="A session that has answered no request ends this long after it opened, so that opens alone cannot "
                              "hold SEMIF_MAX_SESSIONS for a session's lifetime.")
    sessions_per_peer: int = Field(
        0, ge=0, le=100000, description="Sessions one client address may hold open (0: no share). For a server clients reach "
                                        "directly: behind SageMaker every invocation comes from its router's address, so leave 0 there.")
    session_tokens: int = Field(
        2048, ge=0, description="Tokens of cached states that open sessions keep from eviction together (at most the prefix cache's "
                                "budget, SEMIF_CACHE_TOKENS); a session request whose state would pass it is refused 429.")


class WorkshopSettings(BaseSettings):
    """The workshop: which target the notebooks run on, their state file, results, and the local servers' URLs."""

    model_config = SETTINGS_CONFIG

    target: Literal["local", "container", "aws"] = Field(
        "local", description="Workshop target: local processes, the two images run locally as SageMaker runs them, or AWS.")
    state_file: Path = Field(Path(".semif/workshop_state.json"), description="Resources created by the notebooks.")
    results_dir: Path = Field(Path("results"), description="Where benchmarks and evaluations write JSON.")
    local_decision_url: str = Field(f"http://127.0.0.1:{PORT}", description="Local decision adapter (`semif serve`) for target=local.")
    local_text_url: str = Field("http://127.0.0.1:8081", description="Local text twin (`semif serve-text`) for target=local.")


class AwsSettings(BaseSettings):
    """The AWS target (`semif_lib.aws`): names, region, roles, images, instances and the hosting of big models."""

    model_config = SETTINGS_CONFIG

    run_id: str | None = Field(
        None, pattern=r"^[a-z0-9]{4,12}$",
        description="Suffix on every resource name; default: a random one kept in the state file. In an event team's account, the "
                    "Studio user profile (the policies scope every name to it), so never a word of a resource name.")

    @field_validator("run_id")
    @classmethod
    def _run_id_is_no_name_word(cls, value: str | None) -> str | None:
        # names are semif-<purpose words>-<run id>[-<hash>]: a run id that is one of those words would match another run's
        # names under the policies' semif-*-<run id> patterns
        if value in RESERVED_RUN_IDS:
            raise ValueError(f"run id {value!r} is a word of the workshop's resource names ({', '.join(sorted(RESERVED_RUN_IDS))})")
        return value

    aws_region: str | None = Field(
        None, description="AWS region; default: the boto3 session's (AWS_REGION / AWS_DEFAULT_REGION / profile).")
    aws_endpoint_url: str | None = Field(
        None, description="One endpoint URL for every AWS client (a moto server in tests); unset for real AWS.")
    s3_bucket: str | None = Field(
        None, description="Bucket for models, build sources and batch data; default semif-sagemaker-<account>-<region> (the name Studio's "
                          "default role may use), created private.")
    s3_prefix: str = Field("semif-workshop", description="Key prefix inside the bucket; each run writes under <prefix>/<run id>/.")
    role_arn: str | None = Field(
        None, description="SageMaker execution role; default: Studio's role, else one created from container/iam/.")
    codebuild_role_arn: str | None = Field(  # an event team's account provisions it once (container/cfn/)
        None, description="CodeBuild service role for the adapter build; default: semif-codebuild-<run>, created from container/iam/.")
    role_boundary: str | None = Field(  # a role the workshop creates can never do more than this managed policy
        None, description="Permissions boundary (a managed policy's name or ARN) on every role the workshop creates; default "
                          "semif-workshop-role-boundary, made once per account from container/iam/workshop-role-boundary.json.")
    adapter_image_uri: str | None = Field(
        None, description="A pre-built adapter image notebook 04 deploys, by digest only (<registry>/<repository>@sha256:<64 hex>: "
                          "a tag can be moved to another image); set, notebook 03 builds nothing.")

    @field_validator("adapter_image_uri")
    @classmethod
    def _adapter_image_by_digest(cls, value: str | None) -> str | None:
        return None if value is None else require_image_digest(value)

    kms_key_id: str | None = Field(  # accounts that enforce KMS refuse SSE-S3 uploads
        None, description="KMS key (id, ARN or alias) for the bucket, its objects and the ECR repository; default SSE-S3 / AES256.")
    dlc_variant: Literal["cpu", "cuda", "arm64"] = Field(
        "cpu", description="AWS llama.cpp DLC image variant for the text endpoint and the adapter base.")
    dlc_image: str | None = Field(  # AWS moves the DLC's tags to new llama.cpp builds; an event team pins one it checked
        None, pattern=r"^[a-z0-9.-]+/[a-z0-9._/-]+@sha256:[0-9a-f]{64}$",
        description="A DLC image pinned by digest (<registry>/<repository>@sha256:<64 hex>, as `semif dlc check` prints it) for "
                    "both paths; unset: the variant's tag, pinned to its digest when the run first needs it.")
    instance_type: str = Field("ml.c6i.xlarge", description="Real-time endpoint instance (cpu / arm64 variants).")
    gpu_instance_type: str = Field("ml.g6.xlarge", description="Real-time endpoint instance for the cuda variant.")
    arm_instance_type: str = Field("ml.c7g.xlarge", description="Real-time endpoint instance for the arm64 variant (Graviton).")
    transform_instance_type: str = Field("ml.c6i.xlarge", description="Batch Transform instance.")
    # Big models: unset, each is derived from the GGUF's size by model.package.plan_hosting; the bounds are
    # SageMaker's (botocore's ProductionVariant shapes; tests/test_packaging.py reads them from the service model).
    startup_timeout_s: int | None = Field(
        None, ge=60, le=3600, description="ContainerStartupHealthCheckTimeoutInSeconds; unset: 600 s plus the GGUF's read time.")
    model_download_timeout_s: int | None = Field(
        None, ge=60, le=3600, description="ModelDataDownloadTimeoutInSeconds; unset: 600 s plus the model data's download time.")
    volume_size_gb: int | None = Field(
        None, ge=1, le=512, description="VolumeSizeInGB of each endpoint instance (instances with NVMe storage refuse it); unset: "
                                        "sent only when the model data needs more than SageMaker's ~30 GB default.")
    model_data: Literal["tarball", "uncompressed"] = Field(
        "tarball", description="How the GGUF goes to SageMaker: model.tar.gz (ModelDataUrl), or uncompressed: the GGUF file(s) under "
                               "an S3 prefix (S3ModelDataSource, CompressionType None): no tarball, no second local copy, no "
                               "Batch Transform (target=aws only).")
    routing_strategy: Literal["LEAST_OUTSTANDING_REQUESTS", "RANDOM"] = Field(
        "LEAST_OUTSTANDING_REQUESTS", description="How SageMaker spreads the decision endpoint's requests over its instances "
        "(ProductionVariant RoutingConfig): to the instance with the fewest requests in flight, which suits decisions whose cost "
        "varies 10x with their state, or at random (SageMaker's default). A stateful session's requests stay on their instance either way.")
    codebuild_compute_type: str = Field("BUILD_GENERAL1_MEDIUM", description="CodeBuild compute type for the adapter image.")
    gpu_transform_instance_type: str = Field(
        "ml.g6.xlarge", description="Batch Transform instance for the cuda variant (a GPU; arm64 has no transform instances).")


class ContainerSettings(BaseSettings):
    """The images on this machine (`semif_lib.containers`: the `container` target, container tests, `semif bench peer`)."""

    model_config = SETTINGS_CONFIG

    container_runtime: str | None = Field(
        None, description="docker or podman CLI to use (`none`: no containers); default: podman, else docker.")
    base_image: str | None = Field(
        None, description="Base of the DLC replica image; default localhost/semif-debian:bookworm if built (no registry), else "
                          "debian:bookworm-slim.")
    llama_server: Path | None = Field(
        None, description="llama-server binary for the native text server; default: container/build_libllama.sh's build, else PATH.")


class FaultSettings(BaseSettings):
    """For tests only: decodes that fail as if llama_decode had failed, and the KV store's invariant check after each step."""

    model_config = SETTINGS_CONFIG

    fault_decodes: list[int] = Field(
        default_factory=list, description="1-based numbers of the llama_decode calls that fail (JSON list, e.g. [3, 7]).")
    fault_rate: float = Field(0.0, ge=0.0, le=1.0, description="Probability that any llama_decode call fails (seeded by fault_seed).")
    fault_seed: int = Field(0, description="Seed of the random decode faults.")
    check_invariants: bool = Field(
        False, description="Check the KV bookkeeping after every request (a broken one answers 500); tests turn it on.")


class Settings(EngineSettings, ServerSettings, WorkshopSettings, AwsSettings, ContainerSettings, FaultSettings):
    """Runtime configuration, composed from one class per concern. Each field `foo` is read from `SEMIF_FOO`."""

    model_config = SETTINGS_CONFIG


# A notebook kernel does not see a terminal's `export` (kernels inherit the Jupyter server's environment),
# so `load_settings` also reads `SEMIF_*` lines from this file; container/cfn/'s Studio lifecycle
# configuration writes it for an event team's account.
SETTINGS_FILE_VARIABLE = "SEMIF_SETTINGS_FILE"
DEFAULT_SETTINGS_FILE = "~/.semif/settings.env"


def settings_file() -> Path:
    """The settings file: `SEMIF_SETTINGS_FILE`, else `~/.semif/settings.env` (absent: nothing is read)."""
    return Path(os.environ.get(SETTINGS_FILE_VARIABLE) or DEFAULT_SETTINGS_FILE).expanduser()


def setting_source(name: str) -> str:
    """Where `load_settings` takes setting `name` from: `SEMIF_X` (the environment), `SEMIF_X in <settings file>`, or `default`."""
    variable = env_names().get(name, f"{ENV_PREFIX}{name.upper()}")
    if any(key.upper() == variable for key in os.environ):
        return variable
    path = settings_file()
    if path.is_file():
        if any(key.upper() == variable and value for key, value in dotenv_values(path).items()):
            return f"{variable} in {path}"
    return "default"


def load_settings(**overrides: object) -> Settings:
    """Read the settings file (`settings_file()`), then the environment, which wins over it, then apply
    explicit overrides (CLI flags), ignoring `None`s.

    A value out of range (`--n-ctx 100`, `SEMIF_MODE=warp`) is an `InvalidRequestError` naming
    the variable or flag and the limit, never a pydantic traceback.
    """
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        return Settings(_env_file=settings_file(), **given)  # type: ignore[call-arg]
    except ValidationError as exc:
        err = exc.errors()[0]
        name = str(err["loc"][0]) if err.get("loc") else "settings"
        source = f"--{name.replace('_', '-')}" if name in given else env_names().get(name, name)
        raise InvalidRequestError(f"{source}={err.get('input')!r}: {err['msg']}", field=name) from None


def env_names() -> dict[str, str]:
    """Map each setting to its environment variable, for error messages and docs (SageMaker's own names where it has them)."""
    return {name: field.validation_alias if isinstance(field.validation_alias, str) else f"{ENV_PREFIX}{name.upper()}"
            for name, field in Settings.model_fields.items()}
