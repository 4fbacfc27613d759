"""The yardstick's numbers from sys1bench's prediction rows: accuracy with a state-resampled interval, the paired gap
to `majority_prior`, what the bridge read, the refusal rule, and whether a calibration file transfers.

A decision a system did not answer (a transport error, a question whose top log-probabilities held no option
letter) counts as wrong, so a system cannot raise its accuracy by failing; its error share is reported beside it.
Intervals are 95 % percentile bootstraps that resample whole items (a state and all its questions), as
`metrics.bootstrap_metrics` does for the labeled sets.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..metrics import compute_brier, compute_ece, compute_nll

__all__ = ["MIN_READ_SHARE", "accuracy", "calibration_transfer", "paired_gap", "read_summary", "refusal"]

MIN_READ_SHARE = 0.5  # a system whose questions found an option letter less often than this is refused, not scored
RESAMPLES = 1000


def _decisions(rows: Iterable[Any]) -> list[Any]:
    """Rows with a label among their options (sys1bench's own scorecard leaves the others out too)."""
    return [r for r in rows if r.ground_truth is not None and r.ground_truth in r.option_keys]


def _groups(keys: Sequence[str]) -> list[list[int]]:
    index: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        index.setdefault(key, []).append(i)
    return list(index.values())


def _bootstrap(values: np.ndarray, groups: list[list[int]], seed: int) -> tuple[float, float]:
    if len(groups) < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = [values[[i for g in rng.integers(0, len(groups), len(groups)) for i in groups[g]]].mean() for _ in range(RESAMPLES)]
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def accuracy(rows: Iterable[Any], seed: int = 0) -> dict[str, Any]:
    """Accuracy over labeled decisions (unanswered ones wrong), its 95 % interval, and the share left unanswered."""
    rows = _decisions(rows)
    if not rows:
        return {"n": 0, "items": 0, "value": None, "ci95": None, "unanswered": None}
    hits = np.array([bool(r.correct) for r in rows], dtype=np.float64)
    groups = _groups([r.task_id for r in rows])
    low, high = _bootstrap(hits, groups, seed)
    return {"n": len(rows), "items": len(groups), "value": round(float(hits.mean()), 4), "ci95": [round(low, 4), round(high, 4)],
            "unanswered": round(float(np.mean([r.error is not None for r in rows])), 4)}


def paired_gap(rows: Iterable[Any], baseline: Iterable[Any], seed: int = 0) -> dict[str, Any]:
    """Accuracy minus the baseline's on the same decisions, with its interval; `beats` only when the interval is above 0."""
    theirs = {(r.task_id, r.question_key): bool(r.correct) for r in _decisions(baseline)}
    pairs = [(r.task_id, bool(r.correct) - theirs[(r.task_id, r.question_key)]) for r in _decisions(rows)
             if (r.task_id, r.question_key) in theirs]
    if not pairs:
        return {"n": 0, "value": None, "ci95": None, "beats": False}
    diffs = np.array([d for _, d in pairs], dtype=np.float64)
    low, high = _bootstrap(diffs, _groups([t for t, _ in pairs]), seed)
    return {"n": len(pairs), "value": round(float(diffs.mean()), 4), "ci95": [round(low, 4), round(high, 4)], "beats": bool(low > 0)}


def read_summary(reads: Sequence[tuple[int, int, int]]) -> dict[str, Any]:
    """What the bridged adapter read: the share of questions with any, and with every, option letter in the top k,
    and the share sys1bench's legacy reading would have found any in."""
    n = len(reads)
    if not n:
        return {"questions": 0, "any_letter": 0.0, "every_letter": 0.0, "upstream_any_letter": 0.0}
    return {"questions": n, "any_letter": round(sum(f > 0 for f, _, _ in reads) / n, 4),
            "every_letter": round(sum(f == k for f, _, k in reads) / n, 4),
            "upstream_any_letter": round(sum(u > 0 for _, u, _ in reads) / n, 4)}


def refusal(summary: Mapping[str, Any]) -> str | None:
    """Why a letter-reading system's scorecard is refused (it read too few letters to be a baseline), or None."""
    if not summary.get("questions"):
        return "it answered no question"
    if summary["any_letter"] < MIN_READ_SHARE:
        return (f"an option letter was in the top log-probabilities of {summary['any_letter']:.0%} of its questions "
                f"(at least {MIN_READ_SHARE:.0%} needed): the rest would be uniform guesses")
    return None


def _probability_rows(rows: Iterable[Any]) -> dict[tuple[str, str], tuple[np.ndarray, int, str]]:
    return {(r.task_id, r.question_key): (np.asarray(r.probs, dtype=np.float64), r.option_keys.index(r.ground_truth), r.primitive)
            for r in _decisions(rows) if r.error is None and r.probs}


def _quality(pairs: Sequence[tuple[np.ndarray, int]]) -> dict[str, float]:
    probs = [p for p, _ in pairs]
    labels = [y for _, y in pairs]
    hits = [int(np.argmax(p)) == y for p, y in pairs]
    return {"ece": round(compute_ece([float(p.max()) for p in probs], hits), 4), "nll": round(compute_nll(probs, labels), 4),
            "brier": round(compute_brier(probs, labels), 4)}


def calibration_transfer(raw_rows: Iterable[Any], calibrated_rows: Iterable[Any], document: Mapping[str, Any]) -> dict[str, Any]:
    """Per question type: what the file (fitted on data/labeled/) kept, and ECE / NLL / Brier raw -> calibrated here.

    `helps_here` uses the file's own rule (ECE and NLL both fall); a type the file left at the identity changes nothing.
    """
    raw, calibrated = _probability_rows(raw_rows), _probability_rows(calibrated_rows)
    out: dict[str, Any] = {}
    for kind in ("noul", "choice", "score"):
        keys = [k for k, (_, _, primitive) in raw.items() if primitive == kind and k in calibrated]
        verdict = (document.get("verdicts") or {}).get(kind, {}).get("temperature", {})
        entry: dict[str, Any] = {"n": len(keys), "temperature_kept": bool(verdict.get("kept")),
                                 "temperature": (document.get("temperatures") or {}).get(kind) if verdict.get("kept") else 1.0,
                                 "reason_on_labeled": verdict.get("reason")}
        if keys:
            before = _quality([raw[k][:2] for k in keys])
            after = _quality([calibrated[k][:2] for k in keys])
            entry |= {"raw": before, "calibrated": after,
                      "helps_here": after["ece"] < before["ece"] and after["nll"] < before["nll"]}
        out[kind] = entry
    return out
