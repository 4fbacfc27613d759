"""The engine keeps its books under failure: decodes that fail on purpose at every point, KV
pressure in batches, nested prefixes. After every error path `check_invariants()` must hold and
the next requests must succeed (real embedded model, faults injected through `fail_decode`)."""

from __future__ import annotations

import random

import pytest

from semif_lib.errors import DecodeError, PayloadTooLargeError

from support.answers import MAX_ABS_DIFF, flatten_probabilities

pytestmark = pytest.mark.model  # every test builds a DecisionEngine on the embedded GGUF

QUESTIONS = {
    "paid": {"type": "noul", "instructions": "Was a payment mentioned?"},
    "team": {"type": "choice", "instructions": "Which team should act?", "criteria": {"billing": None, "ops": None, "legal": None}},
    "sev": {"type": "score", "instructions": "How severe is it?", "criteria": ["low", "medium", "high"]},
    "kind": {"type": "choice", "instructions": "What is it?", "criteria": {"incident report": None, "invoice": None},
             "readout": "sequence"},
}


def make_state(k: int, lines: int = 12) -> str:
    """A distinct state of roughly 25 tokens a line (k keeps states apart, so no prefix is shared)."""
    return "\n".join(f"[{k:02d}.{i:02d}] service-{(k * 7 + i) % 11} latency {100 + 13 * k + i} ms, errors {(k + i) % 5}, "
                     f"owner team-{(k + 2 * i) % 4}" for i in range(lines))


def request(k: int, lines: int = 12, questions: dict | None = None) -> dict:
    return {"state": make_state(k, lines), "questions": questions or QUESTIONS}


class FaultPlan:
    """Fail the decode calls whose numbers are in `calls` (counted by the engine, 1-based)."""

    def __init__(self) -> None:
        self.calls: set[int] = set()

    def __call__(self, n: int) -> bool:
        return n in self.calls


@pytest.fixture(scope="module")
def faulty(settings):
    from semif_lib.decision.engine import DecisionEngine

    plan = FaultPlan()
    engine = DecisionEngine(settings.model_copy(update={"n_ctx": 1024, "cache_tokens": 512, "n_seq_max": 16}), fail_decode=plan)
    engine.plan = plan
    yield engine
    engine.close()


def fail_at(engine, offset: int) -> None:
    """The `offset`-th decode from now fails (1 = the next one)."""
    engine.plan.calls = {engine.decode_calls + offset}


def assert_close(a, b) -> None:
    pa, pb = flatten_probabilities(a), flatten_probabilities(b)
    assert pa.keys() == pb.keys()
    assert max(abs(pa[k] - pb[k]) for k in pa) <= MAX_ABS_DIFF


@pytest.mark.parametrize("mode", ["fresh", "serial", "parallel"])
def test_a_failed_decode_at_any_point_leaves_the_books_balanced(faulty, mode):
    req = request(1, lines=6)
    faulty.plan.calls = set()
    faulty.clear_cache()
    clean = faulty.ask(req, mode=mode)
    failures = 0
    for offset in range(1, 40):
        faulty.clear_cache()
        fail_at(faulty, offset)
        try:
            response = faulty.ask(req, mode=mode)
        except DecodeError as exc:
            failures += 1
            assert exc.status_code == 503 and "retry" in exc.message
            faulty.check_invariants()
            continue
        faulty.check_invariants()
        assert_close(response, clean)  # the fault fell after the request's last decode
        break
    else:
        pytest.fail("the request never finished within 40 decodes")
    assert failures >= 1
    faulty.plan.calls = set()
    assert_close(faulty.ask(req, mode=mode), clean)


def test_a_fault_on_a_cached_prefix_keeps_the_prefix_usable(faulty):
    faulty.plan.calls = set()
    faulty.clear_cache()
    req = request(2, lines=6)
    first = faulty.ask(req, mode="parallel")
    for mode in ("parallel", "serial"):
        fail_at(faulty, 1)  # the first branch decode of a request whose prefix is cached
        with pytest.raises(DecodeError):
            faulty.ask(req, mode=mode)
        faulty.check_invariants()
    again = faulty.ask(req, mode="parallel")
    assert again.usage.cached_tokens in (0, again.timing["prefix_tokens"])  # a stale serial prefix was evicted, never reused
    assert_close(again, first)
    faulty.check_invariants()


def test_batches_over_the_context_are_admitted_in_rounds(faulty):
    """4 distinct states that fit one at a time but not together in 1,024 cells: all answered, nothing leaked."""
    faulty.plan.calls = set()
    faulty.clear_cache()
    reqs = [request(10 + k, lines=12) for k in range(4)]
    preps = [faulty.prepare(faulty.resolve(r)) for r in reqs]
    assert sum(len(p.prefix) for p in preps) > faulty.n_ctx, "the workload must over-commit the context"
    assert len(faulty.plan_rounds(preps)) > 1
    free_before = faulty.store.free_seqs + len(faulty.cache.resident())
    out = faulty.score_batch([faulty.resolve(r, "parallel") for r in reqs])
    assert all(not isinstance(r, Exception) for r in out), out
    faulty.check_invariants()
    assert faulty.store.free_seqs + len(faulty.cache.resident()) == free_before
    for r, single in zip(out, reqs, strict=True):
        faulty.clear_cache()
        assert_close(r, faulty.ask(single, mode="parallel"))


def test_random_faults_across_modes_and_batches(faulty):
    """Every response is right or a clear 503; the books balance after each; the next 20 succeed."""
    rng = random.Random(7)
    faulty.plan.calls = set()
    faulty.clear_cache()
    reqs = [request(20 + k, lines=rng.choice((2, 4, 6))) for k in range(6)]
    clean = [faulty.ask(r, mode="fresh") for r in reqs]
    errors = 0
    for step in range(30):
        fail_at(faulty, rng.randint(1, 6))
        picks = rng.sample(range(len(reqs)), rng.choice((1, 3)))
        mode = rng.choice(("fresh", "serial", "parallel"))
        if len(picks) > 1 and mode == "parallel":
            results = faulty.score_batch([faulty.resolve(reqs[k], "parallel") for k in picks])
        else:
            results = []
            for k in picks:
                try:
                    results.append(faulty.ask(reqs[k], mode=mode))
                except DecodeError as exc:
                    results.append(exc)
        for k, res in zip(picks, results, strict=True):
            if isinstance(res, DecodeError):
                errors += 1
            else:
                assert_close(res, clean[k])
        faulty.check_invariants()
    assert errors >= 5
    faulty.plan.calls = set()
    for k in range(20):
        assert_close(faulty.ask(reqs[k % len(reqs)], mode="parallel"), clean[k % len(reqs)])
    faulty.check_invariants()


def test_nested_prefixes_reuse_the_exact_entry_and_leak_nothing(faulty):
    """P+X cached before P: asking for P again must hit P itself, not copy out of P+X each time
    (which leaked one sequence per request). Driven at the prefix level with real tokens, since the
    prompt layout decides when two requests' shared prefixes nest."""
    faulty.plan.calls = set()
    faulty.clear_cache()
    short = faulty.prepare(faulty.resolve({"state": make_state(40, 8), "questions": QUESTIONS})).prefix
    longer = short + faulty.tokenize(" and then the same state went on for a while")
    seqs = faulty.store.free_seqs + len(faulty.cache.resident())
    for k in range(20):
        lease = faulty.store.acquire(longer if k % 4 == 0 else short)
        faulty.store.release(lease)
        faulty.check_invariants()
        assert faulty.store.free_seqs + len(faulty.cache.resident()) == seqs
        if k % 4 in (2, 3):  # P was acquired just before: an exact hit, not another copy
            assert lease.cached == len(short)
    response = faulty.ask({"state": make_state(40, 8), "questions": QUESTIONS}, mode="parallel")
    assert response.usage.cached_tokens == response.timing["prefix_tokens"]
    faulty.check_invariants()


def test_work_limits_are_413s_naming_the_limit(faulty):
    many = {f"q{i}": {"type": "noul", "instructions": f"Is fact {i} true?"} for i in range(130)}
    with pytest.raises(PayloadTooLargeError) as info:
        faulty.ask({"state": "s", "questions": many})
    assert info.value.field == "questions" and "130" in info.value.message and "SEMIF_MAX_QUESTIONS" in info.value.message
    options = {f"option number {i}": None for i in range(40)}
    seq = {"q": {"type": "choice", "instructions": "Which?", "criteria": options, "readout": "sequence"}}
    settings = faulty.settings
    faulty.settings = settings.model_copy(update={"max_branch_tokens": 100, "max_options": 30})
    try:
        with pytest.raises(PayloadTooLargeError) as info:
            faulty.ask({"state": "s", "questions": seq})
        assert info.value.field == "questions.q.criteria" and "SEMIF_MAX_OPTIONS" in info.value.message
        faulty.settings = settings.model_copy(update={"max_branch_tokens": 100})
        with pytest.raises(PayloadTooLargeError) as info:
            faulty.ask({"state": "s", "questions": seq})
        assert info.value.field == "questions" and "SEMIF_MAX_BRANCH_TOKENS" in info.value.message
    finally:
        faulty.settings = settings
    faulty.check_invariants()


def test_a_full_cache_still_admits_new_states(faulty):
    """LRU: once the budget is full, a new state evicts the oldest prefix, not itself (the newest is the one about to be read)."""
    faulty.plan.calls = set()
    faulty.clear_cache()
    for k in range(4):  # each prefix is about a third of the 512-token budget: the cache overflows
        faulty.ask(request(60 + k, lines=6), mode="parallel")
    again = faulty.ask(request(63, lines=6), mode="parallel")
    assert again.usage.cached_tokens == again.timing["prefix_tokens"]
    assert faulty.cache.used_tokens <= faulty.cache.budget_tokens
    faulty.check_invariants()


def test_a_closed_engine_refuses_work_with_an_error(settings):
    from semif_lib.decision.engine import DecisionEngine
    from semif_lib.errors import ModelLoadError

    engine = DecisionEngine(settings.model_copy(update={"n_ctx": 512}))
    engine.close()
    for call in (lambda: engine.ask(request(1, lines=1)), lambda: engine.score_batch([engine.resolve(request(1, lines=1))] * 2)):
        with pytest.raises(ModelLoadError, match="closed"):
            call()


def test_cached_prefixes_wait_in_host_memory_and_come_back(faulty):
    """Between requests no cached prefix holds a KV cell (each would widen every later decode's attention); a hit restores it."""
    faulty.plan.calls = set()
    faulty.clear_cache()
    req = request(70, lines=6)
    first = faulty.ask(req, mode="parallel")
    assert len(faulty.cache) == 1 and not faulty.cache.resident() and faulty.cache.resident_tokens == 0
    assert all(faulty.backend.seq_span(s)[1] == -1 for s in range(faulty.n_seq_max))
    restores = faulty.stats["restores"]
    second = faulty.ask(req, mode="parallel")
    third = faulty.ask(req, mode="serial")
    assert faulty.stats["restores"] == restores + 2
    assert second.usage.cached_tokens == third.usage.cached_tokens == second.timing["prefix_tokens"]
    assert_close(second, first)
    assert_close(third, first)
    faulty.check_invariants()


def test_a_failed_restore_prefills_again_and_leaks_nothing(faulty, monkeypatch):
    """llama.cpp refusing a restore (exact or partial hit) costs a prefill, never a wrong answer or a leaked cell."""
    faulty.plan.calls = set()
    faulty.clear_cache()
    req, longer = request(71, lines=6), request(71, lines=7)  # the longer state shares the first one's lines
    first, first_longer = faulty.ask(req, mode="parallel"), faulty.ask(longer, mode="parallel")
    real = faulty.backend.lib.llama_state_seq_set_data

    def refuse(ctx, buf, size, seq):  # runs, then reports failure: the cells it wrote must still be released
        real(ctx, buf, size, seq)
        return 0

    faulty.clear_cache()
    faulty.ask(req, mode="parallel")
    monkeypatch.setattr(faulty.backend.lib, "llama_state_seq_set_data", refuse)
    for r, clean in ((longer, first_longer), (req, first)):  # partial hit on req's prefix, then an exact hit
        again = faulty.ask(r, mode="parallel")
        assert again.usage.cached_tokens == 0
        assert_close(again, clean)
        faulty.check_invariants()
    monkeypatch.undo()
    third = faulty.ask(req, mode="parallel")
    assert third.usage.cached_tokens == third.timing["prefix_tokens"]
    faulty.check_invariants()


def test_with_spilling_off_prefixes_stay_resident(faulty):
    """SEMIF_CACHE_SPILL=false: the prefix keeps its cells between requests and a hit needs no restore."""
    faulty.plan.calls = set()
    settings = faulty.settings
    faulty.settings = settings.model_copy(update={"cache_spill": False})
    try:
        faulty.clear_cache()
        req = request(72, lines=6)
        first = faulty.ask(req, mode="parallel")
        assert [len(e) for e in faulty.cache.resident()] == [first.timing["prefix_tokens"]]
        restores = faulty.stats["restores"]
        again = faulty.ask(req, mode="parallel")
        assert again.usage.cached_tokens == again.timing["prefix_tokens"] and faulty.stats["restores"] == restores
        assert_close(again, first)
        faulty.check_invariants()
        for k in range(4):  # over the budget, the least recently used prefix goes
            faulty.ask(request(73 + k, lines=6), mode="parallel")
        assert faulty.cache.used_tokens <= faulty.cache.budget_tokens
        faulty.check_invariants()
    finally:
        faulty.clear_cache()
        faulty.settings = settings
    faulty.check_invariants()


def test_rounds_merge_requests_only_while_their_branches_share_a_micro_batch(faulty):
    """Merging requests whose branches already fill a micro-batch saves no pass over the weights and widens
    every decode's attention with the other prefixes: such requests get rounds of their own."""
    small = [faulty.prepare(faulty.resolve(request(80 + k, lines=1, questions={"paid": QUESTIONS["paid"]}))) for k in range(4)]
    many = {f"q{i}": {"type": "noul", "instructions": f"Was service {i} mentioned as degraded in any line?"} for i in range(30)}
    large = [faulty.prepare(faulty.resolve(request(90 + k, lines=1, questions=many))) for k in range(2)]
    tokens = [sum(len(j.tokens) for j in p.branches) for p in small + large]
    assert sum(tokens[:4]) <= faulty.settings.n_ubatch < min(tokens[4:]), tokens
    def rounds(preps):
        return [r.members for r in faulty.plan_rounds(preps)]

    assert rounds(small) == [[0, 1, 2, 3]]
    assert rounds(large) == [[0], [1]]
    assert rounds(small[:1] + large + small[1:]) == [[0], [1], [2], [3, 4, 5]]
    seen: list[list[int]] = []
    out = faulty.score_batch([faulty.resolve(r, "parallel") for r in (request(90, lines=1, questions=many),
                                                                      request(80, lines=1, questions={"paid": QUESTIONS["paid"]}))],
                             on_done=lambda done, results: seen.append([i for i in done if results[i] is not None]))
    assert seen == [[0], [1]] and all(r.timing["batched_requests"] == 1 for r in out)
    faulty.check_invariants()
