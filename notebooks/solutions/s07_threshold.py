"""Notebook 07's exercise: an abstention threshold by hand, on the in-sample decisions (the notebook's rule fits it
out of fold and certifies it; this is the idea without the guarantee)."""

from __future__ import annotations


def pick_threshold(top: list[float], correct: list[bool], max_error: float) -> float | None:
    """The lowest top-probability threshold whose answered decisions (top >= threshold) err at most `max_error`;
    None when no threshold answers anything within it."""
    for threshold in sorted(set(top)):
        answered = [ok for p, ok in zip(top, correct, strict=True) if p >= threshold]
        if answered and 1 - sum(answered) / len(answered) <= max_error:
            return threshold
    return None
