"""`semif bench rotations`: what `x_debias: "rotations"` buys and what it costs, side by side in one run.

On the labeled sets' choice questions, each request is sent four ways: plain and debiased, each in
the request's option order and with the options shifted by one place. The shifted copies measure
the order effect: the share of questions whose answer changes when only the listing order
changes (the flip rate), before and after. Accuracy comes from the labels. The cost is the
debiased request's time against the plain one's, both from a cold prefix cache, alternating which
goes first; only branch tokens are added, since the rotations fork off the same prefix. The
labeled states are a sentence or two and the options a paragraph, so there the branches are most
of the work; a second phase measures the cost where the design is meant to pay, on the workload's
long states asked their 21 questions plus one choice question.

Beside the seconds each variant records the tokens it decoded (the prefix, then the branches as a
token tree, where the rotations share the question's stem up to the first option's letter), so the
time ratio can be read against the work ratio. The engine scores with SEMIF_DEFAULT_DEBIAS=none and the
plain variant says `x_debias: none`, so a server-wide default cannot turn the plain side into rotations.

`run_rotations` (the labeled phase) and `run_long_states` (the cost phase) measure, `format_rotations` is the
table docs/quality.md quotes, and `command_rotations` writes `results/bench/rotations.json`. The labeled sets
are read through `quality.labeled`, the one door from the bench room into the quality room.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from ...arguments import engine_overrides
from ...decision.prompt import rotate_criteria
from ...decision.schema import DEFAULT_ROTATIONS
from ...model.locate import hash_file
from ...settings import load_settings
from ..quality.labeled import LabeledItem, read_labeled_limited
from .workload import describe_machine, load_workload, time_cold, write_result

if TYPE_CHECKING:
    from ...decision.engine import DecisionEngine

__all__ = ["COST_TARGET", "command_rotations", "format_rotations", "run_long_states", "run_rotations"]

COST_TARGET = 1.3  # issue: a K = 4 request costs at most 1.3x the plain one on the same states


def _choice_request(item: LabeledItem, shift: int, debias: bool, rotations: int) -> dict[str, Any]:
    asked = item.request["questions"]
    questions = {}
    for qid in item.labels:
        q = asked[qid]
        if q.get("type") != "choice":
            continue
        q = {**q, "criteria": rotate_criteria(q["criteria"], shift)}
        questions[qid] = {**q, "x_debias": "rotations", "x_rotations": rotations} if debias else {**q, "x_debias": "none"}
    return {"state": item.request["state"], "questions": questions}


def count_decoded_tokens(response: Any) -> int:
    """Tokens a cold request decoded: its whole prefix, then its branches with shared leading tokens counted once."""
    return int(response.timing["prefix_tokens"]) + int(response.timing["branch_tokens"])


def run_rotations(engine: "DecisionEngine", items: Sequence[LabeledItem], rotations: int = DEFAULT_ROTATIONS,
                  progress: bool = True) -> dict[str, Any]:
    """Flip rate, accuracy and seconds for plain against rotated choice questions on `items`."""
    from tqdm.auto import tqdm

    seconds = {"plain": 0.0, "rotations": 0.0}
    tokens = {"plain": 0, "rotations": 0}
    tally = {"questions": 0, "flips_plain": 0, "flips_rotations": 0, "correct_plain": 0, "correct_rotations": 0, "labeled": 0}
    usable = [it for it in items if _choice_request(it, 0, False, rotations)["questions"]]
    for n, item in enumerate(tqdm(usable, desc="bench rotations", unit="req", file=sys.stderr, disable=not progress)):
        variants = ("plain", "rotations") if n % 2 == 0 else ("rotations", "plain")
        answers = {}
        for variant in variants:
            response, took = time_cold(engine, _choice_request(item, 0, variant == "rotations", rotations))
            seconds[variant] += took
            tokens[variant] += count_decoded_tokens(response)
            shifted = engine.ask(_choice_request(item, 1, variant == "rotations", rotations))
            answers[variant] = (response.answers, shifted.answers)
        for qid in answers["plain"][0]:
            tally["questions"] += 1
            for variant in ("plain", "rotations"):
                first, second = answers[variant]
                tally[f"flips_{variant}"] += first[qid].choice != second[qid].choice
                if qid in item.labels:
                    tally[f"correct_{variant}"] += first[qid].choice == item.labels[qid]
            tally["labeled"] += qid in item.labels
    return _summarise(tally, seconds, tokens, len(usable), rotations)


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 3) if b else None


def _summarise(tally: dict[str, int], seconds: dict[str, float], tokens: dict[str, int], requests: int, rotations: int) -> dict[str, Any]:
    q = max(1, tally["questions"])
    cost = seconds["rotations"] / seconds["plain"] if seconds["plain"] else None
    return {
        "requests": requests, "choice_questions": tally["questions"], "rotations": rotations,
        "flip_rate": {"plain": tally["flips_plain"] / q, "rotations": tally["flips_rotations"] / q},
        "accuracy": {v: tally[f"correct_{v}"] / max(1, tally["labeled"]) for v in ("plain", "rotations")},
        "seconds": {k: round(v, 3) for k, v in seconds.items()},
        "decisions_per_s": {k: round(tally["questions"] / v, 3) if v else None for k, v in seconds.items()},
        "cost_ratio": round(cost, 3) if cost else None,
        "tokens_decoded": dict(tokens), "token_ratio": _ratio(tokens["rotations"], tokens["plain"]),
        "target": {"cost_ratio_at_most": COST_TARGET, "met": bool(cost and cost <= COST_TARGET)},
    }


TOPIC = {"type": "choice", "instructions": "Which area does this text mostly concern?",
         "criteria": {"people": "who is involved and how they behave", "money": "costs, prices, payments",
                      "technology": "systems, tools, software", "rules": "policies, laws, obligations"}}


def run_long_states(engine: "DecisionEngine", states: Sequence[dict[str, Any]], rotations: int = DEFAULT_ROTATIONS,
                    progress: bool = True) -> dict[str, Any]:
    """The cost on long states asked many questions: each state's own questions plus one choice, plain or rotated."""
    from tqdm.auto import tqdm

    seconds = {"plain": 0.0, "rotations": 0.0}
    tokens = {"plain": 0, "rotations": 0}
    for n, record in enumerate(tqdm(states, desc="bench rotations (long states)", unit="state", file=sys.stderr, disable=not progress)):
        for variant in ("plain", "rotations") if n % 2 == 0 else ("rotations", "plain"):
            rotated = variant == "rotations"
            topic = {**TOPIC, "x_debias": "rotations", "x_rotations": rotations} if rotated else {**TOPIC, "x_debias": "none"}
            response, took = time_cold(engine, {"state": record["state"], "questions": {**record["questions"], "topic": topic}})
            seconds[variant] += took
            tokens[variant] += count_decoded_tokens(response)
    cost = seconds["rotations"] / seconds["plain"] if seconds["plain"] else None
    return {"states": len(states), "questions_per_state": len(states[0]["questions"]) + 1 if states else 0,
            "seconds": {k: round(v, 3) for k, v in seconds.items()}, "cost_ratio": round(cost, 3) if cost else None,
            "tokens_decoded": dict(tokens), "token_ratio": _ratio(tokens["rotations"], tokens["plain"]),
            "target": {"cost_ratio_at_most": COST_TARGET, "met": bool(cost and cost <= COST_TARGET)}}


def _met(target: dict[str, Any]) -> str:
    return f"target {target['cost_ratio_at_most']}x {'met' if target['met'] else 'not met'}"


def format_rotations(summary: dict[str, Any]) -> str:
    """The results file as the table docs/quality.md quotes (a test holds the docs to the file)."""
    k, long = summary["rotations"], summary["long_states"]
    flips, acc, rate = summary["flip_rate"], summary["accuracy"], summary["decisions_per_s"]
    rows = [
        f"| | plain | rotations (K = {k}) |",
        "|---|---:|---:|",
        f"| flip rate, {summary['choice_questions']} labeled choice questions | {flips['plain']:.3f} | {flips['rotations']:.3f} |",
        f"| accuracy on those questions | {acc['plain']:.3f} | {acc['rotations']:.3f} |",
        f"| decisions/s on those short requests, cold | {rate['plain']:.3f} | {rate['rotations']:.3f} "
        f"({summary['cost_ratio']:.3f}x the time, {summary['token_ratio']:.3f}x the tokens: {_met(summary['target'])}) |",
        f"| seconds for {long['states']} long workload states, {long['questions_per_state']} questions each, cold "
        f"| {long['seconds']['plain']:.1f} | {long['seconds']['rotations']:.1f} "
        f"({long['cost_ratio']:.3f}x the time, {long['token_ratio']:.3f}x the tokens: {_met(long['target'])}) |",
    ]
    return "\n".join(rows)


def command_rotations(args: Any) -> int:
    """`semif bench rotations`: both phases, the table printed, results/bench/rotations.json written."""
    from ...decision.engine import DecisionEngine

    items, warning = read_labeled_limited(args.input, args.limit)
    if warning:
        print(warning, file=sys.stderr)
    with DecisionEngine(load_settings(**engine_overrides(args), default_debias="none")) as engine:  # the variants say what they ask
        summary = run_rotations(engine, items, args.rotations, progress=not args.quiet)
        summary["long_states"] = run_long_states(engine, load_workload(states=args.states), args.rotations, progress=not args.quiet)
        summary["model"] = {"file": engine.model_path.name, "sha256": hash_file(engine.model_path)}
        summary["machine"] = describe_machine(engine.settings)
    if warning:
        summary["warnings"] = [warning]
    summary["command"] = " ".join(["semif bench rotations", *sys.argv[3:]]) if sys.argv[1:3] == ["bench", "rotations"] else None
    shown = ("flip_rate", "accuracy", "decisions_per_s", "cost_ratio", "token_ratio", "target", "long_states")
    print(json.dumps({k: summary[k] for k in shown}, indent=2))
    print(format_rotations(summary))
    output = write_result(summary, args.output or Path("results/bench/rotations.json"))
    print(f"wrote {output}", file=sys.stderr)
    return 0
