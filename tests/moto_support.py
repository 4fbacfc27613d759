"""Fixtures for the AWS tests: moto in-process (`mock_aws`), settings pointing at it, a tiny GGUF.

Import the fixtures into a test module with `from moto_support import *  # noqa: F401,F403`.
moto 5.2.5's SageMaker instance-type list is old, so the tests pick ml.m5.large; the real
defaults (ml.c6i / ml.g6) stay in Settings.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

__all__ = ["aws", "aws_credentials", "aws_settings", "fake_gguf", "make_fake_gguf", "state"]

REGION = "us-east-1"


def make_fake_gguf(path: Path, size: int = 64 << 10) -> Path:
    """A file that looks like a GGUF header (magic, version 3) padded to `size` bytes: enough for packaging."""
    path.parent.mkdir(parents=True, exist_ok=True)
    header = b"GGUF" + struct.pack("<IQQ", 3, 0, 0)
    path.write_bytes(header + bytes(size - len(header)))
    return path


@pytest.fixture
def fake_gguf(tmp_path) -> Path:
    return make_fake_gguf(tmp_path / "models" / "tiny-test.Q4_0.gguf")


@pytest.fixture
def aws_credentials(monkeypatch):
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing",
                       "AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setattr("semif_lib.aws.iamroles.ROLE_PROPAGATION_S", 0)
    from semif_lib.aws import clients as aws_module

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
                    run_id="t3st01", model_dir=tmp_path / "no-model-dir")


@pytest.fixture
def state(aws, aws_settings):
    from semif_lib.workshop import load_state

    return load_state(aws_settings)
