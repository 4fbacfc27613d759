"""`semif eval`'s report as text and figures: the metrics table and the reliability diagram.

All of it reads a report dict (`evaluate.evaluate_decisions` builds it, and `semif eval --output`
saves it), so a saved report can be printed or plotted again without the model. pandas and
matplotlib are imported inside the functions.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from ..plots import save_figure

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from .calibration import Decision

__all__ = ["collect_reliability_sets", "format_report", "plot_reliability", "reliability_sets", "variant_probabilities"]

ReliabilitySets = dict[str, tuple[list[float], list[bool]]]  # variant -> (top-1 confidence, correct) per decision


def format_report(report: dict[str, Any]) -> str:
    """The metrics table: one row per task and variant, then the overall rows and the extras."""
    import pandas as pd

    rows = []
    for task, variants in list(report["tasks"].items()) + [("ALL", report["overall"])]:
        rows += [_metric_row(task, name, m) for name, m in variants.items()]
        base = report.get("json_baseline", {}).get(task if task != "ALL" else "all")
        if base:
            rows.append(_baseline_row(task, base))
    text = pd.DataFrame(rows).astype(str).to_string(index=False)
    return "\n".join([text] + _temperature_notes(report) + _permutation_note(report))


def _metric_row(task: str, name: str, m: dict[str, Any]) -> dict[str, Any]:
    ci = m.get("ci95", {}).get("accuracy")
    acc = f"{m['accuracy']:.2f}" + (f" [{ci[0]:.2f},{ci[1]:.2f}]" if ci else "")
    return {
        "task": task, "variant": name, "n": m["n"], "acc [95% CI]": acc,
        "bal_acc": round(m["balanced_accuracy"], 2), "R@1": round(m["recall_at_1"], 2) if "recall_at_1" in m else "",
        "chance": round(m["chance"], 2), "ECE": round(m["ece"], 3), "Brier": round(m["brier"], 3), "NLL": round(m["nll"], 3),
        "conf_err": round(m["confident_error_rate"], 3), "top_share": round(m["top_share"], 2),
        "mass": round(m["option_mass_mean"], 3), "flip": round(m["flip_rate"], 2) if "flip_rate" in m else "", "invalid": "",
    }


def _baseline_row(task: str, base: dict[str, Any]) -> dict[str, Any]:
    return {"task": task, "variant": "json_generation", "n": base["decisions"], "acc [95% CI]": f"{base['accuracy']:.2f}",
            "bal_acc": "", "R@1": "", "chance": "", "ECE": "", "Brier": "", "NLL": "", "conf_err": "", "top_share": "",
            "mass": "", "flip": "", "invalid": round(base["invalid_json_rate"], 2)}


def _temperature_notes(report: dict[str, Any]) -> list[str]:
    """The temperatures the file applies, and per type what was kept and why (`verdicts`)."""
    if "temperatures" not in report:
        return []
    from .verdicts import format_verdicts

    temps = ", ".join(f"{k}={v:.3g}" for k, v in report["temperatures"].items())
    lines = [f"temperatures the calibration file applies (1 = identity): {temps}"]
    verdicts = report.get("calibration_verdicts")
    if verdicts:
        overall = verdicts["overall"]
        lines.append(format_verdicts(verdicts["by_kind"], ("prior", "temperature")))
        if overall.get("raw"):
            lines.append(f"all types, out of fold: ECE {overall['raw']['ece']:.3f} raw -> {overall['kept']['ece']:.3f} kept, "
                         f"NLL {overall['raw']['nll']:.3f} -> {overall['kept']['nll']:.3f}")
    return lines


def _permutation_note(report: dict[str, Any]) -> list[str]:
    if "permutation" not in report:
        return []
    p = report["permutation"]
    return [f"option-order rotations: {p['orders']} per choice question, "
            f"argmax flip rate {p['flip_rate']:.2f} over {p['decisions']} decisions"]


def plot_reliability(sets: dict[str, tuple[Sequence[float], Sequence[bool]]], path: Path | str, title: str = "") -> Path:
    """Reliability diagram (top) and top-1 confidence histogram (bottom), one column per variant."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from .metrics import N_BINS, compute_ece, compute_reliability

    names = list(sets)
    fig, axes = plt.subplots(2, len(names), figsize=(3.6 * len(names), 6.2), squeeze=False, gridspec_kw={"height_ratios": [3, 1.3]})
    for col, name in enumerate(names):
        conf, correct = sets[name]
        bins = compute_reliability(conf, correct)
        ax = axes[0][col]
        ax.plot([0, 1], [0, 1], ls="--", color="grey", lw=1)
        centers = [(b["lo"] + b["hi"]) / 2 for b in bins]
        acc = [b["accuracy"] if b["count"] else 0.0 for b in bins]
        ax.bar(centers, acc, width=1 / N_BINS, edgecolor="black", color="#4c72b0", alpha=0.8, label="accuracy")
        filled = [b for b in bins if b["count"]]
        ax.plot([b["confidence"] for b in filled], [b["accuracy"] for b in filled], "o", color="#dd8452", label="mean conf.")
        for x, b in zip(centers, bins, strict=True):  # a bar over one decision is noise: say how many it holds
            if b["count"]:
                ax.text(x, min(b["accuracy"], 0.9) + 0.02, str(b["count"]), ha="center", fontsize=7)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_title(f"{name}\nECE {compute_ece(conf, correct):.3f}, n={len(conf)}", fontsize=10)
        ax.set_xlabel("top-1 confidence")
        if col == 0:
            ax.set_ylabel("accuracy")
            ax.legend(loc="upper left", fontsize=8, title="n = decisions per bin", title_fontsize=7)
        hx = axes[1][col]
        hx.hist(np.asarray(conf, dtype=float), bins=np.linspace(0, 1, N_BINS + 1), color="#55a868", edgecolor="black")
        hx.set_xlim(0, 1)
        hx.set_xlabel("top-1 confidence")
        if col == 0:
            hx.set_ylabel("decisions")
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return save_figure(fig, path)


def collect_reliability_sets(report_decisions: Sequence["Decision"], variants: dict[str, Sequence["np.ndarray"]]) -> ReliabilitySets:
    """(top-1 confidence, correct) per variant, ready for `plot_reliability`."""
    import numpy as np

    out = {}
    for name, probs in variants.items():
        conf = [float(np.max(p)) for p in probs]
        correct = [int(np.argmax(p)) == d.label for p, d in zip(probs, report_decisions, strict=True)]
        out[name] = (conf, correct)
    return out


def variant_probabilities(
    decisions: Sequence["Decision"], report: dict[str, Any], priors: dict[str, list[float]] | None, folds: int, seed: int
) -> dict[str, list["np.ndarray"]]:
    """Recompute the per-decision probabilities of raw / debiased / out-of-fold calibrated as kept (deterministic) for plots."""
    from ...decision.readout import softmax
    from .calibration import prior_remover
    from .verdicts import judge_calibration

    out: dict[str, list[Any]] = {"raw": [d.probabilities for d in decisions]}
    base = prior_remover(priors)
    if base is not None:
        out["debiased"] = [softmax(base(d)) for d in decisions]
    if "temperatures" in report:
        out["calibrated (out of fold)"] = judge_calibration(decisions, priors, folds, seed).probabilities
    return out


def reliability_sets(
    decisions: Sequence["Decision"], report: dict[str, Any], priors: dict[str, list[float]] | None = None
) -> ReliabilitySets:
    """(confidence, correct) for raw, debiased and out-of-fold calibrated answers, with the report's folds and seed."""
    options = report.get("options", {})
    variants = variant_probabilities(decisions, report, priors, options.get("folds", 5), options.get("seed", 0))
    return collect_reliability_sets(decisions, variants)
