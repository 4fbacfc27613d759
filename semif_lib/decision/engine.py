"""The decision engine: option logits from one forward pass, a prefix prefilled once, branches forked.

It owns a llama.cpp model and a context built with the low-level API, because the
high-level `Llama` class has one sequence only (`n_seq_max = 1`) and no unified KV cache.

Execution modes, which give the same answers within quantization noise:

* ``fresh``: each question evaluates its whole prompt from an empty sequence.
* ``serial``: the prefix (instructions + state) is prefilled once; each question decodes
  only its suffix, then the sequence is truncated back to the prefix (`llama_memory_seq_rm`),
  or restored from a state snapshot on architectures that cannot truncate.
* ``parallel``: the prefix is copied to N branch sequences (`llama_memory_seq_cp`, free with a
  unified KV cache) and every suffix decodes in one batch, logits read at each branch's end.
  Tokens that branches share after the prefix decode once, tagged with all their ids (`tokentree`).
* ``oneshot`` (benchmarks only): prefix and suffixes in one batch with prefix tokens tagged
  with every branch's sequence id; no cache, no bookkeeping. The hardware's lower bound.

Prefixes are cached across requests in an LRU bounded by a token budget (see
`prefix_cache.PrefixCache`); a later request with the same state skips its prefill. Between
requests a cached prefix is spilled to host memory, so its cells do not slow other requests'
decodes, and restored into a sequence when a request needs it again.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Sequence

import numpy as np

from ..errors import DecodeError, EngineStateError, InvalidRequestError, ModelLoadError, PayloadTooLargeError, SemifError
from ..modelfile import find_model_path
from ..settings import MODES, Settings, load_settings
from .prefix_cache import MatchResult, PrefixCache, count_common_prefix
from .prompt import (
    PROMPT_VERSION,
    PromptRenderer,
    QuestionPlan,
    generate_letter_slots,
    plan_question,
)
from .readout import (
    build_answer,
    read_sequence_scores,
    read_slot_logits,
    sum_sequence_logprobs,
)
from .schema import (
    DecisionRequest,
    DecisionResponse,
    Usage,
    parse_request,
    render_content,
)
from .tokentree import TokenTree, Wave, plan_tree_waves

__all__ = ["DecisionEngine", "EngineMode", "ensure_backend", "open_engine"]

EngineMode = Literal["fresh", "serial", "parallel", "oneshot"]  # oneshot: benchmarks only
_FLASH = {"auto": -1, "off": 0, "on": 1}
log = logging.getLogger("semif.engine")
_backend_lock = threading.Lock()
_backend_ready = False


@dataclass
class Job:
    """One branch of work: tokens decoded after the prefix, and the rows whose logits are read.

    A slot readout reads one row (the last). A sequence readout reads the rows that predict
    each option token; `targets` holds those tokens.
    """

    plan_index: int
    tokens: list[int]
    read_offsets: list[int]
    targets: list[int] = field(default_factory=list)
    rows: list[np.ndarray] = field(default_factory=list)


@dataclass
class PreparedRequest:
    """A request tokenized and split: the shared prefix and one job per branch."""

    plans: list[QuestionPlan]
    prefix: list[int]
    jobs: list[Job]
    slot_tokens: dict[int, list[int]]
    suffix_lengths: dict[str, int]

    @property
    def input_tokens(self) -> int:
        seen: dict[int, int] = {}
        for job in self.jobs:  # a sequence readout's options share one suffix: count it once
            seen[job.plan_index] = max(seen.get(job.plan_index, 0), len(job.tokens) - len(job.targets))
        return len(self.prefix) + sum(seen.values()) + sum(len(j.targets) for j in self.jobs)


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


def make_fault_plan(numbers: Sequence[int], rate: float, seed: int) -> Callable[[int], bool] | None:
    """Which decode calls fail on purpose (tests only): the listed call numbers, or each with probability `rate`."""
    if not numbers and rate <= 0:
        return None
    import random

    listed, draw = frozenset(numbers), random.Random(seed)
    return lambda n: n in listed or (rate > 0 and draw.random() < rate)


class DecisionEngine:
    """Scores decision requests on one GGUF. Not thread-safe by design: one worker owns it.

    Invariant, checked by `check_invariants` (and after every failed request): each KV sequence
    is the scratch sequence, a free one (both empty), or one cached prefix's (holding exactly
    that prefix's positions); no request leaves a pin, a branch or a suffix behind, whatever fails.
    """

    def __init__(self, settings: Settings | None = None, model_path: Path | str | None = None,
                 fail_decode: Callable[[int], bool] | None = None) -> None:
        """Load the model and build the context.

        `fail_decode(n)`, for tests only, makes the n-th `llama_decode` call (1-based) fail after it
        ran, as a real failure mid-batch would; `SEMIF_FAULT_DECODES` / `SEMIF_FAULT_RATE` do the
        same for a server process.
        """
        self.settings = settings or load_settings()
        self._fail_decode = fail_decode or make_fault_plan(self.settings.fault_decodes, self.settings.fault_rate, self.settings.fault_seed)
        self.decode_calls = 0
        self.model_path = Path(model_path) if model_path else find_model_path(self.settings.model_path, self.settings.model_dir)
        self._lib = lib = ensure_backend(self.settings.verbose)
        self._lock = threading.Lock()
        self._restore_by_state = False
        self._model = self._ctx = self._batch = None

        mparams = lib.llama_model_default_params()
        mparams.n_gpu_layers = self.settings.n_gpu_layers
        self._model = lib.llama_model_load_from_file(str(self.model_path).encode(), mparams)
        if not self._model:
            raise ModelLoadError(f"llama.cpp could not load {self.model_path}: not a valid GGUF, or an unsupported architecture", field="model_path")

        s = self.settings
        cparams = lib.llama_context_default_params()
        cparams.n_ctx = s.n_ctx
        cparams.n_batch = s.n_batch
        cparams.n_ubatch = min(s.n_ubatch, s.n_batch)
        cparams.n_seq_max = s.n_seq_max
        cparams.n_threads = s.threads
        cparams.n_threads_batch = s.threads
        cparams.flash_attn_type = _FLASH[s.flash_attn]
        cparams.kv_unified = True
        cparams.no_perf = True
        self._ctx = lib.llama_init_from_model(self._model, cparams)
        if not self._ctx:
            self.close()
            raise ModelLoadError(f"llama.cpp could not create a context for {self.model_path} (n_ctx={s.n_ctx}, n_seq_max={s.n_seq_max})", field="n_ctx")
        self.n_ctx = lib.llama_n_ctx(self._ctx)
        self.n_batch = lib.llama_n_batch(self._ctx)
        self.n_seq_max = lib.llama_n_seq_max(self._ctx)
        self._mem = lib.llama_get_memory(self._ctx)
        self._tokenize_cached = functools.lru_cache(maxsize=1024)(self._tokenize_uncached)
        self._vocab = lib.llama_model_get_vocab(self._model)
        self.n_vocab = lib.llama_vocab_n_tokens(self._vocab)
        self._restore_by_state = bool(lib.llama_model_is_recurrent(self._model) or lib.llama_model_is_hybrid(self._model))

        template = lib.llama_model_chat_template(self._model, None)
        self.renderer = PromptRenderer(
            template.decode("utf-8") if template else None,
            bos_token=self.token_text(lib.llama_vocab_bos(self._vocab)),
            eos_token=self.token_text(lib.llama_vocab_eos(self._vocab)),
        )
        self.model_name = self._meta("general.name") or self.model_path.stem
        self._tail_slots: dict[tuple[str, str], int | None] = {}
        self.letter_slots = self._find_letter_slots()
        self.model_id = self.model_path.name.removesuffix(".gguf")

        self._batch = lib.llama_batch_init(self.n_batch, 0, self.n_seq_max)
        self._b_token = np.ctypeslib.as_array(self._batch.token, shape=(self.n_batch,))
        self._b_pos = np.ctypeslib.as_array(self._batch.pos, shape=(self.n_batch,))
        self._b_nseq = np.ctypeslib.as_array(self._batch.n_seq_id, shape=(self.n_batch,))
        self._b_logits = np.ctypeslib.as_array(self._batch.logits, shape=(self.n_batch,))
        self._b_seq = [self._batch.seq_id[i] for i in range(self.n_batch)]

        # spilled prefixes live in host memory, so only resident ones are bounded by the KV cells
        self.cache = PrefixCache(budget_tokens=s.cache_tokens if s.cache_spill else min(s.cache_tokens, self.n_ctx // 2))
        self._free_seqs = list(range(self.n_seq_max - 1, -1, -1))
        self._scratch_seq = self._free_seqs.pop()
        self.stats = {"requests": 0, "cache_hits": 0, "prefill_tokens": 0, "branch_tokens": 0, "restores": 0, "spills": 0}
        self.calibration = None
        if s.calibration:
            from .calibrator import load_calibration

            try:  # a file for another model is refused: free the model before raising
                self.calibration = load_calibration(s.calibration, self.model_path)
            except Exception:
                self.close()
                raise

    # ------------------------------------------------------------------ basics
    def close(self) -> None:
        """Free the batch, context and model exactly once."""
        lib = self._lib
        if self._batch is not None:
            lib.llama_batch_free(self._batch)
            self._batch = None
        if self._ctx:
            lib.llama_free(self._ctx)
            self._ctx = None
        if self._model:
            lib.llama_model_free(self._model)
            self._model = None

    def _check_open(self) -> None:
        """A closed engine refuses work with an error instead of letting llama.cpp touch freed memory."""
        if not self._ctx:
            raise ModelLoadError("this engine is closed: build a new DecisionEngine (or restart the kernel) to score again",
                                 field="model_path")

    def __enter__(self) -> "DecisionEngine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _meta(self, key: str) -> str | None:
        buf = ctypes.create_string_buffer(512)
        n = self._lib.llama_model_meta_val_str(self._model, key.encode(), buf, len(buf))
        return buf.value.decode("utf-8", "replace") if n >= 0 else None

    def token_text(self, token: int) -> str:
        if token < 0:
            return ""
        buf = ctypes.create_string_buffer(256)
        n = self._lib.llama_token_to_piece(self._vocab, token, buf, len(buf), 0, True)
        return buf.raw[: max(n, 0)].decode("utf-8", "replace")

    def tokenize(self, text: str, add_special: bool = False, parse_special: bool = True) -> list[int]:
        """Tokenize, by default with special tokens parsed, as llama-cpp-python's chat completion does.

        Results are memoised (LRU): a repeated request re-renders the same 2,000-token prompts,
        and re-tokenizing them would cost more than its cached prefill saves.
        """
        return list(self._tokenize_cached(text, add_special, parse_special))

    def _tokenize_uncached(self, text: str, add_special: bool, parse_special: bool = True) -> tuple[int, ...]:
        data = text.encode("utf-8")
        size = len(data) + 16
        arr = (self._lib.llama_token * size)()
        n = self._lib.llama_tokenize(self._vocab, data, len(data), arr, size, add_special, parse_special)
        if n < 0:
            size = -n
            arr = (self._lib.llama_token * size)()
            n = self._lib.llama_tokenize(self._vocab, data, len(data), arr, size, add_special, parse_special)
        return tuple(arr[:n])

    def contains_special_text(self, text: str) -> bool:
        """Whether `text` spells a special token (say ``<|im_end|>``) that parsing would turn into a control token."""
        return self.tokenize(text, parse_special=True) != self.tokenize(text, parse_special=False)

    def tokenize_pieces(self, pieces: Sequence[tuple[str, bool]]) -> list[int]:
        """Tokenize (text, parse_special) pieces one by one (see `PromptRenderer.render_pieces`)."""
        tokens: list[int] = []
        for i, (text, special) in enumerate(pieces):
            tokens += self.tokenize(text, self.renderer.add_bos and i == 0, special)
        return tokens

    @property
    def model_info(self) -> dict[str, Any]:
        return {
            "name": self.model_name,
            "file": self.model_path.name,
            "n_ctx": self.n_ctx,
            "n_seq_max": self.n_seq_max,
            "threads": self.settings.threads,
            "flash_attn": self.settings.flash_attn,
            "prompt_version": PROMPT_VERSION,
            "chat_template": bool(self.renderer.chat_template),
        }

    # ------------------------------------------------------------- preparation
    def prepare(self, request: DecisionRequest) -> PreparedRequest:
        """Render, tokenize and split every question; verify each answer slot is one token.

        Work beyond the configured limits (questions, options, branch tokens) is a 413 naming
        the limit and the value, before anything is decoded.
        """
        self._check_request_limits(request)
        state_text = render_content(request.state)
        slot_prefix = self.renderer.slot_prefix
        plans = [plan_question(qid, q, slot_prefix, self.letter_slots) for qid, q in request.questions.items()]
        add_bos = self.renderer.add_bos
        # User text that spells a control token is tokenized apart, as text; otherwise the whole
        # prompt is tokenized in one piece, exactly as the text path (llama-server) does.
        guarded = any(self.contains_special_text(t) for t in [state_text, *(p.block for p in plans)])
        if guarded:
            prefix = self.tokenize_pieces(self.renderer.render_prefix_pieces(state_text))
        else:
            prefix = self.tokenize(self.renderer.render_prefix(state_text), add_bos)
        prompts: list[tuple[str, list[int], list[tuple[str, bool]] | None]] = []
        shared = len(prefix)
        for plan in plans:
            text = self.renderer.render(state_text, plan.block)
            pieces = self.renderer.render_pieces(state_text, plan.block) if guarded else None
            tokens = self.tokenize_pieces(pieces) if pieces else self.tokenize(text, add_bos)
            shared = min(shared, count_common_prefix(prefix, tokens))
            prompts.append((text, tokens, pieces))
        prefix = prefix[:shared]
        jobs: list[Job] = []
        slot_tokens: dict[int, list[int]] = {}
        suffix_lengths: dict[str, int] = {}
        for i, (plan, (text, tokens, pieces)) in enumerate(zip(plans, prompts)):
            suffix = tokens[shared:]
            suffix_lengths[plan.qid] = len(suffix)
            if plan.readout == "slot":
                ids = self._verify_slots(plan, text, tokens, pieces)
                slot_tokens[i] = ids
                jobs.append(Job(i, suffix, [len(suffix) - 1]))
            else:
                for option in plan.slots:
                    extra = self._option_tokens(plan, text, tokens, option, pieces)
                    jobs.append(Job(i, suffix + extra, list(range(len(suffix) - 1, len(suffix) - 1 + len(extra))), extra))
        prep = PreparedRequest(plans, prefix, jobs, slot_tokens, suffix_lengths)
        branch_tokens = prep.input_tokens - shared
        if branch_tokens > self.settings.max_branch_tokens:
            raise PayloadTooLargeError(
                f"the questions need {branch_tokens} tokens after the shared prefix; the limit is "
                f"{self.settings.max_branch_tokens} (SEMIF_MAX_BRANCH_TOKENS): fewer questions or options, or slot readout",
                field="questions",
            )
        longest = max(len(j.tokens) for j in jobs)
        if shared + longest > self.n_ctx:
            raise PayloadTooLargeError(
                f"prompt needs {shared} prefix tokens + {longest} question tokens = {shared + longest}, "
                f"more than the context of {self.n_ctx} tokens (SEMIF_N_CTX)",
                field="state",
            )
        return prep

    def _check_request_limits(self, request: DecisionRequest) -> None:
        s = self.settings
        if len(request.questions) > s.max_questions:
            raise PayloadTooLargeError(f"{len(request.questions)} questions in one request; the limit is {s.max_questions} "
                                       "(SEMIF_MAX_QUESTIONS)", field="questions")
        for qid, question in request.questions.items():
            if question.type == "choice" and len(question.criteria) > s.max_options:
                raise PayloadTooLargeError(f"questions.{qid}: {len(question.criteria)} options; the limit is {s.max_options} "
                                           "(SEMIF_MAX_OPTIONS)", field=f"questions.{qid}.criteria")

    def _find_letter_slots(self) -> list[str]:
        """Choice labels (A-Z, then AA-ZZ) that this tokenizer reads as one token after the assistant header."""
        text = self.renderer.render("state", " question")
        tokens = self.tokenize(text, self.renderer.add_bos)
        tail = self._answer_tail(text, tokens, " question")
        return [s for s in generate_letter_slots() if self._slot_token(text, tokens, tail, self.renderer.slot_prefix + s) is not None]

    def _answer_tail(self, text: str, tokens: list[int], block: str) -> str | None:
        """The template text after the question, if it starts with a control token.

        llama.cpp splits text at special tokens before BPE, so a slot appended to the prompt
        tokenizes the same after the full prompt as after this tail; checking the tail is exact
        and much cheaper than re-tokenizing a 2,000-token prompt per option.
        """
        cut = text.rfind(block)
        if cut < 0:
            return None
        tail = text[cut + len(block):]
        tail_tokens = self.tokenize(tail)
        if not tail_tokens or tokens[-len(tail_tokens):] != tail_tokens:
            return None
        if not self._lib.llama_vocab_is_control(self._vocab, tail_tokens[0]):
            return None
        return tail

    def _extend_prompt(self, text: str, pieces: list[tuple[str, bool]] | None, extra: str, special: bool) -> list[int]:
        """Tokens of the prompt followed by `extra`, tokenized the way the prompt itself was."""
        if pieces is None:
            return self.tokenize(text + extra, self.renderer.add_bos)
        if special:  # our own answer slot: it joins the template tail, as in one-piece tokenization
            return self.tokenize_pieces(pieces[:-1] + [(pieces[-1][0] + extra, pieces[-1][1])])
        return self.tokenize_pieces(pieces + [(extra, False)])

    def _slot_token(self, text: str, tokens: list[int], tail: str | None, slot: str,
                    pieces: list[tuple[str, bool]] | None = None) -> int | None:
        """The token id if `tokenize(prompt + slot) == tokenize(prompt) + [id]`, else None."""
        if tail is not None:
            key = (tail, slot)
            if key not in self._tail_slots:
                base = self.tokenize(tail)
                with_slot = self.tokenize(tail + slot)
                ok = len(with_slot) == len(base) + 1 and with_slot[:-1] == base
                self._tail_slots[key] = with_slot[-1] if ok else None
            return self._tail_slots[key]
        with_slot = self._extend_prompt(text, pieces, slot, special=True)
        ok = len(with_slot) == len(tokens) + 1 and with_slot[:-1] == tokens
        return with_slot[-1] if ok else None

    def _verify_slots(self, plan: QuestionPlan, text: str, tokens: list[int], pieces: list[tuple[str, bool]] | None = None) -> list[int]:
        """`tokenize(prompt + slot) == tokenize(prompt) + [slot_token]` for every slot, all distinct."""
        tail = self._answer_tail(text, tokens, plan.block)
        ids = []
        for slot in plan.slots:
            token = self._slot_token(text, tokens, tail, slot, pieces)
            if token is None:
                raise InvalidRequestError(
                    f"questions.{plan.qid}: answer slot {slot!r} is not a single token after this model's "
                    f"assistant prefix, so its logit cannot be read in one pass; use \"readout\": \"sequence\"",
                    field=f"questions.{plan.qid}.criteria",
                )
            ids.append(token)
        if len(set(ids)) != len(ids):
            raise InvalidRequestError(
                f"questions.{plan.qid}: {len(ids)} options cannot be given distinct single-token answer slots "
                f"with this model's tokenizer",
                field=f"questions.{plan.qid}.criteria",
            )
        return ids

    def _option_tokens(self, plan: QuestionPlan, text: str, tokens: list[int], option: str,
                       pieces: list[tuple[str, bool]] | None = None) -> list[int]:
        full = self._extend_prompt(text, pieces, option, special=False)
        if full[: len(tokens)] != tokens or len(full) == len(tokens):
            raise InvalidRequestError(
                f"questions.{plan.qid}: option {option!r} does not tokenize cleanly after the prompt",
                field=f"questions.{plan.qid}.criteria",
            )
        return full[len(tokens):]

    # ------------------------------------------------------------- llama calls
    def _decode(self, tokens: Sequence[int], pos: Sequence[int], seqs: Sequence[Sequence[int]], want: Sequence[bool]) -> list[np.ndarray]:
        """Decode rows in chunks of `n_batch`; return copies of the logits rows flagged in `want`.

        Logits are read right after each chunk, because the next decode overwrites them.
        """
        lib, out = self._lib, []
        total = len(tokens)
        for start in range(0, total, self.n_batch):
            end = min(start + self.n_batch, total)
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
            self._batch.n_tokens = n
            rc = lib.llama_decode(self._ctx, self._batch)
            self.decode_calls += 1
            if rc == 0 and self._fail_decode is not None and self._fail_decode(self.decode_calls):
                rc = -99  # injected after the decode ran: its cells are written, as a real mid-batch failure leaves them
            if rc != 0:
                reason = {1: "no free KV slot", -99: "injected fault"}.get(rc, "error")
                raise DecodeError(f"llama_decode failed with code {rc} ({reason}); the request's KV cells were released: retry")
            for i in range(n):
                if want[start + i]:
                    ptr = lib.llama_get_logits_ith(self._ctx, i)
                    out.append(np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).copy())
        return out

    def _seq_rm(self, seq: int, p0: int = -1, p1: int = -1) -> bool:
        return bool(self._lib.llama_memory_seq_rm(self._mem, seq, p0, p1))

    def _take_seq(self) -> int:
        if not self._free_seqs:
            victim = self.cache.pick_victim(resident_only=True)
            if victim is None:
                raise SemifError("no free KV sequence")
            self._vacate(victim)
        return self._free_seqs.pop()

    def _give_seq(self, seq: int) -> None:
        self._seq_rm(seq)
        self._free_seqs.append(seq)

    def _evict(self, entry: Any) -> None:
        """Forget a cached prefix: its sequence (if resident) and its snapshot go."""
        self.cache.remove(entry)
        if entry.resident:
            self._give_seq(entry.seq_id)
            entry.seq_id = None
        entry.snapshot = None

    def _spill(self, entry: Any) -> None:
        """Move an unpinned prefix out of the KV cache into host memory (its snapshot); evict it if it cannot be saved."""
        if entry.snapshot is None:
            snapshot = self._snapshot(entry.seq_id)
            if len(snapshot) == 0:
                self._evict(entry)
                return
            entry.snapshot = snapshot
        self._give_seq(entry.seq_id)
        entry.seq_id = None
        self.stats["spills"] += 1

    def _vacate(self, entry: Any) -> None:
        """Free an unpinned prefix's cells: spilled if the engine spills, otherwise evicted."""
        (self._spill if self.settings.cache_spill else self._evict)(entry)

    def _load_snapshot(self, seq: int, snapshot: ctypes.Array) -> bool:
        """Replace `seq`'s cells with a saved state; False (seq left empty) if llama.cpp found no room for it."""
        self._seq_rm(seq)
        if self._lib.llama_state_seq_set_data(self._ctx, snapshot, len(snapshot), seq):
            return True
        self._seq_rm(seq)
        return False

    def _free_cells(self) -> int:
        return self.n_ctx - self.cache.resident_tokens

    def _make_room(self, cells: int, required: int | None = None) -> None:
        """Evict cached prefixes (LRU, unpinned) until `cells` KV cells are free.

        Fails before any decode would if fewer than `required` (default: all `cells`) can be freed;
        above that, fewer free cells only mean more, smaller waves.
        """
        required = cells if required is None else required
        while self._free_cells() < cells:
            victim = self.cache.pick_victim(resident_only=True)
            if victim is None:
                break
            self._vacate(victim)
        if self._free_cells() < required:
            raise EngineStateError(f"{required} KV cells needed but only {self._free_cells()} of {self.n_ctx} "
                                   f"can be freed (pinned prefixes hold {self.cache.resident_tokens}): admission should have prevented this")

    def _room_with_pinned(self, cells: int, source: Any) -> bool:
        """Whether `cells` can be freed while `source` stays resident too (other unpinned prefixes can be spilled)."""
        spillable = sum(len(e) for e in self.cache.resident() if e.pins == 0 and e is not source)
        return self._free_cells() + spillable >= cells

    def check_invariants(self, idle: bool = True) -> None:
        """Raise `EngineStateError` naming what is off unless every sequence and KV cell is accounted for.

        Every sequence is the scratch one, free, or one resident prefix's; free ones hold no position,
        a resident one exactly its prefix's positions 0..n-1 (so no suffix or branch cell was left on it).
        A spilled prefix has a snapshot and no pin. `idle`: no request is running, so nothing may be
        pinned, and (with `cache_spill`) every cached prefix is spilled (no cell slows the next request).
        """
        entries = self.cache.entries()
        resident = [e for e in entries if e.resident]
        owners = [self._scratch_seq, *self._free_seqs, *(e.seq_id for e in resident)]
        problems = []
        if sorted(owners) != list(range(self.n_seq_max)):
            problems.append(f"sequences owned {sorted(owners)} are not 0..{self.n_seq_max - 1} exactly once")
        for seq in [self._scratch_seq, *self._free_seqs]:
            if (top := self._lib.llama_memory_seq_pos_max(self._mem, seq)) != -1:
                problems.append(f"free sequence {seq} still holds positions up to {top}")
        for e in entries:
            if not e.resident:
                if e.snapshot is None or e.pins:
                    problems.append(f"a spilled prefix of {len(e)} tokens has {'no snapshot' if e.snapshot is None else f'{e.pins} pin(s)'}")
                continue
            span = (self._lib.llama_memory_seq_pos_min(self._mem, e.seq_id), self._lib.llama_memory_seq_pos_max(self._mem, e.seq_id))
            if span != (0, len(e) - 1):
                problems.append(f"cached prefix of {len(e)} tokens in sequence {e.seq_id} holds positions {span[0]}..{span[1]}")
            if idle and not e.pins and self.settings.cache_spill:
                problems.append(f"cached prefix in sequence {e.seq_id} is still resident between requests (not spilled)")
            if idle and e.pins:
                problems.append(f"cached prefix in sequence {e.seq_id} is still pinned {e.pins} time(s)")
            if e.stale:
                problems.append(f"a stale prefix is still cached in sequence {e.seq_id}")
        if problems:
            raise EngineStateError("engine state: " + "; ".join(problems))

    def reset_memory(self) -> None:
        """Forget every cached prefix and clear llama.cpp's memory: the way back from a broken invariant."""
        self._lib.llama_memory_clear(self._mem, True)
        self.cache = PrefixCache(budget_tokens=self.cache.budget_tokens, min_shared_tokens=self.cache.min_shared_tokens)
        self._free_seqs = [s for s in range(self.n_seq_max - 1, -1, -1) if s != self._scratch_seq]

    def _recover(self) -> None:
        """After a failed request: keep the cache if the books balance, otherwise start clean (logged)."""
        try:
            self.check_invariants(idle=True)
        except EngineStateError as exc:
            log.error("%s; clearing the KV cache", exc.message)
            self.reset_memory()

    # ------------------------------------------------------------- modes
    def _run_fresh(self, prep: PreparedRequest) -> None:
        seq = self._scratch_seq
        for job in prep.jobs:
            tokens = prep.prefix + job.tokens
            self._make_room(len(tokens))
            base = len(prep.prefix)
            want = [False] * len(tokens)
            for off in job.read_offsets:
                want[base + off] = True
            try:
                job.rows = self._decode(tokens, range(len(tokens)), [(seq,)] * len(tokens), want)
            finally:
                self._seq_rm(seq)
        self.stats["prefill_tokens"] += sum(len(prep.prefix) + len(j.tokens) for j in prep.jobs)

    def _acquire_prefix(self, prefix: list[int]) -> tuple[Any, int]:
        """A KV sequence holding `prefix`: from the cache (resident or spilled, exact or partial) or prefilled now.

        Returns the pinned cache entry and the number of tokens that were already cached.
        """
        match = self.cache.match(prefix)
        full = match.exact and match.length == len(prefix)
        if full and match.entry.resident:
            entry = match.entry
            self.cache.touch(entry)
            entry.pins += 1
            self.stats["cache_hits"] += 1
            return entry, len(prefix)
        if match.entry is not None and not match.entry.resident and self._restore_by_state and not full:
            match = MatchResult(None, 0)  # a recurrent state cannot be cut back to the shared part
        if match.entry is not None and match.entry.resident and not self._room_with_pinned(len(prefix) - match.length + 1, match.entry):
            match = MatchResult(None, 0)  # copying would pin the source in cells this request needs: prefill it all
        source = match.entry if match.entry is not None and match.entry.resident else None
        spilled = match.entry if match.entry is not None and not match.entry.resident else None
        if source is not None:
            source.pins += 1  # keep the source alive while we copy from it
        seq: int | None = None
        try:
            need = len(prefix) + 1 if spilled is not None else len(prefix) - match.length + 1
            self._make_room(max(need, len(spilled) + 1) if spilled is not None else need, required=need)
            if spilled is not None and self._free_cells() <= len(spilled):
                spilled = None  # it comes back whole before it is cut to the shared part, and that does not fit: prefill
            seq = self._take_seq()
            cached = 0
            if source is not None:
                self._lib.llama_memory_seq_cp(self._mem, source.seq_id, seq, 0, match.length)
                cached = match.length
            elif spilled is not None and self._load_snapshot(seq, spilled.snapshot):
                self.stats["restores"] += 1
                if full:
                    spilled.seq_id, seq = seq, None
                    spilled.pins += 1
                    self.cache.touch(spilled)
                    self.stats["cache_hits"] += 1
                    return spilled, len(prefix)
                cached = match.length if self._seq_rm(seq, match.length, -1) else 0
                if not cached:
                    self._seq_rm(seq)
            elif spilled is not None:
                log.warning("a cached prefix of %d tokens could not be restored (no contiguous KV cells); prefilling it", len(spilled))
                if full:
                    self._evict(spilled)  # cached anew below, once prefilled
            rest = prefix[cached:]
            if rest:
                self._decode(rest, range(cached, len(prefix)), [(seq,)] * len(rest), [False] * len(rest))
                self.stats["prefill_tokens"] += len(rest)
        except BaseException:
            if seq is not None:  # the sequence and the chunks already decoded go back
                self._give_seq(seq)
            raise
        finally:
            if source is not None:
                source.pins -= 1
        entry = self.cache.insert(prefix, seq)
        entry.pins += 1
        return entry, cached

    def _release_prefix(self, entry: Any) -> None:
        """Unpin; once no request uses it, spill the prefix to host memory (a stale one is evicted);
        then evict least recently used prefixes until the budget holds.

        The prefix just used is the most recent, so it stays unless it alone exceeds the budget
        (evicting it first, as before, meant a full cache never admitted a new state again).
        """
        entry.pins -= 1
        if entry.pins == 0:
            if entry.stale or len(entry) > self.cache.budget_tokens:
                self._evict(entry)
            elif self.settings.cache_spill:
                self._spill(entry)
        while self.cache.used_tokens > self.cache.budget_tokens:
            victim = self.cache.pick_victim()
            if victim is None:
                break
            self._evict(victim)

    def _run_serial(self, prep: PreparedRequest, entry: Any) -> None:
        """Each suffix on the prefix's own sequence, truncated back after it; a failure marks the prefix stale.

        A stale prefix may hold part of a suffix, so it is evicted as soon as it is released and
        no later request can match it.
        """
        seq, base = entry.seq_id, len(prep.prefix)
        try:
            snapshot = self._snapshot(seq) if self._restore_by_state else None
            for job in prep.jobs:
                self._make_room(len(job.tokens))
                want = [False] * len(job.tokens)
                for off in job.read_offsets:
                    want[off] = True
                try:
                    job.rows = self._decode(job.tokens, range(base, base + len(job.tokens)), [(seq,)] * len(job.tokens), want)
                finally:
                    if snapshot is not None:
                        self._restore(seq, snapshot)
                    elif not self._seq_rm(seq, base, -1):
                        raise SemifError("llama_memory_seq_rm refused to truncate; this architecture needs state restore")
        except BaseException:
            entry.stale = True
            raise
        self.stats["branch_tokens"] += sum(len(j.tokens) for j in prep.jobs)

    def _snapshot(self, seq: int) -> ctypes.Array:
        size = self._lib.llama_state_seq_get_size(self._ctx, seq)
        buf = (ctypes.c_uint8 * size)()
        self._lib.llama_state_seq_get_data(self._ctx, buf, size, seq)
        return buf

    def _restore(self, seq: int, snapshot: ctypes.Array) -> None:
        if not self._load_snapshot(seq, snapshot):
            raise SemifError("llama_state_seq_set_data failed to restore the prefix")

    def plan_waves(self, paths: Sequence[tuple[Any, Sequence[int]]], free_cells: int, free_seqs: int) -> list[Wave]:
        """Group branches (prefix sequence, suffix tokens) into waves that fit one batch, the free KV cells and sequences.

        Tokens that branches share after the same prefix count once (see `tokentree`).
        """
        return plan_tree_waves(paths, min(self.n_batch, free_cells), free_seqs)

    def _run_parallel(self, prep: PreparedRequest, entry: Any) -> None:
        self._run_branches([(job, entry.seq_id, len(prep.prefix)) for job in prep.jobs])

    def _decode_tree(self, tree: TokenTree, jobs: Sequence[Job], job_rows: Sequence[list[int]], base_of: dict[Any, int],
                     branches: Sequence[int], head: tuple[list[int], list[int], list[tuple[int, ...]]] | None = None) -> None:
        """Decode a token tree (after optional `head` rows) and hand each job the logits rows it reads.

        `base_of[root]` is the first position after a root's prefix; `branches[owner]` is each branch's sequence.
        """
        tokens, pos, seqs = head if head is not None else ([], [], [])
        offset = len(tokens)
        tokens = tokens + tree.tokens
        pos = pos + [base_of[root] + d for root, d in zip(tree.root, tree.depth)]
        seqs = seqs + [tuple(branches[o] for o in owners) for owners in tree.owners]
        want = [False] * len(tokens)
        for job, rows in zip(jobs, job_rows):
            for off in job.read_offsets:
                want[offset + rows[off]] = True
        wanted = [r for r, w in enumerate(want) if w]
        logits = dict(zip(wanted, self._decode(tokens, pos, seqs, want)))
        for job, rows in zip(jobs, job_rows):
            job.rows = [logits[offset + rows[off]] for off in job.read_offsets]
        self.stats["branch_tokens"] += len(tree)

    def _run_branches(self, items: Sequence[tuple[Job, int, int]]) -> None:
        """Fork each job from its prefix sequence (`seq_cp`) and decode all of them in as few batches as fit.

        `items` are (job, prefix sequence, prefix length); jobs of several requests can share a batch,
        and tokens that jobs share after the same prefix are decoded once (a token tree).
        """
        paths = [(src, job.tokens) for job, src, _ in items]
        longest = max(len(t) for _, t in paths)
        self._make_room(max(longest, min(sum(len(t) for _, t in paths), self.n_batch)), required=longest)
        free_cells = self._free_cells()
        free_seqs = len(self._free_seqs) + sum(1 for e in self.cache.resident() if e.pins == 0)
        if free_seqs < 1:
            raise EngineStateError(f"no KV sequence is free for a branch (SEMIF_N_SEQ_MAX={self.n_seq_max})")
        base_of = {src: base for _, src, base in items}
        for wave in self.plan_waves(paths, free_cells, free_seqs):
            branches: list[int] = []
            try:
                for _ in wave.indices:
                    branches.append(self._take_seq())
                for b, idx in zip(branches, wave.indices):
                    self._lib.llama_memory_seq_cp(self._mem, items[idx][1], b, -1, -1)
                self._decode_tree(wave.tree, [items[i][0] for i in wave.indices], wave.rows, base_of, branches)
            finally:
                for b in branches:
                    self._give_seq(b)

    def _run_oneshot(self, prep: PreparedRequest) -> None:
        """Prefix rows tagged with every branch id, then the suffixes' token tree: one batch, no cache."""
        n = len(prep.jobs)
        if n > len(self._free_seqs):
            raise SemifError(f"oneshot needs {n} free sequences")
        branches: list[int] = []
        try:
            for _ in range(n):
                branches.append(self._free_seqs.pop())
            base = len(prep.prefix)
            tree = TokenTree()
            job_rows = [tree.add_path(0, job.tokens, owner) for owner, job in enumerate(prep.jobs)]
            self._make_room(base + len(tree))
            head = (list(prep.prefix), list(range(base)), [tuple(branches)] * base)
            self._decode_tree(tree, prep.jobs, job_rows, {0: base}, branches, head)
        finally:
            for b in branches:
                self._give_seq(b)

    # ------------------------------------------------------------- public API
    def score(
        self, request: DecisionRequest | dict | bytes | str, mode: EngineMode | None = None, include_logits: bool = False
    ) -> DecisionResponse:
        """Answer every question of one request; see the module docstring for the modes.

        `include_logits` adds each answer's raw option logits (slot logits, or sequence scores)
        under `logits`, which calibration fitting needs. Whatever fails, the KV cache is left
        balanced (`check_invariants`) before the error leaves.
        """
        if not isinstance(request, DecisionRequest):
            request = parse_request(request)
        mode = mode or self.settings.mode
        self._check_open()
        if mode not in MODES + ("oneshot",):
            raise InvalidRequestError(f"mode must be one of {', '.join(MODES)}; got {mode!r}", field="mode")
        with self._lock:
            t0 = time.perf_counter()
            prep = self.prepare(request)
            t1 = time.perf_counter()
            branch_tokens = self.stats["branch_tokens"]
            try:
                cached, prefilled = self._run_mode(prep, mode)
            except BaseException:
                self._recover()
                raise
            if self.settings.check_invariants:
                self.check_invariants(idle=True)
            t2 = time.perf_counter()
            return self._respond(prep, mode, cached, (t0, t1, prefilled or t1, t2), branch_tokens, include_logits)

    def _run_mode(self, prep: PreparedRequest, mode: str) -> tuple[int, float | None]:
        """Run one prepared request; returns (tokens found cached, when its shared prefix was ready, if it has one)."""
        if mode == "fresh":
            self._run_fresh(prep)
            return 0, None
        if mode == "oneshot":
            self._run_oneshot(prep)
            return 0, None
        entry, cached = self._acquire_prefix(prep.prefix)
        prefilled = time.perf_counter()
        try:
            (self._run_serial if mode == "serial" else self._run_parallel)(prep, entry)
        finally:
            self._release_prefix(entry)
        return cached, prefilled

    def score_batch(
        self, requests: Sequence[DecisionRequest | dict | bytes | str], mode: EngineMode | None = None,
        on_done: Callable[[list[int], list[Any]], None] | None = None,
    ) -> list[DecisionResponse | SemifError]:
        """Score several requests; in parallel mode the branches of requests in one round decode together.

        A request that fails (bad input, too long) gets its error in its slot; the others still run.
        Requests about the same state share one cached prefix. Requests are admitted in rounds
        whose pinned prefixes and longest branch fit the context together and whose branches
        share micro-batches (`plan_rounds`), so no decode is attempted that could not find free KV
        cells. `on_done(indices, results)` is called as requests finish (after each round), so a
        server can answer them before the whole batch is done.
        """
        mode = mode or self.settings.mode
        self._check_open()
        if mode != "parallel" or len(requests) == 1:
            out: list[DecisionResponse | SemifError] = []
            for request in requests:
                try:
                    out.append(self.score(request, mode=mode))
                except SemifError as exc:
                    out.append(exc)
                if on_done is not None:
                    on_done([len(out) - 1], out)
            return out
        with self._lock:
            t0 = time.perf_counter()
            results: list[DecisionResponse | SemifError | None] = [None] * len(requests)
            prepared: list[tuple[int, PreparedRequest]] = []
            for i, request in enumerate(requests):
                try:
                    req = request if isinstance(request, DecisionRequest) else parse_request(request)
                    prepared.append((i, self.prepare(req)))
                except SemifError as exc:
                    results[i] = exc
            t_prepared = time.perf_counter()
            if on_done is not None and len(prepared) < len(requests):
                on_done([i for i, r in enumerate(results) if r is not None], results)
            for round_ in self.plan_rounds([prep for _, prep in prepared]):
                self._run_round([prepared[k] for k in round_], results, (t0, t_prepared))
                if on_done is not None:
                    on_done([prepared[k][0] for k in round_], results)
            if self.settings.check_invariants:
                self.check_invariants(idle=True)
        return [r for r in results if r is not None]

    def plan_rounds(self, preps: Sequence[PreparedRequest]) -> list[list[int]]:
        """Group requests (by index) into rounds that fit the KV cache together, in arrival order.

        A round pins one sequence per distinct prefix and needs, at once, the cells of those
        prefixes plus the longest branch (shorter waves follow as cells free up). Every request
        fits alone (`prepare` refused it with a 413 otherwise), so every request gets a round.
        Requests join a round only while their branch tokens together fit `SEMIF_ROUND_TOKENS`
        (default: one micro-batch): beyond that, merging saves no pass over the weights, while each
        round-mate's prefix widens every decode's attention, and a round answers only when all of
        it is done.
        """
        rounds: list[list[int]] = []
        cells, longest, prefixes, branch_tokens = 0, 0, set(), 0
        seq_room = self.n_seq_max - 2  # the scratch sequence, and at least one branch
        round_tokens = self.settings.round_tokens or min(self.settings.n_ubatch, self.n_batch)
        for k, prep in enumerate(preps):
            key = tuple(prep.prefix)
            add = 0 if key in prefixes else len(key)
            branch = max(len(j.tokens) for j in prep.jobs)
            tokens = sum(len(j.tokens) for j in prep.jobs)
            fits = (cells + add + max(longest, branch) <= self.n_ctx and len(prefixes | {key}) <= seq_room
                    and branch_tokens + tokens <= round_tokens)
            if rounds and fits:
                rounds[-1].append(k)
            else:
                rounds.append([k])
                cells, longest, prefixes, branch_tokens = 0, 0, set(), 0
                add = len(key)
            cells, longest, branch_tokens = cells + add, max(longest, branch), branch_tokens + tokens
            prefixes.add(key)
        return rounds

    def _run_round(self, round_: Sequence[tuple[int, PreparedRequest]], results: list[Any], marks: tuple[float, float]) -> None:
        """Acquire the round's prefixes, decode all their branches together, release, and answer each request."""
        t0, t_prepared = marks
        held: list[tuple[int, PreparedRequest, Any, int]] = []
        branch_tokens = self.stats["branch_tokens"]
        failed: SemifError | None = None
        finished = False
        try:
            for i, prep in round_:
                try:
                    entry, cached = self._acquire_prefix(prep.prefix)
                except SemifError as exc:  # this request only: it released what it took
                    results[i] = exc
                    continue
                held.append((i, prep, entry, cached))
            t1 = time.perf_counter()
            items = [(job, entry.seq_id, len(prep.prefix)) for _, prep, entry, _ in held for job in prep.jobs]
            if items:
                self._run_branches(items)
            finished = True
        except SemifError as exc:  # the shared branch batch failed: every request in it gets the error
            failed = exc
        finally:
            for _, _, entry, _ in held:
                self._release_prefix(entry)
            if not finished or len(held) < len(round_):
                self._recover()
        t2 = time.perf_counter()
        for i, prep, _, cached in held:  # timings and branch tokens are the round's
            results[i] = failed or self._respond(prep, "parallel", cached, (t0, t_prepared, t1, t2), branch_tokens, batched=len(held))

    def _respond(self, prep: PreparedRequest, mode: str, cached: int, marks: tuple[float, float, float, float],
                 branch_tokens_before: int, include_logits: bool = False, batched: int | None = None) -> DecisionResponse:
        """Read the answers and assemble the response; `marks` are (start, prepared, prefilled, branches done).

        `score` and `score_batch` report the same timing fields, measured the same way.
        """
        start, prepared, prefilled, branched = marks
        answers = self._read_answers(prep, include_logits)
        self.stats["requests"] += 1
        timing: dict[str, Any] = {"mode": mode}
        if batched is not None:
            timing["batched_requests"] = batched
        timing.update({
            "prepare_s": round(prepared - start, 6),
            "prefill_s": round(prefilled - prepared, 6),
            "branches_s": round(branched - prefilled, 6),
            "total_s": round(time.perf_counter() - start, 6),
            "prefix_tokens": len(prep.prefix),
            "suffix_tokens": prep.suffix_lengths,
            "branch_tokens": self.stats["branch_tokens"] - branch_tokens_before,  # decoded after the prefix, shared tokens once
        })
        return DecisionResponse(
            model=self.model_id,
            answers=answers,
            usage=Usage(input_tokens=prep.input_tokens, output_tokens=0, cached_tokens=cached),
            timing=timing,
            model_info=self.model_info,
        )

    def _read_answers(self, prep: PreparedRequest, include_logits: bool = False) -> dict[str, Any]:
        answers: dict[str, Any] = {}
        by_plan: dict[int, list[Job]] = {}
        for job in prep.jobs:
            by_plan.setdefault(job.plan_index, []).append(job)
        for i, plan in enumerate(prep.plans):
            jobs = by_plan[i]
            if plan.readout == "slot":
                logits, probs, mass = read_slot_logits(jobs[0].rows[0], prep.slot_tokens[i])
            else:
                logprobs = [sum_sequence_logprobs(j.rows, j.targets) for j in jobs]
                logits, probs, mass = read_sequence_scores(logprobs, [len(j.targets) for j in jobs], plan.length_normalize)
            if self.calibration is not None:
                answer = self.calibration.apply(plan, logits, probs, mass)
            else:
                answer = build_answer(plan, probs, mass)
            if include_logits:
                answer.logits = [float(x) for x in logits]
            answers[plan.qid] = answer
        return answers

    def clear_cache(self) -> None:
        """Drop every cached prefix (for benchmarks that must measure cold requests)."""
        for entry in self.cache.entries():
            if entry.pins == 0:
                self._evict(entry)


def open_engine(model: Path | str | None = None, **overrides: Any) -> DecisionEngine:
    """Build an engine from `SEMIF_*` settings, with keyword overrides (CLI flags)."""
    settings = load_settings(**overrides)
    return DecisionEngine(settings, model_path=model)

