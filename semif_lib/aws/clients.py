"""AWS plumbing shared by the workshop modules: sessions and clients, account and region,
IAM policy files, errors a person can act on, retries while IAM propagates, and waits with progress.

Every client comes from `make_client(service, settings)` and every SageMaker SDK resource gets
`make_session(settings)`, so one setting (`SEMIF_AWS_ENDPOINT_URL`) points the whole workshop,
the SDK included, at a moto server in tests, and `SEMIF_AWS_REGION` picks the region. boto3 is
imported inside the functions: `import semif_lib` never loads it. The tags every resource carries
are the run registry's (`registry.WorkshopState.tags()`).
"""

from __future__ import annotations

import json
import re
import string
import time
from contextlib import contextmanager
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

from ..errors import SemifError
from ..paths import repo_root
from ..settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    import boto3

__all__ = [
    "IAM_DIR",
    "AwsCredentialsError",
    "AwsPermissionError",
    "AwsQuotaError",
    "AwsSetupError",
    "ResourceFailedError",
    "aws_errors",
    "get_account_id",
    "get_region",
    "in_region",
    "is_not_found",
    "load_policy",
    "make_client",
    "make_session",
    "poll_status",
    "retry_while_role_propagates",
    "runtime_client",
]

IAM_DIR = repo_root() / "container" / "iam"
DEFAULT_REGION = "us-east-1"


class AwsSetupError(SemifError):
    """Something about the AWS account or configuration stops a workshop step (not a request error)."""

    status_code = 500
    error_type = "aws_setup"


class AwsCredentialsError(AwsSetupError):
    """No AWS credentials, or expired ones: the message says how to get fresh ones."""

    error_type = "aws_credentials"


class AwsPermissionError(AwsSetupError):
    """The calling identity may not perform an action the workshop needs."""

    error_type = "aws_permission"


class AwsQuotaError(AwsSetupError):
    """An account quota (SageMaker instances, CodeBuild concurrent builds) is too low for this step."""

    error_type = "aws_quota"


class ResourceFailedError(AwsSetupError):
    """A SageMaker or CodeBuild resource ended in a failed state (or an update rolled back)."""

    error_type = "aws_resource_failed"


# ====================================================================== sessions and clients
def make_session(settings: Settings) -> "boto3.Session":
    """One boto3 session per region (and endpoint) and process: its loader parses each service model once.

    With `aws_endpoint_url` set, every client the session makes (the SageMaker SDK's included)
    goes to that endpoint.
    """
    return _session(settings.aws_region, settings.aws_endpoint_url)


@lru_cache(maxsize=16)
def _session(region: str | None, endpoint_url: str | None = None) -> "boto3.Session":
    import boto3

    cls = _endpoint_session_class() if endpoint_url else boto3.Session
    session = cls(region_name=region) if region else cls()
    if not session.region_name:
        session = cls(region_name=DEFAULT_REGION)
    if endpoint_url:
        session.semif_endpoint_url = endpoint_url
    return session


@lru_cache(maxsize=1)
def _endpoint_session_class() -> type:
    """A boto3 Session whose clients all use `self.semif_endpoint_url` (libraries that build their own
    clients from a session, like the SageMaker SDK, cannot be given an endpoint URL otherwise)."""
    import boto3

    class EndpointSession(boto3.Session):
        semif_endpoint_url: str | None = None

        def client(self, *args: Any, **kwargs: Any) -> Any:
            if len(args) <= 5:  # endpoint_url is the sixth positional parameter of Session.client
                kwargs["endpoint_url"] = self.semif_endpoint_url
            return super().client(*args, **kwargs)

    return EndpointSession


def reset_sessions() -> None:
    """Forget cached sessions and account ids (after changing credentials or profiles)."""
    _session.cache_clear()
    _account_id.cache_clear()


def make_client(service: str, settings: Settings, max_attempts: int = 8) -> Any:
    """A boto3 client for `service` in the configured region, through `aws_endpoint_url` when set."""
    from botocore.config import Config

    config = Config(retries={"max_attempts": max_attempts, "mode": "adaptive"}, user_agent_extra="semif-workshop")
    return make_session(settings).client(service, endpoint_url=settings.aws_endpoint_url, config=config)


RUNTIME_READ_TIMEOUT_S = 80.0  # the SageMaker SDK's runtime client; an invocation itself may take 60 s


def runtime_client(settings: Settings, read_timeout_s: float = RUNTIME_READ_TIMEOUT_S) -> Any:
    """The `sagemaker-runtime` client: an invocation is waited for 80 s (botocore's 60 s default cuts off a
    60 s invocation) and never sent twice (retries would re-send a slow request, the cost multiplied;
    botocore retries a read timeout like a connection error)."""
    from botocore.config import Config

    config = Config(read_timeout=read_timeout_s, connect_timeout=10, retries={"total_max_attempts": 1, "mode": "standard"},
                    user_agent_extra="semif-workshop")
    return make_session(settings).client("sagemaker-runtime", endpoint_url=settings.aws_endpoint_url, config=config)


def get_region(settings: Settings) -> str:
    return make_session(settings).region_name


def in_region(settings: Settings, region: str) -> Settings:
    """The same settings with `aws_region` pinned (cleanup builds every client from the state's region)."""
    return settings if settings.aws_region == region else settings.model_copy(update={"aws_region": region})


def get_account_id(settings: Settings) -> str:
    return _account_id(settings.aws_endpoint_url, get_region(settings))


@lru_cache(maxsize=16)
def _account_id(endpoint_url: str | None, region: str) -> str:
    from ..settings import Settings as _S

    return make_client("sts", _S(aws_endpoint_url=endpoint_url, aws_region=region)).get_caller_identity()["Account"]


def partition_for(region: str) -> tuple[str, str]:
    """(ARN partition, DNS suffix) of a region."""
    if region.startswith("cn-"):
        return "aws-cn", "amazonaws.com.cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov", "amazonaws.com"
    return "aws", "amazonaws.com"


# ====================================================================== errors
def error_code(exc: BaseException) -> str:
    return str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))


def error_message(exc: BaseException) -> str:
    return str(getattr(exc, "response", {}).get("Error", {}).get("Message", "")) or str(exc)


def is_not_found(exc: BaseException) -> bool:
    """True for the many ways AWS says "that resource does not exist"."""
    code = error_code(exc)
    message = error_message(exc).lower()
    not_found_codes = {
        "NoSuchEntity", "NoSuchBucket", "NoSuchKey", "404", "NotFound", "ResourceNotFoundException",
        "ResourceNotFound", "RepositoryNotFoundException", "ObjectNotFoundException", "ImageNotFoundException",
    }
    if code in not_found_codes:
        return True
    return code == "ValidationException" and ("could not find" in message or "does not exist" in message or "not found" in message)


CREDENTIAL_ERRORS = {"NoCredentialsError", "PartialCredentialsError", "CredentialRetrievalError", "TokenRetrievalError",
                     "SSOTokenLoadError", "UnauthorizedSSOTokenError", "InvalidConfigError", "ProfileNotFound"}
EXPIRED_CODES = {"ExpiredToken", "ExpiredTokenException", "RequestExpired", "TokenRefreshRequired", "InvalidToken"}
INVALID_KEY_CODES = {"InvalidClientTokenId", "UnrecognizedClientException", "InvalidAccessKeyId", "SignatureDoesNotMatch",
                     "AuthFailure"}
DENIED_CODES = {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "AuthorizationError"}
CALLER_POLICY = "container/iam/workshop-caller-policy.json"
PROVISIONING_POLICY = "container/iam/workshop-provisioning-policy.json"


def translate_aws_error(exc: BaseException, step: str = "this step") -> AwsSetupError | None:
    """One short `AwsSetupError` that says what to do, for the AWS errors a person can act on; else None."""
    inner = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)  # S3UploadFailedError wraps a ClientError
    if not error_code(exc) and inner is not None and error_code(inner):
        exc = inner
    name, code = type(exc).__name__, error_code(exc)
    if name in CREDENTIAL_ERRORS:
        return AwsCredentialsError(
            f"{step}: no usable AWS credentials ({name}). Configure them (aws configure, aws sso login, or "
            "AWS_PROFILE / AWS_ACCESS_KEY_ID), or run with SEMIF_TARGET=local, which needs no account.")
    if code in EXPIRED_CODES:
        return AwsCredentialsError(
            f"{step}: your AWS credentials have expired ({code}). Refresh them (aws sso login, or a new session "
            "token; in SageMaker Studio restart the kernel) and run the cell again.")
    if code in INVALID_KEY_CODES:
        return AwsCredentialsError(
            f"{step}: AWS does not recognise these credentials ({code}). Check AWS_PROFILE / AWS_ACCESS_KEY_ID "
            "and the region, then run the cell again.")
    if code in QUOTA_CODES:
        return quota_error(step, code, error_message(exc))
    if code in DENIED_CODES:
        return AwsPermissionError(
            f"{step}: access denied: {error_message(exc)}. Attach {CALLER_POLICY} to your identity (and, where no event "
            f"team provisioned the bucket and roles, {PROVISIONING_POLICY}; notebook 01's permission check lists what is missing).")
    return None


QUOTA_CODES = {"ResourceLimitExceeded", "AccountLimitExceededException"}
_QUOTA_NAME = re.compile(r"limit '([^']+)' is (\d+)")


def quota_error(step: str, code: str, message: str) -> AwsQuotaError:
    """One line naming the quota (SageMaker puts it in quotes: 'ml.c6i.xlarge for endpoint usage') and where to raise it."""
    found = _QUOTA_NAME.search(message)
    if found:
        what = f"the quota '{found.group(1)}' is {found.group(2)}"
    elif code == "AccountLimitExceededException":
        what = f"CodeBuild's concurrent-build quota is too low ({message.rstrip('.')})"
    else:
        what = f"an account quota is too low ({message.rstrip('.')})"
    return AwsQuotaError(f"{step}: {what} ({code}). Request an increase in the Service Quotas console (it can take hours "
                         "on a new account) or pick another instance type, then run the cell again")


@contextmanager
def aws_errors(step: str = "this step") -> Iterator[None]:
    """Turn missing/expired credentials and access denials into one `AwsSetupError` line, not a boto traceback."""
    try:
        yield
    except SemifError:
        raise
    except Exception as exc:
        translated = translate_aws_error(exc, step)
        if translated is None:
            raise
        raise translated from None


ROLE_PROPAGATION_MESSAGES = ("not authorized to perform sts:assumerole", "not authorized to perform: sts:assumerole",
                             "could not assume role")


def retry_while_role_propagates(call: Callable[[], Any], label: str, *, timeout_s: float = 120.0, first_delay_s: float = 2.0,
                                sleep: Callable[[float], None] | None = None, log: Callable[[str], None] | None = print) -> Any:
    """Run `call`, retrying with doubling delays (at most `timeout_s` in all) while a new IAM role is not
    yet assumable: CodeBuild's "not authorized to perform sts:AssumeRole", SageMaker's "could not assume role"."""
    start, delay = time.monotonic(), first_delay_s
    while True:
        try:
            return call()
        except Exception as exc:  # only the propagation messages are retried
            if not any(m in error_message(exc).lower() for m in ROLE_PROPAGATION_MESSAGES):
                raise
            waited = time.monotonic() - start
            if waited + delay > timeout_s:
                raise AwsSetupError(f"{label}: the IAM role is still not assumable after {waited:.0f} s "
                                    f"({error_message(exc)}); check its trust policy, then run the cell again") from None
            if log:
                log(f"{label}: IAM role not assumable yet (IAM is eventually consistent); retrying in {delay:.0f} s")
            (sleep or time.sleep)(delay)
            delay = min(delay * 2, 30.0)


# ====================================================================== policies
def load_policy(name: str, **values: str) -> dict[str, Any]:
    """An IAM policy document from `container/iam/<name>.json` with `${PLACEHOLDER}`s filled in.

    Every placeholder must be given, so a policy never reaches IAM with a literal `${...}` in it.
    """
    path = IAM_DIR / f"{name}.json"
    if not path.is_file():
        raise AwsSetupError(f"IAM policy {path} not found: run the workshop from a checkout of the repository (pip install -e .)")
    try:
        text = string.Template(path.read_text()).substitute(values)
    except KeyError as exc:
        raise AwsSetupError(f"policy {name}: no value for placeholder {exc}") from None
    return json.loads(text)


def compact_json(document: Mapping[str, Any]) -> str:
    return json.dumps(document, separators=(",", ":"))


# ====================================================================== waits with progress
def status_bar(label: str, enabled: bool = True, total: int | None = None) -> Any:
    """A `tqdm.auto` bar (a widget in Jupyter) that shows a wait's status and elapsed time."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=label, disable=not enabled, leave=True, dynamic_ncols=True,
                bar_format="{desc} [{elapsed}]" if total is None else "{desc} {bar} {n_fmt}/{total_fmt} [{elapsed}]")


def sleep_with_bar(bar: Any, seconds: float) -> None:
    """Sleep, refreshing the bar about once a second so its elapsed time keeps moving."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        time.sleep(min(1.0, left))
        bar.refresh()


def poll_status(describe: "Callable[[], dict[str, Any]]", status_key: str, done: str, failed: tuple[str, ...], label: str,
                timeout_s: float, poll_s: float, log: "Callable[[str], None] | None" = print, progress: bool = True) -> dict[str, Any]:
    """Call `describe` until `desc[status_key]` is `done` (returns it) or in `failed` (raises with the reason).

    A `tqdm.auto` bar shows the status and the elapsed time; each status change is also logged
    with the elapsed time, so a long SageMaker wait shows progress.
    """
    start, last = time.monotonic(), None
    bar = status_bar(label, enabled=progress)
    try:
        while True:
            desc = describe()
            status = desc[status_key]
            if status != last:
                bar.set_description_str(f"{label}: {status}")
                if log:
                    log(f"[{time.monotonic() - start:6.0f} s] {label}: {status}")
                last = status
            if status == done:
                return desc
            if status in failed:
                raise ResourceFailedError(f"{label} is {status}: {desc.get('FailureReason') or 'no reason given'}")
            if time.monotonic() - start > timeout_s:
                raise TimeoutError(f"{label} still {status} after {timeout_s:.0f} s")
            sleep_with_bar(bar, poll_s)
    finally:
        bar.close()
