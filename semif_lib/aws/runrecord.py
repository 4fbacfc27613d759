"""The AWS wing's door to the run registry (`semif_lib.registry`): the run's record, opened with its region.

The wing's modules record what they create into the same `WorkshopState` as every target; opened
from here, the record also holds the region the wing works in (once, on first use), so that
`workshop.cleanup()` later deletes in that region. (Named for the record, not `state`: on the
decision wire `state` is a request's context.)
"""

from __future__ import annotations

from ..registry import WorkshopState
from ..registry import load_state as load_registry
from ..settings import Settings
from .clients import get_region

__all__ = ["load_state", "settings_and_state"]


def load_state(settings: Settings) -> WorkshopState:
    """This run's state, with the region AWS resources live in recorded."""
    return load_registry(settings, region=lambda: get_region(settings))


def settings_and_state(settings: Settings, state: WorkshopState | None) -> tuple[Settings, WorkshopState]:
    """The settings a step of the AWS wing was handed (the top floor read them) and the state it was given, else this run's."""
    return settings, state or load_state(settings)
