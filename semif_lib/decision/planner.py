"""Admission: which requests decode together (rounds) and which branches share a batch (waves).

Pure functions over an explicit `Capacity`, so admission is tested without a model. Every
request that `preparer` accepted fits alone, so every request gets a round; a round never
asks for more KV cells or sequences than the context has, so no decode is attempted that
could not find room.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Hashable, Sequence

from .tokentree import Wave, plan_tree_waves

if TYPE_CHECKING:
    from .prefix_cache import Partition

__all__ = ["Capacity", "Demand", "Round", "plan_rounds", "plan_waves"]


@dataclass(frozen=True)
class Capacity:
    """What one context offers: KV cells, sequences, rows per decode, and branch tokens a round may share."""

    n_ctx: int
    n_seq_max: int
    n_batch: int
    round_tokens: int  # branch tokens that requests may share one round with (default: one micro-batch)

    @classmethod
    def of(cls, n_ctx: int, n_seq_max: int, n_batch: int, round_tokens: int, n_ubatch: int) -> "Capacity":
        """`round_tokens` 0 means one micro-batch (`n_ubatch`, at most `n_batch`)."""
        return cls(n_ctx, n_seq_max, n_batch, round_tokens or min(n_ubatch, n_batch))


@dataclass(frozen=True)
class Demand:
    """What admission needs to know of one prepared request."""

    prefix: tuple[int, ...]
    longest_branch: int  # tokens of its longest branch
    branch_tokens: int  # tokens of all its branches
    partition: Partition = None  # its prefix-cache partition: the same tokens in two partitions are two prefixes

    @property
    def key(self) -> tuple[Partition, tuple[int, ...]]:
        return (self.partition, self.prefix)


@dataclass
class Round:
    """Requests (indices into the planned list) whose branches decode together."""

    members: list[int] = field(default_factory=list)


def plan_rounds(demands: Sequence[Demand], capacity: Capacity) -> list[Round]:
    """Group requests into rounds that fit the KV cache together, in arrival order.

    A round pins one sequence per distinct prefix and needs, at once, the cells of those
    prefixes plus the longest branch (shorter waves follow as cells free up). Requests join a
    round only while their branch tokens together fit `capacity.round_tokens`: beyond that,
    merging saves no pass over the weights, while each round-mate's prefix widens every
    decode's attention, and a round answers only when all of it is done.
    """
    rounds: list[Round] = []
    cells, longest, prefixes, tokens = 0, 0, set(), 0
    seq_room = capacity.n_seq_max - 2  # the scratch sequence, and at least one branch
    for k, demand in enumerate(demands):
        add = 0 if demand.key in prefixes else len(demand.prefix)
        fits = (cells + add + max(longest, demand.longest_branch) <= capacity.n_ctx
                and len(prefixes | {demand.key}) <= seq_room
                and tokens + demand.branch_tokens <= capacity.round_tokens)
        if not (rounds and fits):
            rounds.append(Round())
            cells, longest, prefixes, tokens = 0, 0, set(), 0
            add = len(demand.prefix)
        rounds[-1].members.append(k)
        cells, longest, tokens = cells + add, max(longest, demand.longest_branch), tokens + demand.branch_tokens
        prefixes.add(demand.key)
    return rounds


def plan_waves(paths: Sequence[tuple[Hashable, Sequence[int]]], free_cells: int, free_seqs: int, capacity: Capacity) -> list[Wave]:
    """Group branches (prefix sequence, suffix tokens) into waves that fit one batch, the free KV cells and sequences.

    Tokens that branches share after the same prefix count once (see `tokentree`).
    """
    return plan_tree_waves(paths, min(capacity.n_batch, free_cells), free_seqs)
