"""Notebook 05's exercise: predict, from the prefix P and the questions' suffixes S, how many tokens each way of
asking evaluates, before the server says so."""

from __future__ import annotations


def predict_tokens(prefix: int, suffixes: list[int], way: str, cached: int = 0) -> int:
    """fresh: Q x P + sum(S) (every prompt whole); fork: P + sum(S) (the prefix once); a fork on a cached prefix: the
    prefix tokens found in the cache are not evaluated again."""
    if way == "fresh":
        return len(suffixes) * prefix + sum(suffixes)
    if way == "fork":
        return prefix + sum(suffixes) - cached
    raise ValueError(f"way {way!r}: fresh or fork")
