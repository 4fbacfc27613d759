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

Heavy imports (numpy, pandas, matplotlib, llama_cpp) stay inside functions: `semif --help`
imports this module.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from ..arguments import add_engine_arguments, engine_overrides
from ..errors import InvalidRequestError
from ..jsonlines import read_lines

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from ..decision.engine import DecisionEngine
    from ..settings import Settings
    from .calibration import Decision

__all__ = [
    "LabeledItem", "evaluate_decisions", "evaluate_workload", "format_report", "load_decisions", "plot_reliability",
    "read_labeled", "register_cli", "reliability_sets", "write_calibration",
]

CONTENT_FREE_STATES = ("N/A", "", "[MASK]")
RECALL_TASKS = ("code_search",)


@dataclass
class LabeledItem:
    """One labeled request line: the request itself, and the expected answer per question id."""

    id: str
    group_id: str
    task: str
    request: dict[str, Any]
    labels: dict[str, Any]


def read_labeled(paths: Sequence[Path | str], limit: int | None = None) -> list[LabeledItem]:
    """Labeled JSON Lines (see data/labeled/README.md); `limit` keeps the first N lines of each file."""
    from ..decision.schema import parse_json_bytes, parse_request

    items: list[LabeledItem] = []
    for path in paths:
        path = Path(path)
        count = 0
        for number, line in read_lines(path):
            if limit is not None and count >= limit:
                break
            where = f"{path.name}:{number}"
            try:
                data = parse_json_bytes(line)
            except InvalidRequestError as exc:
                raise InvalidRequestError(f"{where}: {exc.message}", field="input") from None
            if not isinstance(data, dict):
                raise InvalidRequestError(f"{where}: a labeled line is a JSON object", field="input")
            labels = data.get("labels")
            if not isinstance(labels, dict) or not labels:
                raise InvalidRequestError(f"{where}: a labeled line needs \"labels\": {{QID: expected}}", field="labels")
            request = {k: v for k, v in data.items() if k in ("state", "questions")}
            parsed = parse_request(request)
            for qid, expected in labels.items():
                if qid not in parsed.questions:
                    raise InvalidRequestError(f"{where}: label for unknown question {qid!r}", field=f"labels.{qid}")
                label_to_index(parsed.questions[qid], expected, where)
            item_id = str(data.get("id", f"{path.stem}-{number}"))
            items.append(LabeledItem(item_id, str(data.get("group_id", item_id)), str(data.get("task", path.stem)), request, labels))
            count += 1
    if not items:
        raise InvalidRequestError("no labeled lines found", field="input")
    return items


def label_to_index(question: Any, expected: Any, where: str = "") -> int:
    """Index of the expected answer among the question's options (true=0/false=1, option name, level)."""
    kind = question.type
    if kind == "noul" and isinstance(expected, bool):
        return 0 if expected else 1
    if kind == "choice" and isinstance(expected, str) and expected in question.criteria:
        return list(question.criteria).index(expected)
    if kind == "score" and isinstance(expected, int) and not isinstance(expected, bool) and 0 <= expected < len(question.criteria):
        return expected
    raise InvalidRequestError(f"{where}: label {expected!r} is not a valid answer to a {kind} question", field="labels")


# ------------------------------------------------------------------ scoring
def score_decisions(engine: "DecisionEngine", items: Sequence[LabeledItem], progress: bool = True) -> list["Decision"]:
    """Raw logits for every labeled question (the engine must have no calibration attached)."""
    import numpy as np
    from tqdm.auto import tqdm

    from ..decision.calibrator import hash_question
    from ..decision.prompt import plan_question
    from ..decision.schema import parse_request
    from .calibration import Decision

    out: list[Decision] = []
    for item in tqdm(items, desc="readout", unit="req", file=sys.stderr, disable=not progress):
        request = parse_request(item.request)
        response = engine.score(request, include_logits=True)
        for qid, expected in item.labels.items():
            question = request.questions[qid]
            answer = response.answers[qid]
            plan = plan_question(qid, question, engine.renderer.slot_prefix, engine.letter_slots)
            out.append(Decision(
                id=item.id, group_id=item.group_id, task=item.task, qid=qid, kind=question.type,
                keys=list(answer.probabilities), label=label_to_index(question, expected),
                logits=np.asarray(answer.logits, dtype=np.float64), option_mass=float(answer.option_mass),
                question_hash=hash_question(plan.block, plan.kind),
            ))
    return out


def score_content_free(
    engine: "DecisionEngine", items: Sequence[LabeledItem], states: Sequence[str] = CONTENT_FREE_STATES, progress: bool = True
) -> dict[str, list[float]]:
    """Option prior per distinct question: probabilities averaged over content-free states (Zhao et al. 2021)."""
    import numpy as np
    from tqdm.auto import tqdm

    from ..decision.calibrator import hash_question
    from ..decision.prompt import plan_question
    from ..decision.schema import parse_request

    todo: dict[str, tuple[str, dict[str, Any]]] = {}
    for item in items:
        request = parse_request(item.request)
        for qid in item.labels:
            plan = plan_question(qid, request.questions[qid], engine.renderer.slot_prefix, engine.letter_slots)
            todo.setdefault(hash_question(plan.block, plan.kind), (qid, item.request["questions"][qid]))
    priors: dict[str, list[float]] = {}
    keys = list(todo)
    chunk = 16  # questions per content-free request: one tiny prefix, many short branches
    bar = tqdm(total=len(keys) * len(states), desc="content-free", unit="q", file=sys.stderr, disable=not progress)
    for start in range(0, len(keys), chunk):
        part = keys[start:start + chunk]
        questions = {f"q{i}": todo[h][1] for i, h in enumerate(part)}
        sums = {h: None for h in part}
        for state in states:
            response = engine.score({"state": state, "questions": questions})
            for i, h in enumerate(part):
                p = np.asarray(list(response.answers[f"q{i}"].probabilities.values()), dtype=np.float64)
                sums[h] = p if sums[h] is None else sums[h] + p
            bar.update(len(part))
        for h in part:
            priors[h] = [float(x) for x in sums[h] / len(states)]
    bar.close()
    return priors


def rotate_options(criteria: dict[str, Any], shift: int) -> dict[str, Any]:
    names = list(criteria)
    shift %= len(names)
    return {n: criteria[n] for n in names[shift:] + names[:shift]}


def score_permutations(
    engine: "DecisionEngine", items: Sequence[LabeledItem], rotations: int, progress: bool = True,
    original: dict[tuple[str, str], "np.ndarray"] | None = None,
) -> dict[tuple[str, str], list["np.ndarray"]]:
    """Probabilities (in the original option order) of each choice question under `rotations` option orders.

    Rotation 0 is the original order (taken from `original` when the readout already has it);
    a question with k options gets at most k distinct rotations.
    """
    import numpy as np
    from tqdm.auto import tqdm

    out: dict[tuple[str, str], list[np.ndarray]] = {}
    choice_items = [it for it in items if any(it.request["questions"][q].get("type") == "choice" for q in it.labels)]
    for item in tqdm(choice_items, desc=f"permute x{rotations}", unit="req", file=sys.stderr, disable=not progress):
        qids = [q for q in item.labels if item.request["questions"][q].get("type") == "choice"]
        n_opts = min(len(item.request["questions"][q]["criteria"]) for q in qids)
        for shift in range(min(rotations, n_opts)):
            if shift == 0 and original is not None and all((item.id, q) in original for q in qids):
                for q in qids:
                    out.setdefault((item.id, q), []).append(original[(item.id, q)])
                continue
            questions = {q: {**item.request["questions"][q], "criteria": rotate_options(item.request["questions"][q]["criteria"], shift)} for q in qids}
            response = engine.score({"state": item.request["state"], "questions": questions})
            for q in qids:
                probs = response.answers[q].probabilities
                out.setdefault((item.id, q), []).append(np.asarray([probs[n] for n in item.request["questions"][q]["criteria"]]))
    return out


def run_json_baseline(settings: "Settings", model_path: Path | str, items: Sequence[LabeledItem], progress: bool = True) -> dict[str, Any]:
    """Greedy JSON generation on the same model (cold: `reset()` before each request), scored per task."""
    from tqdm.auto import tqdm

    from ..decision.schema import parse_request
    from .baseline import generate_json_answers, open_chat_model

    llm = open_chat_model(settings, model_path)
    per_task: dict[str, dict[str, float]] = {}
    try:
        for item in tqdm(items, desc="json baseline", unit="req", file=sys.stderr, disable=not progress):
            request = parse_request(item.request)
            result = generate_json_answers(llm, request)
            t = per_task.setdefault(item.task, {"requests": 0, "invalid_json": 0, "incomplete": 0, "decisions": 0, "correct": 0, "unparsed": 0, "seconds": 0.0, "output_tokens": 0})
            t["requests"] += 1
            t["invalid_json"] += int(not result.valid_json)
            t["incomplete"] += int(not result.complete)
            t["seconds"] += result.seconds
            t["output_tokens"] += result.output_tokens
            for qid, expected in item.labels.items():
                got = result.answers.get(qid)
                t["decisions"] += 1
                t["unparsed"] += int(got is None)
                t["correct"] += int(got is not None and got == expected and type(got) is type(expected))
    finally:
        llm.close() if hasattr(llm, "close") else None
    return {task: _summarise_baseline(t) for task, t in per_task.items()} | {"all": _summarise_baseline(_sum_counts(per_task.values()))}


def _sum_counts(rows: Any) -> dict[str, float]:
    total: dict[str, float] = {}
    for row in rows:
        for k, v in row.items():
            total[k] = total.get(k, 0) + v
    return total


def _summarise_baseline(t: dict[str, float]) -> dict[str, float]:
    return {
        "requests": int(t["requests"]),
        "decisions": int(t["decisions"]),
        "accuracy": t["correct"] / t["decisions"] if t["decisions"] else float("nan"),
        "invalid_json_rate": t["invalid_json"] / t["requests"] if t["requests"] else float("nan"),
        "incomplete_rate": t["incomplete"] / t["requests"] if t["requests"] else float("nan"),
        "unparsed_answer_rate": t["unparsed"] / t["decisions"] if t["decisions"] else float("nan"),
        "seconds_per_request": t["seconds"] / t["requests"] if t["requests"] else float("nan"),
        "output_tokens_per_request": t["output_tokens"] / t["requests"] if t["requests"] else float("nan"),
    }


# ------------------------------------------------------------------ report
def _variant_metrics(decisions: Sequence["Decision"], probs: Sequence["np.ndarray"], bootstrap: int, seed: int) -> dict[str, Any]:
    from .calibration import bootstrap_metrics, compute_metrics

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
    import numpy as np

    from ..decision.calibrator import apply_temperature, remove_prior
    from ..decision.readout import softmax
    from .calibration import fit_temperatures, predict_out_of_fold

    variants: dict[str, list[np.ndarray]] = {"raw": [d.probabilities for d in decisions]}
    base = None
    if priors is not None:
        base = lambda d: remove_prior(d.logits, priors[d.question_hash])  # noqa: E731
        variants["debiased"] = [softmax(base(d)) for d in decisions]
    extra: dict[str, Any] = {}
    if calibrate:
        oof, fold_temps = predict_out_of_fold(decisions, folds=folds, seed=seed, transform=base)
        variants["calibrated_oof"] = oof
        extra["fold_temperatures"] = fold_temps
    perm_rows: list[int] = []
    if permuted:
        averaged = []
        flips = []
        for i, d in enumerate(decisions):
            runs = permuted.get((d.id, d.qid))
            if runs:
                perm_rows.append(i)
                averaged.append(np.mean(runs, axis=0))
                flips.append(len({int(np.argmax(r)) for r in runs}) > 1)
        extra["permutation"] = {
            "decisions": len(perm_rows),
            "orders": max((len(v) for v in permuted.values()), default=0),
            "flip_rate": float(np.mean(flips)) if flips else float("nan"),
        }
        extra["_permuted"] = (perm_rows, averaged)

    tasks = sorted({d.task for d in decisions})
    report: dict[str, Any] = {"tasks": {}, "overall": {}}
    for name, probs in variants.items():
        for task in tasks + ["all"]:
            idx = [i for i, d in enumerate(decisions) if task in ("all", d.task)]
            report["tasks"].setdefault(task, {})[name] = _variant_metrics([decisions[i] for i in idx], [probs[i] for i in idx], bootstrap, seed)
    if permuted and perm_rows:
        rows, averaged = extra.pop("_permuted")
        for task in tasks + ["all"]:
            sel = [(i, p) for i, p in zip(rows, averaged) if task in ("all", decisions[i].task)]
            if sel:
                flips_task = [len({int(np.argmax(r)) for r in permuted[(decisions[i].id, decisions[i].qid)]}) > 1 for i, _ in sel]
                m = _variant_metrics([decisions[i] for i, _ in sel], [p for _, p in sel], bootstrap, seed)
                m["flip_rate"] = float(np.mean(flips_task))
                report["tasks"][task]["permuted_mean"] = m
    else:
        extra.pop("_permuted", None)
    report["overall"] = report["tasks"].pop("all")
    if calibrate:
        fitted = [d if base is None else type(d)(**{**d.__dict__, "logits": base(d)}) for d in decisions]
        report["temperatures"] = fit_temperatures(fitted)
        final = [apply_temperature(f.logits, report["temperatures"].get(f.kind, 1.0)) for f in fitted]
        report["argmax_unchanged_by_temperature"] = bool(all(int(np.argmax(p)) == int(np.argmax(f.logits)) for p, f in zip(final, fitted)))
    report.update(extra)
    return report


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
    from ..modelfile import hash_file

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
    report = evaluate_decisions(decisions, calibrate=calibrate, folds=folds, priors=priors, permuted=permuted, bootstrap=bootstrap, seed=seed)
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
    report["decisions"] = [dump_decision(d) for d in decisions]  # enough to refit or re-plot without the model
    report["priors"] = priors
    return report, decisions, priors


def dump_decision(d: "Decision") -> dict[str, Any]:
    return {"id": d.id, "group_id": d.group_id, "task": d.task, "qid": d.qid, "kind": d.kind, "keys": d.keys, "label": d.label,
            "logits": [round(float(x), 5) for x in d.logits], "option_mass": round(d.option_mass, 6), "question_hash": d.question_hash}


def load_decisions(report: dict[str, Any]) -> tuple[list["Decision"], dict[str, list[float]] | None]:
    """The raw decisions and content-free priors saved in a report: refit or re-plot without loading the model."""
    import numpy as np

    from .calibration import Decision

    decisions = [Decision(**{**row, "logits": np.asarray(row["logits"], dtype=np.float64)}) for row in report.get("decisions", [])]
    return decisions, report.get("priors")


def format_report(report: dict[str, Any]) -> str:
    """The metrics table: one row per task and variant, then the overall rows and the extras."""
    import pandas as pd

    rows = []
    for task, variants in list(report["tasks"].items()) + [("ALL", report["overall"])]:
        for name, m in variants.items():
            ci = m.get("ci95", {}).get("accuracy")
            acc = f"{m['accuracy']:.2f}" + (f" [{ci[0]:.2f},{ci[1]:.2f}]" if ci else "")
            rows.append({
                "task": task, "variant": name, "n": m["n"], "acc [95% CI]": acc,
                "bal_acc": round(m["balanced_accuracy"], 2), "R@1": round(m["recall_at_1"], 2) if "recall_at_1" in m else "",
                "chance": round(m["chance"], 2), "ECE": round(m["ece"], 3), "Brier": round(m["brier"], 3), "NLL": round(m["nll"], 3),
                "conf_err": round(m["confident_error_rate"], 3), "top_share": round(m["top_share"], 2),
                "mass": round(m["option_mass_mean"], 3), "flip": round(m["flip_rate"], 2) if "flip_rate" in m else "", "invalid": "",
            })
        base = report.get("json_baseline", {}).get(task if task != "ALL" else "all")
        if base:
            rows.append({"task": task, "variant": "json_generation", "n": base["decisions"], "acc [95% CI]": f"{base['accuracy']:.2f}",
                         "bal_acc": "", "R@1": "", "chance": "", "ECE": "", "Brier": "", "NLL": "", "conf_err": "", "top_share": "",
                         "mass": "", "flip": "", "invalid": round(base["invalid_json_rate"], 2)})
    text = pd.DataFrame(rows).astype(str).to_string(index=False)
    lines = [text]
    if "temperatures" in report:
        from .calibration import TEMPERATURE_BOUNDS

        temps = ", ".join(f"{k}={v:.3g}" for k, v in report["temperatures"].items())
        lines.append(f"fitted temperatures (all rows): {temps}")
        if any(v >= 0.99 * TEMPERATURE_BOUNDS[1] for v in report["temperatures"].values()):
            lines.append(f"  T at the upper bound {TEMPERATURE_BOUNDS[1]:g}: the ranking carries almost no information, so calibration flattens it to the base rate")
        if any(v <= 1.01 * TEMPERATURE_BOUNDS[0] for v in report["temperatures"].values()):
            lines.append(f"  T at the lower bound {TEMPERATURE_BOUNDS[0]:g}: the fit rows are (nearly) all right; add labeled rows before trusting it")
    if "permutation" in report:
        p = report["permutation"]
        lines.append(f"option-order rotations: {p['orders']} per choice question, argmax flip rate {p['flip_rate']:.2f} over {p['decisions']} decisions")
    return "\n".join(lines)


def format_markdown(report: dict[str, Any]) -> str:
    """Two Markdown tables for a README: decisions per workload, then calibration (raw against out of fold)."""

    def cell(m: dict[str, Any] | None, key: str, digits: int = 2) -> str:
        return f"{m[key]:.{digits}f}" if m and key in m and m[key] == m[key] else "-"

    rows = list(report["tasks"].items()) + [("**all**", report["overall"])]
    base = report.get("json_baseline", {})
    out = ["| workload | n | chance | accuracy [95% CI] | balanced acc. | top-slot share | debiased acc. | order-averaged acc. | argmax flips | JSON-generation acc. | invalid JSON |",
           "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for task, v in rows:
        raw = v["raw"]
        ci = raw.get("ci95", {}).get("accuracy")
        acc = f"{raw['accuracy']:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")
        if task == "code_search":
            acc += " (R@1)"
        b = base.get("all" if task == "**all**" else task)
        out.append(f"| {task} | {raw['n']} | {raw['chance']:.2f} | {acc} | {cell(raw, 'balanced_accuracy')} | {cell(raw, 'top_share')} | "
                   f"{cell(v.get('debiased'), 'accuracy')} | {cell(v.get('permuted_mean'), 'accuracy')} | {cell(v.get('permuted_mean'), 'flip_rate')} | "
                   f"{cell(b, 'accuracy')} | {cell(b, 'invalid_json_rate')} |")
    out += ["", "| workload | ECE raw → calibrated | Brier raw → calibrated | NLL raw → calibrated | confident errors (p ≥ 0.9) | mean option mass |",
            "|---|---|---|---|---:|---:|"]
    for task, v in rows:
        raw, cal = v["raw"], v.get("calibrated_oof")
        out.append(f"| {task} | {cell(raw, 'ece', 3)} → {cell(cal, 'ece', 3)} | {cell(raw, 'brier', 3)} → {cell(cal, 'brier', 3)} | "
                   f"{cell(raw, 'nll', 3)} → {cell(cal, 'nll', 3)} | {cell(raw, 'confident_error_rate', 3)} | {cell(raw, 'option_mass_mean', 3)} |")
    return "\n".join(out)


def plot_reliability(sets: dict[str, tuple[Sequence[float], Sequence[bool]]], path: Path | str, title: str = "") -> Path:
    """Reliability diagram (top) and top-1 confidence histogram (bottom), one column per variant."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from .calibration import N_BINS, compute_ece, compute_reliability

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
        ax.plot([b["confidence"] for b in bins if b["count"]], [b["accuracy"] for b in bins if b["count"]], "o", color="#dd8452", label="mean conf.")
        for x, b in zip(centers, bins):  # a bar over one decision is noise: say how many it holds
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
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def collect_reliability_sets(report_decisions: Sequence["Decision"], variants: dict[str, Sequence["np.ndarray"]]) -> dict[str, tuple[list[float], list[bool]]]:
    """(top-1 confidence, correct) per variant, ready for `plot_reliability`."""
    import numpy as np

    out = {}
    for name, probs in variants.items():
        conf = [float(np.max(p)) for p in probs]
        correct = [int(np.argmax(p)) == d.label for p, d in zip(probs, report_decisions)]
        out[name] = (conf, correct)
    return out


def variant_probabilities(decisions: Sequence["Decision"], report: dict[str, Any], priors: dict[str, list[float]] | None, folds: int, seed: int) -> dict[str, list["np.ndarray"]]:
    """Recompute the per-decision probabilities of raw / debiased / out-of-fold calibrated (deterministic) for plots."""
    from ..decision.calibrator import remove_prior
    from ..decision.readout import softmax
    from .calibration import predict_out_of_fold

    out: dict[str, list[Any]] = {"raw": [d.probabilities for d in decisions]}
    base = (lambda d: remove_prior(d.logits, priors[d.question_hash])) if priors is not None else None  # noqa: E731
    if base is not None:
        out["debiased"] = [softmax(base(d)) for d in decisions]
    if "temperatures" in report:
        out["calibrated (out of fold)"] = predict_out_of_fold(decisions, folds=folds, seed=seed, transform=base)[0]
    return out


def reliability_sets(decisions: Sequence["Decision"], report: dict[str, Any], priors: dict[str, list[float]] | None = None) -> dict[str, tuple[list[float], list[bool]]]:
    """(confidence, correct) for raw, debiased and out-of-fold calibrated answers, with the report's folds and seed."""
    options = report.get("options", {})
    variants = variant_probabilities(decisions, report, priors, options.get("folds", 5), options.get("seed", 0))
    return collect_reliability_sets(decisions, variants)


def write_calibration(
    decisions: Sequence["Decision"], report: dict[str, Any], priors: dict[str, list[float]] | None, path: Path | str, source: Sequence[str] = ()
) -> Path:
    """Fit the temperatures on every row (after the content-free priors, if any) and save the file the engine loads."""
    from .calibration import build_calibration, save_calibration

    summary = {name: {k: v for k, v in m.items() if k != "ci95"} for name, m in report["overall"].items()}
    doc = build_calibration(decisions, report["model"]["sha256"], report["model"]["file"], priors=priors,
                            metrics={"overall": summary, "out_of_fold": bool(report.get("options", {}).get("calibrate"))}, source=source)
    return save_calibration(json.loads(json.dumps(doc, default=_json_default)), path)


# --------------------------------------------------------------------- CLI
def _json_default(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def describe_command(args: argparse.Namespace) -> str:
    """The `semif eval` command line that reproduces a report (flags at non-default values only)."""
    parts = ["semif eval"] + [str(p) for p in args.input]
    for flag in ("calibrate", "debias", "no_baseline", "quiet"):
        if getattr(args, flag):
            parts.append("--" + flag.replace("_", "-"))
    for flag, default in (("folds", 5), ("permute", 0), ("bootstrap", 500), ("seed", 0), ("limit", None), ("model", None),
                          ("threads", None), ("n_ctx", None), ("output", None), ("plot", None), ("calibration_out", None)):
        value = getattr(args, flag, None)
        if value != default:
            parts += ["--" + flag.replace("_", "-"), str(value)]
    return " ".join(parts)


def command_eval(args: argparse.Namespace) -> int:
    from ..decision.engine import DecisionEngine
    from ..settings import load_settings

    items = read_labeled(args.input, limit=args.limit)
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
    report["inputs"] = [str(p) for p in args.input]
    report["timing"]["total_s"] = round(time.perf_counter() - started, 2)
    print(f"model {report['model']['id']} (sha256 {report['model']['sha256'][:12]}), {len(items)} requests, "
          f"{report['counts']['decisions']} decisions, {report['timing']['total_s']:.0f} s", file=sys.stderr)
    print(format_report(report))

    if args.calibrate:
        target = args.calibration_out or settings.results_dir / "calibration" / f"{report['model']['id']}.json"
        write_calibration(decisions, report, priors, target, [str(p) for p in args.input])
        report["calibration_file"] = str(target)
        print(f"wrote calibration file {target} (use it with SEMIF_CALIBRATION={target})", file=sys.stderr)
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


def register_cli(subparsers: Any) -> None:
    p = subparsers.add_parser("eval", help="decision quality on labeled JSON Lines: accuracy, ECE, Brier, NLL; calibrate, debias, permute")
    p.add_argument("input", nargs="+", type=Path, help="labeled JSON Lines files (data/labeled/*.jsonl)")
    p.add_argument("--calibrate", action="store_true", help="out-of-fold temperature scaling per question type, and write a calibration file")
    p.add_argument("--folds", type=int, default=5, help="grouped k-fold splits for out-of-fold calibration (default 5)")
    p.add_argument("--permute", type=int, default=0, metavar="N", help="ask each choice question under N rotations of its option order")
    p.add_argument("--debias", action="store_true", help="contextual calibration: divide out the option prior read from content-free states")
    p.add_argument("--no-baseline", action="store_true", help="skip the JSON-generation baseline")
    p.add_argument("--bootstrap", type=int, default=500, help="bootstrap resamples (over states) for 95%% intervals; 0 = none")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--limit", type=int, help="use only the first N lines of each file")
    p.add_argument("--output", type=Path, help="write the full report as JSON (and the reliability plot next to it as .png)")
    p.add_argument("--plot", type=Path, help="reliability diagram + confidence histogram PNG (default: next to --output)")
    p.add_argument("--calibration-out", type=Path, dest="calibration_out", help="where --calibrate writes the calibration file (default: results/calibration/MODEL.json)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    add_engine_arguments(p)
    p.set_defaults(func=command_eval)
