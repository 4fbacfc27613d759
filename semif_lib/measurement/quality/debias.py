"""`semif bench debias`: four ways to take the option order out of a choice answer, side by side in one run.

The labeled sets' choice requests are split in two halves of whole requests (every other one). On the first half each
question is read in all n cyclic orders of its options (n rotated copies as separate questions on one prefix, no
debiasing), and the position prior per option count is estimated from them (`decision.position_prior`, PriDe). On the
second half, each request is answered four ways:

- **none**: the request's order only (`x_debias: "none"`);
- **content-free**: the same questions asked of a content-free state ("N/A") as a second request, whose distribution is
  divided out option by option: the exact prior of this very question (Zhao et al. 2021), at the price of its branches
  again on a short cached prefix;
- **prior**: `x_debias: "prior"`, the estimated position prior divided out of the slot logits: no extra work;
- **rotations**: `x_debias: "rotations"` with K cyclic orders averaged.

For each arm: the flip rate (the share of questions whose answer changes when the options are shifted by one place),
accuracy against the labels, ECE of the top probability, and seconds per request from a cold prefix cache, the arms
taking turns at going first. The target (issue 34): the prior arm reaches at least half of the rotations arm's flip-rate
reduction at no more than 1.1x the plain request's time.

`command_debias` writes `results/bench/debias-<model>.json`, and with `--calibration-out FILE` the prior into a
calibration file (merged into one that exists for this model, else a new one holding the prior alone).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ...arguments import engine_overrides
from ...decision.position_prior import estimate_position_priors
from ...decision.prompt import rotate_criteria
from ...decision.schema import DEFAULT_ROTATIONS
from ...model.locate import hash_file
from ...settings import load_settings
from ..conditions import write_results_file
from .labeled import LabeledItem, read_labeled_limited
from .metrics import compute_ece

if TYPE_CHECKING:
    from ...decision.engine import DecisionEngine

__all__ = ["ARMS", "command_debias", "estimate_priors", "format_debias", "run_debias", "split_items"]

ARMS = ("none", "content-free", "prior", "rotations")
CONTENT_FREE_STATE = "N/A"  # one of the content-free states `semif eval --debias` averages (quality.scoring)
FLIP_SHARE_TARGET = 0.5  # the prior arm's flip-rate reduction, as a share of the rotations arm's
COST_TARGET = 1.1  # the prior arm's time, as a multiple of the plain request's


def _choices(item: LabeledItem) -> dict[str, dict[str, Any]]:
    asked = item.request["questions"]
    return {qid: asked[qid] for qid in item.labels if asked[qid].get("type") == "choice"}


def split_items(items: Sequence[LabeledItem]) -> tuple[list[LabeledItem], list[LabeledItem]]:
    """The requests with choice questions, every other one to the calibration half (input order kept)."""
    usable = [item for item in items if _choices(item)]
    return usable[0::2], usable[1::2]


def _position_orders(engine: "DecisionEngine", item: LabeledItem) -> dict[int, list[list[float]]]:
    """Each choice question read in all n cyclic orders (one request, the copies as questions), by option count:
    the probabilities in displayed order, as the position prior needs them."""
    questions = {}
    for qid, q in _choices(item).items():
        for shift in range(len(q["criteria"])):
            questions[f"{qid}@{shift}"] = {**q, "criteria": rotate_criteria(q["criteria"], shift), "x_debias": "none"}
    answers = engine.ask({"state": item.request["state"], "questions": questions}).answers
    orders: dict[str, list[list[float]]] = {}
    for key, answer in answers.items():
        orders.setdefault(key.rsplit("@", 1)[0], []).append(list(answer.probabilities.values()))
    by_count: dict[int, list[list[float]]] = {}
    for rows in orders.values():
        by_count.setdefault(len(rows), []).append(rows)
    return by_count


def estimate_priors(engine: "DecisionEngine", items: Sequence[LabeledItem],
                    progress: bool = True) -> tuple[dict[int, list[float]], dict[int, int]]:
    """The position prior per option count from `items` (all n orders of each choice question), and how many questions
    each rests on."""
    from tqdm.auto import tqdm

    samples: dict[int, list[Any]] = {}
    for item in tqdm(items, desc="debias: position prior", unit="req", file=sys.stderr, disable=not progress):
        for n, questions in _position_orders(engine, item).items():
            samples.setdefault(n, []).extend(questions)
    return estimate_position_priors(samples), {n: len(q) for n, q in samples.items()}


def _request(item: LabeledItem, shift: int, arm: str, rotations: int, state: str | None = None) -> dict[str, Any]:
    debias = {"none": {"x_debias": "none"}, "content-free": {"x_debias": "none"}, "prior": {"x_debias": "prior"},
              "rotations": {"x_debias": "rotations", "x_rotations": rotations}}[arm]
    questions = {qid: {**q, "criteria": rotate_criteria(q["criteria"], shift), **debias} for qid, q in _choices(item).items()}
    return {"state": item.request["state"] if state is None else state, "questions": questions}


def _answer(engine: "DecisionEngine", item: LabeledItem, shift: int, arm: str, rotations: int) -> dict[str, dict[str, float]]:
    """Each question's probabilities by option under `arm`; content-free divides out the content-free request's."""
    probs = {qid: dict(a.probabilities) for qid, a in engine.ask(_request(item, shift, arm, rotations)).answers.items()}
    if arm == "content-free":
        free = engine.ask(_request(item, shift, arm, rotations, CONTENT_FREE_STATE)).answers
        for qid, p in probs.items():
            ratio = {k: v / max(free[qid].probabilities[k], 1e-12) for k, v in p.items()}
            total = sum(ratio.values())
            probs[qid] = {k: v / total for k, v in ratio.items()}
    return probs


def run_debias(engine: "DecisionEngine", items: Sequence[LabeledItem], rotations: int = DEFAULT_ROTATIONS,
               progress: bool = True) -> dict[str, Any]:
    """Flip rate, accuracy, ECE and cold seconds per arm on `items` (the prior arm needs the engine's calibration to
    hold the position priors)."""
    from tqdm.auto import tqdm

    seconds = dict.fromkeys(ARMS, 0.0)
    flips, correct, confidence = ({a: [] for a in ARMS} for _ in range(3))
    for n, item in enumerate(tqdm(items, desc="debias: four arms", unit="req", file=sys.stderr, disable=not progress)):
        for arm in ARMS[n % len(ARMS):] + ARMS[:n % len(ARMS)]:  # each arm goes first in turn
            engine.clear_cache()
            started = time.perf_counter()
            first = _answer(engine, item, 0, arm, rotations)
            seconds[arm] += time.perf_counter() - started
            shifted = _answer(engine, item, 1, arm, rotations)
            for qid, p in first.items():
                top = max(p, key=p.get)
                flips[arm].append(top != max(shifted[qid], key=shifted[qid].get))
                correct[arm].append(top == item.labels[qid])
                confidence[arm].append(p[top])
    questions = len(flips["none"])
    summary: dict[str, Any] = {
        "requests": len(items), "choice_questions": questions, "rotations": rotations,
        "flip_rate": {a: round(float(np.mean(flips[a])), 3) for a in ARMS},
        "accuracy": {a: round(float(np.mean(correct[a])), 3) for a in ARMS},
        "ece": {a: round(compute_ece(confidence[a], correct[a]), 3) for a in ARMS},
        "seconds_per_request": {a: round(seconds[a] / max(1, len(items)), 3) for a in ARMS},
        "time_ratio": {a: round(seconds[a] / seconds["none"], 3) for a in ARMS},
    }
    summary["target"] = judge_target(summary)
    return summary


def judge_target(summary: dict[str, Any]) -> dict[str, Any]:
    """Whether the prior arm reached `FLIP_SHARE_TARGET` of rotations' flip-rate reduction within `COST_TARGET`x the time."""
    flips = summary["flip_rate"]
    gained = flips["none"] - flips["rotations"]
    share = (flips["none"] - flips["prior"]) / gained if gained > 0 else None
    cost = summary["time_ratio"]["prior"]
    return {"flip_share_at_least": FLIP_SHARE_TARGET, "time_ratio_at_most": COST_TARGET,
            "flip_share": round(share, 3) if share is not None else None,
            "met": bool(share is not None and share >= FLIP_SHARE_TARGET and cost <= COST_TARGET)}


def format_debias(summary: dict[str, Any]) -> str:
    """The results file as the table docs/quality.md quotes (a test holds the docs to the file)."""
    rows = [f"| {summary['model']['file']}, {summary['choice_questions']} choice questions | " + " | ".join(ARMS) + " |",
            "|---|" + "---:|" * len(ARMS)]
    for label, key, fmt in (("flip rate (options shifted one place)", "flip_rate", "{:.3f}"), ("accuracy", "accuracy", "{:.3f}"),
                            ("ECE of the top probability", "ece", "{:.3f}"), ("seconds per request, cold", "seconds_per_request", "{:.3f}"),
                            ("time against none", "time_ratio", "{:.2f}x")):
        rows.append(f"| {label} | " + " | ".join(fmt.format(summary[key][a]) for a in ARMS) + " |")
    target = summary["target"]
    share = "n/a" if target["flip_share"] is None else f"{target['flip_share']:.2f}"
    verdict = "met" if target["met"] else "not met"
    rows.append(f"\nThe prior arm took {share} of the rotations arm's flip-rate reduction at {summary['time_ratio']['prior']:.2f}x "
                f"the time (target: at least {target['flip_share_at_least']} of it at no more than {target['time_ratio_at_most']}x "
                f"the time: {verdict}); the prior rests on {summary['prior']['questions']} questions of the other half.")
    return "\n".join(rows)


def read_prior_target(path: Path, engine: "DecisionEngine") -> dict[str, Any] | None:
    """The calibration file the prior goes into, when it exists: refused, before any work, when it is another model's."""
    from ...decision.calibrator import load_calibration, read_calibration

    if not path.is_file():
        return None
    load_calibration(path, model_sha256=hash_file(engine.model_path))  # CalibrationMismatchError names both models
    return read_calibration(path)


def write_prior(path: Path, priors: dict[int, list[float]], engine: "DecisionEngine", provenance: dict[str, Any]) -> None:
    """The position priors into `path`: merged into this model's calibration file when it exists, else a new file holding
    them alone (identity temperatures)."""
    from ...decision.calibrator import CALIBRATION_FORMAT
    from ...decision.prompt import PROMPT_VERSION

    doc = read_prior_target(path, engine) or {
        "format": CALIBRATION_FORMAT, "model_sha256": hash_file(engine.model_path), "model_file": engine.model_path.name,
        "prompt_version": PROMPT_VERSION, "temperatures": {"noul": 1.0, "choice": 1.0, "score": 1.0}}
    doc["position_priors"] = {str(n): p for n, p in priors.items()}
    doc["position_prior_source"] = provenance
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def command_debias(args: Any) -> int:
    """`semif bench debias`: the prior estimated on one half, the four arms measured on the other, the file written."""
    from ...decision.calibrator import Calibrator
    from ...decision.engine import DecisionEngine

    items, warning = read_labeled_limited(args.input, args.limit)
    if warning:
        print(warning, file=sys.stderr)
    calibration_half, evaluation_half = split_items(items)
    with DecisionEngine(load_settings(**engine_overrides(args), default_debias="none", calibration=None)) as engine:
        if args.calibration_out:
            read_prior_target(args.calibration_out, engine)
        priors, counts = estimate_priors(engine, calibration_half, progress=not args.quiet)
        engine.calibration = Calibrator(temperatures={}, position_priors=priors)  # what SEMIF_CALIBRATION would load
        summary = run_debias(engine, evaluation_half, args.rotations, progress=not args.quiet)
        summary["prior"] = {"position_priors": {str(n): p for n, p in priors.items()}, "questions": sum(counts.values()),
                            "questions_per_option_count": {str(n): c for n, c in counts.items()}, "requests": len(calibration_half)}
        summary["model"] = {"file": engine.model_path.name, "sha256": hash_file(engine.model_path)}
        summary["threads"] = engine.settings.threads  # the quality room does not read bench's machine description
        if args.calibration_out:
            write_prior(args.calibration_out, priors, engine, {"command": "semif bench debias", "questions": sum(counts.values())})
    summary["command"] = " ".join(["semif bench debias", *sys.argv[3:]]) if sys.argv[1:3] == ["bench", "debias"] else None
    print(format_debias(summary))
    stem = Path(summary["model"]["file"]).stem
    output = write_results_file(summary, args.output or Path(f"results/bench/debias-{stem}.json"))
    print(f"wrote {output}", file=sys.stderr)
    return 0
