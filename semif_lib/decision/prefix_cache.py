"""Bookkeeping for prefixes kept resident in the KV cache across requests.

Each cached prefix lives in its own KV sequence. With a unified KV cache, copying a
sequence (`llama_memory_seq_cp`) tags the same cells with another sequence id instead of
duplicating them, so forking branches off a cached prefix costs nothing. This class only
decides: which entry matches, which to evict. The engine performs the KV operations.
Tests can use it without a model.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np


@dataclass
class CacheEntry:
    """A prefix resident in KV sequence `seq_id`; `pins` > 0 while a request is using it.

    `stale`: a failed request may have left cells on it; never matched again, evicted on release.
    """

    tokens: tuple[int, ...]
    seq_id: int
    pins: int = 0
    stale: bool = False

    def __len__(self) -> int:
        return len(self.tokens)


@dataclass
class MatchResult:
    """Longest cached match for a requested prefix: `entry` and the number of shared tokens."""

    entry: CacheEntry | None
    length: int

    @property
    def exact(self) -> bool:
        return self.entry is not None and self.length == len(self.entry)


def count_common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token sequences (vectorised)."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    diff = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(diff[0]) if diff.size else n


@dataclass
class PrefixCache:
    """LRU of token prefixes bounded by a token budget."""

    budget_tokens: int
    min_shared_tokens: int = 16
    _entries: "OrderedDict[tuple[int, ...], CacheEntry]" = field(default_factory=OrderedDict)

    @property
    def used_tokens(self) -> int:
        return sum(len(e) for e in self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> list[CacheEntry]:
        return list(self._entries.values())

    def match(self, tokens: Sequence[int]) -> MatchResult:
        """The entry sharing the longest prefix with `tokens` (ignoring matches shorter than `min_shared_tokens`).

        Among entries sharing as many tokens, the one that is exactly that long wins: asked for P
        with P+X cached first and P after it, P is an exact hit, not a copy out of P+X.
        Stale entries are never matched.
        """
        best, best_key = None, (0, False)
        for entry in self._entries.values():
            if entry.stale:
                continue
            n = count_common_prefix(entry.tokens, tokens)
            key = (n, n == len(entry))
            if key > best_key:
                best, best_key = entry, key
        best_len = best_key[0]
        if best is None or best_len < min(self.min_shared_tokens, len(tokens)):
            return MatchResult(None, 0)
        return MatchResult(best, best_len)

    def touch(self, entry: CacheEntry) -> None:
        self._entries.move_to_end(entry.tokens)

    def insert(self, tokens: Sequence[int], seq_id: int) -> CacheEntry:
        """Add an entry (most recently used). The caller evicts first to stay within budget.

        A prefix already cached is refused: replacing its entry would orphan that entry's sequence.
        """
        entry = CacheEntry(tuple(tokens), seq_id)
        if entry.tokens in self._entries:
            raise ValueError(f"a prefix of {len(entry)} tokens is already cached in sequence {self._entries[entry.tokens].seq_id}")
        self._entries[entry.tokens] = entry
        return entry

    def remove(self, entry: CacheEntry) -> None:
        self._entries.pop(entry.tokens, None)

    def pick_victim(self) -> CacheEntry | None:
        """Least recently used entry that no request is using."""
        for entry in self._entries.values():
            if entry.pins == 0:
                return entry
        return None
