"""Admission without a model: rounds over an explicit Capacity, waves within a batch."""

from __future__ import annotations

from semif_lib.decision.planner import Capacity, Demand, plan_rounds, plan_waves


def demand(prefix_id: int, prefix_len: int, branches: list[int]) -> Demand:
    return Demand(tuple(range(prefix_id * 10_000, prefix_id * 10_000 + prefix_len)), max(branches), sum(branches))


def members(rounds) -> list[list[int]]:
    return [r.members for r in rounds]


def test_requests_share_a_round_while_prefixes_and_the_longest_branch_fit_the_context():
    cap = Capacity(n_ctx=1000, n_seq_max=64, n_batch=512, round_tokens=10_000)
    reqs = [demand(k, 300, [20, 30]) for k in range(4)]  # 3 prefixes + 30 = 930 fit, a 4th does not
    assert members(plan_rounds(reqs, cap)) == [[0, 1, 2], [3]]
    same = [demand(1, 300, [20, 30]) for _ in range(5)]  # one prefix counted once
    assert members(plan_rounds(same, cap)) == [[0, 1, 2, 3, 4]]


def test_a_round_keeps_a_sequence_free_for_branches():
    cap = Capacity(n_ctx=100_000, n_seq_max=4, n_batch=512, round_tokens=10_000)  # scratch + 2 prefixes + 1 branch
    assert members(plan_rounds([demand(k, 10, [5]) for k in range(5)], cap)) == [[0, 1], [2, 3], [4]]


def test_rounds_merge_only_while_their_branches_fit_one_micro_batch():
    cap = Capacity.of(n_ctx=100_000, n_seq_max=64, n_batch=2048, round_tokens=0, n_ubatch=512)
    assert cap.round_tokens == 512
    small = [demand(k, 50, [30] * 4) for k in range(4)]  # 120 each: four fit 512
    large = [demand(10 + k, 50, [30] * 20) for k in range(2)]  # 600 each: alone
    assert members(plan_rounds(small, cap)) == [[0, 1, 2, 3]]
    assert members(plan_rounds(large, cap)) == [[0], [1]]
    assert members(plan_rounds(small[:1] + large + small[1:], cap)) == [[0], [1], [2], [3, 4, 5]]


def test_every_request_gets_exactly_one_round_in_arrival_order():
    import random

    rng = random.Random(5)
    cap = Capacity(n_ctx=2000, n_seq_max=8, n_batch=512, round_tokens=400)
    reqs = [demand(rng.randint(0, 5), rng.randint(10, 900), [rng.randint(1, 60) for _ in range(rng.randint(1, 6))]) for _ in range(200)]
    flat = [k for r in plan_rounds(reqs, cap) for k in r.members]
    assert flat == list(range(200))


def test_waves_respect_cells_sequences_and_the_batch():
    cap = Capacity(n_ctx=100_000, n_seq_max=64, n_batch=512, round_tokens=512)
    paths = [(0, list(range(100 * i, 100 * i + 30))) for i in range(10)]
    assert [len(w.indices) for w in plan_waves(paths, free_cells=100, free_seqs=4, capacity=cap)] == [3, 3, 3, 1]
    assert [len(w.indices) for w in plan_waves(paths, free_cells=10_000, free_seqs=4, capacity=cap)] == [4, 4, 2]
    long_paths = [(0, list(range(10_000 * i, 10_000 * i + 257))) for i in range(4)]
    assert all(len(w.indices) == 1 for w in plan_waves(long_paths, free_cells=100_000, free_seqs=64, capacity=cap))
    shared = [(0, [1, 2, 3] + [i]) for i in range(100)]  # shared leading tokens count once: more per wave
    assert len(plan_waves(shared, free_cells=110, free_seqs=64, capacity=cap)[0].indices) == 64
