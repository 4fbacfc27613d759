"""A fault at each decode of one request, in turn, on a real engine: the walk both the batch-invariant and the
preamble tests take to hold the books and the next answer."""
from __future__ import annotations

from typing import Any

import pytest


def walk_decode_faults(settings: Any, body: dict, *, cold: bool, model_path: Any = None) -> tuple[Any, list[tuple[int, Any]]]:
    """A fault-free engine's answer to `body` (cold: its prefix not cached; else cached), then, on an engine failing the
    chosen decode, each of that answer's decodes failed in turn: the error leaves, the books balance, and the same request
    is answered again. Returns the reference and each (decode number, answer after its fault)."""
    from semif_lib.decision.engine import DecisionEngine
    from semif_lib.errors import SemifError

    with DecisionEngine(settings, model_path=model_path) as clean:
        if not cold:
            clean.ask(body)
        before = clean.decode_calls
        reference = clean.ask(body)
        decodes = clean.decode_calls - before
    assert decodes > 0
    failing: set[int] = set()
    answers = []
    with DecisionEngine(settings, model_path=model_path, fail_decode=lambda n: n in failing) as engine:
        if not cold:
            engine.ask(body)
        for call in range(1, decodes + 1):
            if cold:
                engine.clear_cache()
            failing.clear()
            failing.add(engine.decode_calls + call)
            with pytest.raises(SemifError):
                engine.ask(body)
            engine.check_invariants()
            failing.clear()
            answers.append((call, engine.ask(body)))
            engine.check_invariants()
    return reference, answers
