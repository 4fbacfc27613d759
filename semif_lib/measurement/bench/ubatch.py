"""`semif bench ubatch`: what the micro-batch rule buys (`decision.backend.split_rows`), paired in one run.

Two engines on the same model, one with `SEMIF_UBATCH_SLACK=0` (every micro-batch `n_ubatch` rows, a
remainder of any size decoded on its own, as llama.cpp splits a batch) and one with the default slack (a
remainder of at most that many rows joins the micro-batch before it). Each state is asked as a cold
`parallel` request (prefill and branches) and then again with its prefix cached (branches only) on both
engines, the two taking turns going first (`conditions.paired_order`). A state's tree "merges" when its
branch tokens are more than `n_ubatch` and at most `n_ubatch` + slack: the 532-534-token trees of 5 of the 37
states, decoded as 512 + 21 without the rule. The results: each arm's seconds per state, and the ratio of the
rates with its interval over states: on merging states, cached (branches alone) and cold, and cold on all states.
"""

from __future__ import annotations

import sys
from typing import Any, Sequence

from ...arguments import engine_overrides
from ...settings import load_settings
from ..conditions import bootstrap_ratio, format_interval, interval_against, paired_order
from .harness import time_call
from .workload import describe_engine_run, load_workload, time_cold, write_result

__all__ = ["command_ubatch", "format_ubatch", "run_ubatch"]

ARMS = ("no-slack", "slack")


def ask(engine: Any, request: dict[str, Any]) -> dict[str, Any]:
    """A cold request, then the same with its prefix cached: seconds of each and the request's token counts."""
    cold, cold_s = time_cold(engine, request)
    cached_s, _ = time_call(lambda: engine.score(request, mode="parallel"))
    return {"cold_s": round(cold_s, 4), "cached_s": round(cached_s, 4), "prefix_tokens": cold.timing["prefix_tokens"],
            "branch_tokens": cold.timing["branch_tokens"]}


def ratio_of(states: Sequence[dict[str, Any]], key: str) -> dict[str, Any] | None:
    """The slack arm's rate against the no-slack arm's on `states` (same requests: their summed seconds), with its
    interval and whether it clears 1 (the rule buys something), misses it or spans it."""
    if not states:
        return None
    boot = bootstrap_ratio([(1, s["seconds"]["slack"][key]) for s in states], [(1, s["seconds"]["no-slack"][key]) for s in states])
    return {"ratio": boot["ratio"], "interval": interval_against(boot, 1.0)}


def run_ubatch(settings: Any, workload: Sequence[dict[str, Any]], progress: bool = True) -> dict[str, Any]:
    """Both engines on every state, taking turns; the per-state seconds and the ratios."""
    from tqdm.auto import tqdm

    from ...decision.engine import DecisionEngine

    engines = {"no-slack": DecisionEngine(settings.model_copy(update={"ubatch_slack": 0})), "slack": DecisionEngine(settings)}
    per_state = []
    try:
        for i, row in enumerate(tqdm(workload, desc="bench ubatch", unit="state", file=sys.stderr, disable=not progress)):
            request = {"state": row["state"], "questions": row["questions"]}
            asked = {arm: ask(engines[arm], request) for arm in paired_order(i, ARMS)}
            tree = asked["slack"]["branch_tokens"]
            per_state.append({"id": row.get("id"), "first": paired_order(i, ARMS)[0], "prefix_tokens": asked["slack"]["prefix_tokens"],
                              "branch_tokens": tree, "tree_merges": settings.n_ubatch < tree <= settings.n_ubatch + settings.ubatch_slack,
                              "seconds": {arm: {"cold": asked[arm]["cold_s"], "cached": asked[arm]["cached_s"]} for arm in ARMS}})
        described = describe_engine_run(engines["slack"])
    finally:
        for engine in engines.values():
            engine.close()
    merging = [s for s in per_state if s["tree_merges"]]
    return {**described, "n_ubatch": settings.n_ubatch, "ubatch_slack": settings.ubatch_slack,
            "workload": {"states": len(per_state), "merging_states": len(merging)},
            "ratios": {"cached_on_merging_states": ratio_of(merging, "cached"), "cold_on_merging_states": ratio_of(merging, "cold"),
                       "cold_on_all_states": ratio_of(per_state, "cold")},
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
    doc = run_ubatch(settings, load_workload(args.workload, states=args.states), progress=not args.quiet)
    doc["command"] = " ".join(["semif", *sys.argv[1:]]) if sys.argv[1:3] == ["bench", "ubatch"] else "semif bench ubatch"
    print(format_ubatch(doc))
    out = write_result(doc, args.output or settings.results_dir / "bench" / "ubatch.json")
    print(f"wrote {out}", file=sys.stderr)
    return 0
