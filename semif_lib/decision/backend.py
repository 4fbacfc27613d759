"""The llama.cpp side of the decision engine: model, context, batch, and KV operations on sequences.

Built with the low-level API because the high-level `Llama` class has one sequence only
(`n_seq_max = 1`) and no unified KV cache. This module knows nothing of prefixes, requests or
answers: it tokenizes, decodes rows and reads logits, and copies, cuts, saves and loads
sequences. `kvstore` keeps the books over these operations; `LlamaBackend` satisfies its
`KVMemory` protocol.
"""

from __future__ import annotations

import ctypes
import functools
import random
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ..errors import DecodeError, ModelLoadError
from ..settings import Settings

__all__ = ["LlamaBackend", "NoGpuDeviceError", "ensure_backend", "inject_faults", "make_fault_plan", "mark_rows", "require_gpu_device",
           "split_rows"]

FLASH_TYPES = {"auto": -1, "off": 0, "on": 1}
INJECTED_FAULT = -99  # the return code an injected decode failure reports
DECODE_REASONS = {1: "no free KV slot", INJECTED_FAULT: "injected fault"}
_backend_lock = threading.Lock()
_backend_ready = False


def ensure_backend(verbose: bool = False) -> Any:
    """Import llama_cpp and initialise its backend once per process (heavy import, kept lazy)."""
    global _backend_ready
    import llama_cpp
    from llama_cpp._logger import set_verbose

    set_verbose(verbose)  # llama.cpp logs every tensor at load; keep errors only unless asked
    with _backend_lock:
        if not _backend_ready:
            llama_cpp.llama_backend_init()
            _backend_ready = True
    return llama_cpp


class NoGpuDeviceError(ModelLoadError):
    """GPU layers were asked for and ggml registered no GPU device: refused at start-up (503 for a model load)."""

    error_type = "no_gpu_device"


def require_gpu_device(n_gpu_layers: int, llama_cpp: Any) -> None:
    """Refuse GPU layers (`SEMIF_N_GPU_LAYERS` not 0) when ggml registered no GPU device.

    `llama_supports_gpu_offload()` is llama.cpp's own test (a GPU or integrated-GPU device registered, or
    RPC): on a CPU instance, with a CPU build, or with a driver the image's CUDA does not run on (the DLC's
    CUDA 13 on a driver-535 Batch Transform AMI) ggml falls back to the CPU without a word.
    """
    if n_gpu_layers and not llama_cpp.llama_supports_gpu_offload():
        raise NoGpuDeviceError(
            f"SEMIF_N_GPU_LAYERS={n_gpu_layers} asks for GPU layers, but ggml registered no GPU device (no GPU backend in this "
            "llama.cpp, no GPU, or a driver too old for its CUDA): set SEMIF_N_GPU_LAYERS=0 to serve on the CPU, or run on a "
            "GPU instance whose driver runs the image's CUDA", field="n_gpu_layers")


def split_rows(n: int, ubatch: int, slack: int) -> list[tuple[int, int]]:
    """The micro-batches `n` rows are decoded in: `ubatch` rows each, but a last remainder of at most `slack`
    rows joins the one before it. A remainder that small costs a whole pass over the weights for a few rows
    (a 533-token branch tree as 512 + 21 measured 11 % slower than one micro-batch on this CPU)."""
    bounds = [(start, min(start + ubatch, n)) for start in range(0, n, ubatch)]
    if len(bounds) > 1 and bounds[-1][1] - bounds[-1][0] <= slack:
        bounds[-2:] = [(bounds[-2][0], n)]
    return bounds


def mark_rows(length: int, rows: Iterable[int]) -> list[bool]:
    """The logits mask of a batch of `length` rows: True on the rows whose logits are read."""
    want = [False] * length
    for row in rows:
        want[row] = True
    return want


def make_fault_plan(numbers: Sequence[int], rate: float, seed: int) -> Callable[[int], bool] | None:
    """Which decode calls fail on purpose (tests only): the listed call numbers, or each with probability `rate`."""
    if not numbers and rate <= 0:
        return None

    listed, draw = frozenset(numbers), random.Random(seed)
    return lambda n: n in listed or (rate > 0 and draw.random() < rate)


def inject_faults(backend: "LlamaBackend", fail: Callable[[int], bool]) -> None:
    """Make the n-th `llama_decode` call (1-based, `fail(n)` true) report failure after it ran.

    A wrapper around `run_batch`, so the decode path itself has no test branch: the cells are
    written, as a real failure in the middle of a batch leaves them.
    """
    real = backend.run_batch

    def run_batch(n_tokens: int) -> int:
        rc = real(n_tokens)
        return INJECTED_FAULT if rc == 0 and fail(backend.decode_calls) else rc

    backend.run_batch = run_batch  # type: ignore[method-assign]


class VocabReader:
    """The vocabulary half of a loaded llama.cpp model (`lib`, `_model`, `_vocab`): template, token texts, tokenizing.

    `LlamaBackend` serves requests with it; `inspection.VocabTokenizer` checks a model's slots with it,
    loading the vocabulary alone.
    """

    lib: Any
    _model: Any
    _vocab: Any

    @property
    def chat_template(self) -> str | None:
        template = self.lib.llama_model_chat_template(self._model, None)
        return template.decode("utf-8") if template else None

    @property
    def bos_text(self) -> str:
        return self.token_text(self.lib.llama_vocab_bos(self._vocab))

    @property
    def eos_text(self) -> str:
        return self.token_text(self.lib.llama_vocab_eos(self._vocab))

    def token_text(self, token: int) -> str:
        if token < 0:
            return ""
        buf = ctypes.create_string_buffer(256)
        n = self.lib.llama_token_to_piece(self._vocab, token, buf, len(buf), 0, True)
        return buf.raw[: max(n, 0)].decode("utf-8", "replace")

    def is_control(self, token: int) -> bool:
        return bool(self.lib.llama_vocab_is_control(self._vocab, token))

    def _tokenize_uncached(self, text: str, add_special: bool, parse_special: bool = True) -> tuple[int, ...]:
        data = text.encode("utf-8")
        size = len(data) + 16
        arr = (self.lib.llama_token * size)()
        n = self.lib.llama_tokenize(self._vocab, data, len(data), arr, size, add_special, parse_special)
        if n < 0:
            size = -n
            arr = (self.lib.llama_token * size)()
            n = self.lib.llama_tokenize(self._vocab, data, len(data), arr, size, add_special, parse_special)
        return tuple(arr[:n])


class LlamaBackend(VocabReader):
    """One GGUF loaded with a context of `n_seq_max` sequences over a unified KV cache."""

    def __init__(self, settings: Settings, model_path: Path) -> None:
        self.model_path = model_path
        self.lib = lib = ensure_backend(settings.verbose)
        self.decode_calls = 0
        self._model = self._ctx = self._batch = None
        require_gpu_device(settings.n_gpu_layers, lib)  # GPU layers asked for and no GPU: refused, not a silent CPU run
        mparams = lib.llama_model_default_params()
        mparams.n_gpu_layers = settings.n_gpu_layers
        self._model = lib.llama_model_load_from_file(str(model_path).encode(), mparams)
        if not self._model:
            raise ModelLoadError(f"llama.cpp could not load {model_path}: not a valid GGUF, or an unsupported architecture",
                                 field="model_path")
        self._ctx = lib.llama_init_from_model(self._model, self._context_params(settings))
        if not self._ctx:
            self.close()
            raise ModelLoadError(f"llama.cpp could not create a context for {model_path} "
                                 f"(n_ctx={settings.n_ctx}, n_seq_max={settings.n_seq_max})", field="n_ctx")
        self.n_ctx = lib.llama_n_ctx(self._ctx)
        self.n_batch = lib.llama_n_batch(self._ctx)
        # the micro-batch rule (`split_rows`): each llama_decode gets one micro-batch, which llama.cpp never splits again
        self.ubatch = min(settings.n_ubatch, self.n_batch)
        self.ubatch_slack = lib.llama_n_ubatch(self._ctx) - self.ubatch
        self.n_seq_max = lib.llama_n_seq_max(self._ctx)
        self._mem = lib.llama_get_memory(self._ctx)
        self._vocab = lib.llama_model_get_vocab(self._model)
        self.n_vocab = lib.llama_vocab_n_tokens(self._vocab)
        # recurrent state cannot be cut back to a position: such models rewind by snapshot
        self.restore_by_state = bool(lib.llama_model_is_recurrent(self._model) or lib.llama_model_is_hybrid(self._model))
        self._tokenize_cached = functools.lru_cache(maxsize=1024)(self._tokenize_uncached)
        self._init_batch()

    def _context_params(self, s: Settings) -> Any:
        lib = self.lib
        cparams = lib.llama_context_default_params()
        cparams.n_ctx = s.n_ctx
        cparams.n_batch = s.n_batch
        cparams.n_ubatch = min(s.n_ubatch + s.ubatch_slack, s.n_batch)  # room for a micro-batch that took its remainder in
        cparams.n_seq_max = s.n_seq_max
        cparams.n_threads = s.threads
        cparams.n_threads_batch = s.threads
        cparams.flash_attn_type = FLASH_TYPES[s.flash_attn]
        cparams.kv_unified = True  # seq_cp then shares cells instead of copying them
        cparams.no_perf = True
        return cparams

    def _init_batch(self) -> None:
        n = self.n_batch
        self._batch = batch = self.lib.llama_batch_init(n, 0, self.n_seq_max)
        self._b_token = np.ctypeslib.as_array(batch.token, shape=(n,))
        self._b_pos = np.ctypeslib.as_array(batch.pos, shape=(n,))
        self._b_nseq = np.ctypeslib.as_array(batch.n_seq_id, shape=(n,))
        self._b_logits = np.ctypeslib.as_array(batch.logits, shape=(n,))
        self._b_seq = [batch.seq_id[i] for i in range(n)]

    # ------------------------------------------------------------------ lifetime
    @property
    def closed(self) -> bool:
        return not self._ctx

    def close(self) -> None:
        """Free the batch, context and model exactly once."""
        lib = self.lib
        if self._batch is not None:
            lib.llama_batch_free(self._batch)
            self._batch = None
        if self._ctx:
            lib.llama_free(self._ctx)
            self._ctx = None
        if self._model:
            lib.llama_model_free(self._model)
            self._model = None

    # ------------------------------------------------------------------ model facts
    def meta(self, key: str) -> str | None:
        buf = ctypes.create_string_buffer(512)
        n = self.lib.llama_model_meta_val_str(self._model, key.encode(), buf, len(buf))
        return buf.value.decode("utf-8", "replace") if n >= 0 else None

    def tokenize(self, text: str, add_special: bool = False, parse_special: bool = True) -> list[int]:
        """Tokenize, by default with special tokens parsed, as llama-cpp-python's chat completion does.

        Memoised (LRU): a repeated request re-renders the same 2,000-token prompts, and
        re-tokenizing them would cost more than its cached prefill saves.
        """
        return list(self._tokenize_cached(text, add_special, parse_special))

    # ------------------------------------------------------------------ decoding
    def run_batch(self, n_tokens: int) -> int:
        """One `llama_decode` of the first `n_tokens` rows of the batch; its return code (0: done)."""
        self._batch.n_tokens = n_tokens
        rc = self.lib.llama_decode(self._ctx, self._batch)
        self.decode_calls += 1
        return rc

    def decode(self, tokens: Sequence[int], pos: Sequence[int], seqs: Sequence[Sequence[int]],
               want: Sequence[bool]) -> list[np.ndarray]:
        """Decode rows one micro-batch per llama_decode (`split_rows`); return copies of the logits rows flagged in `want`.

        Logits are read right after each chunk, because the next decode overwrites them.
        Raises `DecodeError` (503: retry) if llama.cpp refuses a chunk.
        """
        out: list[np.ndarray] = []
        for start, end in split_rows(len(tokens), self.ubatch, self.ubatch_slack):
            self._fill_batch(tokens, pos, seqs, want, start, end)
            rc = self.run_batch(end - start)
            if rc != 0:
                raise DecodeError(f"llama_decode failed with code {rc} ({DECODE_REASONS.get(rc, 'error')}); "
                                  "the request's KV cells were released: retry")
            for i in range(end - start):
                if want[start + i]:
                    ptr = self.lib.llama_get_logits_ith(self._ctx, i)
                    out.append(np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).copy())
        return out

    def _fill_batch(self, tokens: Sequence[int], pos: Sequence[int], seqs: Sequence[Sequence[int]],
                    want: Sequence[bool], start: int, end: int) -> None:
        n = end - start
        self._b_token[:n] = tokens[start:end]
        self._b_pos[:n] = pos[start:end]
        self._b_logits[:n] = np.asarray(want[start:end], dtype=np.int8)
        for i in range(n):
            ids = seqs[start + i]
            self._b_nseq[i] = len(ids)
            row = self._b_seq[i]
            for k, s in enumerate(ids):
                row[k] = s

    def prefill(self, seq: int, tokens: Sequence[int], start: int) -> None:
        """Decode `tokens` into `seq` at positions `start...`, reading no logits."""
        n = len(tokens)
        self.decode(tokens, range(start, start + n), [(seq,)] * n, [False] * n)

    # ------------------------------------------------------------------ sequences
    def seq_rm(self, seq: int, p0: int = -1, p1: int = -1) -> bool:
        return bool(self.lib.llama_memory_seq_rm(self._mem, seq, p0, p1))

    def seq_cp(self, src: int, dst: int, p0: int = -1, p1: int = -1) -> None:
        self.lib.llama_memory_seq_cp(self._mem, src, dst, p0, p1)

    def seq_span(self, seq: int) -> tuple[int, int]:
        """(lowest, highest) position `seq` holds; (-1, -1) when it holds none."""
        return (self.lib.llama_memory_seq_pos_min(self._mem, seq), self.lib.llama_memory_seq_pos_max(self._mem, seq))

    def save_seq(self, seq: int) -> ctypes.Array | None:
        """`seq`'s KV rows in host memory (`llama_state_seq_get_data`); None if llama.cpp saved nothing."""
        size = self.lib.llama_state_seq_get_size(self._ctx, seq)
        if size <= 0:
            return None
        buf = (ctypes.c_uint8 * size)()
        written = self.lib.llama_state_seq_get_data(self._ctx, buf, size, seq)
        return buf if written else None

    def load_seq(self, seq: int, snapshot: ctypes.Array) -> bool:
        """Replace `seq`'s cells with a saved state; False (seq left empty) if llama.cpp found no room for it."""
        self.seq_rm(seq)
        if self.lib.llama_state_seq_set_data(self._ctx, snapshot, len(snapshot), seq):
            return True
        self.seq_rm(seq)
        return False

    def clear(self) -> None:
        """Empty every sequence (the way back from broken books)."""
        self.lib.llama_memory_clear(self._mem, True)
