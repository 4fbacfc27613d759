"""`semif bench coherence`: does a yes/no question answer the same as a noul and as a two-option choice?

The engine renders a noul with `Yes` / `No` slots and a choice with lettered options (`A. yes`, `B. no`),
so the same question reaches the model through two slot formats. Every yes/no question of the labeled
policy set and of the workload's first states is asked three ways in one run: as a noul, as a choice
`{yes, no}` (its criteria as the options' descriptions) and as the choice with the options swapped.
P(yes) is compared between the renderings (mean and largest absolute gap, answers that disagree), and
accuracy is read where a label exists. The swap separates a format gap from the choice's order bias: the
two orders averaged cancel the position preference, so "noul vs choice, both orders" is the format alone.

`run_coherence` measures, `format_coherence` is the table docs/quality.md quotes, `command_coherence`
writes `results/bench/coherence-<model>.json`.
"""

from __future__ import annotations

import statistics
import sys
from typing import TYPE_CHECKING, Any, Sequence

from ...arguments import engine_overrides
from ...settings import load_settings
from ..quality.labeled import read_labeled
from .workload import describe_engine_run, load_workload, write_model_result

if TYPE_CHECKING:
    from ...decision.engine import DecisionEngine

__all__ = ["RENDERINGS", "command_coherence", "format_coherence", "run_coherence"]

RENDERINGS = ("noul", "choice", "choice, swapped")
POLICY = "data/labeled/policy.jsonl"


def _as_choice(question: dict[str, Any], swapped: bool) -> dict[str, Any]:
    criteria = question.get("criteria") or {}
    options = {"yes": criteria.get("true"), "no": criteria.get("false")}
    if swapped:
        options = {"no": options["no"], "yes": options["yes"]}
    return {"type": "choice", "instructions": question.get("instructions") or "Does this hold?", "criteria": options}


def _p_yes(engine: "DecisionEngine", state: Any, questions: dict[str, Any], rendering: str) -> dict[str, float]:
    if rendering != "noul":
        questions = {qid: _as_choice(q, rendering.endswith("swapped")) for qid, q in questions.items()}
    answers = engine.ask({"state": state, "questions": questions}).answers
    return {qid: a.probabilities["true" if rendering == "noul" else "yes"] for qid, a in answers.items()}


def run_coherence(engine: "DecisionEngine", cases: Sequence[tuple[Any, dict[str, Any], dict[str, bool]]],
                  progress: bool = True) -> dict[str, Any]:
    """Each (state, yes/no questions, labels) asked in the three renderings; the gaps and accuracies."""
    from tqdm.auto import tqdm

    p: dict[str, list[float]] = {r: [] for r in RENDERINGS}
    labels: list[bool | None] = []
    for state, questions, labeled in tqdm(cases, desc="bench coherence", unit="state", file=sys.stderr, disable=not progress):
        read = {r: _p_yes(engine, state, questions, r) for r in RENDERINGS}
        for qid in questions:
            for r in RENDERINGS:
                p[r].append(read[r][qid])
            labels.append(labeled.get(qid))
    engine.check_invariants()
    p["choice, both orders"] = [(a + b) / 2 for a, b in zip(p["choice"], p["choice, swapped"], strict=True)]

    def gap(a: str, b: str) -> dict[str, Any]:
        d = [abs(x - y) for x, y in zip(p[a], p[b], strict=True)]
        return {"mean": round(statistics.fmean(d), 4), "max": round(max(d), 4),
                "disagree": sum((x > 0.5) != (y > 0.5) for x, y in zip(p[a], p[b], strict=True))}

    known = [i for i, label in enumerate(labels) if label is not None]
    accuracy = {r: round(sum((p[r][i] > 0.5) == labels[i] for i in known) / len(known), 4) if known else None for r in RENDERINGS}
    pairs = (("noul", "choice"), ("noul", "choice, swapped"), ("choice", "choice, swapped"), ("noul", "choice, both orders"))
    return {"questions": len(labels), "labeled": len(known), "mean_p_yes": {r: round(statistics.fmean(p[r]), 4) for r in RENDERINGS},
            "accuracy": accuracy, "gaps": {f"{a} vs {b}": gap(a, b) for a, b in pairs}}


def format_coherence(summary: dict[str, Any]) -> str:
    """The results file as two small tables: each rendering, then each pair's gap in P(yes)."""
    lines = ["| rendering | mean P(yes) | accuracy |", "|---|---:|---:|"]
    for r in RENDERINGS:
        acc = summary["accuracy"][r]
        lines.append(f"| {r} | {summary['mean_p_yes'][r]:.3f} | {'-' if acc is None else f'{acc:.3f}'} |")
    pair = f"pair ({summary['questions']} questions, {summary['labeled']} labeled)"
    lines += ["", f"| {pair} | mean gap | largest gap | answers that differ |", "|---|---:|---:|---:|"]
    for pair, g in summary["gaps"].items():
        lines.append(f"| {pair} | {g['mean']:.3f} | {g['max']:.3f} | {g['disagree']} |")
    return "\n".join(lines)


def load_cases(states: int) -> list[tuple[Any, dict[str, Any], dict[str, bool]]]:
    """The labeled policy set's yes/no questions with their labels, then the workload's first `states` (unlabeled)."""
    cases = []
    for item in read_labeled([POLICY]):
        questions = {qid: q for qid, q in item.request["questions"].items() if q.get("type") == "noul"}
        cases.append((item.request["state"], questions, {qid: item.labels[qid] for qid in questions if qid in item.labels}))
    for record in load_workload(states=states):
        questions = {qid: q for qid, q in record["questions"].items() if q.get("type", "noul") == "noul"}
        cases.append((record["state"], questions, {}))
    return cases


def command_coherence(args: Any) -> int:
    """`semif bench coherence`: the three renderings in one run, the tables printed, the results file written."""
    from ...decision.engine import DecisionEngine

    with DecisionEngine(load_settings(**engine_overrides(args))) as engine:
        summary = run_coherence(engine, load_cases(args.states), progress=not args.quiet)
        summary.update(describe_engine_run(engine))
    print(format_coherence(summary))
    write_model_result(summary, "coherence", args.output)
    return 0
