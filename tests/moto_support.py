"""Fixtures for the AWS tests: moto in-process (`mock_aws`), settings pointing at it, a tiny GGUF.

Import the fixtures into a test module with `from moto_support import *  # noqa: F401,F403`.
moto 5.2.5's SageMaker instance-type list is old, so the tests pick ml.m5.large; the real
defaults (ml.c6i / ml.g6) stay in Settings.

moto's SageMaker describe responses carry empty structures (`VpcConfig: {}`, `DataCaptureConfig: {}`)
where AWS leaves the member out, and the SageMaker SDK's v3 resources (`sagemaker.core.resources`)
reject them when they parse a description. `patch_sessions()` strips empty structures from every
SageMaker response before the SDK sees it, so the SDK code path itself runs on moto.
"""

from __future__ import annotations

import functools
import struct
from pathlib import Path
from typing import Any

import pytest

__all__ = ["aws", "aws_credentials", "aws_settings", "client_error", "fake_gguf", "make_fake_gguf", "patch_sessions", "state"]

REGION = "us-east-1"


def make_fake_gguf(path: Path, size: int = 64 << 10) -> Path:
    """A file that looks like a GGUF header (magic, version 3) padded to `size` bytes: enough for packaging."""
    path.parent.mkdir(parents=True, exist_ok=True)
    header = b"GGUF" + struct.pack("<IQQ", 3, 0, 0)
    path.write_bytes(header + bytes(size - len(header)))
    return path


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


def patch_sessions() -> None:
    """Make every session `semif_lib.aws.clients` hands out strip moto's empty structures (see the module doc)."""
    from semif_lib.aws import clients

    if getattr(clients._session, "moto_patched", False):
        return
    original = clients._session.__wrapped__

    @functools.lru_cache(maxsize=16)
    def session(*key):  # (region, endpoint URL)
        made = original(*key)
        made.events.register("after-call.sagemaker", omit_empty_structures)
        return made

    session.moto_patched = True
    session.__wrapped__ = original
    clients._session = session


@pytest.fixture
def fake_gguf(tmp_path) -> Path:
    return make_fake_gguf(tmp_path / "models" / "tiny-test.Q4_0.gguf")


@pytest.fixture
def aws_credentials(monkeypatch):
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing",
                       "AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    from semif_lib.aws import clients as aws_module

    patch_sessions()
    aws_module.reset_sessions()
    yield
    aws_module.reset_sessions()


@pytest.fixture
def aws(aws_credentials):
    from moto import mock_aws

    with mock_aws():
        yield


@pytest.fixture
def aws_settings(tmp_path):
    from semif_lib.settings import Settings

    return Settings(target="aws", aws_region=REGION, state_file=tmp_path / "state" / "workshop_state.json",
                    instance_type="ml.m5.large", gpu_instance_type="ml.g4dn.xlarge", transform_instance_type="ml.m5.large",
                    gpu_transform_instance_type="ml.g4dn.xlarge", run_id="t3st01", model_dir=tmp_path / "no-model-dir")


@pytest.fixture
def state(aws, aws_settings):
    from semif_lib.workshop import load_state

    return load_state(aws_settings)
