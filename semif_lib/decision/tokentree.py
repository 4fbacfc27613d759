"""Branches laid out as a token tree: leading tokens that branches share are decoded once.

Every branch forks from a prefix, and a branch's KV cells are visible only to its own
sequence. A cell may belong to several sequences, though (that is how `seq_cp` shares a
prefix for free), so a token that several branches have at the same position after the
same prefix and the same earlier tokens can be decoded once, tagged with every one of
their sequence ids. The result is the same computation: each branch still attends to
exactly its own prompt.

What this saves: a sequence readout decodes one branch per option, all repeating the
question's whole suffix, which now decodes once; and questions that start with the same
words ("Does the customer ...") share those tokens. The tree holds no model state, so tests
use it without a model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable, Sequence

__all__ = ["TokenTree", "Wave", "plan_tree_waves"]


@dataclass
class _Node:
    row: int
    kids: dict[int, "_Node"] = field(default_factory=dict)


class TokenTree:
    """Batch rows for token paths, merged where they share a root and leading tokens.

    Rows come out in insertion order, so a token's row always follows its parent's, which
    keeps each branch causal when llama.cpp splits the batch into micro-batches.
    """

    def __init__(self) -> None:
        self.tokens: list[int] = []
        self.root: list[Hashable] = []  # the root each row hangs from
        self.depth: list[int] = []  # position after the root: 0 for a path's first token
        self.owners: list[list[int]] = []  # the branches (caller's ids) each row belongs to
        self._roots: dict[Hashable, _Node] = {}

    def __len__(self) -> int:
        return len(self.tokens)

    def count_new_rows(self, root: Hashable, tokens: Sequence[int]) -> int:
        """How many rows adding this path would create (its tokens not already in the tree)."""
        node = self._roots.get(root)
        shared = 0
        for tok in tokens:
            if node is None or tok not in node.kids:
                break
            node = node.kids[tok]
            shared += 1
        return len(tokens) - shared

    def add_path(self, root: Hashable, tokens: Sequence[int], owner: int) -> list[int]:
        """Add one branch's tokens under `root`; returns the row of each of its tokens."""
        node = self._roots.setdefault(root, _Node(-1))
        rows = []
        for depth, tok in enumerate(tokens):
            child = node.kids.get(tok)
            if child is None:
                child = node.kids[tok] = _Node(len(self.tokens))
                self.tokens.append(tok)
                self.root.append(root)
                self.depth.append(depth)
                self.owners.append([])
            self.owners[child.row].append(owner)
            rows.append(child.row)
            node = child
        return rows


@dataclass
class Wave:
    """Branches decoded in one batch: their indices, their merged tree, and each one's rows in it."""

    indices: list[int] = field(default_factory=list)
    tree: TokenTree = field(default_factory=TokenTree)
    rows: list[list[int]] = field(default_factory=list)  # rows[k]: the rows of branch indices[k]; its owner id is k


def plan_tree_waves(paths: Sequence[tuple[Hashable, Sequence[int]]], free_cells: int, free_seqs: int) -> list[Wave]:
    """Group paths into waves whose merged rows fit `free_cells` and whose branches fit `free_seqs`.

    A path's cost is the rows it adds to its wave's tree, so branches that share tokens pack
    more per wave. A path longer than `free_cells` still gets a wave of its own. The trees built
    for planning are the ones decoded.
    """
    waves = [Wave()]
    for i, (root, tokens) in enumerate(paths):
        wave = waves[-1]
        cost = wave.tree.count_new_rows(root, tokens)
        if wave.indices and (len(wave.tree) + cost > free_cells or len(wave.indices) >= free_seqs):
            wave = Wave()
            waves.append(wave)
        wave.rows.append(wave.tree.add_path(root, tokens, len(wave.indices)))
        wave.indices.append(i)
    return waves
