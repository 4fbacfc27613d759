"""Helpers for the AWS tests on moto: a tiny GGUF, the errors moto does not raise, the SDK patch.

The fixtures (`aws`, `aws_credentials`, `aws_settings`, `state`, `fake_gguf`) are in
`support/fixtures_aws.py`, registered for every test module by `tests/conftest.py`.

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
