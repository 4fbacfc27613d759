"""AWS sessions and clients, account and region, and the IAM policy files.

Every client comes from `make_client(service, settings)` and every SageMaker SDK resource gets
`make_session(settings)`, so one setting (`SEMIF_AWS_ENDPOINT_URL`) points the whole workshop,
the SDK included, at a moto server in tests, and `SEMIF_AWS_REGION` picks the region. boto3 is
imported inside the functions: `import semif_lib` never loads it. Errors are `aws.errors`, waits `aws.waits`.
"""

from __future__ import annotations

import json
import string
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Mapping

from ..paths import repo_root
from ..settings import Settings
from .errors import AwsSetupError

if TYPE_CHECKING:  # pragma: no cover
    import boto3

__all__ = [
    "DEFAULT_REGION",
    "IAM_DIR",
    "RUNTIME_READ_TIMEOUT_S",
    "compact_json",
    "get_account_id",
    "get_region",
    "in_region",
    "load_policy",
    "make_client",
    "make_session",
    "partition_for",
    "reset_sessions",
    "runtime_client",
]


IAM_DIR = repo_root() / "container" / "iam"


DEFAULT_REGION = "us-east-1"


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
    return make_client("sts", Settings(aws_endpoint_url=endpoint_url, aws_region=region)).get_caller_identity()["Account"]


def partition_for(region: str) -> tuple[str, str]:
    """(ARN partition, DNS suffix) of a region."""
    if region.startswith("cn-"):
        return "aws-cn", "amazonaws.com.cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov", "amazonaws.com"
    return "aws", "amazonaws.com"


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
