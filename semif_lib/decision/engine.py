"""The decision engine: option logits from one forward pass, a prefix prefilled once, branches forked.

`DecisionEngine` is the scheduler over four parts, each tested on its own:

* `backend.LlamaBackend`: the model, context and batch (tokenize, decode, sequence operations);
* `preparer.RequestPreparer`: limits, rendering, tokenization, answer-slot checks (413s);
* `kvstore.KVStore`: cached prefixes leased to requests, spilled to host memory between them;
* `planner`: admission, which requests decode together and which branches share a batch;

and `modes.ModeRunner` runs the execution modes, which give the same answers within
quantization noise (see `modes`). A request walks: `score` -> `prepare` -> `store.acquire`
(hit, copy, restore, restore-and-cut or prefill) -> the mode's decodes -> `store.release`
(spilled to host memory) -> `readout.read_answers` -> `bookkeeping.build_response` (timings, usage).
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import ModelLoadError, SemifError, WorkStoppedError
from ..model.hub import hub_origin
from ..model.locate import find_model_path
from ..settings import Settings, load_settings
from .backend import LlamaBackend, inject_faults, make_fault_plan
from .bookkeeping import Timings, build_response
from .calibrator import check_default_prior, check_prior_requests
from .conditioning import order_stages, score_in_stages
from .kvstore import Counters, KVStore, Lease
from .modes import ModeRunner
from .planner import Capacity, Round, plan_rounds
from .preparer import PreparedRequest, RequestPreparer
from .prompt import PROMPT_VERSION, PromptRenderer
from .readout import read_answers
from .request import EngineMode, InternalRequest, ServerDefaults, resolve_request
from .responses import DecisionResponse
from .schema import DecisionRequest, parse_request
from .seam import Result, SessionHolds, Stop, mark_stopped, score_each

__all__ = ["DecisionEngine", "EngineMode", "open_engine"]


class DecisionEngine(SessionHolds):
    """Scores decision requests on one GGUF. Not thread-safe by design: one worker owns it; it is the `seam.DecisionWing`
    a server's worker holds (`SessionHolds`: a stateful session's prefixes held in the KV store).

    Whatever fails, the KV books balance again (`check_invariants`) before the error leaves.
    """

    def __init__(self, settings: Settings, model_path: Path | str | None = None,
                 fail_decode: Callable[[int], bool] | None = None) -> None:
        """Load the model and build the context.

        `fail_decode(n)`, for tests only, makes the n-th `llama_decode` call (1-based) fail after it
        ran, as a real failure mid-batch would; `SEMIF_FAULT_DECODES` / `SEMIF_FAULT_RATE` do the
        same for a server process.
        """
        s = settings
        self.model_path = find_model_path(model_path or s.model_path, s.model_dir)  # a hub reference: its cached file
        self.backend = backend = LlamaBackend(s, self.model_path)
        try:  # the prompt check (letter slots), a calibration for another model: whatever refuses frees the model
            self._build(s, fail_decode)
        except BaseException:
            backend.close()
            raise

    def _build(self, s: Settings, fail_decode: Callable[[int], bool] | None) -> None:
        """Everything above the loaded backend; may refuse the model (a template leaving <think> open: a 400)."""
        backend = self.backend
        faults = fail_decode or make_fault_plan(s.fault_decodes, s.fault_rate, s.fault_seed)
        if faults is not None:
            inject_faults(backend, faults)
        self._lock = threading.RLock()  # score_batch scores a conditioned request inside its own lock
        self.n_ctx, self.n_batch, self.n_seq_max = backend.n_ctx, backend.n_batch, backend.n_seq_max
        self.renderer = PromptRenderer(backend.chat_template, bos_token=backend.bos_text, eos_token=backend.eos_text)
        self.model_name = backend.meta("general.name") or self.model_path.stem
        self.model_id = self.model_path.name.removesuffix(".gguf")
        self.model_origin = hub_origin(self.model_path)  # repository and resolved commit when it came from the hub
        self.counters = Counters()
        # spilled prefixes live in host memory, so only resident ones are bounded by the KV cells
        budget = s.cache_tokens if s.cache_spill else min(s.cache_tokens, self.n_ctx // 2)
        self.store = KVStore(backend, budget_tokens=budget, spill=s.cache_spill, counters=self.counters)
        self.preparer = RequestPreparer(backend, self.renderer, s, self.n_ctx)
        self.settings = s
        self.calibration = None
        if s.calibration:
            from .calibrator import load_calibration

            self.calibration = load_calibration(s.calibration, self.model_path)  # a file for another model is refused
        check_default_prior(self.calibration, s.default_debias)

    # ------------------------------------------------------------------ settings and facts
    @property
    def settings(self) -> Settings:
        return self._settings

    @settings.setter
    def settings(self, value: Settings) -> None:
        """Every part reads the same settings (tests swap limits or spilling on a loaded engine)."""
        self._settings = value
        self.preparer.settings = value
        self.store.spill = value.cache_spill
        self.capacity = Capacity.of(self.n_ctx, self.n_seq_max, self.n_batch, value.round_tokens, value.n_ubatch)
        self.modes = ModeRunner(self.backend, self.store, self.capacity, self.counters)

    @property
    def cache(self) -> Any:
        """The prefix index (`PrefixCache`): read it, the store writes it."""
        return self.store.cache

    @property
    def stats(self) -> dict[str, int]:
        return asdict(self.counters)

    @property
    def decode_calls(self) -> int:
        return self.backend.decode_calls

    @property
    def letter_slots(self) -> list[str]:
        return self.preparer.letter_slots

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
            **({"source": str(self.model_origin), "revision": self.model_origin.revision} if self.model_origin else {}),
        }

    def tokenize(self, text: str, add_special: bool = False, parse_special: bool = True) -> list[int]:
        return self.backend.tokenize(text, add_special, parse_special)

    def token_text(self, token: int) -> str:
        return self.backend.token_text(token)

    def contains_special_text(self, text: str) -> bool:
        return self.preparer.contains_special_text(text)

    def tokenize_pieces(self, pieces: Sequence[tuple[str, bool]]) -> list[int]:
        return self.preparer.tokenize_pieces(pieces)

    def prepare(self, request: InternalRequest) -> PreparedRequest:
        """Rendered, tokenized and checked once per request, however often it is counted, admitted or scored."""
        check_prior_requests(self.calibration, {qid: request.questions[qid] for qid in request.prior_asked if qid in request.questions})
        return request.prepared_by(self.preparer, self.preparer.prepare)

    def plan_rounds(self, preps: Sequence[PreparedRequest]) -> list[Round]:
        return plan_rounds([p.demand for p in preps], self.capacity)

    def check_invariants(self, idle: bool = True) -> None:
        self.store.check_invariants(idle)

    def clear_cache(self) -> None:
        """Drop every cached prefix (for benchmarks that must measure cold requests)."""
        self.store.clear()

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Free the batch, context and model exactly once."""
        self.backend.close()

    def _check_open(self) -> None:
        """A closed engine refuses work with an error instead of letting llama.cpp touch freed memory."""
        if self.backend.closed:
            raise ModelLoadError("this engine is closed: build a new DecisionEngine (or restart the kernel) to score again",
                                 field="model_path")

    def __enter__(self) -> "DecisionEngine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ scoring
    def resolve(self, request: DecisionRequest | dict | bytes | str, mode: str | None = None) -> InternalRequest:
        """A wire request (parsed, or its JSON) as this engine answers it: its defaults from this engine's settings."""
        wire = request if isinstance(request, DecisionRequest) else parse_request(request)
        return resolve_request(wire, ServerDefaults.of(self.settings), mode)

    def ask(self, request: DecisionRequest | dict | bytes | str, mode: str | None = None,
            include_logits: bool = False) -> DecisionResponse:
        """Answer one request given as JSON (or a parsed `DecisionRequest`): `resolve` then `score`, for scripts and notebooks."""
        return self.score(self.resolve(request, mode), include_logits=include_logits)

    def score(self, request: InternalRequest, include_logits: bool = False) -> DecisionResponse:
        """Answer every question of one resolved request, in its mode (see `modes`); `ask` takes JSON.

        `include_logits` adds each answer's raw option logits under `logits`, which calibration
        fitting needs.
        """
        if not isinstance(request, InternalRequest):
            raise TypeError(f"DecisionEngine.score takes an InternalRequest (engine.resolve(body)); got {type(request).__name__}: "
                            "use engine.ask(body) to answer a request given as JSON")
        self._check_open()
        stages = order_stages(request.questions)
        if len(stages) > 1:  # x_after: a stage per dependency level, each on the same (then cached) prefix
            return score_in_stages(lambda sub: self._score_one(sub, include_logits), request, stages)
        return self._score_one(request, include_logits)

    def _score_one(self, request: InternalRequest, include_logits: bool) -> DecisionResponse:
        with self._lock:
            timings = Timings.begin()
            prep = self.prepare(request)
            mode = "serial" if prep.invariant else request.mode  # batch-invariant: serial, alone, at the canonical placement
            timings.prepared = timings.prefilled = time.perf_counter()
            branch_tokens = self.counters.branch_tokens
            try:
                cached = self._run_mode(prep, mode, timings)
            except BaseException:
                self.store.recover()
                raise
            self._check_idle()
            timings.branched = time.perf_counter()
            return self._respond(prep, mode, cached, timings, branch_tokens, include_logits)

    def _run_mode(self, prep: PreparedRequest, mode: str, timings: Timings) -> int:
        """Run one prepared request; returns the tokens found cached."""
        if mode == "fresh":
            self.modes.fresh(prep)
            return 0
        if mode == "oneshot":
            self.modes.oneshot(prep)
            return 0
        if prep.invariant:  # the prefix at cell 0 (restored whole or computed alone), each suffix right after it
            self.store.settle()
        lease = self.store.acquire(prep.prefix, prep.partition)
        timings.prefilled = time.perf_counter()
        try:
            (self.modes.serial if mode == "serial" else self.modes.parallel)(prep, lease)
        finally:
            self.store.release(lease)
        return lease.cached

    def _check_idle(self) -> None:
        if self.settings.check_invariants:
            self.store.check_invariants(idle=True)

    def score_batch(self, requests: Sequence[InternalRequest], on_done: Callable[[list[int], list[Any]], None] | None = None,
                    stop: Stop | None = None) -> list[Result]:
        """Score several requests; when all are in parallel mode the branches of requests in one round decode together.

        A request that fails (bad input, too long) gets its error in its slot; the others still run. Requests about the
        same state share one cached prefix. Rounds come from `planner.plan_rounds`, so no decode is attempted that could
        not find free KV cells. `on_done(indices, results)` is called as requests finish (after each round), so a server
        can answer them before the whole batch is done. `stop(i)` is asked before each round (and each request scored
        alone): a stopped request gets a `WorkStoppedError`, and nothing more is decoded or held for it."""
        self._check_open()
        if len(requests) == 1 or any(request.mode != "parallel" for request in requests):
            return score_each(self.score, requests, on_done, stop)
        with self._lock:
            results = self._score_rounds(requests, on_done or (lambda indices, results: None), stop)
            self._check_idle()
        return [r for r in results if r is not None]

    def _score_rounds(self, requests: Sequence[InternalRequest], done: Callable[[list[int], list[Any]], None],
                      stop: Stop | None) -> list[Result | None]:
        timings = Timings.begin()
        results: list[Result | None] = [None] * len(requests)
        prepared = self._prepare_all(requests, results, stop)
        timings.prepared = time.perf_counter()
        if len(prepared) < len(requests):
            done([i for i, r in enumerate(results) if r is not None], results)
        for round_ in self.plan_rounds([prep for _, prep in prepared]):
            members = [prepared[k] for k in round_.members]
            mark_stopped([i for i, _ in members], results, stop)  # between rounds: the previous one released every lease it took
            if live := [(i, prep) for i, prep in members if results[i] is None]:
                self._run_round(live, results, timings)
            done([i for i, _ in members], results)
        return results

    def _prepare_all(self, requests: Sequence[InternalRequest], results: list[Result | None],
                     stop: Stop | None) -> list[tuple[int, PreparedRequest]]:
        """Each request prepared; one that is refused (or stopped) gets its error in `results`."""
        prepared = []
        for i, request in enumerate(requests):
            try:
                if stop is not None and stop(i):  # a conditioned or invariant request is scored here, not in a round
                    raise WorkStoppedError()
                if len(order_stages(request.questions)) > 1 or request.batch_invariant:
                    results[i] = self.score(request)  # stages depend on answers, invariant ones decode alone: not in a round
                    continue
                prepared.append((i, self.prepare(request)))
            except SemifError as exc:
                results[i] = exc
        return prepared

    def _run_round(self, round_: Sequence[tuple[int, PreparedRequest]], results: list[Any], batch: Timings) -> None:
        """Acquire the round's prefixes, decode all their branches together, release, and answer each request."""
        timings = Timings(batch.start, batch.prepared)
        held: list[tuple[int, PreparedRequest, Lease]] = []
        branch_tokens = self.counters.branch_tokens
        failed: SemifError | None = None
        finished = False
        try:
            for i, prep in round_:
                try:
                    held.append((i, prep, self.store.acquire(prep.prefix, prep.partition)))
                except SemifError as exc:  # this request only: it released what it took
                    results[i] = exc
            timings.prefilled = time.perf_counter()
            items = [(branch, lease.seq, len(prep.prefix)) for _, prep, lease in held for branch in prep.branches]
            if items:
                self.modes.branches(items)
            finished = True
        except SemifError as exc:  # the shared branch batch failed: every request in it gets the error
            failed = exc
        finally:
            for _, _, lease in held:
                self.store.release(lease)
            if not finished or len(held) < len(round_):
                self.store.recover()
        timings.branched = time.perf_counter()
        for i, prep, lease in held:  # timings and branch tokens are the round's
            results[i] = failed or self._respond(prep, "parallel", lease.cached, timings, branch_tokens, batched=len(held))

    def _respond(self, prep: PreparedRequest, mode: str, cached: int, timings: Timings, branch_tokens_before: int,
                 include_logits: bool = False, batched: int | None = None) -> DecisionResponse:
        """Read the answers and assemble the response."""
        answers = read_answers(prep, self.calibration, include_logits)
        self.counters.requests += 1
        return build_response(prep, answers, model=self.model_id, model_info=self.model_info, mode=mode, cached=cached,
                              timings=timings, branch_tokens=self.counters.branch_tokens - branch_tokens_before, batched=batched)


def open_engine(model: Path | str | None = None, **overrides: Any) -> DecisionEngine:
    """Build an engine from `SEMIF_*` settings, with keyword overrides (CLI flags): a public entry point (README, notebooks,
    scripts), so it reads the environment once, here, and hands the settings to `DecisionEngine`."""
    settings = load_settings(**overrides)
    return DecisionEngine(settings, model_path=model)
