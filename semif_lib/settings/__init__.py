"""Every environment variable the project reads, one class per concern, each variable's name written once, literally,
on the field that reads it (`validation_alias`), so `grep SEMIF_N_CTX` finds its reader.

`engine` (the GGUF, the context, the cache, a request's work; the test-only faults), `server` (`semif serve`),
`workshop` (the target, its state, the images on this machine), `aws` (account, roles, images by digest, instances),
`base` (what they share: the prefix, the config, the modes). `Settings` composes them; each wing is handed its
settings from the top floor. The settings object is a read-only snapshot: code receives a `Settings` and never reads
`os.environ` itself, so tests can build one explicitly.
"""

from __future__ import annotations

import os
from pathlib import Path

from dotenv import dotenv_values  # pydantic-settings' own .env reader
from pydantic import ValidationError

from ..errors import InvalidRequestError
from .aws import ECR_REGISTRY, IMAGE_BY_DIGEST, AwsSettings, require_image_digest
from .base import DRAIN_TAIL_S, ENV_PREFIX, MODES, RESERVED_RUN_IDS, SETTINGS_CONFIG, Debias, Mode, detect_cpu_count
from .engine import EngineSettings, FaultSettings
from .server import ServerSettings
from .workshop import ContainerSettings, WorkshopSettings

__all__ = ["DRAIN_TAIL_S", "ECR_REGISTRY", "ENV_PREFIX", "IMAGE_BY_DIGEST", "MODES", "RESERVED_RUN_IDS", "SETTINGS_CONFIG",
           "AwsSettings", "ContainerSettings", "Debias", "EngineSettings", "FaultSettings", "Mode", "ServerSettings", "Settings",
           "WorkshopSettings", "detect_cpu_count", "env_names", "load_settings", "require_image_digest", "setting_source",
           "settings_file"]



class Settings(EngineSettings, ServerSettings, WorkshopSettings, AwsSettings, ContainerSettings, FaultSettings):
    """Runtime configuration, composed from one class per concern. Each field `foo` is read from the variable its own class
    names (`SEMIF_FOO`, or SageMaker's name for it)."""

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
        name = {variable: field for field, variable in env_names().items()}.get(name, name)  # read from its variable
        source = f"--{name.replace('_', '-')}" if name in given else env_names().get(name, name)
        raise InvalidRequestError(f"{source}={err.get('input')!r}: {err['msg']}", field=name) from None


def env_names() -> dict[str, str]:
    """Map each setting to its environment variable, as its field names it, for error messages and docs."""
    return {name: str(field.validation_alias) for name, field in Settings.model_fields.items()}
