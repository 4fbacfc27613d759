"""The prefix store over a simulated KV memory: every acquire outcome, spill, restore, evict and fault, in milliseconds.

The simulated memory keeps real books of its own (which cells exist, at which position, in
which sequences), so a leaked cell or a sequence left holding positions shows up in
`KVStore.check_invariants` exactly as it would with llama.cpp. The faults are the ones the
real-model tests inject (tests/test_engine_faults.py): a decode that fails after writing its
cells, a restore llama.cpp refuses (after writing), a save that returns nothing, a truncation
refused; after each, the books balance and the next request succeeds.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

from semif_lib.decision.kvstore import KVStore
from semif_lib.errors import DecodeError, EngineStateError, SemifError


@dataclass
class SimulatedMemory:
    """A unified KV cache of `n_ctx` cells: each cell has a position and the set of sequences that see it."""

    n_ctx: int = 256
    n_seq_max: int = 8
    restore_by_state: bool = False
    cells: list[tuple[int, set[int]]] = field(default_factory=list)
    fail_prefills: set[int] = field(default_factory=set)  # prefill call numbers (1-based) that fail after writing
    refuse_loads: bool = False  # llama_state_seq_set_data writes, then reports failure
    refuse_saves: bool = False
    refuse_cuts: bool = False
    prefills: int = 0
    decoded: int = 0

    def _free(self) -> int:
        return self.n_ctx - len(self.cells)

    def _write(self, seq: int, positions: range) -> None:
        if len(positions) > self._free():
            raise DecodeError(f"llama_decode failed with code 1 (no free KV slot): {len(positions)} > {self._free()}")
        self.cells += [(p, {seq}) for p in positions]

    def prefill(self, seq: int, tokens, start: int) -> None:
        self.prefills += 1
        self._write(seq, range(start, start + len(tokens)))
        self.decoded += len(tokens)
        if self.prefills in self.fail_prefills:
            raise DecodeError("llama_decode failed with code -99 (injected fault)")

    def seq_rm(self, seq: int, p0: int = -1, p1: int = -1) -> bool:
        if self.refuse_cuts and p0 > 0:
            return False
        hi = p1 if p1 >= 0 else 1 << 30
        for pos, seqs in self.cells:
            if max(p0, 0) <= pos < hi:
                seqs.discard(seq)
        self.cells = [(p, s) for p, s in self.cells if s]
        return True

    def seq_cp(self, src: int, dst: int, p0: int = -1, p1: int = -1) -> None:
        hi = p1 if p1 >= 0 else 1 << 30
        for pos, seqs in self.cells:
            if src in seqs and max(p0, 0) <= pos < hi:
                seqs.add(dst)

    def seq_span(self, seq: int) -> tuple[int, int]:
        held = [p for p, s in self.cells if seq in s]
        return (min(held), max(held)) if held else (-1, -1)

    def save_seq(self, seq: int):
        if self.refuse_saves:
            return None
        return tuple(sorted(p for p, s in self.cells if seq in s))

    def load_seq(self, seq: int, snapshot) -> bool:
        self.seq_rm(seq)
        try:
            self._write(seq, range(len(snapshot)))
        except DecodeError:
            return False
        if self.refuse_loads:
            self.seq_rm(seq)
            return False
        return True

    def clear(self) -> None:
        self.cells = []

    def used_by_nothing_cached(self, store: KVStore) -> bool:
        """Every cell belongs to resident prefixes only (copies share cells): nothing else survived a request."""
        resident = {e.seq_id for e in store.cache.resident()}
        return all(seqs <= resident for _, seqs in self.cells) and len(self.cells) <= store.cache.resident_tokens


def make_store(spill: bool = True, budget: int = 200, **memory) -> tuple[KVStore, SimulatedMemory]:
    mem = SimulatedMemory(**memory)
    return KVStore(mem, budget_tokens=budget, spill=spill, min_shared_tokens=4), mem


P = list(range(100, 140))  # a 40-token prefix
P_LONGER = P + [7, 8, 9, 10, 11]
P_OTHER = list(range(500, 530))


def use(store: KVStore, prefix: list[int]) -> int:
    """One request's lease, given back; returns the cached tokens and checks the books after."""
    lease = store.acquire(prefix)
    assert store.memory.seq_span(lease.seq) == (0, len(prefix) - 1)
    store.release(lease)
    store.check_invariants(idle=True)
    assert store.memory.used_by_nothing_cached(store)
    return lease.cached


def test_plan_acquire_names_each_of_the_five_outcomes_without_touching_memory():
    store, mem = make_store(spill=False)
    assert store.plan_acquire(P).outcome == "prefill"
    use(store, P)
    cells = list(mem.cells)
    assert store.plan_acquire(P).outcome == "hit"
    copy = store.plan_acquire(P_LONGER)
    assert (copy.outcome, copy.shared, copy.need) == ("copy", 40, 6)
    spilled, _ = make_store(spill=True)
    use(spilled, P)
    assert spilled.plan_acquire(P).outcome == "restore"
    cut = spilled.plan_acquire(P[:30] + [1, 2, 3, 4, 5, 6])
    assert (cut.outcome, cut.shared, cut.want) == ("restore_cut", 30, 41)
    spilled.restore_by_state = True  # a recurrent state cannot be cut back
    assert spilled.plan_acquire(P[:30] + [1, 2, 3, 4, 5, 6]).outcome == "prefill"
    assert mem.cells == cells  # planning is pure


def test_each_outcome_leaves_the_prefix_in_its_sequence_and_the_books_balanced():
    store, mem = make_store(spill=True)
    assert use(store, P) == 0 and mem.decoded == 40
    assert use(store, P) == 40 and store.stats.restores == 1 and mem.decoded == 40  # restored, not decoded
    assert use(store, P[:30] + [1, 2, 3, 4, 5, 6]) == 30 and store.stats.restores == 2  # restored whole, cut back, rest prefilled
    assert mem.decoded == 46
    resident, rmem = make_store(spill=False)
    use(resident, P)
    assert use(resident, P) == 40 and resident.stats.cache_hits == 1
    assert use(resident, P_LONGER) == 40 and rmem.decoded == 45  # copied, then 5 prefilled


def test_a_prefill_that_fails_after_writing_gives_everything_back():
    for spill in (True, False):
        store, mem = make_store(spill=spill)
        mem.fail_prefills = {1}
        with pytest.raises(DecodeError):
            store.acquire(P)
        store.check_invariants(idle=True)
        assert mem.cells == [] and len(store.cache) == 0
        mem.fail_prefills = {3}
        use(store, P)  # prefill 2
        with pytest.raises(DecodeError):  # prefill 3: the copy's (or the restore-cut's) rest
            store.acquire(P_LONGER)
        store.check_invariants(idle=True)
        assert use(store, P) == 40  # the cached prefix survived the failure


def test_a_refused_restore_prefills_again_and_leaks_nothing():
    store, mem = make_store(spill=True)
    use(store, P)
    use(store, P_LONGER)
    mem.refuse_loads = True
    assert use(store, P_LONGER[:42] + [1, 2, 3, 4]) == 0  # partial hit, restore refused
    assert use(store, P) == 0  # exact hit, restore refused: the entry is cached anew
    mem.refuse_loads = False
    assert use(store, P) == 40


def test_a_prefix_that_cannot_be_saved_is_evicted_not_kept_without_its_rows():
    store, mem = make_store(spill=True)
    mem.refuse_saves = True
    use(store, P)
    assert len(store.cache) == 0 and mem.cells == []
    mem.refuse_saves = False
    assert use(store, P) == 0 and len(store.cache) == 1


def test_a_refused_cut_falls_back_to_prefill():
    store, mem = make_store(spill=True)
    use(store, P)
    mem.refuse_cuts = True
    assert use(store, P[:30] + [1, 2, 3, 4, 5, 6]) == 0


def test_the_budget_evicts_least_recently_used_prefixes_and_a_new_state_is_always_admitted():
    for spill in (True, False):
        store, mem = make_store(spill=spill, budget=80)
        for k in range(5):
            use(store, list(range(1000 * k, 1000 * k + 30)))
            assert store.cache.used_tokens <= 80
        assert use(store, list(range(4000, 4030))) == 30  # the newest is still cached
        assert use(store, list(range(0, 30))) == 0  # the oldest went
        huge = list(range(9000, 9200))
        assert use(store, huge) == 0 and store.plan_acquire(huge).outcome == "prefill"  # over the budget alone: not kept


def test_reserve_answers_and_require_refuses_before_any_decode():
    store, mem = make_store(spill=False, n_ctx=100, budget=100)
    lease = store.acquire(P)  # 40 cells pinned
    assert not store.reserve(70) and store.reserve(60)
    with pytest.raises(EngineStateError, match="70 KV cells needed"):
        store.require(70)
    store.release(lease)
    assert store.reserve(100) and len(store.cache) == 0  # unpinned prefixes are vacated for room
    store.check_invariants()


def test_branches_fork_from_a_lease_and_go_back():
    store, mem = make_store(spill=True, n_seq_max=4)
    lease = store.acquire(P)
    forks = [store.fork(lease.seq) for _ in range(2)]  # 4 sequences: scratch, the prefix, 2 branches
    assert all(mem.seq_span(b) == (0, 39) for b in forks)
    with pytest.raises(SemifError, match="no free KV sequence"):
        store.fork(lease.seq)  # the only resident prefix is pinned
    for b in forks:
        store.give_branch(b)
    with pytest.raises(EngineStateError, match="still pinned"):
        store.check_invariants(idle=True)
    store.release(lease)
    store.check_invariants(idle=True)
    assert mem.cells == []


def test_serial_rewind_cuts_the_suffix_or_marks_the_prefix_stale():
    store, mem = make_store(spill=True)
    lease = store.acquire(P)
    mem._write(lease.seq, range(40, 50))  # a suffix decoded on the prefix's own sequence
    store.rewind(lease, store.checkpoint(lease))
    assert mem.seq_span(lease.seq) == (0, 39)
    mem._write(lease.seq, range(40, 45))
    mem.refuse_cuts = True
    with pytest.raises(SemifError, match="refused to truncate"):
        store.rewind(lease, None)
    store.mark_stale(lease)
    store.release(lease)  # a stale prefix is evicted, never matched again
    store.check_invariants(idle=True)
    mem.refuse_cuts = False
    assert use(store, P) == 0


def test_broken_books_are_reported_and_recover_starts_clean():
    store, mem = make_store(spill=True)
    use(store, P)
    mem._write(store.scratch_seq, range(0, 3))  # a cell nobody accounts for
    with pytest.raises(EngineStateError, match="free sequence .* still holds positions up to 2"):
        store.check_invariants()
    store.recover()
    store.check_invariants()
    assert mem.cells == [] and len(store.cache) == 0


def test_random_faults_over_many_requests_keep_the_books_balanced():
    """The fuzzed walk: requests about overlapping states, faults anywhere; every error leaves the books balanced."""
    rng = random.Random(3)
    for spill in (True, False):
        store, mem = make_store(spill=spill, n_ctx=300, budget=150, n_seq_max=6)
        states = [list(range(1000 * k, 1000 * k + rng.randint(20, 60))) for k in range(4)]
        errors = 0
        for _ in range(300):
            base = rng.choice(states)
            prefix = base[: rng.randint(10, len(base))] + ([rng.randint(1, 9)] * rng.randint(0, 3))
            mem.fail_prefills = {mem.prefills + 1} if rng.random() < 0.2 else set()
            mem.refuse_loads = rng.random() < 0.2
            try:
                lease = store.acquire(prefix)
            except DecodeError:
                errors += 1
                store.check_invariants(idle=True)
                continue
            forks = [store.fork(lease.seq) for _ in range(rng.randint(0, 2))]
            for b in forks:
                store.give_branch(b)
            store.release(lease)
            store.check_invariants(idle=True)
            assert mem.used_by_nothing_cached(store)
        assert errors > 10


def test_nested_prefixes_reuse_the_exact_entry_and_leak_nothing():
    """P+X cached before P: asking for P again hits P itself, not another copy out of P+X."""
    store, mem = make_store(spill=False, budget=1000)
    for k in range(20):
        cached = use(store, P_LONGER if k % 4 == 0 else P)
        if k % 4 in (2, 3):
            assert cached == len(P)
    assert sorted(len(e) for e in store.cache.entries()) == [len(P), len(P_LONGER)]


# ---------------------------------------------------------------- the modes over the store, with decodes that fail
class SimulatedBackend(SimulatedMemory):
    """The memory plus `decode`: each row takes a cell seen by its sequences; call numbers in `fail_decodes` fail after writing."""

    fail_decodes: set[int]

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.fail_decodes, self.decode_calls = set(), 0

    def decode(self, tokens, pos, seqs, want):
        import numpy as np

        if len(tokens) > self._free():
            raise DecodeError("llama_decode failed with code 1 (no free KV slot)")
        self.cells += [(p, set(s)) for p, s in zip(pos, seqs, strict=True)]
        self.decode_calls += 1
        if self.decode_calls in self.fail_decodes:
            raise DecodeError("llama_decode failed with code -99 (injected fault)")
        return [np.full(4, float(i)) for i, w in enumerate(want) if w]

    def prefill(self, seq, tokens, start):
        self.decode(tokens, range(start, start + len(tokens)), [(seq,)] * len(tokens), [False] * len(tokens))


def make_runner(spill: bool = True):
    from semif_lib.decision.kvstore import Counters
    from semif_lib.decision.modes import ModeRunner
    from semif_lib.decision.planner import Capacity

    backend = SimulatedBackend(n_ctx=400, n_seq_max=8)
    store = KVStore(backend, budget_tokens=300, spill=spill, min_shared_tokens=4)
    return ModeRunner(backend, store, Capacity(400, 8, 64, 64), Counters()), backend, store


def prepared(prefix: list[int], suffixes: list[list[int]]):
    from semif_lib.decision.preparer import Branch, PreparedRequest

    return PreparedRequest([], list(prefix), [Branch(i, list(s), [len(s) - 1]) for i, s in enumerate(suffixes)], {}, {})


def run_mode(runner, store, mode: str, prep) -> None:
    from semif_lib.decision.prefix_cache import CanonicalPartition

    if mode == "fresh":
        runner.fresh(prep)
        return
    if mode == "invariant":  # as the engine runs a batch-invariant request: settled, its own partition, serial
        store.settle()
        lease = store.acquire(prep.prefix, CanonicalPartition(None))
        try:
            runner.serial(prep, lease)
        finally:
            store.release(lease)
        return
    lease = store.acquire(prep.prefix)
    try:
        (runner.serial if mode == "serial" else runner.parallel)(prep, lease)
    finally:
        store.release(lease)


@pytest.mark.parametrize("mode", ["fresh", "serial", "parallel", "invariant"])
@pytest.mark.parametrize("spill", [True, False])
def test_a_failed_decode_at_any_point_of_any_mode_leaves_the_books_balanced(mode, spill):
    suffixes = [[1, 2, 3], [1, 2, 4, 5], [9, 8]] * 10  # 30 branches: several waves of 64 rows
    for offset in range(1, 12):
        runner, backend, store = make_runner(spill)
        prep = prepared(P, suffixes)
        if offset > 1:
            run_mode(runner, store, mode, prepared(P, suffixes))  # the prefix is cached first
        backend.fail_decodes = {backend.decode_calls + (offset - 1 if offset > 1 else 1)}
        try:
            run_mode(runner, store, mode, prep)
        except DecodeError:
            store.recover()  # what the engine does after a failed request: it must find the books balanced
            store.check_invariants(idle=True)
            assert backend.used_by_nothing_cached(store)
            backend.fail_decodes = set()
            run_mode(runner, store, mode, prepared(P, suffixes))  # and the next request succeeds
            store.check_invariants(idle=True)
            continue
        store.check_invariants(idle=True)
        assert all(len(branch.rows) == 1 for branch in prep.branches)


def test_parallel_branches_of_several_prefixes_share_waves_and_give_every_fork_back():
    runner, backend, store = make_runner()
    leases = [store.acquire(P), store.acquire(P_OTHER)]
    branches = prepared(P, [[1, 2], [1, 3]]).branches + prepared(P_OTHER, [[4], [5, 6]]).branches
    runner.branches([(branch, lease.seq, lease.length) for branch, lease in zip(branches, [leases[0]] * 2 + [leases[1]] * 2, strict=True)])
    assert runner.counters.branch_tokens == 6  # 7 branch tokens: the leading 1 that both of P's branches share decodes once
    for lease in leases:
        store.release(lease)
    store.check_invariants(idle=True)
    assert backend.used_by_nothing_cached(store)


@pytest.mark.parametrize("spill", [True, False])
def test_settling_empties_the_memory_and_keeps_what_spilling_keeps(spill):
    """The batch-invariant mode's start: no cell in use, so llama.cpp places the next prefix at cell 0; spilled prefixes
    stay cached (evicted without spilling), the books balance, and a pinned prefix refuses instead of losing its cells."""
    store, mem = make_store(spill=spill, budget=200)
    use(store, P)
    lease = store.acquire(P_OTHER)
    with pytest.raises(EngineStateError, match="pinned"):
        store.settle()
    store.check_invariants(idle=False)
    store.release(lease)
    store.settle()
    assert mem.cells == [] and not store.cache.resident()
    assert len(store.cache.entries()) == (2 if spill else 0)
    store.check_invariants(idle=True)
    assert use(store, P) == (len(P) if spill else 0)  # restored whole (spilling) or prefilled


def test_a_canonical_partition_reuses_only_its_own_whole_prefixes():
    """Batch-invariant prefixes are computed alone from cell 0: never seeded by a part of another (the shared part of a
    longer prefix carries its neighbours' numerics), and never shared with the plain partition of the same tokens."""
    from semif_lib.decision.prefix_cache import CanonicalPartition

    store, _ = make_store(budget=400)
    canonical = CanonicalPartition(None)
    for tokens, partition in [(P_LONGER, canonical), (P, None)]:
        store.release(store.acquire(tokens, partition))
    assert store.plan_acquire(P, canonical).outcome == "prefill"  # P+X is cached canonically, P plainly: neither serves
    store.release(store.acquire(P, canonical))
    assert store.plan_acquire(P, canonical).outcome == "restore"
    assert store.plan_acquire(P, CanonicalPartition("tenant")).outcome == "prefill"
    assert store.plan_acquire(P_LONGER, None).outcome == "restore_cut"  # the plain partition still reuses parts of its own
    store.check_invariants(idle=True)
