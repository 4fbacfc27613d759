"""The token tree that merges branches' shared leading tokens (no model needed)."""

from semif_lib.decision.tokentree import TokenTree, plan_tree_waves


def plan_indices(*args, **kwargs):
    return [wave.indices for wave in plan_tree_waves(*args, **kwargs)]


def test_shared_leading_tokens_get_one_row_owned_by_every_branch():
    tree = TokenTree()
    a = tree.add_path("p", [1, 2, 3, 4], owner=0)
    b = tree.add_path("p", [1, 2, 5], owner=1)
    c = tree.add_path("q", [1, 2], owner=2)  # another prefix: nothing shared
    assert a[:2] == b[:2] and a[2] != b[2]
    assert set(c).isdisjoint(a)
    assert len(tree) == 4 + 1 + 2
    assert tree.owners[a[0]] == [0, 1] and tree.owners[a[3]] == [0] and tree.owners[c[0]] == [2]
    assert [tree.depth[r] for r in b] == [0, 1, 2]
    assert [tree.root[r] for r in c] == ["q", "q"]


def test_rows_follow_their_parents_so_micro_batches_stay_causal():
    tree = TokenTree()
    paths = [[7, 1, 2], [7, 1, 3, 4], [8], [7, 9]]
    rows = [tree.add_path(0, p, i) for i, p in enumerate(paths)]
    for path_rows in rows:
        assert path_rows == sorted(path_rows)
    assert tree.count_new_rows(0, [7, 1, 3, 4, 5]) == 1
    assert tree.count_new_rows(1, [7]) == 1


def test_a_path_inside_another_adds_no_rows():
    tree = TokenTree()
    long = tree.add_path(0, [1, 2, 3], owner=0)
    short = tree.add_path(0, [1, 2], owner=1)
    assert short == long[:2] and len(tree) == 3


def test_waves_count_shared_tokens_once():
    distinct = [(0, list(range(100 * i, 100 * i + 30))) for i in range(10)]
    assert [len(w) for w in plan_indices(distinct, free_cells=100, free_seqs=64)] == [3, 3, 3, 1]
    # ten options repeating a 28-token suffix: 28 + 10 * 2 rows fit in one wave of 100 cells
    options = [(0, list(range(28)) + [1000 + i, 2000 + i]) for i in range(10)]
    assert [len(w) for w in plan_indices(options, free_cells=100, free_seqs=64)] == [10]
    (wave,) = plan_tree_waves(options, free_cells=100, free_seqs=64)
    assert len(wave.tree) == 28 + 10 * 2 and all(rows[:28] == wave.rows[0][:28] for rows in wave.rows)
    assert [len(w) for w in plan_indices(options, free_cells=100, free_seqs=4)] == [4, 4, 2]


def test_a_path_longer_than_the_free_cells_still_gets_a_wave():
    waves = plan_indices([(0, list(range(50))), (0, list(range(100, 300))), (0, [5])], free_cells=100, free_seqs=8)
    assert sorted(i for w in waves for i in w) == [0, 1, 2]
    assert [1] in waves
