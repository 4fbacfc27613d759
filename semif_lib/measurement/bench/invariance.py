"""`semif bench invariance`: how far a question's answer moves with its neighbours, and what `x_batch_invariant` costs.

Each of the workload's first states is asked its first questions three ways, in both modes: all together,
all together in reverse order, and each question alone on the cached prefix. The default mode decodes a
request's branches together, so a question's logits depend on which other rows shared its ubatch and on
where its prefix sits in the KV cache; the batch-invariant mode decodes every question alone at the
prefix's canonical placement, so all three must give the same bits. The deviation is the total variation
between a question's distributions (half the L1 distance); `decisions_changed` counts questions whose
argmax differs. The cost is the cold together-request's seconds in each mode, the modes alternating which
goes first per state, and its ratio.

`run_invariance` measures, `format_invariance` is the table docs/decision-path.md quotes, `command_invariance`
writes `results/bench/invariance-<model>.json`.
"""

from __future__ import annotations

import statistics
import sys
from typing import TYPE_CHECKING, Any, Sequence

from ...arguments import engine_overrides
from ...settings import load_settings
from ..answers import read_argmax, read_probabilities
from .workload import describe_engine_run, first_questions, load_workload, time_cold, write_model_result

if TYPE_CHECKING:
    from ...decision.engine import DecisionEngine

__all__ = ["MODES", "command_invariance", "format_invariance", "run_invariance"]

MODES = ("default", "invariant")


def _total_variation(p: dict[str, float], q: dict[str, float]) -> float:
    return 0.5 * sum(abs(p[k] - q[k]) for k in p)


def _body(state: str, questions: dict[str, Any], invariant: bool) -> dict[str, Any]:
    return {"state": state, "questions": questions, "x_batch_invariant": invariant}


def _measure_state(engine: "DecisionEngine", record: dict[str, Any], invariant: bool) -> tuple[dict[str, list[float]], int, float]:
    """One state in one mode: the deviations of each question (alone, reversed) from the together answer."""
    state, questions = record["state"], record["questions"]
    together, seconds = time_cold(engine, _body(state, questions, invariant))
    backwards = engine.ask(_body(state, dict(reversed(list(questions.items()))), invariant))
    alone = {qid: engine.ask(_body(state, {qid: q}, invariant)).answers[qid] for qid, q in questions.items()}
    found: dict[str, list[float]] = {"alone": [], "reversed": []}
    changed = 0
    for qid, answer in together.answers.items():
        base = read_probabilities(answer)
        for name, other in (("alone", alone[qid]), ("reversed", backwards.answers[qid])):
            found[name].append(_total_variation(base, read_probabilities(other)))
            changed += read_argmax(other) != read_argmax(answer)
    return found, changed, seconds


def _summarise(deviations: dict[str, list[float]], changed: int, seconds: float) -> dict[str, Any]:
    every = deviations["alone"] + deviations["reversed"]
    return {
        "comparisons": len(every),
        "identical": sum(d == 0 for d in every),
        "total_variation": {name: {"median": statistics.median(values), "max": max(values)} for name, values in deviations.items()},
        "decisions_changed": changed,
        "seconds_together_cold": round(seconds, 3),
    }


def run_invariance(engine: "DecisionEngine", states: Sequence[dict[str, Any]], progress: bool = True) -> dict[str, Any]:
    """Both modes on `states` (each already cut to the questions to ask), side by side."""
    from tqdm.auto import tqdm

    deviations = {mode: {"alone": [], "reversed": []} for mode in MODES}
    changed = dict.fromkeys(MODES, 0)
    seconds = dict.fromkeys(MODES, 0.0)
    for n, record in enumerate(tqdm(states, desc="bench invariance", unit="state", file=sys.stderr, disable=not progress)):
        for mode in MODES if n % 2 == 0 else MODES[::-1]:
            found, flips, took = _measure_state(engine, record, mode == "invariant")
            for name, values in found.items():
                deviations[mode][name] += values
            changed[mode] += flips
            seconds[mode] += took
    engine.check_invariants()
    summary = {mode: _summarise(deviations[mode], changed[mode], seconds[mode]) for mode in MODES}
    ratio = seconds["invariant"] / seconds["default"] if seconds["default"] else None
    return {"states": len(states), "questions_per_state": len(states[0]["questions"]) if states else 0, **summary,
            "cost_ratio": round(ratio, 3) if ratio else None}


def format_invariance(summary: dict[str, Any]) -> str:
    """The results file as a table: a row per mode."""
    rows = ["| mode | identical | TV alone, median / max | TV reversed, median / max | decisions changed | seconds, cold |",
            "|---|---:|---:|---:|---:|---:|"]
    for mode in MODES:
        m = summary[mode]
        tv = m["total_variation"]
        rows.append(f"| {mode} | {m['identical']} / {m['comparisons']} | {tv['alone']['median']:.4f} / {tv['alone']['max']:.4f} "
                    f"| {tv['reversed']['median']:.4f} / {tv['reversed']['max']:.4f} | {m['decisions_changed']} "
                    f"| {m['seconds_together_cold']:.1f} |")
    rows.append(f"\n{summary['states']} states x {summary['questions_per_state']} questions; the invariant mode took "
                f"{summary['cost_ratio']}x the default's time on the cold together-requests.")
    return "\n".join(rows)


def command_invariance(args: Any) -> int:
    """`semif bench invariance`: both modes in one run, the table printed, the results file written."""
    from ...decision.engine import DecisionEngine

    states = [first_questions(r, args.questions) for r in load_workload(states=args.states)]
    with DecisionEngine(load_settings(**engine_overrides(args))) as engine:
        summary = run_invariance(engine, states, progress=not args.quiet)
        summary.update(describe_engine_run(engine))
    print(format_invariance(summary))
    write_model_result(summary, "invariance", args.output)
    return 0
