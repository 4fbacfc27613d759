import pytest

from semif_lib.decision.prefix_cache import PrefixCache, count_common_prefix


def test_common_prefix():
    assert count_common_prefix([1, 2, 3], [1, 2, 4]) == 2
    assert count_common_prefix([1, 2], [1, 2, 3]) == 2
    assert count_common_prefix([], [1]) == 0


def test_match_exact_partial_and_lru():
    cache = PrefixCache(budget_tokens=100, min_shared_tokens=2)
    a = cache.insert(list(range(40)), seq_id=1)
    b = cache.insert(list(range(30)) + [999] * 10, seq_id=2)
    exact = cache.match(list(range(40)))
    assert exact.exact and exact.entry is a and exact.length == 40
    partial = cache.match(list(range(35)) + [7])
    assert partial.entry is a and partial.length == 35 and not partial.exact
    assert cache.match([5, 6, 7]).entry is None
    assert cache.pick_victim() is a  # least recently used
    cache.touch(a)
    assert cache.pick_victim() is b
    cache.pin(b)
    assert cache.pick_victim() is a  # pinned entries are never evicted
    assert cache.used_tokens == 80 and cache.budget_tokens - cache.used_tokens == 20


def test_nested_prefixes_prefer_the_exact_entry_and_never_overwrite_one():
    """P+X cached before P: asking for P is an exact hit on P, not a copy out of P+X (which leaked a sequence per request)."""
    cache = PrefixCache(budget_tokens=1000, min_shared_tokens=2)
    longer = cache.insert(list(range(30)) + [7, 8, 9], seq_id=1)
    exact = cache.insert(list(range(30)), seq_id=2)
    match = cache.match(list(range(30)))
    assert match.entry is exact and match.exact and longer is not exact
    with pytest.raises(ValueError, match="already cached"):
        cache.insert(list(range(30)), seq_id=3)
    cache.mark_stale(exact)  # a failed request may have left cells on it: never matched again
    assert cache.match(list(range(30))).entry is longer


def test_spilled_entries_still_match_but_hold_no_cells():
    cache = PrefixCache(budget_tokens=100, min_shared_tokens=2)
    spilled = cache.insert(list(range(40)), seq_id=None)
    cache.unplace(spilled, b"kv rows")
    resident = cache.insert(list(range(50, 80)), seq_id=3)
    assert cache.match(list(range(40))).entry is spilled and cache.match(list(range(40))).exact
    assert cache.resident() == [resident] and cache.resident_tokens == 30 and cache.used_tokens == 70
    assert cache.pick_victim() is spilled  # LRU over both: evicting a spilled entry frees host memory
    assert cache.pick_victim(resident_only=True) is resident  # freeing cells can only take a resident one
    cache.pin(resident)
    assert cache.pick_victim(resident_only=True) is None


def test_entries_are_written_through_the_cache_and_refuse_impossible_states():
    cache = PrefixCache(budget_tokens=100, min_shared_tokens=2)
    entry = cache.insert(list(range(20)), seq_id=4)
    cache.pin(entry)
    cache.unpin(entry)
    with pytest.raises(ValueError, match="not pinned"):
        cache.unpin(entry)
    assert cache.unplace(entry, b"rows") == 4 and not entry.resident and entry.snapshot == b"rows"
    with pytest.raises(ValueError, match="cannot be pinned"):
        cache.pin(entry)  # a spilled prefix must come back first
    cache.place(entry, 5)
    assert cache.drop(entry) == 5 and len(cache) == 0 and entry.snapshot is None
