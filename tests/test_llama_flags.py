"""SM_LLAMA_CPP_* <-> llama-server flags: the DLC's rules, both directions, round trip."""

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from semif_lib.llama_flags import (
    build_server_command,
    build_sm_env,
    parse_flags,
    translate_sm_env,
)


def test_dlc_rules():
    env = {
        "SM_LLAMA_CPP_CTX_SIZE": "8192",
        "SM_LLAMA_CPP_N_GPU_LAYERS": "999",
        "SM_LLAMA_CPP_JINJA": "true",
        "SM_LLAMA_CPP_NO_MMAP": "",
        "SM_LLAMA_CPP_MLOCK": "false",
        "SM_LLAMA_CPP_MODEL": "/opt/ml/model/m.gguf",
        "SM_LLAMA_CPP_MODEL_DIR": "/opt/ml/model",
        "SM_LLAMA_CPP_PORT": "8080",
        "SM_LLAMA_CPP_HF_REPO": "org/repo",
        "LLAMA_CPP_UPSTREAM_PORT": "8081",
        "PATH": "/usr/bin",
    }
    assert translate_sm_env(env) == [
        "--ctx-size", "8192", "--hf-repo", "org/repo", "--jinja", "--no-mmap", "--n-gpu-layers", "999",
    ]


def test_values_are_kept_verbatim():
    # "true"/"false" in any case are special (the entrypoint lowercases the value before comparing);
    # everything else is one argument, never split.
    env = {"SM_LLAMA_CPP_ALIAS": "Truth", "SM_LLAMA_CPP_CHAT_TEMPLATE_KWARGS": '{"a": 1}', "SM_LLAMA_CPP_FLASH_ATTN": "on",
           "SM_LLAMA_CPP_JINJA": "True", "SM_LLAMA_CPP_MLOCK": "FALSE"}
    assert translate_sm_env(env) == ["--alias", "Truth", "--chat-template-kwargs", '{"a": 1}', "--flash-attn", "on", "--jinja"]


def test_build_sm_env():
    env = build_sm_env({"n_gpu_layers": 999, "ctx_size": 8192, "flash_attn": "on", "jinja": True,
                        "mlock": False, "seed": None, "--threads-batch": 4, "model": "/opt/ml/model/x.gguf"})
    assert env == {
        "SM_LLAMA_CPP_N_GPU_LAYERS": "999", "SM_LLAMA_CPP_CTX_SIZE": "8192", "SM_LLAMA_CPP_FLASH_ATTN": "on",
        "SM_LLAMA_CPP_JINJA": "true", "SM_LLAMA_CPP_THREADS_BATCH": "4", "SM_LLAMA_CPP_MODEL": "/opt/ml/model/x.gguf",
    }
    assert translate_sm_env(env) == ["--ctx-size", "8192", "--flash-attn", "on", "--jinja", "--n-gpu-layers", "999", "--threads-batch", "4"]


@pytest.mark.parametrize("bad", [{"": 1}, {"ctx size": 1}, {"ctx.size": 1}, {"alias": "x" * 1025}, {"ctx_size": 1, "ctx-size": 2}])
def test_build_sm_env_rejects_what_sagemaker_rejects(bad):
    with pytest.raises(ValueError):
        build_sm_env(bad)


def test_build_sm_env_limits_entry_count():
    with pytest.raises(ValueError, match="100"):
        build_sm_env({f"opt_{i}": i for i in range(101)})


def test_server_command():
    env = {"SM_LLAMA_CPP_MODEL": "/m.gguf", "SM_LLAMA_CPP_CTX_SIZE": "2048"}
    assert build_server_command(env) == ["llama-server", "--host", "127.0.0.1", "--port", "8081", "--model", "/m.gguf",
                                         "--ctx-size", "2048"]


_names = st.from_regex(r"[a-z][a-z0-9]{0,6}(_[a-z0-9]{1,6}){0,2}", fullmatch=True).filter(
    lambda n: n not in ("model", "model_dir", "port"))
_values = st.one_of(
    st.booleans(), st.none(), st.integers(-5, 100000),
    st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=20).filter(
        lambda v: v.lower() not in ("true", "false") and not v.startswith("--")),
)


@hsettings(max_examples=200, deadline=None)
@given(st.dictionaries(_names, _values, max_size=12))
def test_round_trip(settings):
    flags = translate_sm_env(build_sm_env(settings))
    expected = {k: (True if v is True else str(v)) for k, v in settings.items() if v is not None and v is not False}
    assert parse_flags(flags) == expected
