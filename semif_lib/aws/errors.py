"""AWS errors a person can act on: the wing's exception family (each with an HTTP status), the codes AWS answers
with, and `translate_aws_error` / `aws_errors`, which turn a botocore error into one line that says what to do."""

from __future__ import annotations

import re
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator

from ..errors import SemifError

if TYPE_CHECKING:  # pragma: no cover
    pass

__all__ = [
    "AwsCredentialsError",
    "AwsPermissionError",
    "AwsQuotaError",
    "AwsSetupError",
    "CALLER_POLICY",
    "CREDENTIAL_ERRORS",
    "DENIED_CODES",
    "EXPIRED_CODES",
    "INVALID_KEY_CODES",
    "PROVISIONING_POLICY",
    "QUOTA_CODES",
    "ResourceFailedError",
    "aws_errors",
    "error_code",
    "error_message",
    "is_not_found",
    "unless_gone",
    "quota_error",
    "translate_aws_error",
]


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


def unless_gone(call: Callable[[], Any]) -> Any | None:
    """What `call` (a describe or get) returns, or None when AWS says the resource does not exist."""
    try:
        return call()
    except Exception as exc:
        if is_not_found(exc):
            return None
        raise


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
