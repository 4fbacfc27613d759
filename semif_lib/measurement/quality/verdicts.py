"""Which fitted values the calibration file keeps: only what helps out of fold, each with its reason.

A temperature or prior fitted on a few labeled decisions can make a small workload's probabilities
worse, and a server applies the file to every answer. So, per question type, each fitted value is
judged on decisions it was not fitted on and enters the file only if it improves the metric it
targets; otherwise the file records the identity and why:

* a type with fewer than `MIN_DECISIONS` decisions stays uncalibrated, whatever the numbers say;
* a content-free prior (read from content-free states, not from labels, so judged on every decision)
  is kept if ECE and NLL both fall;
* a temperature, fitted on top of what was kept, is kept if its out-of-fold ECE and NLL both fall
  (grouped by state); its fold-to-fold spread and the folds that stopped at the optimiser's bound ride
  along, so a fit the data cannot support is seen;
* a prediction set is kept if its held-out coverage reaches the target, an abstention rule if the
  held-out answered decisions err at most the target error (`judge_rules`; `prediction_sets` measures).

ECE does not add up over types, so if the pooled out-of-fold ECE of what was kept is worse than raw,
nothing is kept. The choice between raw and kept is made on the same decisions, so the kept
out-of-fold figures are slightly optimistic; raw is the floor they never fall below.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Sequence

import numpy as np

from ...decision.calibrator import CALIBRATION_FORMAT, KINDS, remove_prior
from ...decision.prompt import PROMPT_VERSION
from ...decision.readout import softmax
from .calibration import TEMPERATURE_BOUNDS, Decision, fit_temperature_fits, predict_out_of_fold
from .metrics import compute_ece, compute_nll

__all__ = ["MIN_DECISIONS", "Judgement", "build_calibration", "format_verdicts", "judge_calibration", "judge_rules", "list_identity"]

MIN_DECISIONS = 20  # per question type: below it the type stays uncalibrated (identity), whatever a fit says


@dataclass
class Judgement:
    """The verdicts per type, the out-of-fold probabilities under what was kept (`base`: before the temperature), what the file applies."""

    verdicts: dict[str, dict[str, Any]]
    probabilities: list[np.ndarray]
    base: list[np.ndarray]
    temperatures: dict[str, float]
    priors: dict[str, list[float]] = field(default_factory=dict)
    overall: dict[str, Any] = field(default_factory=dict)
    fold_fits: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"min_decisions": MIN_DECISIONS, "by_kind": self.verdicts, "overall": self.overall}


def _scores(decisions: Sequence[Decision], probs: Sequence[np.ndarray], idx: Sequence[int]) -> dict[str, float]:
    """ECE and NLL of the rows `idx`: the two figures a temperature targets."""
    rows = [probs[i] for i in idx]
    top = [int(np.argmax(p)) for p in rows]
    correct = [t == decisions[i].label for t, i in zip(top, idx, strict=True)]
    ece = compute_ece([float(p[t]) for p, t in zip(rows, top, strict=True)], correct)
    return {"ece": round(ece, 5), "nll": round(compute_nll(rows, [decisions[i].label for i in idx]), 5)}


def _say(scores: dict[str, float], base: dict[str, float]) -> str:
    return f"ECE {base['ece']:.3f} -> {scores['ece']:.3f}, NLL {base['nll']:.3f} -> {scores['nll']:.3f}"


def _judge_step(n: int, states: int, scores: dict[str, float], base: dict[str, float], held_out: str) -> dict[str, Any]:
    """Keep a step only with enough decisions and states and if both ECE and NLL fall."""
    if n < MIN_DECISIONS:
        return {"kept": False, "reason": f"{n} decisions, fewer than the {MIN_DECISIONS} a type needs"}
    if states < 2:
        return {"kept": False, "reason": "fewer than 2 states: nothing to hold out"}
    kept = scores["ece"] < base["ece"] and scores["nll"] < base["nll"]
    verdict = "helps" if kept else "does not improve both"
    return {"kept": kept, "reason": f"{held_out} {_say(scores, base)}: {verdict}", "base": base, "scores": scores}


def _debiased(d: Decision, priors: dict[str, list[float]] | None) -> np.ndarray:
    prior = (priors or {}).get(d.question_hash)
    return remove_prior(d.logits, prior) if prior is not None and len(prior) == len(d.logits) else d.logits


def _temperature_verdict(kind: str, step: dict[str, Any], fold_fits: Sequence[dict[str, Any]],
                         all_rows: dict[str, Any]) -> dict[str, Any]:
    """The step's verdict with the fitted value, the fold-to-fold spread and the folds at the bound."""
    folds = [f[kind] for f in fold_fits if kind in f]
    fit = all_rows.get(kind)
    if not folds or fit is None:
        return step
    values = [f.temperature for f in folds]
    return {**step, "value": round(fit.temperature, 5) if step["kept"] else 1.0, "fitted": round(fit.fitted, 5),
            "shrunk": round(fit.temperature, 5), "at_bound": fit.at_bound, "folds": [round(v, 5) for v in values],
            "spread": [round(min(values), 5), round(max(values), 5)], "folds_at_bound": sum(f.at_bound for f in folds)}


def _judge_priors(decisions: Sequence[Decision], priors: dict[str, list[float]] | None, idx: dict[str, list[int]], states: int,
                  verdicts: dict[str, dict[str, Any]]) -> set[str]:
    """The types whose content-free priors are kept (their verdicts recorded in `verdicts`)."""
    if not priors:
        return set()
    debiased = [softmax(_debiased(d, priors)) for d in decisions]
    kept = set()
    for kind, rows in idx.items():
        scores = _scores(decisions, debiased, rows) if rows else {}
        verdicts[kind]["prior"] = _judge_step(len(rows), states, scores, verdicts[kind]["raw"], "on every decision,")
        if verdicts[kind]["prior"]["kept"]:
            kept.add(kind)
    return kept


def _judge_temperatures(decisions: Sequence[Decision], base_logits: Sequence[np.ndarray], idx: dict[str, list[int]], states: int,
                        folds: int, seed: int, verdicts: dict[str, dict[str, Any]]) -> tuple[list[np.ndarray], dict[str, float], list[Any]]:
    """Out-of-fold temperatures on `base_logits`: the probabilities under what was kept, the file's temperatures, the fold fits."""
    base = [softmax(z) for z in base_logits]
    final, temperatures = list(base), dict.fromkeys(KINDS, 1.0)
    if states < 2 or all(len(rows) < MIN_DECISIONS for rows in idx.values()):
        for kind, rows in idx.items():
            verdicts[kind]["temperature"] = _judge_step(len(rows), states, {}, {}, "")
        return final, temperatures, []
    by_id = {id(d): z for d, z in zip(decisions, base_logits, strict=True)}
    oof, fold_fits = predict_out_of_fold(decisions, folds, seed, transform=lambda d: by_id[id(d)])
    all_rows = fit_temperature_fits([Decision(**{**d.__dict__, "logits": z}) for d, z in zip(decisions, base_logits, strict=True)])
    for kind, rows in idx.items():
        step = _judge_step(len(rows), states, _scores(decisions, oof, rows) if rows else {},
                           _scores(decisions, base, rows) if rows else {}, "out of fold,")
        verdicts[kind]["temperature"] = _temperature_verdict(kind, step, fold_fits, all_rows)
        if step["kept"]:
            temperatures[kind] = all_rows[kind].temperature
            for i in rows:
                final[i] = oof[i]
    return final, temperatures, fold_fits


def judge_calibration(decisions: Sequence[Decision], priors: dict[str, list[float]] | None = None, folds: int = 5,
                      seed: int = 0) -> Judgement:
    """Per type: the prior, then the temperature on top of it, each kept only where it helps (the module's rules)."""
    raw = [d.probabilities for d in decisions]
    idx = {kind: [i for i, d in enumerate(decisions) if d.kind == kind] for kind in KINDS}
    states = len({d.group_id for d in decisions})
    verdicts: dict[str, dict[str, Any]] = {kind: {"n": len(rows), "raw": _scores(decisions, raw, rows) if rows else {}}
                                           for kind, rows in idx.items()}
    prior_kinds = _judge_priors(decisions, priors, idx, states, verdicts)
    base_logits = [_debiased(d, priors) if d.kind in prior_kinds else d.logits for d in decisions]
    final, temperatures, fold_fits = _judge_temperatures(decisions, base_logits, idx, states, folds, seed, verdicts)
    judgement = Judgement(verdicts, final, [softmax(z) for z in base_logits], temperatures,
                          _select_kept_priors(decisions, priors, prior_kinds),
                          fold_fits=[{k: f.to_json() for k, f in fits.items()} for fits in fold_fits])
    return _guard_pooled(decisions, raw, judgement)


def _select_kept_priors(decisions: Sequence[Decision], priors: dict[str, list[float]] | None, kinds: set[str]) -> dict[str, list[float]]:
    """The content-free priors the file keeps: those of the decisions whose type kept its prior, by question hash."""
    return {d.question_hash: list(priors[d.question_hash]) for d in decisions
            if priors and d.kind in kinds and d.question_hash in priors}


def _guard_pooled(decisions: Sequence[Decision], raw: Sequence[np.ndarray], judgement: Judgement) -> Judgement:
    """Nothing is kept if the pooled out-of-fold ECE of what was kept is worse than raw's."""
    everything = list(range(len(decisions)))
    raw_scores = _scores(decisions, raw, everything) if everything else {}
    kept_scores = _scores(decisions, judgement.probabilities, everything) if everything else {}
    judgement.overall = {"raw": raw_scores, "kept": kept_scores, "pooled_guard": False}
    if not everything or kept_scores["ece"] <= raw_scores["ece"]:
        return judgement
    for verdict in judgement.verdicts.values():
        for step in ("prior", "temperature"):
            if verdict.get(step, {}).get("kept"):
                verdict[step] = {**verdict[step], "kept": False, "value": 1.0,
                                 "reason": f"pooled out-of-fold ECE {kept_scores['ece']:.3f} > raw {raw_scores['ece']:.3f}: nothing kept"}
    judgement.overall.update(kept=raw_scores, pooled_guard=True)
    judgement.probabilities, judgement.base, judgement.temperatures, judgement.priors = list(raw), list(raw), dict.fromkeys(KINDS, 1.0), {}
    return judgement


def judge_rules(by_kind: dict[str, dict[str, Any]], target_coverage: float, max_error: float) -> dict[str, dict[str, Any]]:
    """Prediction sets and abstention per type from their nested held-out summary (`prediction_sets.evaluate_prediction_sets`)."""
    out: dict[str, dict[str, Any]] = {}
    for kind, m in by_kind.items():
        too_few = {"kept": False, "reason": f"{m['n']} decisions, fewer than the {MIN_DECISIONS} a type needs"}
        if m["n"] < MIN_DECISIONS:
            out[kind] = {"prediction_set": too_few, "abstention": too_few}
            continue
        covered = m["coverage"] >= target_coverage
        sets = {"kept": covered, "reason": f"held-out coverage {m['coverage']:.3f} {'>=' if covered else '<'} target {target_coverage:g} "
                                           f"(mean set {m['mean_set_size']:.2f} of {m['mean_options']:.2f})"}
        answered = m["accuracy_answered"]
        if answered is None:
            abstain = {"kept": True, "reason": "abstains on every held-out decision: no threshold meets the error target"}
        else:
            error = 1.0 - answered
            abstain = {"kept": error <= max_error, "reason": f"held out it answered {m['answered_share']:.1%} at error {error:.3f} "
                                                              f"{'<=' if error <= max_error else '>'} target {max_error:g}"}
        out[kind] = {"prediction_set": sets, "abstention": abstain}
    return out


def build_calibration(decisions: Sequence[Decision], model_sha256: str, model_file: str, priors: dict[str, list[float]] | None = None,
                      metrics: dict[str, Any] | None = None, source: Sequence[str] = (), folds: int = 5, seed: int = 0,
                      judgement: Judgement | None = None) -> dict[str, Any]:
    """The calibration document: what was kept per type (identity elsewhere), the verdicts, the priors kept."""
    judgement = judgement or judge_calibration(decisions, priors, folds, seed)
    return {
        "format": CALIBRATION_FORMAT,
        "model_sha256": model_sha256,
        "model_file": model_file,
        "prompt_version": PROMPT_VERSION,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "source": list(source),
        "min_decisions": MIN_DECISIONS,
        "temperatures": judgement.temperatures,
        "counts": {kind: sum(1 for d in decisions if d.kind == kind) for kind in KINDS},
        "priors": judgement.priors,
        "verdicts": judgement.verdicts,
        "out_of_fold": judgement.overall,
        "metrics": metrics or {},
    }


_STEPS = ("prior", "temperature", "prediction_set", "abstention")


def format_verdicts(verdicts: dict[str, dict[str, Any]], steps: Sequence[str] = _STEPS) -> str:
    """What the file keeps per type and why, the fitted temperature's fold spread, and a warning for what stayed identity."""
    lines = [f"calibration per question type (kept only where it helps out of fold; at least {MIN_DECISIONS} decisions a type):"]
    for kind, verdict in verdicts.items():
        for step in (s for s in steps if s in verdict):
            v = verdict[step]
            lines.append(f"  {kind:<6} n={verdict.get('n', '?'):<4} {step:<14} {'kept' if v['kept'] else 'identity':<8} {v['reason']}")
            if "folds" in v:
                shrunk = f" (shrunk to {v['shrunk']:.3g})" if v["shrunk"] != v["fitted"] else ""
                lines.append(f"  {'':<6} {'':<6} {'':<14} {'':<8} T fitted on all {v['fitted']:.3g}{shrunk}; folds "
                             f"{v['spread'][0]:.3g} to {v['spread'][1]:.3g}, {v['folds_at_bound']} of {len(v['folds'])} at the "
                             f"optimiser's bound {TEMPERATURE_BOUNDS[1]:g}")
                if v["kept"] and v["at_bound"]:
                    lines.append(f"  {'':<6} {'':<6} {'':<14} {'':<8} T at the bound: the ranking carries almost no information, "
                                 "so the file flattens this type to its base rate")
    left = list_identity(verdicts, steps)
    if left:
        lines.append("warning: left uncalibrated (identity in the file): " + ", ".join(left))
    return "\n".join(lines)


def list_identity(verdicts: dict[str, dict[str, Any]], steps: Sequence[str] = _STEPS) -> list[str]:
    """Every fitted value the file left at the identity, as "type step"."""
    return [f"{kind} {step}" for kind, verdict in verdicts.items() for step in steps if step in verdict and not verdict[step]["kept"]]
