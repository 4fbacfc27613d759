"""Decision-quality metrics of labeled decisions: accuracy, balanced accuracy, ECE, Brier, NLL, option mass.

`compute_metrics` is every number for one set of decisions (`calibration.Decision`) and its
probabilities, `bootstrap_metrics` their percentile intervals with whole states resampled, and
`compute_reliability` the bins behind a reliability diagram. Pure numpy.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

import numpy as np

from .calibration import Decision

__all__ = [
    "CONFIDENT",
    "N_BINS",
    "bootstrap_metrics",
    "compute_balanced_accuracy",
    "compute_brier",
    "compute_ece",
    "compute_metrics",
    "compute_nll",
    "compute_reliability",
]

CONFIDENT = 0.9
N_BINS = 10
_EPS = 1e-12


def _as_rows(probs: Iterable[Sequence[float] | np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(p, dtype=np.float64) for p in probs]


def compute_balanced_accuracy(predicted: Sequence[Any], expected: Sequence[Any]) -> float:
    """Mean of per-class recall over the classes that occur in `expected`; immune to a model that always says "A"."""
    classes: dict[Any, list[bool]] = {}
    for p, y in zip(predicted, expected, strict=True):
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
    for p, y in zip(_as_rows(probs), labels, strict=True):
        onehot = np.zeros_like(p)
        onehot[y] = 1.0
        total.append(float(np.sum((p - onehot) ** 2)))
    return float(np.mean(total)) if total else float("nan")


def compute_nll(probs: Sequence[np.ndarray], labels: Sequence[int]) -> float:
    """Mean negative log-likelihood of the right option (natural log; probabilities clipped at 1e-12)."""
    vals = [-math.log(max(float(p[y]), _EPS)) for p, y in zip(_as_rows(probs), labels, strict=True)]
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
    figures = (float(mass.mean()), float(np.median(mass)), float(mass.min()), float((mass < 0.5).mean()))
    return dict(zip(_MASS_METRICS, figures, strict=True))


def compute_metrics(decisions: Sequence[Decision], probs: Sequence[np.ndarray] | None = None) -> dict[str, float]:
    """Every decision-quality number for one set: `probs` defaults to the raw softmax of each logit row."""
    rows = _as_rows(probs) if probs is not None else [d.probabilities for d in decisions]
    labels = [d.label for d in decisions]
    top = [int(np.argmax(p)) for p in rows]
    conf = [float(p[t]) for p, t in zip(rows, top, strict=True)]
    correct = [t == y for t, y in zip(top, labels, strict=True)]
    return {
        "n": len(decisions),
        "accuracy": _mean(correct),
        # classes are answers by name within a workload: true/false, a queue, a level
        "balanced_accuracy": compute_balanced_accuracy(
            [(d.task, d.keys[t]) for d, t in zip(decisions, top, strict=True)], [(d.task, d.keys[d.label]) for d in decisions]
        ),
        "chance": _mean([1.0 / len(d.keys) for d in decisions]),
        "ece": compute_ece(conf, correct),
        "brier": compute_brier(rows, labels),
        "nll": compute_nll(rows, labels),
        "mean_confidence": _mean(conf),
        "confident_error_rate": _mean([c >= CONFIDENT and not ok for c, ok in zip(conf, correct, strict=True)]),
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
