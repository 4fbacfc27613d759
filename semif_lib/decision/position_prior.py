"""Order debiasing at the price of one request: the model's preference for each displayed position, estimated once.

A model reading options labelled A, B, C ... favours some positions whatever they hold. PriDe (Zheng et al., "Large
Language Models Are Not Robust Multiple Choice Selectors", ICLR 2024) models an observed answer as
P(option at j) ∝ prior(j) · P_content(option), so over all n cyclic orders of one question each option visits each position
once and log prior(j) = mean over orders of log P(position j) + a constant. Averaged over a calibration sample per option
count, that prior is stored in the model's calibration file (`position_priors`) and divided out of every choice question's
slot logits at serving time (`x_debias: "prior"`): seen questions or not, no extra branch.

Only the estimate lives here (standard numerics, no engine); reading the file and applying it is `calibrator`'s.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import numpy as np

__all__ = ["estimate_position_prior", "estimate_position_priors", "position_log_prior"]

_EPS = 1e-12


def position_log_prior(orders: Sequence[Sequence[float]]) -> np.ndarray:
    """One question's log prior over positions, centred: `orders[k][j]` is the probability read at displayed position j
    when the options were shifted k places (all n shifts, so each option visits each position once)."""
    p = np.asarray(orders, dtype=np.float64)
    n = p.shape[1]
    if p.ndim != 2 or p.shape[0] != n:
        raise ValueError(f"need the question read in all {n} cyclic orders of its {n} options, got {p.shape[0]}")
    log_prior = np.log(np.clip(p, _EPS, None)).mean(axis=0)
    return log_prior - log_prior.mean()


def estimate_position_prior(questions: Iterable[Sequence[Sequence[float]]]) -> list[float]:
    """The prior over positions for one option count: the questions' centred log priors averaged, as probabilities."""
    logs = [position_log_prior(q) for q in questions]
    if not logs:
        raise ValueError("no question to estimate a position prior from")
    mean = np.mean(logs, axis=0)
    prior = np.exp(mean - mean.max())
    return [float(x) for x in prior / prior.sum()]


def estimate_position_priors(by_count: Mapping[int, Sequence[Sequence[Sequence[float]]]]) -> dict[int, list[float]]:
    """`estimate_position_prior` per option count (the file's `position_priors`, keyed by count)."""
    return {n: estimate_position_prior(questions) for n, questions in sorted(by_count.items()) if questions}
