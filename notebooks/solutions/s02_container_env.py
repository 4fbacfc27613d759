"""Notebook 02's exercise: the environment the text DLC gets for a 4,096-token context on 4 threads, and the
llama-server flags its entrypoint turns it into (`SM_LLAMA_CPP_CTX_SIZE=4096` becomes `--ctx-size 4096`)."""

from __future__ import annotations

from semif_lib.aws import deployment
from semif_lib.invocation import text_settings
from semif_lib.llama_flags import translate_sm_env


def container_env(ctx_size: int = 4096, threads: int = 4) -> dict[str, str]:
    """The `SM_LLAMA_CPP_*` variables CreateModel would send for the cpu variant with these two settings changed."""
    return deployment.build_container_env(text_settings("cpu", {"ctx_size": ctx_size, "threads": threads}))


def server_flags(env: dict[str, str]) -> list[str]:
    """What the DLC's entrypoint passes llama-server (the translation the local twin uses too)."""
    return translate_sm_env(env)
