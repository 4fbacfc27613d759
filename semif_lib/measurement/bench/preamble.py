"""`semif bench preamble`: what `x_preamble` recovers and what it costs, side by side in one run.

Every labeled request is asked four ways: as written and asked to answer in bold markdown, like `**Yes**`
(a prompt that sends some models' first token to a `**` lead-in), each plain and with the preamble read. For the
slot questions it records the option mass (the share of the answer's start that lands on an option,
directly or after the lead-in), the accuracy against the labels, and how often the lead-in was used
(the options were likelier after it than before it). The cost is the preamble arm's seconds against
the plain arm's, both from a cold prefix cache, alternating which goes first.

`run_preamble` measures, `format_preamble` is the table docs/quality.md quotes, `command_preamble` writes
`results/bench/preamble-<model>.json`. The labeled sets come through `quality.labeled`.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Sequence

from ...arguments import engine_overrides
from ...decision.schema import parse_request
from ...settings import load_settings
from ..answers import read_argmax
from ..quality.labeled import LabeledItem, label_to_index, read_labeled_limited
from .workload import describe_engine_run, time_cold, write_model_result

if TYPE_CHECKING:
    from ...decision.engine import DecisionEngine

__all__ = ["ARMS", "BOLD", "STYLES", "command_preamble", "format_preamble", "run_preamble"]

BOLD = {"noul": "Yes", "choice": "A", "score": "0"}  # "Answer in bold markdown, like **Yes**.": an example answer in its slot's form
STYLES = ("as written", "asked in bold")
ARMS = ("plain", "preamble")


def _request(item: LabeledItem, style: str, arm: str) -> dict[str, Any]:
    questions = item.request["questions"]
    if style == "asked in bold":
        ask = "{} Answer in bold markdown, like **{}**."
        questions = {qid: {**q, "instructions": ask.format(q.get("instructions") or "", BOLD[q["type"]]).strip()}
                     for qid, q in questions.items()}
    return {"state": item.request["state"], "questions": questions, "x_preamble": arm == "preamble"}


def run_preamble(engine: "DecisionEngine", items: Sequence[LabeledItem], progress: bool = True) -> dict[str, Any]:
    """Option mass, accuracy, lead-ins used and seconds for each style and arm on `items`."""
    from tqdm.auto import tqdm

    keys = [(style, arm) for style in STYLES for arm in ARMS]
    tally = {k: {"questions": 0, "mass": 0.0, "labeled": 0, "correct": 0, "used": 0, "seconds": 0.0} for k in keys}
    for n, item in enumerate(tqdm(items, desc="bench preamble", unit="req", file=sys.stderr, disable=not progress)):
        asked = parse_request(item.request).questions
        for style in STYLES:
            for arm in ARMS if n % 2 == 0 else ARMS[::-1]:
                t = tally[(style, arm)]
                response, took = time_cold(engine, _request(item, style, arm))
                t["seconds"] += took
                for qid, answer in response.answers.items():
                    t["questions"] += 1
                    t["mass"] += answer.option_mass
                    t["used"] += bool((answer.model_extra or {}).get("x_preamble_used"))
                    if qid in item.labels:
                        expected = label_to_index(asked[qid], item.labels[qid])
                        t["labeled"] += 1
                        t["correct"] += list(answer.probabilities).index(read_argmax(answer)) == expected
    engine.check_invariants()
    rows = {}
    for style, arm in keys:
        t = tally[(style, arm)]
        rows.setdefault(style, {})[arm] = {
            "questions": t["questions"], "option_mass": round(t["mass"] / max(1, t["questions"]), 4),
            "accuracy": round(t["correct"] / max(1, t["labeled"]), 4), "preamble_used": t["used"],
            "seconds": round(t["seconds"], 3)}
    for style in STYLES:
        plain, read = rows[style]["plain"], rows[style]["preamble"]
        rows[style]["cost_ratio"] = round(read["seconds"] / plain["seconds"], 3) if plain["seconds"] else None
    return {"requests": len(items), "styles": rows}


def format_preamble(summary: dict[str, Any]) -> str:
    """The results file as a table: a row per prompt style and arm."""
    lines = ["| prompt | arm | option mass | accuracy | lead-in used | seconds, cold |", "|---|---|---:|---:|---:|---:|"]
    for style in STYLES:
        for arm in ARMS:
            r = summary["styles"][style][arm]
            cost = f" ({summary['styles'][style]['cost_ratio']}x)" if arm == "preamble" else ""
            lines.append(f"| {style} | {arm} | {r['option_mass']:.3f} | {r['accuracy']:.3f} | {r['preamble_used']} / {r['questions']} "
                         f"| {r['seconds']:.1f}{cost} |")
    return "\n".join(lines)


def command_preamble(args: Any) -> int:
    """`semif bench preamble`: the four arms in one run, the table printed, the results file written."""
    from ...decision.engine import DecisionEngine

    items, warning = read_labeled_limited(args.input, args.limit)
    if warning:
        print(warning, file=sys.stderr)
    with DecisionEngine(load_settings(**engine_overrides(args))) as engine:
        summary = run_preamble(engine, items, progress=not args.quiet)
        summary.update(describe_engine_run(engine))
    if warning:
        summary["warnings"] = [warning]
    print(format_preamble(summary))
    write_model_result(summary, "preamble", args.output)
    return 0
