"""Argmax agreement and max |Δp| between two sets of answers: the one rule every comparison uses.

`semif bench modes` compares each path with fresh, `semif bench peer` compares llama-server's
renormalised log-probs (and the decision path's repeat) with the decision path's cold pass, and
the notebooks compare two responses question by question. Answers are
`{question id: {option: P(option)}}` (`answers.read_probabilities` reads them off a response); an option
the other side lacks counts as probability 0, and a side with no options at all is refused, never
counted as agreeing. Standard library only.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from .answers import top_option

__all__ = ["Agreement", "QuestionComparison", "compare_question"]

Probabilities = Mapping[str, float]


@dataclass(frozen=True)
class QuestionComparison:
    """One question read twice: each side's argmax and the largest probability difference over the reference's options."""

    reference: str
    other: str
    max_abs_dp: float

    @property
    def same_argmax(self) -> bool:
        return self.reference == self.other


def compare_question(reference: Probabilities, other: Probabilities) -> QuestionComparison:
    """Both argmaxes and max |Δp| of one question (an option missing on the other side counts as 0).

    A side with no options has no argmax to agree with: it is refused (ValueError), where two empty
    sides once compared as agreeing (None == None) with a max |Δp| of NaN.
    """
    ours, theirs = top_option(reference), top_option(other)
    if ours is None or theirs is None:
        raise ValueError(f"nothing to compare: the {'reference' if ours is None else 'other'} side has no options")
    return QuestionComparison(ours, theirs, max(abs(p - other.get(option, 0.0)) for option, p in reference.items()))


@dataclass
class Agreement:
    """Argmax agreement and max |Δp| of one side against a reference, accumulated over states."""

    compared: int = 0
    agree: int = 0
    max_dp: float = 0.0

    @property
    def flips(self) -> int:
        """Questions whose argmax differs from the reference's."""
        return self.compared - self.agree

    @property
    def rate(self) -> float | None:
        """The share of compared questions with the same argmax (None when none was compared)."""
        return self.agree / self.compared if self.compared else None

    def add(self, reference: Mapping[str, Probabilities], other: Mapping[str, Probabilities], skip: Collection[str] = ()) -> None:
        """Compare every question of `reference` that `other` answered, except those in `skip`."""
        for qid, ref in reference.items():
            if qid not in other or qid in skip:
                continue
            result = compare_question(ref, other[qid])
            self.compared += 1
            self.agree += result.same_argmax
            self.max_dp = max(self.max_dp, result.max_abs_dp)
