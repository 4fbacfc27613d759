"""Prediction sets with a coverage guarantee, and abstention: the rules, used alike when fitting and serving.

A prediction set is a prefix of an *inclusion order* over the options, cut where the cumulative
probability first reaches a threshold `q`. Choice and noul questions use adaptive prediction
sets (APS, Romano et al. 2020): options by descending probability. Score questions keep sets
contiguous: the interval grows from the argmax level towards the more probable neighbour, so a
set of levels is always a range. Either way the argmax is always in the set.

Split conformal calibration (Vovk et al. 2005; Angelopoulos & Bates 2021): on n labeled held-out
decisions, the nonconformity of a decision is the cumulative mass of its order up to and
including the true option; `q` is the ceil((n + 1)(1 - alpha)) / n empirical quantile of those
scores. If future decisions are exchangeable with the calibration ones (same workload, same
model and prompt), the set holds the true option with probability at least 1 - alpha, on
average over decisions: a marginal guarantee, not one per question, and nothing at all for a
different workload.

Abstention: answer only when the top probability reaches `min_confidence`, chosen by Learn then Test
(Angelopoulos, Bates, Candès, Jordan & Lei 2021): on a fixed grid of thresholds from the strictest to the
loosest, each is tested for "its answered error exceeds the target" with the exact binomial p-value of
the errors among the decisions it answers, and fixed-sequence testing goes on while each is rejected at
1 - `confidence`. The loosest rejected threshold is the rule: with probability at least `confidence` over
the fitting sample, its error on the decisions it answers is at most the target, for decisions
exchangeable with the fitting ones. With none rejected (too few decisions, or too many errors) the rule
abstains on everything, and says so (`guaranteed` False); `min_decisions` is how many answered decisions
without an error a guarantee needs at all.

This module is the one place both rules live: `measurement.quality.prediction_sets` fits them with the
functions below, and the calibrator applies them to served answers with the same functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = [
    "Abstention",
    "ConformalThreshold",
    "fit_abstention",
    "fit_threshold",
    "min_decisions_for",
    "inclusion_order",
    "nonconformity",
    "predict_set",
]

ORDINAL_KINDS = ("score",)  # kinds whose sets are contiguous level ranges
DEFAULT_CONFIDENCE = 0.9  # abstention's guarantee holds with this probability over the fitting sample
THRESHOLD_GRID = tuple(round(1.0 - i / 100, 2) for i in range(101))  # fixed before the data: 1.00, 0.99, ..., 0.00
_TOL = 1e-12


def inclusion_order(probs: Sequence[float] | np.ndarray, kind: str) -> list[int]:
    """The order in which options join a set: by probability, or (score) a range grown from the argmax."""
    p = np.asarray(probs, dtype=np.float64)
    if kind not in ORDINAL_KINDS:
        return [int(i) for i in np.argsort(-p, kind="stable")]
    lo = hi = int(np.argmax(p))
    order = [lo]
    while len(order) < len(p):
        left = p[lo - 1] if lo > 0 else -1.0
        right = p[hi + 1] if hi + 1 < len(p) else -1.0
        if right > left:  # ties go to the lower level, so the rule is deterministic
            hi += 1
            order.append(hi)
        else:
            lo -= 1
            order.append(lo)
    return order


def nonconformity(probs: Sequence[float] | np.ndarray, label: int, kind: str) -> float:
    """Cumulative probability of the inclusion order up to and including the true option."""
    p = np.asarray(probs, dtype=np.float64)
    total = 0.0
    for i in inclusion_order(p, kind):
        total = min(1.0, total + float(p[i]))  # the same running sum as predict_set's
        if i == label:
            return total
    raise ValueError(f"label {label} is not an option index (0..{len(p) - 1})")


def predict_set(probs: Sequence[float] | np.ndarray, kind: str, q: float) -> list[int]:
    """The prefix of the inclusion order up to where its mass reaches `q` (never empty: the argmax is first).

    Every option whose cumulative mass is at most `q` is in, so an option with nonconformity at
    most `q` always is (zero-probability options tied at the cut included); then the one that
    crosses `q`.
    """
    p = np.asarray(probs, dtype=np.float64)
    chosen: list[int] = []
    total = 0.0
    for i in inclusion_order(p, kind):
        after = min(1.0, total + float(p[i]))
        if chosen and total >= q - _TOL and after > q + _TOL:
            break
        chosen.append(i)
        total = after
    return sorted(chosen)


@dataclass(frozen=True)
class ConformalThreshold:
    """A fitted split-conformal threshold for one question type."""

    kind: str
    q: float
    target_coverage: float
    n: int

    def to_json(self) -> dict[str, float | int | str]:
        return {"q": self.q, "target_coverage": self.target_coverage, "n": self.n}


def fit_threshold(scores: Sequence[float], target_coverage: float, kind: str) -> ConformalThreshold:
    """The finite-sample split-conformal quantile of nonconformity `scores` for `target_coverage`.

    With too few scores for the target (ceil((n+1)(1-alpha)) > n) the threshold is 1.0: every
    option, which is the only set that keeps the promise.
    """
    if not 0.0 < target_coverage < 1.0:
        raise ValueError(f"target coverage must be between 0 and 1 (exclusive), got {target_coverage}")
    s = np.sort(np.asarray(scores, dtype=np.float64))
    n = len(s)
    rank = math.ceil((n + 1) * target_coverage)
    q = 1.0 if n == 0 or rank > n else float(s[rank - 1])
    return ConformalThreshold(kind=kind, q=q, target_coverage=float(target_coverage), n=n)


@dataclass(frozen=True)
class Abstention:
    """A fitted abstention rule for one question type: answer only at or above `min_confidence`."""

    kind: str
    min_confidence: float
    target_error: float
    answered_share: float
    answered_error: float
    n: int
    confidence: float = DEFAULT_CONFIDENCE
    guaranteed: bool = False  # a threshold was certified; False: it abstains on everything
    min_decisions: int = 0

    def to_json(self) -> dict[str, float | int | str | bool]:
        return {"min_confidence": self.min_confidence, "target_error": self.target_error,
                "answered_share": self.answered_share, "answered_error": self.answered_error, "n": self.n,
                "confidence": self.confidence, "guaranteed": self.guaranteed, "min_decisions": self.min_decisions}

    def abstains(self, probs: Sequence[float] | np.ndarray) -> bool:
        return float(np.max(probs)) < self.min_confidence


def binomial_tail(errors: int, n: int, rate: float) -> float:
    """P(Binomial(n, rate) <= errors): the p-value of "the error rate exceeds `rate`" after `errors` errors in `n`."""
    return min(1.0, math.fsum(math.comb(n, i) * rate ** i * (1.0 - rate) ** (n - i) for i in range(errors + 1)))


def min_decisions_for(target_error: float, confidence: float = DEFAULT_CONFIDENCE) -> int:
    """The fewest answered decisions, all right, that certify an error of at most `target_error` at `confidence`."""
    if target_error <= 0.0:
        return 0  # never: no finite sample certifies a zero error rate; 0 marks "impossible"
    return math.ceil(math.log(1.0 - confidence) / math.log(1.0 - target_error))


def fit_abstention(top_probs: Sequence[float], correct: Sequence[bool], target_error: float, kind: str,
                   confidence: float = DEFAULT_CONFIDENCE) -> Abstention:
    """Learn then Test over `THRESHOLD_GRID` (see the module docstring): the loosest threshold certified, in a fixed
    sequence from the strictest, to err at most `target_error` on what it answers, with probability `confidence`."""
    if not 0.0 <= target_error < 1.0:
        raise ValueError(f"target error must be in [0, 1), got {target_error}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    conf = np.asarray(top_probs, dtype=np.float64)
    ok = np.asarray(correct, dtype=bool)
    n, delta = len(conf), 1.0 - confidence
    chosen: tuple[float, float, float] | None = None  # (threshold, answered share, answered error)
    for t in THRESHOLD_GRID:
        answered = conf >= t
        n_answered = int(answered.sum())
        if n_answered == 0:
            continue  # nothing answered: nothing tested yet, the sequence goes on to looser thresholds
        errors = int(n_answered - ok[answered].sum())
        if binomial_tail(errors, n_answered, target_error) > delta:
            break
        chosen = (t, n_answered / n, errors / n_answered)
    need = min_decisions_for(target_error, confidence)
    if chosen is None:
        return Abstention(kind, 1.0 + 1e-9, float(target_error), 0.0, 0.0, n, confidence, False, need)
    t, share, error = chosen
    return Abstention(kind, float(t), float(target_error), float(share), float(error), n, confidence, True, need)
