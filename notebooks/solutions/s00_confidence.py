"""Notebook 00's exercise: Jev's `confidence` of a choice answer, from its probabilities alone."""

from __future__ import annotations


def jev_confidence(probabilities: dict[str, float]) -> float:
    """(m - 1/n) / (1 - 1/n): m the top probability, n the number of options; 0 when uniform, 1 when certain."""
    n = len(probabilities)
    if n == 1:
        return 1.0
    top = max(probabilities.values())
    return (top - 1 / n) / (1 - 1 / n)


# With a fifth option the same top probability means more: 1/n falls, so (m - 1/n) / (1 - 1/n) rises for the same m;
# but the top option usually loses some mass to the new one, so the confidence can go either way.
