"""The engine's settings: which GGUF, the llama.cpp context, the prefix cache, the default mode, the work one request
may ask for, the calibration; and the test-only faults. Every variable's name is written here, literally, once."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings

from ..contract import MODEL_DIR
from .base import SETTINGS_CONFIG, Debias, Mode, detect_cpu_count


class EngineSettings(BaseSettings):
    """The engine: which GGUF, the llama.cpp context, the prefix cache, the default mode, the work one request may ask for
    (over a limit: 413 naming it), and the calibration applied to answers."""

    model_config = SETTINGS_CONFIG

    model_path: Path | None = Field(None, validation_alias="SEMIF_MODEL_PATH", description="Explicit GGUF file; wins over everything else.")
    model_dir: Path = Field(Path(MODEL_DIR), validation_alias="SEMIF_MODEL_DIR",
                            description="Searched two levels deep for the first *.gguf.")
    n_ctx: int = Field(8192, validation_alias="SEMIF_N_CTX",
                       ge=512, le=131072, description="KV cells shared by the prefix cache and all branches.")
    n_batch: int = Field(2048, validation_alias="SEMIF_N_BATCH", ge=64, le=16384, description="Largest batch handed to one llama_decode.")
    n_ubatch: int = Field(512, validation_alias="SEMIF_N_UBATCH",
                          ge=32, le=4096, description="Physical micro-batch; above 512 was slower on CPU.")
    ubatch_slack: int = Field(0, validation_alias="SEMIF_UBATCH_SLACK", ge=0, le=1024,
                              description="Rows a micro-batch may grow past n_ubatch rather than leave that few for a micro-batch "
                                          "of their own (a 533-token branch tree: one micro-batch, not 512 + 21); 0 (default): "
                                          "never, because the larger context micro-batch slowed fresh prompts (semif bench ubatch).")
    n_seq_max: int = Field(64, validation_alias="SEMIF_N_SEQ_MAX",
                           ge=2, le=256, description="KV sequences: cached prefixes plus parallel branches.")
    threads: int = Field(validation_alias="SEMIF_THREADS", default_factory=detect_cpu_count, ge=1, le=512, description="llama.cpp threads.")
    flash_attn: Literal["auto", "on", "off"] = Field("auto", validation_alias="SEMIF_FLASH_ATTN", description="Flash attention type.")
    n_gpu_layers: int = Field(0, validation_alias="SEMIF_N_GPU_LAYERS", ge=-1, description="Layers offloaded to a GPU build (999 = all).")
    cache_tokens: int = Field(4096, validation_alias="SEMIF_CACHE_TOKENS",
                              ge=0, description="Token budget of the cross-request prefix cache (host memory when spilled).")
    cache_spill: bool = Field(True, validation_alias="SEMIF_CACHE_SPILL",
                              description="Spill cached prefixes to host memory between requests; false keeps them in KV cells "
                                          "(no restore copy, but every resident cell slows other requests' decodes), within n_ctx/2.")
    round_tokens: int = Field(0, validation_alias="SEMIF_ROUND_TOKENS",
                              ge=0, description="Branch tokens that concurrent requests may share one round with "
                                                "(0: one micro-batch, n_ubatch); a request larger than that gets a round of its own.")
    mode: Mode = Field("parallel", validation_alias="SEMIF_MODE", description="Default execution mode.")
    default_debias: Debias = Field(
        "none", validation_alias="SEMIF_DEFAULT_DEBIAS",
        description="x_debias for choice questions that do not set one: `rotations` scores SEMIF_DEFAULT_ROTATIONS "
                    "cyclic orders of the options as branches on the same prefix and averages them; `prior` divides out "
                    "the position prior the calibration file (SEMIF_CALIBRATION) holds for the option count, at no extra "
                    "work; a request opts out with x_debias: none.")
    default_rotations: int = Field(
        4, validation_alias="SEMIF_DEFAULT_ROTATIONS",
        ge=2, le=8, description="Cyclic orders a rotated choice question scores when it does not set x_rotations "
                                "(at most one per option).")
    batch_invariant: bool = Field(
        False, validation_alias="SEMIF_BATCH_INVARIANT",
        description="Answer every request as x_batch_invariant does: each question decoded alone on its state's prefix at "
                    "the canonical KV placement, so its probabilities are bit-identical alone, beside any questions, in any "
                    "order, cold or cached (serial's cost); a request opts out with x_batch_invariant: false.")
    preamble_readout: bool = Field(
        False, validation_alias="SEMIF_PREAMBLE_READOUT",
        description="Answer every request as x_preamble does: where the most likely first token is not an option but "
                    "the options follow it (`**`, a newline), the options read after it are added to those read first; "
                    "a request opts out with x_preamble: false.")
    verbose: bool = Field(False, validation_alias="SEMIF_VERBOSE", description="Let llama.cpp log more than errors.")
    max_questions: int = Field(128, validation_alias="SEMIF_MAX_QUESTIONS",
                               ge=1, le=256, description="Questions in one request (the 37x21 workload asks 21).")
    max_options: int = Field(255, validation_alias="SEMIF_MAX_OPTIONS", ge=2, le=255, description="Options of one choice question.")
    max_branch_tokens: int = Field(
        16384, validation_alias="SEMIF_MAX_BRANCH_TOKENS",
        ge=64, description="Tokens decoded after the prefix for one request (sequence readouts add one branch per option).")
    calibration: Path | None = Field(None, validation_alias="SEMIF_CALIBRATION", description="Calibration file applied to every answer.")


class FaultSettings(BaseSettings):
    """For tests only: decodes that fail as if llama_decode had failed, and the KV store's invariant check after each step."""

    model_config = SETTINGS_CONFIG

    fault_decodes: list[int] = Field(validation_alias="SEMIF_FAULT_DECODES", 
        default_factory=list, description="1-based numbers of the llama_decode calls that fail (JSON list, e.g. [3, 7]).")
    fault_rate: float = Field(0.0, validation_alias="SEMIF_FAULT_RATE",
                              ge=0.0, le=1.0, description="Probability that any llama_decode call fails (seeded by fault_seed).")
    fault_seed: int = Field(0, validation_alias="SEMIF_FAULT_SEED", description="Seed of the random decode faults.")
    check_invariants: bool = Field(
        False, validation_alias="SEMIF_CHECK_INVARIANTS",
        description="Check the KV bookkeeping after every request (a broken one answers 500); tests turn it on.")
