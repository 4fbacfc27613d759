"""`SM_LLAMA_CPP_*` environment variables <-> `llama-server` flags, with the AWS llama.cpp DLC's rules.

The DLC's SageMaker entrypoint turns every `SM_LLAMA_CPP_FOO_BAR=value` into `--foo-bar value`:
the prefix is stripped, the rest lowercased and `_` becomes `-`; `true` (any case) or an empty
value gives a bare flag, `false` (any case) drops the variable, and `MODEL`, `MODEL_DIR` and `PORT` are consumed by the
entrypoint itself. One function implements that rule (`translate_sm_env`) and one builds the
environment from a settings dict (`build_sm_env`), so the same configuration drives the real DLC
endpoint, the local twin (`semif serve-text`), the DLC replica image's entrypoint and the native
llama-server that `semif bench peer` runs. Plain string functions, standard library only: the
replica image runs this file with the system `python3` (`python3 llama_flags.py server-command`).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Mapping, Sequence

__all__ = [
    "DLC_MODEL_DIR",
    "ENTRYPOINT_KEYS",
    "SM_PREFIX",
    "build_server_command",
    "find_dlc_model",
    "find_gguf_in_dir",
    "build_sm_env",
    "parse_flags",
    "refuse_removed_flags",
    "translate_sm_env",
]

SM_PREFIX = "SM_LLAMA_CPP_"
# Consumed by the DLC entrypoint (model resolution and nginx port), never forwarded as flags.
ENTRYPOINT_KEYS = frozenset({"MODEL", "MODEL_DIR", "PORT"})
UPSTREAM_PORT = 8081  # LLAMA_CPP_UPSTREAM_PORT default: llama-server behind nginx
# Where SageMaker unpacks the model: written here, not in `contract`, which reads it from here (`contract.MODEL_DIR`),
# because the replica image runs this file alone.
DLC_MODEL_DIR = "/opt/ml/model"

# SageMaker's limits on a container's Environment map.
MAX_ENV_ENTRIES = 100
MAX_ENV_VALUE_CHARS = 1024
_ENV_KEY = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")

SettingValue = str | int | float | bool | None

# Flags llama.cpp removed in the release the DLC's tags carry since 2026-09-25 (v0.4.1 = b10964), with the
# DLC changelog's own advice; llama-server refuses them ("the argument has been removed"), so the endpoint
# never becomes healthy. Names as parse_flags gives them (`-` as `_`, long and short).
REMOVED_FLAGS = frozenset({"mmap", "no_mmap", "mlock", "direct_io", "dio", "no_direct_io", "ndio"})
REMOVED_FLAGS_REASON = ("removed upstream in llama.cpp v0.4.1, the AWS llama.cpp DLC's build since 2026-09-25 (\"Upstream removed the "
                        "deprecated --mmap, --mlock, and --direct-io flags. Use --load-mode instead.\"): use --load-mode "
                        "auto|none|mmap|mlock|mmap+mlock|dio (SM_LLAMA_CPP_LOAD_MODE)")


def translate_sm_env(env: Mapping[str, str]) -> list[str]:
    """`llama-server` arguments for the `SM_LLAMA_CPP_*` entries of `env`, as the DLC builds them.

    Variables are taken in sorted order, so the result is deterministic (the entrypoint walks `env`).
    `true`/`false` are compared lowercased, as the entrypoint does (`tr '[:upper:]' '[:lower:]'`).
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
        if value.lower() == "false":
            continue
        if value.lower() == "true" or value == "":
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


def refuse_removed_flags(flags: Sequence[str]) -> None:
    """`ValueError` naming the first flag today's llama-server refuses (`REMOVED_FLAGS`) and what replaces it."""
    for name in parse_flags(flags):
        if name in REMOVED_FLAGS:
            raise ValueError(f"--{name.replace('_', '-')} is {REMOVED_FLAGS_REASON}")


def find_gguf_in_dir(model_dir: Path, max_depth: int = 2) -> Path | None:
    """First `*.gguf` (sorted, shallowest first) up to `max_depth` levels under `model_dir`.

    The DLC's `find MODEL_DIR -maxdepth 2 -name '*.gguf' | head -n1` takes directory order, which
    is arbitrary; sorted is the same choice whenever there is one candidate, and reproducible
    when there are several. For a sharded model the first shard (`-00001-of-N`) sorts first.
    """
    if not model_dir.is_dir():
        return None
    for depth in range(max_depth):
        pattern = "/".join(["*"] * depth + ["*.gguf"])
        found = sorted(p for p in model_dir.glob(pattern) if p.is_file())
        if found:
            return found[0]
    return None


def find_dlc_model(env: Mapping[str, str]) -> str | None:
    """The model the DLC entrypoint serves: `SM_LLAMA_CPP_MODEL`, else the first GGUF under the model dir."""
    if env.get(SM_PREFIX + "MODEL"):
        return env[SM_PREFIX + "MODEL"]
    found = find_gguf_in_dir(Path(env.get(SM_PREFIX + "MODEL_DIR") or DLC_MODEL_DIR))
    return str(found) if found else None


def build_server_command(
    env: Mapping[str, str], model_path: str | None = None, upstream_port: int = UPSTREAM_PORT, binary: str = "llama-server"
) -> list[str]:
    """The `llama-server` command line the DLC entrypoint runs behind nginx, for docs and checks."""
    command = [binary, "--host", "127.0.0.1", "--port", str(upstream_port)]
    model = model_path or env.get(SM_PREFIX + "MODEL")
    if model:
        command += ["--model", model]
    return command + translate_sm_env(env)


def main(argv: Sequence[str] | None = None) -> int:
    """`python3 llama_flags.py server-command [BINARY]`: the DLC entrypoint's llama-server command line.

    Printed NUL-separated for `mapfile -d ''` in the replica's `/usr/bin/serve`, so values with
    spaces or quotes stay one argument. Without a model it warns and leaves `--model` out, as the
    DLC's entrypoint does (llama-server then exits, and `/ping` never answers 200).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] != "server-command":
        print("usage: llama_flags.py server-command [BINARY]", file=sys.stderr)
        return 2
    env = dict(os.environ)
    model = find_dlc_model(env)
    if model is None:
        model_dir = env.get(SM_PREFIX + "MODEL_DIR") or DLC_MODEL_DIR
        print(f"WARNING: no *.gguf found under {model_dir}; set SM_LLAMA_CPP_MODEL or mount a GGUF.", file=sys.stderr)
    elif not env.get(SM_PREFIX + "MODEL"):
        print(f"INFO: auto-detected GGUF model {model}", file=sys.stderr)
    port = int(env.get("LLAMA_CPP_UPSTREAM_PORT") or UPSTREAM_PORT)
    command = build_server_command(env, model, port, args[1] if len(args) > 1 else "llama-server")
    sys.stdout.write("\0".join(command) + "\0")
    return 0


if __name__ == "__main__":
    sys.exit(main())
