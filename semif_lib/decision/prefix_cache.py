"""Bookkeeping for prefixes cached across requests.

While a request uses a prefix, the prefix lives in its own KV sequence. With a unified KV
cache, copying a sequence (`llama_memory_seq_cp`) tags the same cells with another sequence id
instead of duplicating them, so forking branches off a prefix costs nothing. Between requests
a prefix is *spilled*: its KV rows are saved to host memory (`llama_state_seq_get_data`) and
its cells freed, because every resident cell widens the attention of every later decode
(llama.cpp attends over all cells up to the highest one in use, masking other sequences'):
two other resident states slowed a new state's prefill 1.145x and a cached request's branches
1.127x, spilled ones did not (results/bench/residency.json, both policies side by side).
Restoring a spilled prefix copies its KV rows back, with no decode.

This class keeps the index: which entry matches, which to evict, and each entry's pins,
sequence and snapshot, written only through its methods. `kvstore.KVStore` performs the KV
operations and is its only writer. Tests can use it without a model.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Sequence, TypeAlias

import numpy as np

Snapshot: TypeAlias = Any  # a sequence's saved KV rows, opaque here (a ctypes buffer from the backend)
Outcome = Literal["hit", "copy", "restore", "restore_cut", "prefill"]


class CanonicalPartition(NamedTuple):
    """The batch-invariant mode's partition of `key` (a `prompt_cache_key` or None): its prefixes are computed alone
    from cell 0 and only ever reused whole, so no other request's prefix (a string or None) can share or seed them."""

    key: str | None


Partition: TypeAlias = "str | CanonicalPartition | None"


@dataclass
class CacheEntry:
    """A cached prefix: resident in KV sequence `seq_id`, or spilled (`seq_id` None) as `snapshot`.

    `pins` > 0 while a request is using it (then it is resident). `snapshot` is the sequence's
    saved state, kept while resident too (the prefix's cells never change), so spilling a
    restored prefix again costs nothing.
    `stale`: a failed request may have left cells on it; never matched again, evicted on release.
    `holders`: the stateful sessions that keep it cached (a hold is no pin: it may be spilled, never evicted by the LRU).
    """

    tokens: tuple[int, ...]
    seq_id: int | None
    pins: int = 0
    stale: bool = False
    snapshot: Snapshot | None = None
    partition: Partition = None  # OpenAI's `prompt_cache_key`: only requests with the same one share this entry
    holders: set[str] = field(default_factory=set)

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def key(self) -> tuple[Partition, tuple[int, ...]]:
        return (self.partition, self.tokens)

    @property
    def resident(self) -> bool:
        return self.seq_id is not None


@dataclass
class MatchResult:
    """Longest cached match for a requested prefix: `entry` and the number of shared tokens."""

    entry: CacheEntry | None
    length: int

    @property
    def exact(self) -> bool:
        return self.entry is not None and self.length == len(self.entry)


@dataclass(frozen=True)
class AcquirePlan:
    """How a requested prefix will be produced, decided from the books alone.

    * ``hit``: a resident entry is exactly the prefix; pinned, nothing decoded.
    * ``copy``: a resident entry shares `shared` tokens; they are copied (`seq_cp`), the rest prefilled.
    * ``restore``: a spilled entry is exactly the prefix; its snapshot is loaded, nothing decoded.
    * ``restore_cut``: a spilled entry shares `shared` tokens; loaded whole, cut back, the rest prefilled.
    * ``prefill``: nothing usable is cached; the whole prefix is decoded.

    `need`: KV cells that must be free first (else the request cannot run); `want`: cells to free
    if possible (a spilled longer entry comes back whole before it is cut).
    """

    outcome: Outcome
    source: CacheEntry | None
    shared: int
    need: int
    want: int


@dataclass(frozen=True)
class Lease:
    """A pinned prefix a request decodes from; give it back with `KVStore.release`."""

    entry: CacheEntry
    cached: int  # tokens that were already cached (`usage.cached_tokens`)

    @property
    def seq(self) -> int:
        assert self.entry.seq_id is not None, "a leased prefix is resident"
        return self.entry.seq_id

    @property
    def length(self) -> int:
        return len(self.entry)


def count_common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token sequences (vectorised)."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    diff = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(diff[0]) if diff.size else n


@dataclass
class PrefixCache:
    """LRU of token prefixes bounded by a token budget (resident and spilled together)."""

    budget_tokens: int
    min_shared_tokens: int = 16
    _entries: "OrderedDict[tuple[str | None, tuple[int, ...]], CacheEntry]" = field(default_factory=OrderedDict)

    @property
    def used_tokens(self) -> int:
        return sum(len(e) for e in self._entries.values())

    @property
    def resident_tokens(self) -> int:
        """KV cells the cached prefixes occupy now (only resident ones hold cells)."""
        return sum(len(e) for e in self._entries.values() if e.resident)

    def __len__(self) -> int:
        return len(self._entries)

    def resident(self) -> list[CacheEntry]:
        return [e for e in self._entries.values() if e.resident]

    def entries(self) -> list[CacheEntry]:
        return list(self._entries.values())

    def match(self, tokens: Sequence[int], partition: Partition = None) -> MatchResult:
        """The entry sharing the longest prefix with `tokens` (ignoring matches shorter than `min_shared_tokens`).

        Among entries sharing as many tokens, the one that is exactly that long wins: asked for P
        with P+X cached first and P after it, P is an exact hit, not a copy out of P+X.
        Stale entries, and entries of another `partition`, are never matched; a `CanonicalPartition`
        matches only an entry that is exactly `tokens` (a part of another would carry its neighbours' numerics).
        """
        if isinstance(partition, CanonicalPartition):
            whole = self.find(tokens, partition)
            return MatchResult(whole, len(tokens)) if whole is not None else MatchResult(None, 0)
        best, best_key = None, (0, False)
        for entry in self._entries.values():
            if entry.stale or entry.partition != partition:
                continue
            n = count_common_prefix(entry.tokens, tokens)
            key = (n, n == len(entry))
            if key > best_key:
                best, best_key = entry, key
        best_len = best_key[0]
        if best is None or best_len < min(self.min_shared_tokens, len(tokens)):
            return MatchResult(None, 0)
        return MatchResult(best, best_len)

    def find(self, tokens: Sequence[int], partition: Partition = None) -> CacheEntry | None:
        """The entry that is exactly `tokens` in `partition`, if cached (and not stale)."""
        entry = self._entries.get((partition, tuple(tokens)))
        return None if entry is None or entry.stale else entry

    def held_tokens(self) -> int:
        """Tokens of the entries some session holds, each entry once."""
        return sum(len(e) for e in self._entries.values() if e.holders)

    def touch(self, entry: CacheEntry) -> None:
        self._entries.move_to_end(entry.key)

    def insert(self, tokens: Sequence[int], seq_id: int | None, partition: Partition = None) -> CacheEntry:
        """Add an entry (most recently used). The caller evicts first to stay within budget.

        A prefix already cached is refused: replacing its entry would orphan that entry's sequence.
        """
        entry = CacheEntry(tuple(tokens), seq_id, partition=partition)
        if entry.key in self._entries:
            raise ValueError(f"a prefix of {len(entry)} tokens is already cached in sequence {self._entries[entry.key].seq_id}")
        self._entries[entry.key] = entry
        return entry

    def remove(self, entry: CacheEntry) -> None:
        self._entries.pop(entry.key, None)

    # ---- the only writes to an entry
    def pin(self, entry: CacheEntry) -> None:
        """A request uses `entry` (it must be resident): it is neither spilled nor evicted until unpinned."""
        if not entry.resident:
            raise ValueError(f"a spilled prefix of {len(entry)} tokens cannot be pinned: restore it first")
        entry.pins += 1

    def unpin(self, entry: CacheEntry) -> None:
        if entry.pins <= 0:
            raise ValueError(f"the prefix of {len(entry)} tokens is not pinned")
        entry.pins -= 1

    def place(self, entry: CacheEntry, seq_id: int) -> None:
        """`entry` is resident again, in `seq_id` (restored from its snapshot)."""
        entry.seq_id = seq_id

    def unplace(self, entry: CacheEntry, snapshot: Snapshot | None) -> int | None:
        """`entry` leaves its sequence (returned, for the caller to free); `snapshot` keeps it cached, if given."""
        seq, entry.seq_id = entry.seq_id, None
        if snapshot is not None:
            entry.snapshot = snapshot
        return seq

    def hold(self, tokens: Sequence[int], partition: Partition, holder: str) -> bool:
        """Session `holder` keeps the entry that is exactly `tokens` cached (the LRU passes it over until `release_holder`);
        False when no such entry is cached."""
        entry = self.find(tokens, partition)
        if entry is not None:
            entry.holders.add(holder)
        return entry is not None

    def release_holder(self, holder: str) -> int:
        """Session `holder` keeps nothing cached any more; returns how many entries it held."""
        held = [e for e in self._entries.values() if holder in e.holders]
        for entry in held:
            entry.holders.discard(holder)
        return len(held)

    def mark_stale(self, entry: CacheEntry) -> None:
        """A failed request may have left cells on `entry`: never matched again, evicted on release."""
        entry.stale = True

    def drop(self, entry: CacheEntry) -> int | None:
        """Forget `entry`; returns the sequence it held (for the caller to free), if resident."""
        self.remove(entry)
        seq, entry.seq_id, entry.snapshot = entry.seq_id, None, None
        return seq

    def pick_victim(self, resident_only: bool = False, keep_held: bool = False) -> CacheEntry | None:
        """Least recently used entry that no request is using (`resident_only`: one that holds KV cells;
        `keep_held`: it is to be evicted, so none a session holds)."""
        for entry in self._entries.values():
            if entry.pins == 0 and (entry.resident or not resident_only) and not (keep_held and entry.holders):
                return entry
        return None
