"""Notebook 99's exercise: what a room of attendees who all skip cleanup pays over a weekend, at list price."""

from __future__ import annotations

from semif_lib.notebook import estimate_run_cost


def forgotten_cost(attendees: int = 30, hours: float = 60.0) -> float:
    """Both endpoints of every attendee left up for `hours` (a Friday-evening workshop found on Monday morning)."""
    per_day = estimate_run_cost()["forgotten_day_usd"]
    return round(attendees * per_day * hours / 24, 2)
