"""An answer's probabilities and its argmax: the one reader of answers, whichever shape a response comes in.

Served JSON carries a choice's or a score's option probabilities as `probabilities` and a noul's as the
extension `x_probabilities` (the Jev wire keeps only P(true) standard); a `decision.responses` answer has
`.probabilities` on every type. `read_probabilities` reads any of them, `top_option` is the argmax of a
distribution (the first of equals, in the order given), `read_argmax` the two at once, and
`read_response` a whole response as JSON, whether it is a dict already or a `DecisionResponse`.
Every reader of responses in the package goes through here: the benchmarks, the notebooks' tables and
charts, the served prediction sets. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["read_argmax", "read_probabilities", "read_response", "top_option"]

PROBABILITY_KEYS = ("probabilities", "x_probabilities")  # served JSON: choice and score, then a noul's extension


def read_response(response: Any) -> dict[str, Any]:
    """A response as a JSON-like dict, whether it is one already or a pydantic `DecisionResponse`."""
    if isinstance(response, Mapping):
        return dict(response)
    return response.model_dump(mode="json")


def read_probabilities(answer: Any) -> dict[str, float]:
    """P(option) of one answer, in its options' order: served JSON (a noul's ride as `x_probabilities`) or an answer object.

    An answer that carries none is refused by name: a served answer always has them, so a missing one is
    a malformed response, never an empty distribution to draw or compare.
    """
    if not isinstance(answer, Mapping):
        return dict(answer.probabilities)
    for key in PROBABILITY_KEYS:
        if key in answer:
            return dict(answer[key])
    raise ValueError(f"an answer without probabilities (neither {' nor '.join(PROBABILITY_KEYS)}): keys {sorted(answer)}")


def top_option(probs: Mapping[str, float]) -> str | None:
    """The most probable option (the first of equals, in the order given); None with no options."""
    return max(probs, key=probs.__getitem__) if probs else None


def read_argmax(answer: Any) -> str:
    """The option an answer puts the most probability on (the first of equals), from `read_probabilities`."""
    best = top_option(read_probabilities(answer))
    if best is None:
        raise ValueError("an answer with no options has no argmax")
    return best
