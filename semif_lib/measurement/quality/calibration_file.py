"""The calibration file written: temperatures, priors, prediction sets and abstention kept only where they help, with why.

`semif eval --calibrate` and `semif calibrate REPORT` (the same fit on a stored report's decisions,
without the model) both end here: `calibrate_report` checks the sets and abstention held out, writes
the file (`write_calibration`; what is kept is `verdicts`' rule), prints what was kept per type and
why, and records it in the report with a warning for every type left uncalibrated.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from .calibration import save_calibration
from .prediction_sets import evaluate_prediction_sets, format_prediction_sets, rules_document
from .verdicts import build_calibration, format_verdicts, judge_calibration, judge_rules, list_identity

if TYPE_CHECKING:  # pragma: no cover
    from .calibration import Decision

__all__ = ["calibrate_report", "write_calibration"]


def write_calibration(
    decisions: Sequence["Decision"],
    report: dict[str, Any],
    priors: dict[str, list[float]] | None,
    path: Path | str,
    source: Sequence[str] = (),
    targets: tuple[float, float] | None = None,
) -> Path:
    """Save the file the engine loads: per type only what helps out of fold (`verdicts`), identity and the reason elsewhere.

    With `targets` (coverage, max error), the file also carries the prediction-set and abstention
    rules that met their targets held out (the report's `prediction_sets` summary, or a fresh one).
    """
    options = report.get("options", {})
    folds, seed = options.get("folds", 5), options.get("seed", 0)
    summary = {name: {k: v for k, v in m.items() if k != "ci95"} for name, m in report["overall"].items()}
    doc = build_calibration(decisions, report["model"]["sha256"], report["model"]["file"],
                            metrics={"overall": summary, "out_of_fold": bool(options.get("calibrate"))}, source=source,
                            judgement=judge_calibration(decisions, priors, folds, seed))
    if targets:
        sets = report.get("prediction_sets")
        if not sets or (sets["target_coverage"], sets["max_error"]) != tuple(targets):
            sets = evaluate_prediction_sets(decisions, *targets, folds, seed, priors)
        rules = judge_rules(sets["by_kind"], *targets)
        for kind, verdict in rules.items():
            doc["verdicts"][kind].update(verdict)
        doc.update(rules_document(decisions, doc["temperatures"], doc["priors"], *targets, kept=rules))
    doc.update(_kept_position_priors(path, doc["model_sha256"]))
    return save_calibration(json.loads(json.dumps(doc, default=float)), path)


def _kept_position_priors(path: Path | str, model_sha256: str) -> dict[str, Any]:
    """The position priors `semif bench debias` put into this model's file before (fitted apart, from rotations): a refit of
    the temperatures and rules keeps them."""
    try:
        old = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(old, dict) or old.get("model_sha256") != model_sha256:
        return {}
    return {k: old[k] for k in ("position_priors", "position_prior_source") if k in old}


def calibrate_report(report: dict[str, Any], decisions: Sequence["Decision"], priors: dict[str, list[float]] | None,
                     target: Path | str, source: Sequence[str], targets: tuple[float, float]) -> dict[str, Any]:
    """Sets and abstention checked held out, the file written, its verdicts printed and stored in `report`; returns the file."""
    options = report.get("options", {})
    report["prediction_sets"] = evaluate_prediction_sets(decisions, *targets, options.get("folds", 5), options.get("seed", 0), priors)
    print(format_prediction_sets(report["prediction_sets"]))
    write_calibration(decisions, report, priors, target, source, targets)
    doc = json.loads(Path(target).read_text(encoding="utf-8"))
    print(format_verdicts(doc["verdicts"], ("prediction_set", "abstention")))
    report["calibration_file"] = str(target)
    report.setdefault("calibration_verdicts", {})["by_kind"] = doc["verdicts"]
    left = list_identity(doc["verdicts"])
    if left:
        report.setdefault("warnings", []).append("left uncalibrated (identity in the calibration file): " + ", ".join(left))
    print(f"wrote calibration file {target} (use it with SEMIF_CALIBRATION={target})", file=sys.stderr)
    return doc
