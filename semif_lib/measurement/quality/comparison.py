"""`semif eval-compare`: several `semif eval` reports side by side, one row per model.

Reads saved reports (no model is loaded) and writes `comparison.json` plus the Markdown tables that
docs/quality.md quotes: the readout's accuracy and balanced accuracy with their bootstrap intervals,
ECE raw and calibrated out of fold, the option-rotation flip rate, the JSON-generation baseline on the
same model (accuracy with a Wilson interval, and how often it wrote invalid JSON), and the held-out
prediction-set coverage, set size and abstention per question type. A report made on a stratified
subset (`semif eval --sample N`) says so in its row. Wall times are copied into the JSON only as run
facts (`wall_s`), not as a benchmark: the runs may have shared a machine.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any, Sequence

from ...paths import repo_root

__all__ = ["COMPARISON_FILE", "command_compare", "compare_reports", "describe_measured_quality", "describe_sys1bench", "format_comparison",
           "summarise_report"]

KINDS = ("noul", "choice", "score")
COMPARISON_FILE = Path("results/eval/comparison.json")  # from the repository root


def _wilson(successes: float, n: float, z: float = 1.96) -> list[float] | None:
    """95 % Wilson score interval of a proportion (the JSON baseline stores counts, not per-state rows to bootstrap)."""
    if not n:
        return None
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [max(0.0, centre - half), min(1.0, centre + half)]


def _with_ci(metrics: dict[str, Any] | None, key: str) -> dict[str, Any] | None:
    if not metrics or key not in metrics:
        return None
    return {"value": metrics[key], "ci95": metrics.get("ci95", {}).get(key)}


def summarise_report(report: dict[str, Any], label: str, path: str = "") -> dict[str, Any]:
    """The comparison's row for one report: the figures of every column, with their intervals."""
    overall = report["overall"]
    raw, calibrated = overall["raw"], overall.get("calibrated_oof")
    base = report.get("json_baseline", {}).get("all")
    permutation = report.get("permutation")
    sets = report.get("prediction_sets")
    return {
        "label": label,
        "report": path,
        "model": {k: report["model"].get(k) for k in ("id", "file", "sha256", "name")},
        "command": report.get("command"),
        "sample": report.get("options", {}).get("sample"),
        "requests": report["counts"]["requests"],
        "decisions": report["counts"]["decisions"],
        "chance": raw["chance"],
        "accuracy": _with_ci(raw, "accuracy"),
        "balanced_accuracy": _with_ci(raw, "balanced_accuracy"),
        "ece_raw": _with_ci(raw, "ece"),
        "ece_calibrated_oof": _with_ci(calibrated, "ece"),
        "calibrated_on_debiased": bool(report.get("options", {}).get("debias")) and calibrated is not None,
        "accuracy_per_task": {t: v["raw"]["accuracy"] for t, v in report["tasks"].items()},
        "rotation": None if not permutation else {
            **permutation, "order_averaged_accuracy": overall.get("permuted_mean", {}).get("accuracy")},
        "json_generation": None if not base else {
            "accuracy": base["accuracy"], "ci95": _wilson(base["accuracy"] * base["decisions"], base["decisions"]),
            "decisions": base["decisions"], "invalid_json_rate": base["invalid_json_rate"],
            "incomplete_rate": base["incomplete_rate"],
            "accuracy_per_task": {t: v["accuracy"] for t, v in report["json_baseline"].items() if t != "all"}},
        "prediction_sets": None if not sets else {
            "target_coverage": sets["target_coverage"], "max_error": sets["max_error"],
            "by_kind": {k: {f: v.get(f) for f in ("n", "coverage", "coverage_ci95", "mean_set_size", "mean_options",
                                                  "answered_share", "accuracy_answered", "accuracy_all")}
                        for k, v in sets["by_kind"].items()}},
        "wall_s": report.get("timing", {}).get("total_s"),
    }


def compare_reports(reports: Sequence[tuple[str, Path | str]]) -> dict[str, Any]:
    """(label, report path) pairs -> the comparison document (`models` in the order given)."""
    rows = []
    for label, path in reports:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
        rows.append(summarise_report(report, label, str(path)))
    return {"models": rows}


def _num(value: Any, digits: int = 2) -> str:
    return "-" if value is None or value != value else f"{value:.{digits}f}"


def _ci(entry: dict[str, Any] | None, digits: int = 2) -> str:
    if not entry:
        return "-"
    ci = entry.get("ci95")
    return _num(entry["value"], digits) + (f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]" if ci else "")


def _overall_row(m: dict[str, Any]) -> str:
    rot, gen = m["rotation"] or {}, m["json_generation"]
    gen_cell = "-" if not gen else _ci({"value": gen["accuracy"], "ci95": gen["ci95"]})
    subset = f"{m['requests']} / {m['decisions']}" + (f" (`--sample {m['sample']}`)" if m["sample"] else "")
    return (f"| {m['label']} | {subset} | {_num(m['chance'])} | {_ci(m['accuracy'])} | {_ci(m['balanced_accuracy'])} | "
            f"{_ci(m['ece_raw'], 3)} | {_ci(m['ece_calibrated_oof'], 3)}{' (on debiased logits)' if m['calibrated_on_debiased'] else ''} | "
            f"{_num(rot.get('flip_rate'))} "
            f"({rot.get('orders', '-')} orders) | {_num(rot.get('order_averaged_accuracy'))} | {gen_cell} | "
            f"{_num(gen['invalid_json_rate']) if gen else '-'} |")


def _task_rows(models: Sequence[dict[str, Any]]) -> list[str]:
    tasks = sorted({t for m in models for t in m["accuracy_per_task"]})
    out = ["| workload | " + " | ".join(f"{m['label']} readout | {m['label']} JSON" for m in models) + " |",
           "|---|" + "---:|---:|" * len(models)]
    for task in tasks:
        cells = []
        for m in models:
            gen = (m["json_generation"] or {}).get("accuracy_per_task", {})
            cells += [_num(m["accuracy_per_task"].get(task)), _num(gen.get(task))]
        out.append(f"| {task} | " + " | ".join(cells) + " |")
    return out


def _set_rows(models: Sequence[dict[str, Any]]) -> list[str]:
    out = ["| model | type | n | held-out coverage [95% CI] | mean set size / options | answered share | accuracy answered |",
           "|---|---|---:|---|---|---:|---:|"]
    for m in models:
        sets = m["prediction_sets"]
        for kind in KINDS if sets else ():
            s = sets["by_kind"].get(kind)
            if s:
                cov = _ci({"value": s["coverage"], "ci95": s["coverage_ci95"]})
                out.append(f"| {m['label']} | {kind} | {s['n']} | {cov} | {_num(s['mean_set_size'])} / {_num(s['mean_options'])} | "
                           f"{_num(s['answered_share'])} | {_num(s['accuracy_answered'])} |")
    return out


def format_comparison(comparison: dict[str, Any]) -> str:
    """Markdown: one row per model, then accuracy per workload (readout against JSON), then sets and abstention."""
    models = comparison["models"]
    head = ("| model | requests / decisions | chance | accuracy [95% CI] | balanced acc. [95% CI] | ECE raw | "
            "ECE calibrated (out of fold) | argmax flip rate | order-averaged acc. | JSON-generation acc. [95% CI] | invalid JSON |")
    lines = [head, "|---|---|---:|---|---|---|---|---|---:|---|---:|"] + [_overall_row(m) for m in models]
    lines += ["", *_task_rows(models)]
    if any(m["prediction_sets"] for m in models):
        targets = {(m["prediction_sets"]["target_coverage"], m["prediction_sets"]["max_error"]) for m in models if m["prediction_sets"]}
        lines += ["", "Prediction sets and abstention, held out (targets: "
                  + "; ".join(f"coverage {c:g}, max error {e:g}" for c, e in sorted(targets)) + "):", "", *_set_rows(models)]
    return "\n".join(lines) + "\n"


def describe_measured_quality(model_id: str, comparison: Path | str | None = None) -> str:
    """One line on what to expect from a model, from the committed comparison (matched by model id, the file's stem).

    Notebook 00 prints it under the answer: which model answered, and how often it was right on the labeled sets.
    """
    path = Path(comparison) if comparison else repo_root() / COMPARISON_FILE
    rows = json.loads(path.read_text(encoding="utf-8"))["models"] if path.is_file() else []
    row = next((m for m in rows if m["model"]["id"] == model_id), None)
    if row is None:
        return (f"{model_id}: not measured on the labeled sets here; `semif eval data/labeled/*.jsonl --calibrate --permute 3 "
                f"--model PATH` measures it (docs/quality.md)")
    acc, gen = row["accuracy"], row["json_generation"]
    ci = acc.get("ci95") or [float("nan")] * 2
    line = (f"{model_id}: readout accuracy {acc['value']:.2f} [95% CI {ci[0]:.2f}-{ci[1]:.2f}] on {row['decisions']} labeled "
            f"decisions (chance {row['chance']:.2f})")
    if gen:
        line += f", writing JSON {gen['accuracy']:.2f}"
    return line + f" ({path.name}: {row['label']})" + describe_sys1bench(model_id, path.parent)


def describe_sys1bench(model_id: str, folder: Path) -> str:
    """`; sys1bench: ...`: the readout against `majority_prior` from `semif bench sys1bench`'s file, or nothing."""
    path = folder / f"sys1bench-{model_id}.json"
    if not path.is_file():
        return ""
    systems = json.loads(path.read_text(encoding="utf-8"))["systems"]
    ours, prior = systems["semif_serve"], systems["majority_prior"]["accuracy"]
    acc, gap = ours["accuracy"], ours["gap_to_majority_prior"]
    verdict = "above it" if gap["beats"] else "not above it"
    return (f"; sys1bench {acc['value']:.2f} [{acc['ci95'][0]:.2f}-{acc['ci95'][1]:.2f}] on {acc['n']} decisions against "
            f"majority_prior {prior['value']:.2f}: {verdict} ({path.name})")


def command_compare(args: Any) -> int:
    """`semif eval-compare`: the reports side by side, the Markdown printed; `--output` and `--markdown` write them."""
    pairs = []
    for spec in args.reports:
        label, sep, path = spec.partition("=")
        pairs.append((label, path) if sep else (Path(spec).parent.name or Path(spec).stem, spec))
    comparison = compare_reports(pairs)
    comparison["command"] = "semif eval-compare " + " ".join(args.reports) + \
        "".join(f" --{k.replace('_', '-')} {v}" for k, v in (("output", args.output), ("markdown", args.markdown)) if v)
    text = format_comparison(comparison)
    print(text)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(comparison, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(text, encoding="utf-8")
        print(f"wrote {args.markdown}", file=sys.stderr)
    return 0
