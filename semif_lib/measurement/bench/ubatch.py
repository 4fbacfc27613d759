"""`semif bench ubatch`: what the micro-batch rule buys (`decision.backend.split_rows`), paired in one run.

Two engines on the same model, one with `SEMIF_UBATCH_SLACK=0` (every micro-batch `n_ubatch` rows, a
remainder of any size decoded on its own, as llama.cpp splits a batch) and one with the default slack (a
remainder of at most that many rows joins the micro-batch before it). Each state is asked as a cold
`parallel` request (prefill and branches) and then with its prefix cached (branches only, `--repeats` times,
averaged) on both engines, the two taking turns going first (`conditions.paired_order`). A state's tree
"merges" when its branch tokens are more than `n_ubatch` and at most `n_ubatch` + slack: the 532-534-token
trees of 5 of the 37 states, decoded as 512 + 21 without the rule. `--fresh-questions N` adds a third request
per state and arm: its first N questions in `fresh` mode, every prompt whole (the slack arm's context is made for
larger micro-batches, and a fresh prompt runs in it too). The results: each arm's seconds per state, and the ratio
of the rates with its interval over states: on merging states, cached (branches alone) and cold, cold on every
state asked, and fresh on every state when asked for.
"""

from __future__ import annotations

import statistics
import sys
from typing import Any, Sequence

from ...arguments import engine_overrides
from ...errors import InvalidRequestError
from ...settings import load_settings
from ..conditions import bootstrap_ratio, format_interval, interval_against, paired_order
from .harness import time_call
from .workload import describe_engine_run, first_questions, load_workload, time_cold, write_result

__all__ = ["command_ubatch", "format_ubatch", "run_ubatch"]

ARMS = ("no-slack", "slack")

SLACK_TRIED = 64  # rows the rule's arm lets a micro-batch grow by when SEMIF_UBATCH_SLACK leaves it off


def ask_cold(engine: Any, request: dict[str, Any]) -> dict[str, Any]:
    """A cold request (its prefix stays cached for the cached ones after it): seconds and the request's token counts."""
    cold, cold_s = time_cold(engine, request)
    return {"cold": cold_s, "cached": [], "prefix_tokens": cold.timing["prefix_tokens"], "branch_tokens": cold.timing["branch_tokens"]}


def ask_state(engines: dict[str, Any], request: dict[str, Any], index: int, repeats: int,
              fresh_questions: int | None = None) -> dict[str, dict[str, Any]]:
    """Each arm cold, then `repeats` cached requests per arm, then (if asked) its first questions fresh from an empty
    cache, the arms taking turns (who goes first turns with the state)."""
    order = paired_order(index, ARMS)
    asked = {arm: ask_cold(engines[arm], request) for arm in order}
    for _ in range(repeats):
        for arm in order:
            asked[arm]["cached"].append(time_call(lambda arm=arm: engines[arm].ask(request, mode="parallel"))[0])
    if fresh_questions:
        fresh = first_questions(request, fresh_questions)
        for arm in order:
            asked[arm]["fresh"] = time_cold(engines[arm], fresh, mode="fresh")[1]
    return asked


def ratio_of(states: Sequence[dict[str, Any]], key: str) -> dict[str, Any] | None:
    """The slack arm's rate against the no-slack arm's on `states` (same requests: their summed seconds), with its
    interval and whether it clears 1 (the rule buys something), misses it or spans it."""
    if not states:
        return None
    boot = bootstrap_ratio([(1, s["seconds"]["slack"][key]) for s in states], [(1, s["seconds"]["no-slack"][key]) for s in states])
    return {"ratio": boot["ratio"], "interval": interval_against(boot, 1.0)}


def run_ubatch(settings: Any, workload: Sequence[dict[str, Any]], repeats: int = 3, progress: bool = True,
               fresh_questions: int | None = None) -> dict[str, Any]:
    """Both engines on every state, taking turns; the per-state seconds and the ratios."""
    from tqdm.auto import tqdm

    from ...decision.engine import DecisionEngine

    slack = settings.ubatch_slack or SLACK_TRIED  # the rule is off by default: the run tries it at 64 rows unless told
    engines = {"no-slack": DecisionEngine(settings.model_copy(update={"ubatch_slack": 0})),
               "slack": DecisionEngine(settings.model_copy(update={"ubatch_slack": slack}))}
    per_state = []
    try:
        for i, row in enumerate(tqdm(workload, desc="bench ubatch", unit="state", file=sys.stderr, disable=not progress)):
            asked = ask_state(engines, {"state": row["state"], "questions": row["questions"]}, i, repeats, fresh_questions)
            tree = asked["slack"]["branch_tokens"]
            per_state.append({"id": row.get("id"), "first": paired_order(i, ARMS)[0], "prefix_tokens": asked["slack"]["prefix_tokens"],
                              "branch_tokens": tree, "tree_merges": settings.n_ubatch < tree <= settings.n_ubatch + slack,
                              "seconds": {arm: {"cold": round(asked[arm]["cold"], 4),
                                                "cached": round(statistics.mean(asked[arm]["cached"]), 4),
                                                **({"fresh": round(asked[arm]["fresh"], 4)} if fresh_questions else {})}
                                          for arm in ARMS}})
        described = describe_engine_run(engines["slack"])
    finally:
        for engine in engines.values():
            engine.close()
    merging = [s for s in per_state if s["tree_merges"]]
    return {**described, "n_ubatch": settings.n_ubatch, "ubatch_slack": slack,
            "workload": {"states": len(per_state), "merging_states": len(merging), "cached_repeats": repeats,
                         **({"fresh_questions": fresh_questions} if fresh_questions else {})},
            "ratios": {"cached_on_merging_states": ratio_of(merging, "cached"), "cold_on_merging_states": ratio_of(merging, "cold"),
                       "cold_on_all_states": ratio_of(per_state, "cold"),
                       **({"fresh_on_all_states": ratio_of(per_state, "fresh")} if fresh_questions else {})},
            "per_state": per_state}


def format_ubatch(doc: dict[str, Any]) -> str:
    """The ratios as a Markdown table (docs/benchmarks.md quotes it)."""
    rows = [f"{doc['workload']['merging_states']} of {doc['workload']['states']} states have a branch tree of "
            f"{doc['n_ubatch'] + 1}-{doc['n_ubatch'] + doc['ubatch_slack']} tokens (one micro-batch with the rule, two without).", "",
            "| slack against none | rate ratio | 95 % interval over states |", "|---|---:|---|"]
    for name, r in doc["ratios"].items():
        rows.append(f"| {name.replace('_', ' ')} | " + ("- | - |" if r is None else f"{r['ratio']}x | {format_interval(r['interval'])} |"))
    return "\n".join(rows)


def command_ubatch(args: Any) -> int:
    """`semif bench ubatch`: the run, its table printed, results/bench/ubatch.json written."""
    settings = load_settings(**engine_overrides(args))
    workload = [row for row in load_workload() if not args.ids or row.get("id") in args.ids]
    if args.ids and len(workload) != len(set(args.ids)):
        raise InvalidRequestError(f"--ids names a state the workload lacks: {sorted(set(args.ids) - {r.get('id') for r in workload})}",
                                  field="ids")
    doc = run_ubatch(settings, workload, args.repeats, progress=not args.quiet, fresh_questions=args.fresh_questions)
    doc["command"] = " ".join(["semif", *sys.argv[1:]]) if sys.argv[1:3] == ["bench", "ubatch"] else "semif bench ubatch"
    print(format_ubatch(doc))
    out = write_result(doc, args.output or settings.results_dir / "bench" / "ubatch.json")
    print(f"wrote {out}", file=sys.stderr)
    return 0
