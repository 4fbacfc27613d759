"""The prefix store: cached prefixes in KV sequences, leased to requests, spilled between them.

The engine is the scheduler and this is its memory cache, as in SGLang's scheduler / `mem_cache` split or vLLM's
`KVCacheManager`: the engine asks for a prefix and gets a `Lease`; the store decides how to produce it (`plan_acquire`:
one of five typed outcomes), performs the KV operations through the small `KVMemory` protocol, and keeps the books: which
sequence is free, which holds which prefix, what is pinned, what a stateful session holds, what waits in host memory.
`check_invariants` checks those books against the memory, next to them.

`decision.backend.LlamaBackend` is the real `KVMemory`; tests drive the store over a simulated
one in milliseconds (tests/test_kvstore.py), with every fault the real-model tests inject.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol, Sequence

from ..errors import EngineStateError, SemifError
from .prefix_cache import AcquirePlan, CacheEntry, Lease, Partition, PrefixCache, Snapshot

__all__ = ["Counters", "KVMemory", "KVStore", "Lease"]

log = logging.getLogger("semif.engine")

class KVMemory(Protocol):
    """What the store needs of llama.cpp's memory: sequences of KV cells it can fill, copy, cut, save and load."""

    n_ctx: int
    n_seq_max: int
    restore_by_state: bool

    def prefill(self, seq: int, tokens: Sequence[int], start: int) -> None:
        """Decode `tokens` into `seq` at positions start..; raises `DecodeError` (cells may be written)."""

    def seq_rm(self, seq: int, p0: int = -1, p1: int = -1) -> bool: ...

    def seq_cp(self, src: int, dst: int, p0: int = -1, p1: int = -1) -> None: ...

    def seq_span(self, seq: int) -> tuple[int, int]:
        """(lowest, highest) position held; (-1, -1) when empty."""

    def save_seq(self, seq: int) -> Snapshot | None: ...

    def load_seq(self, seq: int, snapshot: Snapshot) -> bool:
        """Replace `seq`'s cells with `snapshot`; False leaves `seq` empty."""

    def clear(self) -> None: ...


@dataclass
class Counters:
    """The engine's running totals (`DecisionEngine.stats`); the store counts its own KV work here."""

    requests: int = 0
    cache_hits: int = 0
    prefill_tokens: int = 0
    branch_tokens: int = 0  # decoded after a prefix, tokens that branches share once
    restores: int = 0
    spills: int = 0


class KVStore:
    """Sequences and cached prefixes over one `KVMemory`; not thread-safe (the engine's lock covers it).

    Invariant (`check_invariants`): each sequence is the scratch one, a free one (both empty), or
    one resident prefix's, holding exactly its positions 0..n-1; a spilled prefix has a snapshot
    and no pin; between requests nothing is pinned and (spilling) nothing is resident.
    """

    def __init__(self, memory: KVMemory, *, budget_tokens: int, spill: bool = True, min_shared_tokens: int = 16,
                 counters: Counters | None = None) -> None:
        self.memory = memory
        self.n_ctx, self.n_seq_max = memory.n_ctx, memory.n_seq_max
        self.spill = spill
        self.restore_by_state = memory.restore_by_state
        self.cache = PrefixCache(budget_tokens=budget_tokens, min_shared_tokens=min_shared_tokens)
        self.stats = counters or Counters()
        self._free = list(range(self.n_seq_max - 1, -1, -1))
        self.scratch_seq = self._free.pop()

    # ------------------------------------------------------------------ capacity
    @property
    def free_cells(self) -> int:
        return self.n_ctx - self.cache.resident_tokens

    @property
    def free_seqs(self) -> int:
        return len(self._free)

    @property
    def branch_room(self) -> int:
        """Sequences a branch could get now: free ones, and those an unpinned resident prefix would give up."""
        return len(self._free) + sum(1 for e in self.cache.resident() if e.pins == 0)

    def reserve(self, cells: int) -> bool:
        """Spill or evict unpinned prefixes (LRU) until `cells` KV cells are free; whether they are."""
        while self.free_cells < cells and (victim := self.cache.pick_victim(resident_only=True)) is not None:
            self._vacate(victim)  # a session's held prefix too: spilled it stays cached; without spilling, cells come first
        return self.free_cells >= cells

    def require(self, cells: int, required: int | None = None) -> None:
        """`reserve(cells)`, failing before any decode would if fewer than `required` (default: all) are free."""
        required = cells if required is None else required
        if not self.reserve(cells) and self.free_cells < required:
            raise EngineStateError(f"{required} KV cells needed but only {self.free_cells} of {self.n_ctx} "
                                   f"can be freed (pinned prefixes hold {self.cache.resident_tokens}): "
                                   "admission should have prevented this")

    def _room_with_pinned(self, cells: int, source: CacheEntry) -> bool:
        """Whether `cells` can be freed while `source` stays resident too (other unpinned prefixes can be spilled)."""
        spillable = sum(len(e) for e in self.cache.resident() if e.pins == 0 and e is not source)
        return self.free_cells + spillable >= cells

    # ------------------------------------------------------------------ prefixes
    def plan_acquire(self, prefix: Sequence[int], partition: Partition = None) -> AcquirePlan:
        """Which of the five outcomes `acquire(prefix)` will take, from the books alone (no KV operation)."""
        n = len(prefix)
        match = self.cache.match(prefix, partition)
        entry, shared = match.entry, match.length
        prefill = AcquirePlan("prefill", None, 0, n + 1, n + 1)
        full = match.exact and shared == n
        if entry is None:
            return prefill
        if entry.resident:
            if full:
                return AcquirePlan("hit", entry, n, 0, 0)
            need = n - shared + 1
            # copying would pin the source in cells this request needs: prefill it all
            return AcquirePlan("copy", entry, shared, need, need) if self._room_with_pinned(need, entry) else prefill
        if full:
            return AcquirePlan("restore", entry, n, n + 1, n + 1)
        if self.restore_by_state:
            return prefill  # a recurrent state cannot be cut back to the shared part
        return AcquirePlan("restore_cut", entry, shared, n + 1, max(n + 1, len(entry) + 1))

    def acquire(self, prefix: Sequence[int], partition: Partition = None) -> Lease:
        """A pinned sequence holding `prefix`: from the cache (resident or spilled, exact or partial) or prefilled now.
        Only entries of the same `partition` (OpenAI's `prompt_cache_key`; None is the shared one) are reused.
        Whatever fails, the sequence taken and the cells written go back before the error leaves."""
        plan = self.plan_acquire(prefix, partition)
        if plan.outcome == "hit":
            return self._lease(plan.source, len(prefix), hit=True)
        source = plan.source if plan.outcome == "copy" else None
        if source is not None:
            self.cache.pin(source)  # keep the source alive while we copy from it
        seq: int | None = None
        try:
            self.require(plan.want, plan.need)
            seq = self._take_seq()
            cached, whole = self._reuse(seq, plan)
            if whole and plan.outcome == "restore":  # the spilled entry is resident again
                self.cache.place(plan.source, seq)
                seq = None
                return self._lease(plan.source, len(prefix), hit=True)
            if cached < len(prefix):
                self.memory.prefill(seq, prefix[cached:], cached)
                self.stats.prefill_tokens += len(prefix) - cached
        except BaseException:
            if seq is not None:  # the sequence and the chunks already decoded go back
                self._give_seq(seq)
            raise
        finally:
            if source is not None:
                self.cache.unpin(source)
        return self._lease(self.cache.insert(prefix, seq, partition), cached, hit=False)

    def _reuse(self, seq: int, plan: AcquirePlan) -> tuple[int, bool]:
        """Put what the cache has of the prefix into the empty `seq`: (tokens there, whether the plan went whole)."""
        if plan.outcome == "copy":
            self.memory.seq_cp(plan.source.seq_id, seq, 0, plan.shared)
            return plan.shared, True
        spilled = plan.source
        if spilled is None:
            return 0, True
        if plan.outcome == "restore_cut" and self.free_cells <= len(spilled):
            return 0, False  # it comes back whole before it is cut, and that does not fit: prefill
        if not self.memory.load_seq(seq, spilled.snapshot):
            log.warning("a cached prefix of %d tokens could not be restored (no contiguous KV cells); prefilling it", len(spilled))
            if plan.outcome == "restore":
                self._evict(spilled)  # cached anew, once prefilled
            return 0, False
        self.stats.restores += 1
        if plan.outcome == "restore" or self.memory.seq_rm(seq, plan.shared, -1):
            return plan.shared, True
        self.memory.seq_rm(seq)
        return 0, False

    def _lease(self, entry: CacheEntry, cached: int, hit: bool) -> Lease:
        self.cache.pin(entry)
        if hit:
            self.cache.touch(entry)
            self.stats.cache_hits += 1
        return Lease(entry, cached)

    def release(self, lease: Lease) -> None:
        """Unpin; once no request uses it, spill the prefix to host memory (a stale one is evicted); then evict least
        recently used prefixes until the budget holds. The prefix just used is the most recent, so it stays unless it
        alone exceeds the budget (evicting it first meant a full cache never admitted a new state again)."""
        entry = lease.entry
        self.cache.unpin(entry)
        if entry.pins == 0:
            if entry.stale or len(entry) > self.cache.budget_tokens:
                self._evict(entry)
            elif self.spill:
                self._spill(entry)
        while self.cache.used_tokens > self.cache.budget_tokens and (victim := self.cache.pick_victim(keep_held=True)) is not None:
            self._evict(victim)

    def hold(self, prefix: Sequence[int], partition: Partition, holder: str) -> bool:
        """Keep the cached `prefix` for session `holder` (spilled between requests, never evicted); whether it is cached."""
        return self.cache.hold(prefix, partition, holder)

    def release_holder(self, holder: str) -> int:
        """What session `holder` kept is an ordinary LRU entry again (evicted when a `release` needs the budget)."""
        return self.cache.release_holder(holder)

    def mark_stale(self, lease: Lease) -> None:
        """A failed request may have left cells on the prefix: never matched again, evicted on release."""
        self.cache.mark_stale(lease.entry)

    def checkpoint(self, lease: Lease) -> Snapshot | None:
        """What `rewind` needs: the prefix's state where this model cannot be cut back (recurrent), else None."""
        return self.memory.save_seq(lease.seq) if self.restore_by_state else None

    def rewind(self, lease: Lease, checkpoint: Snapshot | None) -> None:
        """Cut what a suffix added to the leased sequence, back to the prefix."""
        if checkpoint is not None:
            if not self.memory.load_seq(lease.seq, checkpoint):
                raise SemifError("llama_state_seq_set_data failed to restore the prefix")
        elif not self.memory.seq_rm(lease.seq, lease.length, -1):
            raise SemifError("llama_memory_seq_rm refused to truncate; this architecture needs state restore")

    def settle(self) -> None:
        """Every cached prefix out of the KV cells (spilled, or evicted without spilling) and the memory emptied, so the
        next prefix lands at cell 0 and each suffix right after it: the batch-invariant mode's placement (between requests)."""
        for entry in self.cache.resident():
            if entry.pins:
                raise EngineStateError(f"a prefix in sequence {entry.seq_id} is pinned: the memory cannot be settled mid-request")
            self._vacate(entry)
        self.memory.clear()  # llama.cpp's free cells are found from its head, which only a clear puts back at 0

    def clear(self) -> None:
        """Drop every cached prefix no request uses (benchmarks that must measure cold requests)."""
        for entry in self.cache.entries():
            if entry.pins == 0:
                self._evict(entry)

    # ------------------------------------------------------------------ sequences
    def take_branch(self, vacate: bool = True) -> int:
        """An empty sequence for a branch; `vacate`: an unpinned resident prefix gives up its own if none is free."""
        return self._take_seq() if vacate else self._pop_free()

    def fork(self, src: int) -> int:
        """A branch sequence sharing all of `src`'s cells (free with a unified KV cache)."""
        branch = self._take_seq()
        self.memory.seq_cp(src, branch, -1, -1)
        return branch

    def give_branch(self, seq: int) -> None:
        self._give_seq(seq)

    def clear_scratch(self) -> None:
        self.memory.seq_rm(self.scratch_seq)

    def _pop_free(self) -> int:
        if not self._free:
            raise SemifError("no free KV sequence")
        return self._free.pop()

    def _take_seq(self) -> int:
        if not self._free:
            victim = self.cache.pick_victim(resident_only=True)
            if victim is None:
                raise SemifError("no free KV sequence")
            self._vacate(victim)
        return self._free.pop()

    def _give_seq(self, seq: int) -> None:
        self.memory.seq_rm(seq)
        self._free.append(seq)

    def _evict(self, entry: CacheEntry) -> None:
        """Forget a cached prefix: its sequence (if resident) and its snapshot go."""
        seq = self.cache.drop(entry)
        if seq is not None:
            self._give_seq(seq)

    def _spill(self, entry: CacheEntry) -> None:
        """Move an unpinned prefix out of the KV cache into host memory; evict it if it cannot be saved."""
        snapshot = entry.snapshot if entry.snapshot is not None else self.memory.save_seq(entry.seq_id)
        if snapshot is None:
            self._evict(entry)
            return
        self._give_seq(self.cache.unplace(entry, snapshot))
        self.stats.spills += 1

    def _vacate(self, entry: CacheEntry) -> None:
        """Free an unpinned prefix's cells: spilled if the store spills, otherwise evicted."""
        (self._spill if self.spill else self._evict)(entry)

    # ------------------------------------------------------------------ the books
    def check_invariants(self, idle: bool = True) -> None:
        """Raise `EngineStateError` naming what is off unless every sequence and KV cell is accounted for. `idle`: no
        request is running, so nothing may be pinned, and (spilling) every cached prefix is spilled."""
        problems = self._check_sequences()
        for entry in self.cache.entries():
            problems += self._check_entry(entry, idle)
        if problems:
            raise EngineStateError("engine state: " + "; ".join(problems))

    def _check_sequences(self) -> list[str]:
        owners = [self.scratch_seq, *self._free, *(e.seq_id for e in self.cache.resident())]
        problems = []
        if sorted(owners) != list(range(self.n_seq_max)):
            problems.append(f"sequences owned {sorted(owners)} are not 0..{self.n_seq_max - 1} exactly once")
        for seq in [self.scratch_seq, *self._free]:
            if (top := self.memory.seq_span(seq)[1]) != -1:
                problems.append(f"free sequence {seq} still holds positions up to {top}")
        return problems

    def _check_entry(self, e: CacheEntry, idle: bool) -> list[str]:
        if not e.resident:
            bad = e.snapshot is None or e.pins
            return [f"a spilled prefix of {len(e)} tokens has {'no snapshot' if e.snapshot is None else f'{e.pins} pin(s)'}"] if bad else []
        problems = []
        span = self.memory.seq_span(e.seq_id)
        if span != (0, len(e) - 1):
            problems.append(f"cached prefix of {len(e)} tokens in sequence {e.seq_id} holds positions {span[0]}..{span[1]}")
        if idle and not e.pins and self.spill:
            problems.append(f"cached prefix in sequence {e.seq_id} is still resident between requests (not spilled)")
        if idle and e.pins:
            problems.append(f"cached prefix in sequence {e.seq_id} is still pinned {e.pins} time(s)")
        if e.stale:
            problems.append(f"a stale prefix is still cached in sequence {e.seq_id}")
        return problems

    def reset(self) -> None:
        """Forget every cached prefix and clear the memory: the way back from a broken invariant."""
        self.memory.clear()
        self.cache = PrefixCache(budget_tokens=self.cache.budget_tokens, min_shared_tokens=self.cache.min_shared_tokens)
        self._free = [s for s in range(self.n_seq_max - 1, -1, -1) if s != self.scratch_seq]

    def recover(self) -> None:
        """After a failed request: keep the cache if the books balance, otherwise start clean (logged)."""
        try:
            self.check_invariants(idle=True)
        except EngineStateError as exc:
            log.error("%s; clearing the KV cache", exc.message)
            self.reset()
