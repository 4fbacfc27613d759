"""AWS fixtures on moto in-process (`mock_aws`): fake credentials, settings pointing at moto, a workshop state, a tiny GGUF.

moto 5.2.5's SageMaker instance-type list is old, so `aws_settings` picks ml.m5.large; the real
defaults (ml.c6i / ml.g6) stay in Settings. Tests that use `aws` or `aws_credentials` get the `aws`
marker (support/markers.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.aws import REGION, make_fake_gguf, patch_sessions, publish_dlc_images


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
        import boto3

        publish_dlc_images(boto3.client("ecr", region_name=REGION))
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
