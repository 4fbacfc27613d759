"""AWS plumbing shared by the workshop modules: clients, account and region, tags, IAM policy files.

Every client comes from `make_client(service, settings)`, so one setting (`SEMIF_AWS_ENDPOINT_URL`)
points the whole workshop at a moto server in tests, and `SEMIF_AWS_REGION` picks the region.
boto3 is imported inside the functions: `import semif_lib` never loads it.
"""

from __future__ import annotations

import json
import string
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ..errors import SemifError
from ..settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    import boto3

__all__ = [
    "TAG_PROJECT",
    "TAG_RUN_ID",
    "IAM_DIR",
    "get_account_id",
    "get_region",
    "is_not_found",
    "load_policy",
    "make_client",
    "make_session",
    "tag_list",
]

TAG_RUN_ID = "semif-run-id"
TAG_PROJECT = "semif-project"
PROJECT = "semif-workshop"
REPO_ROOT = Path(__file__).resolve().parents[2]
IAM_DIR = REPO_ROOT / "container" / "iam"
DEFAULT_REGION = "us-east-1"


class AwsSetupError(SemifError):
    """Something about the AWS account or configuration stops a workshop step (not a request error)."""

    status_code = 500
    error_type = "aws_setup"


def make_session(settings: Settings) -> "boto3.Session":
    """One boto3 session per region and process: its loader parses each service model once."""
    return _session(settings.aws_region)


@lru_cache(maxsize=8)
def _session(region: str | None) -> "boto3.Session":
    import boto3

    session = boto3.Session(region_name=region) if region else boto3.Session()
    if not session.region_name:
        session = boto3.Session(region_name=DEFAULT_REGION)
    return session


def reset_sessions() -> None:
    """Forget cached sessions and account ids (after changing credentials or profiles)."""
    _session.cache_clear()
    _account_id.cache_clear()


def make_client(service: str, settings: Settings) -> Any:
    """A boto3 client for `service` in the configured region, through `aws_endpoint_url` when set."""
    from botocore.config import Config

    config = Config(retries={"max_attempts": 8, "mode": "adaptive"}, user_agent_extra="semif-workshop")
    return make_session(settings).client(service, endpoint_url=settings.aws_endpoint_url, config=config)


def get_region(settings: Settings) -> str:
    return make_session(settings).region_name


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


def tag_list(run_id: str, **extra: str) -> list[dict[str, str]]:
    """`[{"Key", "Value"}]` tags put on every resource of a run (S3, IAM, ECR, SageMaker, CodeBuild)."""
    tags = {TAG_PROJECT: PROJECT, TAG_RUN_ID: run_id, **extra}
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def is_not_found(exc: BaseException) -> bool:
    """True for the many ways AWS says "that resource does not exist"."""
    code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
    message = str(getattr(exc, "response", {}).get("Error", {}).get("Message", "")).lower()
    not_found_codes = {
        "NoSuchEntity", "NoSuchBucket", "NoSuchKey", "404", "NotFound", "ResourceNotFoundException",
        "RepositoryNotFoundException", "ObjectNotFoundException", "ImageNotFoundException",
    }
    if code in not_found_codes:
        return True
    return code == "ValidationException" and ("could not find" in message or "does not exist" in message or "not found" in message)


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


def poll_status(describe: "Callable[[], dict[str, Any]]", status_key: str, done: str, failed: tuple[str, ...], label: str,
                timeout_s: float, poll_s: float, log: "Callable[[str], None] | None" = print) -> dict[str, Any]:
    """Call `describe` until `desc[status_key]` is `done` (returns it) or in `failed` (raises with the reason).

    Logs each status change with the elapsed time, so a long SageMaker wait shows progress.
    """
    import time

    start, last = time.monotonic(), None
    while True:
        desc = describe()
        status = desc[status_key]
        if log and status != last:
            log(f"[{time.monotonic() - start:6.0f} s] {label}: {status}")
            last = status
        if status == done:
            return desc
        if status in failed:
            raise RuntimeError(f"{label} is {status}: {desc.get('FailureReason') or 'no reason given'}")
        if time.monotonic() - start > timeout_s:
            raise TimeoutError(f"{label} still {status} after {timeout_s:.0f} s")
        time.sleep(poll_s)
