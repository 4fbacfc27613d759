"""`SM_LLAMA_CPP_*` environment variables <-> `llama-server` flags, with the AWS llama.cpp DLC's rules.

The DLC's SageMaker entrypoint turns every `SM_LLAMA_CPP_FOO_BAR=value` into `--foo-bar value`:
the prefix is stripped, the rest lowercased and `_` becomes `-`; `true` or an empty value gives a
bare flag, `false` drops the variable, and `MODEL`, `MODEL_DIR` and `PORT` are consumed by the
entrypoint itself. One function implements that rule (`translate_sm_env`) and one builds the
environment from a settings dict (`build_sm_env`), so the same configuration drives the real DLC
endpoint and the local twin (`semif serve-text`). Both are plain string functions: no imports
beyond the standard library, because the AWS deployment code imports this module too.
"""

from __future__ import annotations

import re
from typing import Mapping, Sequence

__all__ = [
    "ENTRYPOINT_KEYS",
    "SM_PREFIX",
    "build_server_command",
    "build_sm_env",
    "parse_flags",
    "translate_sm_env",
]

SM_PREFIX = "SM_LLAMA_CPP_"
# Consumed by the DLC entrypoint (model resolution and nginx port), never forwarded as flags.
ENTRYPOINT_KEYS = frozenset({"MODEL", "MODEL_DIR", "PORT"})
UPSTREAM_PORT = 8081  # LLAMA_CPP_UPSTREAM_PORT default: llama-server behind nginx

# SageMaker's limits on a container's Environment map.
MAX_ENV_ENTRIES = 100
MAX_ENV_VALUE_CHARS = 1024
_ENV_KEY = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")

SettingValue = str | int | float | bool | None


def translate_sm_env(env: Mapping[str, str]) -> list[str]:
    """`llama-server` arguments for the `SM_LLAMA_CPP_*` entries of `env`, as the DLC builds them.

    Variables are taken in sorted order (as bash's `${!SM_LLAMA_CPP_@}` expands them), so the
    result is deterministic. `true`/`false` are matched exactly, as the entrypoint's shell test does.
    """
    flags: list[str] = []
    for key in sorted(env):
        if not key.startswith(SM_PREFIX):
            continue
        name = key[len(SM_PREFIX):]
        if not name or name in ENTRYPOINT_KEYS:
            continue
        value = env[key]
        flag = "--" + name.lower().replace("_", "-")
        if value == "false":
            continue
        if value in ("true", ""):
            flags.append(flag)
        else:
            flags.extend([flag, value])
    return flags


def _env_key(name: str) -> str:
    """`n_gpu_layers`, `n-gpu-layers` or `--n-gpu-layers` -> `SM_LLAMA_CPP_N_GPU_LAYERS`."""
    stem = name.strip().lstrip("-").replace("-", "_").upper()
    if stem.startswith(SM_PREFIX):
        stem = stem[len(SM_PREFIX):]
    key = SM_PREFIX + stem
    if not stem or not _ENV_KEY.match(key):
        raise ValueError(f"setting {name!r} cannot be an environment variable name")
    return key


def _env_value(value: SettingValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def build_sm_env(settings: Mapping[str, SettingValue]) -> dict[str, str]:
    """`SM_LLAMA_CPP_*` variables for a settings dict, the inverse of `translate_sm_env`.

    `{"n_gpu_layers": 999, "ctx_size": 8192, "flash_attn": "on", "jinja": True}` gives
    `SM_LLAMA_CPP_N_GPU_LAYERS=999`, ... and `SM_LLAMA_CPP_JINJA=true`. `None` and `False` are left
    out (the entrypoint would drop `false` anyway, and SageMaker allows only 100 variables);
    `model`, `model_dir` and `port` are allowed and reach the entrypoint, not llama-server.
    Raises `ValueError` for names or values SageMaker would reject.
    """
    env: dict[str, str] = {}
    for name, value in settings.items():
        if value is None or value is False:
            continue
        key = _env_key(name)
        text = _env_value(value)
        if len(text) > MAX_ENV_VALUE_CHARS:
            raise ValueError(f"{key} is {len(text)} characters; SageMaker allows {MAX_ENV_VALUE_CHARS}")
        if key in env:
            raise ValueError(f"two settings map to {key}")
        env[key] = text
    if len(env) > MAX_ENV_ENTRIES:
        raise ValueError(f"{len(env)} environment variables; SageMaker allows {MAX_ENV_ENTRIES}")
    return env


def parse_flags(flags: Sequence[str]) -> dict[str, str | bool]:
    """`["--ctx-size", "8192", "--jinja"]` -> `{"ctx_size": "8192", "jinja": True}`.

    Reads what `translate_sm_env` produced, so a local server can map the same flags onto
    its own settings. A flag followed by another flag (or nothing) is bare (`True`).
    """
    out: dict[str, str | bool] = {}
    i = 0
    while i < len(flags):
        token = flags[i]
        if not token.startswith("--") or len(token) < 3:
            raise ValueError(f"expected a --flag at position {i}, got {token!r}")
        name = token[2:].replace("-", "_")
        if i + 1 < len(flags) and not flags[i + 1].startswith("--"):
            out[name] = flags[i + 1]
            i += 2
        else:
            out[name] = True
            i += 1
    return out


def build_server_command(
    env: Mapping[str, str], model_path: str | None = None, upstream_port: int = UPSTREAM_PORT, binary: str = "llama-server"
) -> list[str]:
    """The `llama-server` command line the DLC entrypoint runs behind nginx, for docs and checks."""
    command = [binary, "--host", "127.0.0.1", "--port", str(upstream_port)]
    model = model_path or env.get(SM_PREFIX + "MODEL")
    if model:
        command += ["--model", model]
    return command + translate_sm_env(env)
