"""The execution modes: how a prepared request's branches are decoded over the prefix store.

Every mode leaves each branch holding the logits rows it reads (`Branch.rows`) and gives every
sequence it took back to the store, whatever fails; the engine reads the answers. Under `x_preamble`
every mode then decodes one lead-in token per branch that names one (`Branch.follow`), on the branch's
own sequence right after it, before the branch is cut back (`read_preambles`).

* ``fresh``: each question evaluates its whole prompt on the scratch sequence.
* ``serial``: each suffix decodes on the leased prefix's own sequence, then is cut back.
* ``parallel``: the prefix is forked into branch sequences and the suffixes decode in waves,
  laid out as a token tree (`tokentree`), several requests' branches together in a round.
* ``oneshot`` (benchmarks only): prefix and suffixes in one batch, prefix rows tagged with every
  branch's id; no cache. The hardware's lower bound.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Hashable, Sequence

from ..errors import EngineStateError, SemifError
from .backend import mark_rows
from .kvstore import Counters, KVStore, Lease
from .planner import Capacity, plan_waves
from .preparer import Branch, PreparedRequest
from .tokentree import TokenTree

if TYPE_CHECKING:
    from .backend import LlamaBackend

__all__ = ["PlacedBranch", "ModeRunner"]

PlacedBranch = tuple[Branch, int, int]  # a branch, the sequence of its prefix, and the prefix's length
Head = tuple[list[int], list[int], list[tuple[int, ...]]]  # rows decoded before a tree: tokens, positions, sequences


class ModeRunner:
    """Runs the modes for one engine; holds no state of its own beyond what it is given."""

    def __init__(self, backend: "LlamaBackend", store: KVStore, capacity: Capacity, counters: Counters) -> None:
        self.backend, self.store, self.capacity, self.counters = backend, store, capacity, counters

    def fresh(self, prep: PreparedRequest) -> None:
        seq, base = self.store.scratch_seq, len(prep.prefix)
        for branch in prep.branches:
            tokens = prep.prefix + branch.tokens
            self.store.require(len(tokens) + (branch.follow is not None))
            try:
                want = mark_rows(len(tokens), (base + off for off in branch.read_offsets))
                branch.rows = self.backend.decode(tokens, range(len(tokens)), [(seq,)] * len(tokens), want)
                self.read_preambles([(branch, seq, len(tokens))])
            finally:
                self.store.clear_scratch()
        self.counters.prefill_tokens += sum(len(prep.prefix) + len(j.tokens) for j in prep.branches)

    def serial(self, prep: PreparedRequest, lease: Lease) -> None:
        """Each suffix on the prefix's own sequence, cut back after it; a failure marks the prefix stale.

        A stale prefix may hold part of a suffix, so it is evicted as soon as it is released and
        no later request can match it.
        """
        seq, base = lease.seq, len(prep.prefix)
        try:
            checkpoint = self.store.checkpoint(lease)
            for branch in prep.branches:
                n = len(branch.tokens)
                self.store.require(n + (branch.follow is not None))
                try:
                    branch.rows = self.backend.decode(branch.tokens, range(base, base + n), [(seq,)] * n, mark_rows(n, branch.read_offsets))
                    self.read_preambles([(branch, seq, base + n)])
                finally:
                    self.store.rewind(lease, checkpoint)
        except BaseException:
            self.store.mark_stale(lease)
            raise
        self.counters.branch_tokens += sum(len(j.tokens) for j in prep.branches)

    def parallel(self, prep: PreparedRequest, lease: Lease) -> None:
        self.branches([(branch, lease.seq, len(prep.prefix)) for branch in prep.branches])

    def branches(self, items: Sequence[PlacedBranch]) -> None:
        """Fork each branch from its prefix sequence and decode all of them in as few batches as fit.

        Branches of several requests can share a batch, and tokens that branches share after the same
        prefix are decoded once (a token tree).
        """
        paths = [(src, branch.tokens) for branch, src, _ in items]
        followers = sum(branch.follow is not None for branch, _, _ in items)  # a lead-in cell each, after the tree
        longest = max(len(t) for _, t in paths) + (followers > 0)
        self.store.require(max(longest, min(sum(len(t) for _, t in paths) + followers, self.capacity.n_batch)), required=longest)
        if self.store.branch_room < 1:
            raise EngineStateError(f"no KV sequence is free for a branch (SEMIF_N_SEQ_MAX={self.capacity.n_seq_max})")
        base_of = {src: base for _, src, base in items}
        for wave in plan_waves(paths, self.store.free_cells - followers, self.store.branch_room, self.capacity):
            forks: list[int] = []
            try:
                for idx in wave.indices:
                    forks.append(self.store.fork(items[idx][1]))
                placed = [items[i] for i in wave.indices]
                self._decode_tree(wave.tree, [branch for branch, _, _ in placed], wave.rows, base_of, forks)
                self.read_preambles([(branch, fork, base + len(branch.tokens))
                                     for (branch, _, base), fork in zip(placed, forks, strict=True)])
            finally:
                for b in forks:
                    self.store.give_branch(b)

    def oneshot(self, prep: PreparedRequest) -> None:
        """Prefix rows tagged with every branch id, then the suffixes' token tree: one batch, no cache."""
        n = len(prep.branches)
        if n > self.store.free_seqs:
            raise SemifError(f"oneshot needs {n} free sequences")
        forks: list[int] = []
        try:
            for _ in range(n):
                forks.append(self.store.take_branch(vacate=False))
            base = len(prep.prefix)
            tree = TokenTree()
            branch_rows = [tree.add_path(0, branch.tokens, owner) for owner, branch in enumerate(prep.branches)]
            self.store.require(base + len(tree))
            head = (list(prep.prefix), list(range(base)), [tuple(forks)] * base)
            self._decode_tree(tree, prep.branches, branch_rows, {0: base}, forks, head)
            self.read_preambles([(branch, fork, base + len(branch.tokens)) for branch, fork in zip(prep.branches, forks, strict=True)])
        finally:
            for b in forks:
                self.store.give_branch(b)

    def read_preambles(self, placed: Sequence[tuple[Branch, int, int]]) -> None:
        """Each (branch, its sequence, the position after it) whose `follow` names a lead-in token: that token decoded
        there, all in one batch, and the row after it appended to the branch's rows (`readout.read_marginal`)."""
        todo = [(branch, seq, pos, lead) for branch, seq, pos in placed
                if branch.follow is not None and (lead := branch.follow(branch.rows[0])) is not None]
        if not todo:
            return
        self.store.require(len(todo))
        rows = self.backend.decode([lead[0] for *_, lead in todo], [pos for _, _, pos, _ in todo], [(seq,) for _, seq, _, _ in todo],
                                   [True] * len(todo))
        for (branch, _, _, lead), row in zip(todo, rows, strict=True):
            branch.rows.append(row)
            branch.preamble = lead
        self.counters.branch_tokens += len(todo)

    def _decode_tree(self, tree: TokenTree, branches: Sequence[Branch], branch_rows: Sequence[list[int]], base_of: dict[Hashable, int],
                     forks: Sequence[int], head: Head | None = None) -> None:
        """Decode a token tree (after optional `head` rows) and hand each branch the logits rows it reads.

        `base_of[root]` is the first position after a root's prefix; `forks[owner]` is each branch's sequence.
        """
        tokens, pos, seqs = head if head is not None else ([], [], [])
        offset = len(tokens)
        tokens = tokens + tree.tokens
        pos = pos + [base_of[root] + d for root, d in zip(tree.root, tree.depth, strict=True)]
        seqs = seqs + [tuple(forks[o] for o in owners) for owners in tree.owners]
        read = [offset + rows[off] for branch, rows in zip(branches, branch_rows, strict=True) for off in branch.read_offsets]
        want = mark_rows(len(tokens), read)
        logits = dict(zip([r for r, w in enumerate(want) if w], self.backend.decode(tokens, pos, seqs, want), strict=True))
        for branch, rows in zip(branches, branch_rows, strict=True):
            branch.rows = [logits[offset + rows[off]] for off in branch.read_offsets]
        self.counters.branch_tokens += len(tree)
