"""Fitting and checking prediction sets and abstention on labeled decisions (`semif eval --calibrate`).

The rules themselves are `decision.conformal`'s; this module chooses the data. The calibration
file's thresholds are fitted on the probabilities the server will serve with that file (its
priors and temperatures applied to every labeled decision), so a served set is cut by the same
rule on the same kind of number it was fitted on.

The check is nested and grouped by state, so no state informs its own answer: probabilities
calibrated out of fold as the file would keep them (`verdicts.judge_calibration`), then a second grouped split whose
training folds fit the thresholds and whose held-out fold measures coverage, set size and
abstention. Coverage carries a Wilson interval, set size a bootstrap one.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ...decision.calibrator import KINDS, apply_temperature, remove_prior
from ...decision.conformal import (
    DEFAULT_CONFIDENCE,
    Abstention,
    ConformalThreshold,
    fit_abstention,
    fit_threshold,
    min_decisions_for,
    nonconformity,
    predict_set,
)
from ...decision.schema import parse_request
from ..answers import read_probabilities
from ..options import DEFAULT_MAX_ERROR, DEFAULT_TARGET_COVERAGE
from ..plots import save_figure
from .labeled import label_to_index

if TYPE_CHECKING:
    from .calibration import Decision

__all__ = [
    "abstention_curve",
    "command_sets",
    "draw_prediction_sets",
    "evaluate_prediction_sets",
    "fit_rules",
    "format_prediction_sets",
    "plot_prediction_sets",
    "plot_served_sets",
    "rules_document",
    "served_examples",
    "served_probabilities",
]

CURVE_POINTS = 21


def served_probabilities(decisions: Sequence["Decision"], temperatures: dict[str, float],
                         priors: dict[str, list[float]] | None = None) -> list[np.ndarray]:
    """What the calibrator serves for each decision: its stored prior removed, then its type's temperature."""
    out = []
    for d in decisions:
        z = d.logits
        prior = (priors or {}).get(d.question_hash)
        if prior is not None and len(prior) == len(z):
            z = remove_prior(z, prior)
        out.append(apply_temperature(z, temperatures.get(d.kind, 1.0)))
    return out


def fit_rules(decisions: Sequence["Decision"], probs: Sequence[np.ndarray], target_coverage: float,
              max_error: float) -> tuple[dict[str, ConformalThreshold], dict[str, Abstention]]:
    """One set threshold and one abstention rule per question type present in `decisions`."""
    thresholds: dict[str, ConformalThreshold] = {}
    abstentions: dict[str, Abstention] = {}
    for kind in KINDS:
        rows = [i for i, d in enumerate(decisions) if d.kind == kind]
        if not rows:
            continue
        scores = [nonconformity(probs[i], decisions[i].label, kind) for i in rows]
        thresholds[kind] = fit_threshold(scores, target_coverage, kind)
        top = [float(np.max(probs[i])) for i in rows]
        correct = [int(np.argmax(probs[i])) == decisions[i].label for i in rows]
        abstentions[kind] = fit_abstention(top, correct, max_error, kind)
    return thresholds, abstentions


def _wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half)))  # rounding never leaves p outside


def _bootstrap_mean(values: Sequence[float], seed: int, draws: int = 1000) -> tuple[float, float]:
    v = np.asarray(values, dtype=np.float64)
    if len(v) == 0:
        return (0.0, 0.0)
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, len(v), size=(draws, len(v)))].mean(axis=1)
    return (float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975)))


def abstention_curve(top: Sequence[float], correct: Sequence[bool], points: int = CURVE_POINTS) -> list[dict[str, Any]]:
    """Answered share against accuracy on the answered share, for `points` thresholds 0 ... 1 on the top probability.

    What a `min_confidence` would cost and buy: answering only decisions whose top probability reaches
    the threshold. Accuracy is None where nothing is answered.
    """
    conf, ok = np.asarray(top), np.asarray(correct, dtype=bool)
    curve = []
    for t in np.linspace(0.0, 1.0, points):
        answered = conf >= t
        share = float(answered.mean()) if len(conf) else 0.0
        curve.append({"min_confidence": round(float(t), 3), "answered_share": share,
                      "accuracy_answered": float(ok[answered].mean()) if answered.any() else None})
    return curve


def rules_document(decisions: Sequence["Decision"], temperatures: dict[str, float], priors: dict[str, list[float]] | None,
                   target_coverage: float, max_error: float, kept: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The calibration file's `prediction_sets` and `abstention` sections, fitted on what that file serves.

    With `kept` (`verdicts.judge_rules`), a type's rule enters only where its verdict kept it.
    """
    thresholds, abstentions = fit_rules(decisions, served_probabilities(decisions, temperatures, priors), target_coverage, max_error)
    keep = (lambda kind, step: True) if kept is None else (lambda kind, step: bool(kept.get(kind, {}).get(step, {}).get("kept")))
    return {"prediction_sets": {k: t.to_json() for k, t in thresholds.items() if keep(k, "prediction_set")},
            "abstention": {k: a.to_json() for k, a in abstentions.items() if keep(k, "abstention")}}


def evaluate_prediction_sets(decisions: Sequence["Decision"], target_coverage: float = DEFAULT_TARGET_COVERAGE,
                             max_error: float = DEFAULT_MAX_ERROR, folds: int = 5, seed: int = 0,
                             priors: dict[str, list[float]] | None = None) -> dict[str, Any]:
    """Held-out coverage, set size and abstention per question type (nested, grouped by state), on what the file would keep."""
    from .calibration import split_groups
    from .verdicts import judge_calibration

    probs = judge_calibration(decisions, priors, folds, seed).probabilities
    per_row: list[dict[str, Any] | None] = [None] * len(decisions)
    for train, test in split_groups([d.group_id for d in decisions], folds, seed + 1):
        thresholds, abstentions = fit_rules([decisions[i] for i in train], [probs[i] for i in train], target_coverage, max_error)
        for i in test:
            d, p = decisions[i], probs[i]
            if d.kind not in thresholds:
                continue
            chosen = predict_set(p, d.kind, thresholds[d.kind].q)
            per_row[i] = {"kind": d.kind, "covered": d.label in chosen, "size": len(chosen), "options": len(p),
                          "answered": not abstentions[d.kind].abstains(p), "correct": int(np.argmax(p)) == d.label,
                          "top": float(np.max(p))}
    return {"target_coverage": target_coverage, "max_error": max_error, "folds": folds,
            "by_kind": {kind: _summarise([r for r in per_row if r and r["kind"] == kind], seed) for kind in KINDS
                        if any(r and r["kind"] == kind for r in per_row)}}


def _summarise(rows: Sequence[dict[str, Any]], seed: int) -> dict[str, Any]:
    n = len(rows)
    covered = sum(r["covered"] for r in rows)
    answered = [r for r in rows if r["answered"]]
    return {
        "n": n,
        "coverage": covered / n,
        "coverage_ci95": _wilson(covered, n),
        "mean_set_size": float(np.mean([r["size"] for r in rows])),
        "mean_set_size_ci95": _bootstrap_mean([r["size"] for r in rows], seed),
        "mean_options": float(np.mean([r["options"] for r in rows])),
        "answered_share": len(answered) / n,
        "accuracy_answered": (sum(r["correct"] for r in answered) / len(answered)) if answered else None,
        "answered_error_ci95": _wilson(sum(not r["correct"] for r in answered), len(answered)) if answered else None,
        "accuracy_all": sum(r["correct"] for r in rows) / n,
        "abstention_curve": abstention_curve([r["top"] for r in rows], [r["correct"] for r in rows]),
    }


def describe_abstention(m: dict[str, Any], max_error: float) -> str:
    """Whether the abstention target held out of fold, with its interval, or that nothing was answered."""
    if m["accuracy_answered"] is None:
        return "answers nothing: nothing to promise"
    error, (lo, hi) = 1.0 - m["accuracy_answered"], m["answered_error_ci95"]
    return f"error {error:.3f} ({lo:.3f}-{hi:.3f}): {'held' if error <= max_error else 'missed'}"


def format_prediction_sets(summary: dict[str, Any]) -> str:
    """A Markdown table of held-out coverage, set size and abstention per question type, and what a guarantee needs."""
    need = min_decisions_for(summary["max_error"], DEFAULT_CONFIDENCE)
    lines = [f"Prediction sets (target coverage {summary['target_coverage']:.0%}) and abstention (max error "
             f"{summary['max_error']:.0%}, certified with {DEFAULT_CONFIDENCE:.0%} confidence), held out by state over "
             f"{summary['folds']} folds:", "",
             "| type | n | coverage (95% CI) | mean set size (95% CI) / options | answered | accuracy answered / all | "
             "answered error (95% CI): target |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for kind, m in summary["by_kind"].items():
        lo, hi = m["coverage_ci95"]
        slo, shi = m["mean_set_size_ci95"]
        acc = "-" if m["accuracy_answered"] is None else f"{m['accuracy_answered']:.3f}"
        lines.append(f"| {kind} | {m['n']} | {m['coverage']:.3f} ({lo:.3f}-{hi:.3f}) | {m['mean_set_size']:.2f} ({slo:.2f}-{shi:.2f}) "
                     f"/ {m['mean_options']:.2f} | {m['answered_share']:.1%} | {acc} / {m['accuracy_all']:.3f} | "
                     f"{describe_abstention(m, summary['max_error'])} |")
    lines += ["", f"Abstention can promise an error of at most {summary['max_error']:g} only where the fitting folds hold at "
                  f"least {need} answered decisions of a type without an error; with fewer, or with more errors than that "
                  "allows, the rule abstains on everything rather than promise what the data cannot support."]
    return "\n".join(lines)


def plot_prediction_sets(summary: dict[str, Any], path: Path | str, title: str = "") -> Path:
    """Two panels: held-out coverage against its target per type (with set sizes), and the abstention curves."""
    import matplotlib

    matplotlib.use("Agg")
    return save_figure(draw_prediction_sets(summary, title), path)


def _star_threshold(axis: Any, m: dict[str, Any], kind: str, color: str, max_error: float) -> None:
    """The fitted threshold on held-out data, as a star on the curve; a rule that answers nothing has no accuracy to
    plot, so its star sits on the left edge at the target, labelled, never clipped by the frame."""
    answered = m["accuracy_answered"]
    y = answered if answered is not None else 1 - max_error
    axis.scatter([m["answered_share"]], [y], marker="*", s=220, color=color, edgecolor="black", zorder=5, clip_on=False)
    if answered is None:
        axis.annotate(f"{kind}: answers nothing", (m["answered_share"], y), xytext=(10, -16 - 12 * len(axis.texts)),
                      textcoords="offset points", fontsize=8, color=color)


def draw_prediction_sets(summary: dict[str, Any], title: str = "") -> Any:
    """The figure `plot_prediction_sets` saves."""
    import matplotlib.pyplot as plt

    kinds = list(summary["by_kind"])
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for x, kind in enumerate(kinds):
        m = summary["by_kind"][kind]
        lo, hi = m["coverage_ci95"]
        left.bar(x, m["coverage"], color="#4c72b0")
        left.errorbar(x, m["coverage"], yerr=[[max(0.0, m["coverage"] - lo)], [max(0.0, hi - m["coverage"])]], color="black", capsize=4)
        left.text(x, 0.03, f"set {m['mean_set_size']:.2f}\nof {m['mean_options']:.1f}", ha="center", color="white", fontsize=8)
        curve = [p for p in m["abstention_curve"] if p["accuracy_answered"] is not None]
        (line,) = right.plot([p["answered_share"] for p in curve], [p["accuracy_answered"] for p in curve], marker=".", label=kind)
        _star_threshold(right, m, kind, line.get_color(), summary["max_error"])
    left.axhline(summary["target_coverage"], color="red", linestyle="--", label=f"target {summary['target_coverage']:.0%}")
    left.set(xticks=range(len(kinds)), xticklabels=kinds, ylim=(0, 1.2), ylabel="held-out coverage (95% CI)",
             title="prediction sets")
    left.legend(loc="upper right")
    right.axhline(1 - summary["max_error"], color="red", linestyle="--", label=f"target accuracy {1 - summary['max_error']:.0%}")
    right.set(xlabel="answered share", ylabel="accuracy on the answered share", xlim=(0, 1.02), ylim=(0, 1.02),
              title="abstention (star: the fitted threshold, held out)")
    right.legend(loc="lower left")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


Example = tuple[str, dict[str, Any], "str | None"]  # (title, a served answer as JSON, the labeled option's key or None)


def served_examples(request: dict[str, Any], labels: dict[str, Any], body: dict[str, Any], title: str = "") -> list[Example]:
    """(title, served answer, label key) for each labeled question of a request, from the server's response body.

    The label (true/false, the option's name, the level's index, as the labeled files write it) is
    matched to an option key the way `semif eval` scores it (`labeled.label_to_index`).
    """
    questions = parse_request(request).questions
    out = []
    for qid, expected in labels.items():
        answer = body["answers"][qid]
        keys = list(read_probabilities(answer))
        out.append((f"{title} {qid}".strip(), answer, keys[label_to_index(questions[qid], expected)]))
    return out


def plot_served_sets(examples: Sequence[Example], path: Path | str, title: str = "", columns: int = 3) -> Path:
    """One panel per served answer: its options' probabilities, the options in its `x_prediction_set` filled, the label outlined.

    What a client gating on the set sees: one filled bar is a decision it can act on, several are the
    options the truth is among at the fitted coverage, and `x_abstain` is named in the panel's title.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = max(1, -(-len(examples) // columns))
    fig, axes = plt.subplots(rows, columns, figsize=(3.8 * columns, 2.9 * rows), squeeze=False)
    for ax, (name, answer, label) in zip(axes.flat, examples, strict=False):  # the grid may hold more panels than examples
        probs = read_probabilities(answer)
        chosen = {str(k) for k in answer.get("x_prediction_set", [])}
        keys = list(probs)
        ax.bar(range(len(keys)), [probs[k] for k in keys], color=["#4c72b0" if k in chosen else "#c9d3e6" for k in keys],
               edgecolor=["#c0392b" if k == label else "none" for k in keys], linewidth=2.5)
        verdict = "abstains" if answer.get("x_abstain") else "answers"
        served = f"set {len(chosen)} of {len(keys)}" if "x_prediction_set" in answer else "no x_prediction_set served"
        ax.set_title(f"{name}\n{served}, {verdict}", fontsize=9)
        ax.set_xticks(range(len(keys)), [k[:12] for k in keys], rotation=40, ha="right", fontsize=7)
        ax.set_ylim(0, 1)
    for ax in list(axes.flat)[len(examples):]:
        ax.axis("off")
    fig.suptitle((title + "\n" if title else "") + "filled: in x_prediction_set; red outline: the labeled answer", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, path)


def command_sets(args: Any) -> int:
    """`semif sets REPORT`: prediction sets and abstention refitted from a `semif eval` report, with no model."""
    from .calibration import Decision

    report = json.loads(Path(args.report).read_text(encoding="utf-8"))
    decisions, priors = [Decision.from_json(row) for row in report.get("decisions", [])], report.get("priors")
    summary = evaluate_prediction_sets(decisions, args.coverage, args.max_error, args.folds, args.seed, priors if args.debias else None)
    summary.update(command=" ".join(["semif sets", str(args.report)] + [f"--{k.replace('_', '-')} {getattr(args, k)}" for k in
                                                                        ("coverage", "max_error", "folds", "seed")]
                                    + (["--debias"] if args.debias else [])),
                   source_command=report.get("command"), model=report.get("model"))
    print(format_prediction_sets(summary))
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        plot = plot_prediction_sets(summary, args.output.with_suffix(".png"), title=f"{(report.get('model') or {}).get('id', '')}")
        print(f"wrote {args.output} and {plot}", file=sys.stderr)
    return 0
