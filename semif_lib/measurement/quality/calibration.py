"""Fitting calibration: per-question-type temperature scaling, out-of-fold checks, and the file (its metrics: `metrics`).

The measurement wing's half of calibration; applying a fitted file to answers is the decision
wing's (`decision.calibrator`, which reads the format this module writes). Option probabilities
are a softmax over the listed options: conditional on the list, not the chance of being right.
Before gating an action on one, fit a temperature on labeled decisions from your own workload
and check it out of fold. A temperature divides the logits, so it never changes the argmax: it
only makes the confidences honest.

Pure numpy (no scipy): NLL of a softmax is convex in the inverse temperature, so a bounded
golden-section search finds the minimum exactly enough in ~60 evaluations.

A fitted temperature can be shrunk towards 1 by the amount of data behind it (`SHRINK_DECISIONS`
pseudo-decisions at T = 1). It is 0: on every committed report shrinking by 5, 10 or 20 made the
out-of-fold ECE worse (models near chance need their flattening), and `verdicts` already keeps a
temperature only where it helps out of fold. Which fitted values enter the calibration file, and
the file itself, are `verdicts`'.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ...decision.calibrator import KINDS, apply_temperature, remove_prior
from ...decision.readout import softmax

__all__ = [
    "Decision",
    "TemperatureFit",
    "fit_temperature",
    "fit_temperature_fits",
    "predict_out_of_fold",
    "prior_remover",
    "save_calibration",
    "shrink_temperature",
    "split_groups",
]

TEMPERATURE_BOUNDS = (0.05, 20.0)  # the optimiser's search range; a fit at either end is reported, not trusted
SHRINK_DECISIONS = 0  # pseudo-decisions at T = 1: log T is shrunk by n / (n + SHRINK_DECISIONS); 0 = no shrinking


@dataclass
class Decision:
    """One labeled answer: the raw option logits the engine read and the index of the right option."""

    id: str
    group_id: str
    task: str
    qid: str
    kind: str
    keys: list[str]
    label: int
    logits: np.ndarray
    option_mass: float = 1.0
    question_hash: str = ""

    @property
    def probabilities(self) -> np.ndarray:
        return softmax(self.logits)

    def to_json(self) -> dict[str, Any]:
        """The row a report stores, enough to refit or re-plot without the model."""
        return {**self.__dict__, "logits": [round(float(x), 5) for x in self.logits], "option_mass": round(self.option_mass, 6)}

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> "Decision":
        return cls(**{**row, "logits": np.asarray(row["logits"], dtype=np.float64)})


# ---------------------------------------------------------------- temperature
def _mean_nll(logits: Sequence[np.ndarray], labels: Sequence[int], inverse_t: float) -> float:
    total = 0.0
    for z, y in zip(logits, labels, strict=True):
        s = inverse_t * np.asarray(z, dtype=np.float64)
        top = s.max()
        total += top + math.log(float(np.exp(s - top).sum())) - s[y]
    return total / max(1, len(labels))


def fit_temperature(
    logits: Sequence[Sequence[float] | np.ndarray],
    labels: Sequence[int],
    bounds: tuple[float, float] = TEMPERATURE_BOUNDS,
    tol: float = 1e-5,
) -> float:
    """The temperature minimising mean NLL of `labels`, within `bounds`.

    NLL(beta) = -beta*z_y + logsumexp(beta*z) is convex in beta = 1/T, so golden-section
    search over beta is exact up to `tol`. Rows may have different option counts.
    """
    if not len(labels):
        return 1.0
    arrays = [np.asarray(z, dtype=np.float64) for z in logits]
    lo, hi = 1.0 / bounds[1], 1.0 / bounds[0]
    ratio = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = _mean_nll(arrays, labels, c), _mean_nll(arrays, labels, d)
    while b - a > tol * max(1.0, abs(a)):
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - ratio * (b - a)
            fc = _mean_nll(arrays, labels, c)
        else:
            a, c, fc = c, d, fd
            d = a + ratio * (b - a)
            fd = _mean_nll(arrays, labels, d)
    return float(1.0 / ((a + b) / 2))


def shrink_temperature(temperature: float, n: int) -> float:
    """Pull a fitted temperature towards 1 in log space by the weight n / (n + SHRINK_DECISIONS): few decisions, small move."""
    return float(math.exp(math.log(temperature) * n / (n + SHRINK_DECISIONS)))


@dataclass(frozen=True)
class TemperatureFit:
    """One type's fit: the optimiser's temperature, the decisions behind it, and the shrunk value that is applied."""

    kind: str
    n: int
    fitted: float
    temperature: float

    @property
    def at_bound(self) -> bool:
        """Whether the optimiser stopped at an end of TEMPERATURE_BOUNDS (the data asked for more than it may give)."""
        low, high = TEMPERATURE_BOUNDS
        return self.fitted >= 0.99 * high or self.fitted <= 1.01 * low

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "fitted": round(self.fitted, 5), "temperature": round(self.temperature, 5), "at_bound": self.at_bound}


def fit_temperature_fits(decisions: Sequence[Decision], min_count: int = 2) -> dict[str, TemperatureFit]:
    """One shrunk temperature fit per question type; types with fewer than `min_count` decisions get none."""
    out: dict[str, TemperatureFit] = {}
    for kind in KINDS:
        rows = [d for d in decisions if d.kind == kind]
        if len(rows) >= min_count:
            fitted = fit_temperature([d.logits for d in rows], [d.label for d in rows])
            out[kind] = TemperatureFit(kind, len(rows), fitted, shrink_temperature(fitted, len(rows)))
    return out


def prior_remover(priors: dict[str, list[float]] | None) -> Callable[[Decision], np.ndarray] | None:
    """The transform that divides each decision's content-free prior out of its logits (`None` without priors)."""
    if priors is None:
        return None

    def remove(d: Decision) -> np.ndarray:
        return remove_prior(d.logits, priors[d.question_hash])

    return remove


# -------------------------------------------------------------- out of fold
def split_groups(group_ids: Sequence[str], folds: int = 5, seed: int = 0) -> list[tuple[list[int], list[int]]]:
    """Grouped k-fold: every state's rows land in exactly one test fold, never in train and test at once.

    Groups are shuffled with `seed`, then placed largest first into the fold with the fewest
    rows, so folds stay balanced when one long state carries many questions.
    """
    groups: dict[str, list[int]] = {}
    for i, g in enumerate(group_ids):
        groups.setdefault(g, []).append(i)
    keys = list(groups)
    k = max(2, min(folds, len(keys)))
    if len(keys) < 2:
        raise ValueError(f"need at least 2 distinct groups for a grouped split, got {len(keys)}")
    rng = np.random.default_rng(seed)
    order = [keys[i] for i in rng.permutation(len(keys))]
    order.sort(key=lambda g: -len(groups[g]))  # stable: shuffled order breaks ties
    members: list[list[int]] = [[] for _ in range(k)]
    for g in order:
        target = min(range(k), key=lambda f: len(members[f]))
        members[target].extend(groups[g])
    all_rows = set(range(len(group_ids)))
    return [(sorted(all_rows - set(test)), sorted(test)) for test in members]


def predict_out_of_fold(
    decisions: Sequence[Decision], folds: int = 5, seed: int = 0, transform: Callable[[Decision], np.ndarray] | None = None
) -> tuple[list[np.ndarray], list[dict[str, float]]]:
    """Calibrated probabilities for every decision from temperatures fitted without its state.

    `transform` maps a decision to the logits to calibrate (default: its raw logits; the
    evaluation passes debiased logits). Returns the probabilities and each fold's fits.
    """
    base = [transform(d) if transform else d.logits for d in decisions]
    out: list[np.ndarray | None] = [None] * len(decisions)
    fold_fits: list[dict[str, TemperatureFit]] = []
    for train, test in split_groups([d.group_id for d in decisions], folds, seed):
        fits = fit_temperature_fits([Decision(**{**decisions[i].__dict__, "logits": base[i]}) for i in train])
        fold_fits.append(fits)
        for i in test:
            fit = fits.get(decisions[i].kind)
            out[i] = apply_temperature(base[i], fit.temperature if fit else 1.0)
    return [p for p in out if p is not None], fold_fits


# ------------------------------------------------------------ the file itself
def save_calibration(document: dict[str, Any], path: Path | str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    return path


