"""`semif bench peer`'s configuration: what both servers share and how the run is laid out, with every default.

`PeerConfig` holds every default the command line has (a flag left out is None there, and the
config's default applies); `peer_defaults` reads them for the command line's help, so `semif --help`
builds `semif bench peer`'s flags from here without loading the run. Standard library only at import.
"""

from __future__ import annotations

import uuid
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, Sequence

from ....llama_flags import build_sm_env
from ....settings import ContainerSettings, Settings
from ...options import PEER_PATHS

__all__ = ["CLIENT_TIMEOUT_S", "N_BATCH", "N_UBATCH", "PeerConfig", "peer_defaults"]

N_BATCH, N_UBATCH = 2048, 512  # both sides
# Seconds a client waits for one answer, and what `semif serve` lets a request wait in its queue. In
# the client phase a state can wait a whole round of 8 others (about 90 s of branches on 2 cores),
# far past the adapter's SageMaker-sized default of 55 s; llama-server has no such limit, so neither side has one here.
CLIENT_TIMEOUT_S = 900


@dataclass
class PeerConfig:
    """What both servers share (threads, KV cells, batch sizes) and how the run is laid out."""

    threads: int = 2
    n_ctx: int = 16384  # KV cells on each side: llama-server's 8 slots hold 8 states of up to 2,048 tokens
    parallel: int = 8  # llama-server slots (and the requests the concurrent path keeps in flight)
    clients: int = 8
    concurrency_states: int | None = None  # states in the 8-client phase (default: every state)
    questions: int | None = None  # first N questions per state (tests); None: all
    paths: Sequence[str] = PEER_PATHS
    kind: str = "auto"  # text server: auto, container or native
    decision_llama: str = "auto"  # libllama under semif serve: "build" (the peer's llama.cpp build), "venv" (llama-cpp-python's own), auto
    port: int = 18190  # semif serve; llama-server takes the next one
    log_dir: Path = Path("results/tmp")
    model_path: Path | None = None
    machine: ContainerSettings | None = None  # this machine's llama-server and container runtime (the command reads them)
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:8])

    def sm_env(self, kv_unified: bool = True) -> dict[str, str]:
        """The text DLC's `SM_LLAMA_CPP_*` configuration for the same threads, cells and batch sizes."""
        return build_sm_env({"ctx_size": self.n_ctx, "threads": self.threads, "threads_batch": self.threads,
                             "parallel": self.parallel, "batch_size": N_BATCH, "ubatch_size": N_UBATCH, "flash_attn": "auto",
                             "kv_unified": kv_unified, "n_gpu_layers": 0})

    def serve_env(self, model_path: Path) -> dict[str, str]:
        """`semif serve`'s environment: its defaults, with the same model, threads, cells and batch sizes.

        The queue wait limit is the client's timeout (`CLIENT_TIMEOUT_S`), not SageMaker's 60 s.
        The prefix cache keeps its defaults (`SEMIF_CACHE_TOKENS`, 4,096 tokens: two or three states
        here, spilled to host memory between requests, so they hold no KV cells while other states
        are scored); no state in this run is asked about again after its cached pass.
        """
        from ..harness import server_env

        cache_tokens = min(Settings.model_fields["cache_tokens"].default, self.n_ctx // 2)
        return server_env(self.threads, SEMIF_MODEL_PATH=str(model_path), SEMIF_N_CTX=str(self.n_ctx),
                          SEMIF_CACHE_TOKENS=str(cache_tokens), SEMIF_CHECK_INVARIANTS="0",
                          SEMIF_N_BATCH=str(N_BATCH), SEMIF_N_UBATCH=str(N_UBATCH), SEMIF_FLASH_ATTN="auto",
                          SEMIF_REQUEST_TIMEOUT_S=str(CLIENT_TIMEOUT_S))

    @classmethod
    def from_options(cls, **given: Any) -> "PeerConfig":
        """A config from command-line options: a field given as None (a flag left out) keeps its default here."""
        return cls(**{name: value for name, value in given.items() if value is not None})


def peer_defaults() -> dict[str, Any]:
    """Each `PeerConfig` field's default, for the command line's help (the one source of the benchmark's defaults)."""
    return {f.name: f.default for f in fields(PeerConfig) if f.default is not MISSING}
