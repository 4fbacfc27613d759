"""`semif eval`: decision quality of the readout on labeled workloads, raw against calibrated.

For each labeled request it reads the raw option logits, then reports, per workload:

* raw accuracy, balanced accuracy, Recall@1 (code search), ECE, Brier, NLL, option mass and
  confident errors, with bootstrap intervals over states;
* `--calibrate`: out-of-fold temperature scaling (grouped by state), and a calibration file
  fitted on all rows for `SEMIF_CALIBRATION`;
* `--debias`: contextual calibration (Zhao et al. 2021): the option prior read from content-free
  states ("N/A", "", "[MASK]") with the same question, divided out;
* `--permute N`: each choice question asked under N rotations of its option order, the flip rate
  of the argmax, and the metrics of the probabilities averaged over orders;
* the JSON-generation baseline on the same model: does the readout beat asking the model to write?

This module turns decisions into the report (`evaluate_decisions`, no model needed; `evaluate_workload`
with one) and runs the command (`command_eval`). Its neighbours do the rest: `labeled` reads the input,
`scoring` asks the model, `report` prints and plots a report, `calibration` and `prediction_sets` fit
what `--calibrate` writes. numpy, pandas, matplotlib and llama_cpp load inside the functions that use them.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from ...arguments import engine_overrides
from ...errors import InvalidRequestError
from ...model.locate import hash_file
from ...settings import load_settings
from ..options import DEFAULT_MAX_ERROR, DEFAULT_TARGET_COVERAGE
from .labeled import LabeledItem, read_labeled_limited, stratified_subset
from .report import format_report, plot_reliability, reliability_sets
from .scoring import CONTENT_FREE_STATES, run_json_baseline, score_content_free, score_decisions, score_permutations

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from ...decision.engine import DecisionEngine
    from .calibration import Decision

__all__ = [
    "command_calibrate", "command_eval", "describe_command", "evaluate_decisions", "evaluate_workload", "load_decisions",
    "write_calibration",
]

RECALL_TASKS = ("code_search",)


# ------------------------------------------------------------------ report
def _variant_metrics(decisions: Sequence["Decision"], probs: Sequence["np.ndarray"], bootstrap: int, seed: int) -> dict[str, Any]:
    from .metrics import bootstrap_metrics, compute_metrics

    metrics: dict[str, Any] = compute_metrics(decisions, probs)
    if bootstrap:
        metrics["ci95"] = bootstrap_metrics(decisions, probs, n_resamples=bootstrap, seed=seed)
    if decisions and all(d.task in RECALL_TASKS for d in decisions):
        metrics["recall_at_1"] = metrics["accuracy"]
    return metrics


def evaluate_decisions(
    decisions: Sequence["Decision"],
    *,
    calibrate: bool = False,
    folds: int = 5,
    priors: dict[str, list[float]] | None = None,
    permuted: dict[tuple[str, str], list["np.ndarray"]] | None = None,
    bootstrap: int = 500,
    seed: int = 0,
) -> dict[str, Any]:
    """Metrics per task and overall for each variant (raw, debiased, permuted, calibrated), no model needed."""
    from .calibration import prior_remover

    base = prior_remover(priors)
    variants, extra = _variant_probabilities(decisions, base, calibrate, folds, seed, priors)
    rows: list[int] = []
    averaged: list[np.ndarray] = []
    if permuted:
        rows, averaged, extra["permutation"] = _average_orders(decisions, permuted)

    tasks = sorted({d.task for d in decisions}) + ["all"]
    per_task = _task_metrics(decisions, variants, tasks, bootstrap, seed)
    for task in tasks if rows else ():
        metrics = _permuted_metrics(decisions, permuted or {}, rows, averaged, task, bootstrap, seed)
        if metrics is not None:
            per_task[task]["permuted_mean"] = metrics
    overall = per_task.pop("all")
    report: dict[str, Any] = {"tasks": per_task, "overall": overall}
    report.update(extra)
    return report


def _variant_probabilities(
    decisions: Sequence["Decision"], base: Any, calibrate: bool, folds: int, seed: int, priors: dict[str, list[float]] | None
) -> tuple[dict[str, list["np.ndarray"]], dict[str, Any]]:
    """Probabilities per variant (raw, debiased with `base`, calibrated out of fold as the file would keep it), and the verdicts."""
    import numpy as np

    from ...decision.readout import softmax
    from .verdicts import judge_calibration

    variants: dict[str, list[np.ndarray]] = {"raw": [d.probabilities for d in decisions]}
    if base is not None:
        variants["debiased"] = [softmax(base(d)) for d in decisions]
    extra: dict[str, Any] = {}
    if calibrate:
        judgement = judge_calibration(decisions, priors, folds, seed)
        variants["calibrated_oof"] = judgement.probabilities
        unchanged = all(int(np.argmax(p)) == int(np.argmax(b)) for p, b in zip(judgement.probabilities, judgement.base, strict=True))
        extra.update(temperatures=judgement.temperatures, argmax_unchanged_by_temperature=bool(unchanged),
                     fold_temperatures=judgement.fold_fits, calibration_verdicts=judgement.to_json())
    return variants, extra


def _task_metrics(
    decisions: Sequence["Decision"], variants: dict[str, list["np.ndarray"]], tasks: Sequence[str], bootstrap: int, seed: int
) -> dict[str, dict[str, Any]]:
    """Metrics of every variant for each task (and "all"), keyed task -> variant."""
    per_task: dict[str, dict[str, Any]] = {task: {} for task in tasks}
    for name, probs in variants.items():
        for task in tasks:
            idx = [i for i, d in enumerate(decisions) if task in ("all", d.task)]
            per_task[task][name] = _variant_metrics([decisions[i] for i in idx], [probs[i] for i in idx], bootstrap, seed)
    return per_task


def _flipped(runs: Sequence["np.ndarray"]) -> bool:
    """Whether the argmax changed with the option order."""
    import numpy as np

    return len({int(np.argmax(r)) for r in runs}) > 1


def _average_orders(
    decisions: Sequence["Decision"], permuted: dict[tuple[str, str], list["np.ndarray"]]
) -> tuple[list[int], list["np.ndarray"], dict[str, Any]]:
    """The rows asked under several option orders, their probabilities averaged over orders, and the summary."""
    import numpy as np

    rows: list[int] = []
    averaged: list[np.ndarray] = []
    flips: list[bool] = []
    for i, d in enumerate(decisions):
        runs = permuted.get((d.id, d.qid))
        if runs:
            rows.append(i)
            averaged.append(np.mean(runs, axis=0))
            flips.append(_flipped(runs))
    summary = {
        "decisions": len(rows),
        "orders": max((len(v) for v in permuted.values()), default=0),
        "flip_rate": float(np.mean(flips)) if flips else float("nan"),
    }
    return rows, averaged, summary


def _permuted_metrics(
    decisions: Sequence["Decision"], permuted: dict[tuple[str, str], list["np.ndarray"]], rows: Sequence[int],
    averaged: Sequence["np.ndarray"], task: str, bootstrap: int, seed: int,
) -> dict[str, Any] | None:
    """Metrics of the order-averaged probabilities of one task's rows (or "all"), with their flip rate."""
    import numpy as np

    sel = [(i, p) for i, p in zip(rows, averaged, strict=True) if task in ("all", decisions[i].task)]
    if not sel:
        return None
    flips = [_flipped(permuted[(decisions[i].id, decisions[i].qid)]) for i, _ in sel]
    metrics = _variant_metrics([decisions[i] for i, _ in sel], [p for _, p in sel], bootstrap, seed)
    metrics["flip_rate"] = float(np.mean(flips))
    return metrics


def evaluate_workload(
    engine: "DecisionEngine",
    items: Sequence[LabeledItem],
    *,
    calibrate: bool = False,
    folds: int = 5,
    permute: int = 0,
    debias: bool = False,
    baseline: bool = True,
    bootstrap: int = 500,
    seed: int = 0,
    progress: bool = True,
) -> tuple[dict[str, Any], list["Decision"], dict[str, list[float]] | None]:
    """Score, optionally debias / permute / run the baseline, and build the report (plus decisions and priors)."""
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    decisions = score_decisions(engine, items, progress)
    timings["readout_s"] = time.perf_counter() - t0
    priors = None
    if debias:
        t0 = time.perf_counter()
        priors = score_content_free(engine, items, progress=progress)
        timings["content_free_s"] = time.perf_counter() - t0
    permuted = None
    if permute and permute > 1:
        t0 = time.perf_counter()
        permuted = score_permutations(engine, items, permute, progress, original={(d.id, d.qid): d.probabilities for d in decisions})
        timings["permute_s"] = time.perf_counter() - t0
    report = evaluate_decisions(decisions, calibrate=calibrate, folds=folds, priors=priors, permuted=permuted,
                                bootstrap=bootstrap, seed=seed)
    if baseline:
        t0 = time.perf_counter()
        report["json_baseline"] = run_json_baseline(engine.settings, engine.model_path, items, progress)
        timings["json_baseline_s"] = time.perf_counter() - t0
    report["model"] = {
        "id": engine.model_id, "file": engine.model_path.name, "sha256": hash_file(engine.model_path),
        **{k: v for k, v in engine.model_info.items() if k in ("name", "prompt_version", "threads", "n_ctx")},
    }
    report["options"] = {"calibrate": calibrate, "folds": folds, "permute": permute, "debias": debias,
                         "content_free_states": list(CONTENT_FREE_STATES) if debias else [], "bootstrap": bootstrap, "seed": seed}
    report["counts"] = {"requests": len(items), "decisions": len(decisions), "states": len({d.group_id for d in decisions})}
    report["timing"] = {k: round(v, 2) for k, v in timings.items()}
    report["decisions"] = [d.to_json() for d in decisions]  # enough to refit or re-plot without the model
    report["priors"] = priors
    return report, decisions, priors


def load_decisions(report: dict[str, Any]) -> tuple[list["Decision"], dict[str, list[float]] | None]:
    """The raw decisions and content-free priors saved in a report: refit or re-plot without loading the model."""
    from .calibration import Decision

    return [Decision.from_json(row) for row in report.get("decisions", [])], report.get("priors")


def write_calibration(*args: Any, **kwargs: Any) -> Path:
    """Save the calibration file the engine loads (`calibration_file.write_calibration`, which says what it keeps)."""
    from .calibration_file import write_calibration as write

    return write(*args, **kwargs)


# --------------------------------------------------------------------- CLI
def _json_default(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def describe_command(args: Any) -> str:
    """The `semif eval` command line that reproduces a report (flags at non-default values only)."""
    parts = ["semif eval"] + [str(p) for p in args.input]
    for flag in ("calibrate", "debias", "no_baseline", "quiet"):
        if getattr(args, flag):
            parts.append("--" + flag.replace("_", "-"))
    for flag, default in (("folds", 5), ("coverage", DEFAULT_TARGET_COVERAGE), ("max_error", DEFAULT_MAX_ERROR), ("permute", 0),
                          ("bootstrap", 500), ("seed", 0), ("limit", None), ("sample", None), ("model", None), ("threads", None),
                          ("n_ctx", None), ("output", None), ("plot", None), ("calibration_out", None)):
        value = getattr(args, flag, None)
        if value != default:
            parts += ["--" + flag.replace("_", "-"), str(value)]
    return " ".join(parts)


def command_eval(args: Any) -> int:
    """`semif eval`: score the labeled lines, print the report; `--calibrate` writes a calibration file, `--output` the report."""
    from ...decision.engine import DecisionEngine

    items, warning = read_labeled_limited(args.input, args.limit)
    lines = len(items)
    if args.sample is not None:
        items, warning = stratified_subset(items, args.sample, args.seed), None  # the sample's own subset, stratified
    if warning:
        print(warning, file=sys.stderr)
    states = len({item.group_id for item in items})
    if args.calibrate and states < 2:
        raise InvalidRequestError(f"--calibrate fits out of fold, grouped by state, and needs labeled lines from at least 2 states; "
                                  f"the input has {states}", field="calibrate")
    settings = load_settings(**engine_overrides(args)).model_copy(update={"calibration": None})  # always measure raw
    started = time.perf_counter()
    with DecisionEngine(settings) as engine:
        report, decisions, priors = evaluate_workload(
            engine, items, calibrate=args.calibrate, folds=args.folds, permute=args.permute, debias=args.debias,
            baseline=not args.no_baseline, bootstrap=args.bootstrap, seed=args.seed, progress=not args.quiet,
        )
    report["command"] = describe_command(args)
    report["options"]["sample"] = args.sample
    report["counts"]["lines_read"] = lines
    if warning:
        report["warnings"] = [warning]  # the stored report says it too, not only the terminal
    report["inputs"] = [str(p) for p in args.input]
    report["timing"]["total_s"] = round(time.perf_counter() - started, 2)
    print(f"model {report['model']['id']} (sha256 {report['model']['sha256'][:12]}), {len(items)} requests, "
          f"{report['counts']['decisions']} decisions, {report['timing']['total_s']:.0f} s", file=sys.stderr)
    print(format_report(report))

    if args.calibrate:
        from .calibration_file import calibrate_report

        target = args.calibration_out or settings.results_dir / "calibration" / f"{report['model']['id']}.json"
        calibrate_report(report, decisions, priors, target, [str(p) for p in args.input], (args.coverage, args.max_error))
    plot = args.plot or (args.output.with_suffix(".png") if args.output else None)
    if plot:
        plot_reliability(reliability_sets(decisions, report, priors), plot,
                         title=f"{report['model']['id']}: {report['counts']['decisions']} labeled decisions")
        report["plot"] = str(plot)
        print(f"wrote {plot}", file=sys.stderr)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(report, indent=2, default=_json_default) + "\n", encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    return 0


def command_calibrate(args: Any) -> int:
    """`semif calibrate REPORT`: the calibration file refitted from a stored `semif eval` report's decisions, without the model."""
    from .calibration_file import calibrate_report

    stored = json.loads(Path(args.report).read_text(encoding="utf-8"))
    decisions, priors = load_decisions(stored)
    options = {**stored.get("options", {}), "calibrate": True}
    report = evaluate_decisions(decisions, calibrate=True, folds=options.get("folds", 5), priors=priors, bootstrap=args.bootstrap,
                                seed=options.get("seed", 0))
    report.update(model=stored["model"], options=options, counts=stored.get("counts", {}), inputs=stored.get("inputs", []),
                  source_command=stored.get("command"), command=f"semif calibrate {args.report} --calibration-out {args.calibration_out}"
                  + "".join(f" --{k.replace('_', '-')} {getattr(args, k)}" for k in ("coverage", "max_error", "bootstrap", "output")
                            if getattr(args, k) is not None))
    print(format_report(report))
    calibrate_report(report, decisions, priors, args.calibration_out, stored.get("inputs") or [str(args.report)],
                     (args.coverage, args.max_error))
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps({**report, "decisions": stored.get("decisions", []), "priors": priors}, indent=2,
                                          default=_json_default) + "\n", encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    return 0
