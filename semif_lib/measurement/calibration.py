"""Fitting calibration: per-question-type temperature scaling, out-of-fold checks, metrics, and the file.

The measurement wing's half of calibration; applying a fitted file to answers is the decision
wing's (`decision.calibrator`, which reads the format this module writes). Option probabilities
are a softmax over the listed options: conditional on the list, not the chance of being right.
Before gating an action on one, fit a temperature on labeled decisions from your own workload
and check it out of fold. A temperature divides the logits, so it never changes the argmax: it
only makes the confidences honest.

Pure numpy (no scipy): NLL of a softmax is convex in the inverse temperature, so a bounded
golden-section search finds the minimum exactly enough in ~60 evaluations.

The calibration file is keyed by the model file's sha256 and `prompt.PROMPT_VERSION`: a file
fitted here is refused by the engine for any other model or prompt.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ..decision.calibrator import (
    CALIBRATION_FORMAT,
    KINDS,
    apply_temperature,
    remove_prior,
)
from ..decision.prompt import PROMPT_VERSION
from ..decision.readout import softmax

__all__ = [
    "Decision",
    "bootstrap_metrics",
    "build_calibration",
    "compute_balanced_accuracy",
    "compute_brier",
    "compute_ece",
    "compute_metrics",
    "compute_nll",
    "fit_temperature",
    "fit_temperatures",
    "predict_out_of_fold",
    "prior_remover",
    "save_calibration",
    "split_groups",
]

TEMPERATURE_BOUNDS = (0.05, 20.0)
CONFIDENT = 0.9
N_BINS = 10
_EPS = 1e-12


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
    for z, y in zip(logits, labels):
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


def fit_temperatures(decisions: Sequence[Decision], min_count: int = 2) -> dict[str, float]:
    """One temperature per question type; types with fewer than `min_count` decisions keep T = 1."""
    out: dict[str, float] = {}
    for kind in KINDS:
        rows = [d for d in decisions if d.kind == kind]
        if len(rows) >= min_count:
            out[kind] = fit_temperature([d.logits for d in rows], [d.label for d in rows])
    return out


# -------------------------------------------------------------------- metrics
def _as_rows(probs: Iterable[Sequence[float] | np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(p, dtype=np.float64) for p in probs]


def compute_balanced_accuracy(predicted: Sequence[Any], expected: Sequence[Any]) -> float:
    """Mean of per-class recall over the classes that occur in `expected`; immune to a model that always says "A"."""
    classes: dict[Any, list[bool]] = {}
    for p, y in zip(predicted, expected):
        classes.setdefault(y, []).append(p == y)
    return float(np.mean([np.mean(v) for v in classes.values()])) if classes else float("nan")


def compute_ece(confidences: Sequence[float], correct: Sequence[bool], n_bins: int = N_BINS) -> float:
    """Expected calibration error: bin top-1 confidence into `n_bins` equal-width bins (right-closed,
    the first also holds 0), then sum |accuracy - mean confidence| weighted by the bin's share."""
    conf = np.asarray(confidences, dtype=np.float64)
    hit = np.asarray(correct, dtype=np.float64)
    if not len(conf):
        return float("nan")
    bins = np.clip(np.ceil(conf * n_bins).astype(int) - 1, 0, n_bins - 1)
    ece = 0.0
    for b in range(n_bins):
        mask = bins == b
        if mask.any():
            ece += mask.mean() * abs(hit[mask].mean() - conf[mask].mean())
    return float(ece)


def compute_reliability(confidences: Sequence[float], correct: Sequence[bool], n_bins: int = N_BINS) -> list[dict[str, float]]:
    """Per-bin count, mean confidence and accuracy: the data behind a reliability diagram."""
    conf = np.asarray(confidences, dtype=np.float64)
    hit = np.asarray(correct, dtype=np.float64)
    bins = np.clip(np.ceil(conf * n_bins).astype(int) - 1, 0, n_bins - 1)
    out = []
    for b in range(n_bins):
        mask = bins == b
        out.append({
            "lo": b / n_bins, "hi": (b + 1) / n_bins, "count": int(mask.sum()),
            "confidence": float(conf[mask].mean()) if mask.any() else float("nan"),
            "accuracy": float(hit[mask].mean()) if mask.any() else float("nan"),
        })
    return out


def compute_brier(probs: Sequence[np.ndarray], labels: Sequence[int]) -> float:
    """Multi-class Brier score, sum_k (p_k - y_k)^2 averaged over decisions (0 best, 2 worst).

    For yes/no this is twice the one-sided binary Brier score (p - y)^2.
    """
    total = []
    for p, y in zip(_as_rows(probs), labels):
        onehot = np.zeros_like(p)
        onehot[y] = 1.0
        total.append(float(np.sum((p - onehot) ** 2)))
    return float(np.mean(total)) if total else float("nan")


def compute_nll(probs: Sequence[np.ndarray], labels: Sequence[int]) -> float:
    """Mean negative log-likelihood of the right option (natural log; probabilities clipped at 1e-12)."""
    vals = [-math.log(max(float(p[y]), _EPS)) for p, y in zip(_as_rows(probs), labels)]
    return float(np.mean(vals)) if vals else float("nan")


_MASS_METRICS = ("option_mass_mean", "option_mass_median", "option_mass_min", "option_mass_below_0_5")


def _mean(values: Sequence[Any]) -> float:
    """The mean, or NaN for no values (numpy would warn)."""
    return float(np.mean(values)) if len(values) else float("nan")


def _option_mass(decisions: Sequence[Decision]) -> dict[str, float]:
    """How much probability the listed options held before the softmax over them: mean, median, min, share under 0.5."""
    mass = np.asarray([d.option_mass for d in decisions], dtype=np.float64)
    if not len(mass):
        return dict.fromkeys(_MASS_METRICS, float("nan"))
    return dict(zip(_MASS_METRICS, (float(mass.mean()), float(np.median(mass)), float(mass.min()), float((mass < 0.5).mean()))))


def compute_metrics(decisions: Sequence[Decision], probs: Sequence[np.ndarray] | None = None) -> dict[str, float]:
    """Every decision-quality number for one set: `probs` defaults to the raw softmax of each logit row."""
    rows = _as_rows(probs) if probs is not None else [d.probabilities for d in decisions]
    labels = [d.label for d in decisions]
    top = [int(np.argmax(p)) for p in rows]
    conf = [float(p[t]) for p, t in zip(rows, top)]
    correct = [t == y for t, y in zip(top, labels)]
    return {
        "n": len(decisions),
        "accuracy": _mean(correct),
        # classes are answers by name within a workload: true/false, a queue, a level
        "balanced_accuracy": compute_balanced_accuracy(
            [(d.task, d.keys[t]) for d, t in zip(decisions, top)], [(d.task, d.keys[d.label]) for d in decisions]
        ),
        "chance": _mean([1.0 / len(d.keys) for d in decisions]),
        "ece": compute_ece(conf, correct),
        "brier": compute_brier(rows, labels),
        "nll": compute_nll(rows, labels),
        "mean_confidence": _mean(conf),
        "confident_error_rate": _mean([c >= CONFIDENT and not ok for c, ok in zip(conf, correct)]),
        **_option_mass(decisions),
        "top_share": _top_share(top, decisions),
    }


def _top_share(top: Sequence[int], decisions: Sequence[Decision]) -> float:
    """Share of decisions that picked the most common slot position: 1.0 means "always A" (or "always Yes")."""
    if not top:
        return float("nan")
    counts = np.bincount(np.asarray(top))
    return float(counts.max() / len(top))


def bootstrap_metrics(
    decisions: Sequence[Decision],
    probs: Sequence[np.ndarray] | None = None,
    names: Sequence[str] = ("accuracy", "balanced_accuracy", "ece", "brier", "nll"),
    n_resamples: int = 500,
    seed: int = 0,
    alpha: float = 0.05,
) -> dict[str, tuple[float, float]]:
    """Percentile confidence intervals, resampling whole states (`group_id`), since questions on one state are correlated."""
    rows = _as_rows(probs) if probs is not None else [d.probabilities for d in decisions]
    groups: dict[str, list[int]] = {}
    for i, d in enumerate(decisions):
        groups.setdefault(d.group_id, []).append(i)
    keys = list(groups)
    if len(keys) < 2:
        return {name: (float("nan"), float("nan")) for name in names}
    rng = np.random.default_rng(seed)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(n_resamples):
        idx = [i for g in rng.integers(0, len(keys), len(keys)) for i in groups[keys[g]]]
        m = compute_metrics([decisions[i] for i in idx], [rows[i] for i in idx])
        for name in names:
            samples[name].append(m[name])
    return {
        name: (float(np.nanpercentile(v, 100 * alpha / 2)), float(np.nanpercentile(v, 100 * (1 - alpha / 2))))
        for name, v in samples.items()
    }


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
    evaluation passes debiased logits). Returns the probabilities and each fold's temperatures.
    """
    base = [transform(d) if transform else d.logits for d in decisions]
    out: list[np.ndarray | None] = [None] * len(decisions)
    fold_temps: list[dict[str, float]] = []
    for train, test in split_groups([d.group_id for d in decisions], folds, seed):
        fitted = [Decision(**{**decisions[i].__dict__, "logits": base[i]}) for i in train]
        temps = fit_temperatures(fitted)
        fold_temps.append(temps)
        for i in test:
            out[i] = apply_temperature(base[i], temps.get(decisions[i].kind, 1.0))
    return [p for p in out if p is not None], fold_temps


# ------------------------------------------------------------ the file itself
def build_calibration(
    decisions: Sequence[Decision],
    model_sha256: str,
    model_file: str,
    priors: dict[str, list[float]] | None = None,
    metrics: dict[str, Any] | None = None,
    source: Sequence[str] = (),
) -> dict[str, Any]:
    """The calibration document: temperatures per type (fitted on debiased logits when `priors` are given)."""
    if priors:
        fitted = [Decision(**{**d.__dict__, "logits": remove_prior(d.logits, priors[d.question_hash])}) if d.question_hash in priors else d
                  for d in decisions]
    else:
        fitted = list(decisions)
    return {
        "format": CALIBRATION_FORMAT,
        "model_sha256": model_sha256,
        "model_file": model_file,
        "prompt_version": PROMPT_VERSION,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "source": list(source),
        "temperatures": fit_temperatures(fitted),
        "counts": {kind: sum(1 for d in decisions if d.kind == kind) for kind in KINDS},
        "priors": priors or {},
        "metrics": metrics or {},
    }


def save_calibration(document: dict[str, Any], path: Path | str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    return path


