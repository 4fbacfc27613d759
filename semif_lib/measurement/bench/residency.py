"""`semif bench residency`: what other cached prefixes cost a request, spilled to host memory against kept in KV cells.

With a unified KV cache every decode attends over all cells up to the highest one in use (other
sequences' cells masked), so resident prefixes slow every later request; a spilled prefix costs a
restore copy when it is hit (`hit_prefill_s`). Each target state is measured at every level under
both policies in turn (two engines, one process); the other states are the next ones in the workload
(`run_residency`). `format_residency` is what the command prints (docs/benchmarks.md quotes its figures in prose).
"""

from __future__ import annotations

import json
import statistics
import sys
from typing import Any, Sequence

from ...errors import InvalidRequestError
from ..options import RESIDENT_LEVELS
from .harness import BenchmarkError
from .workload import describe_bench_run, load_workload, write_result

__all__ = ["RESIDENCY_POLICIES", "command_residency", "format_residency", "run_residency"]

RESIDENCY_POLICIES = ("spilled", "resident")  # SEMIF_CACHE_SPILL true (the default) and false
STATE_ROOM = 2048  # KV cells a workload state, its branches and slack take
Samples = dict[str, list[float]]  # per measured figure, one value per target state


def check_levels(workload: Sequence[dict[str, Any]], resident: Sequence[int]) -> int:
    """The most other prefixes asked for; refuses a negative level, or too few states to keep that many cached."""
    if not resident or min(resident) < 0:
        raise InvalidRequestError(f"--resident needs numbers >= 0; got {list(resident)}", field="resident")
    most = max(resident)
    if len(workload) < most + 1:
        raise InvalidRequestError(f"--resident {most} needs at least {most + 1} states; got {len(workload)}", field="states")
    return most


def as_request(row: dict[str, Any]) -> dict[str, Any]:
    return {"state": row["state"], "questions": row["questions"]}


def measure_target(engine: Any, row: dict[str, Any], others: Sequence[dict[str, Any]], out: Samples, policy: str) -> None:
    """From an empty cache: the other states scored (they stay cached), then the target prefilled and asked again."""
    engine.clear_cache()
    for other in others:
        engine.ask(as_request(other), mode="parallel")
    request = as_request(row)
    first = engine.ask(request, mode="parallel")  # prefill the target; it stays cached
    out["prefill"].append((first.timing["prefix_tokens"] - first.usage.cached_tokens) / first.timing["prefill_s"])
    response = engine.ask(request, mode="parallel")
    if response.usage.cached_tokens != response.timing["prefix_tokens"]:
        raise BenchmarkError(f"the target missed the cache (state {row.get('id')}, {policy})")
    out["branches"].append(response.timing["branches_s"])
    out["hit"].append(response.timing["prefill_s"])
    out["kv"].append(engine.cache.resident_tokens)
    out["cached"].append(engine.cache.used_tokens)


def summarize_level(out: Samples, base: Samples) -> dict[str, float]:
    """One policy at one level, against the same policy with no other prefix cached (`base`)."""
    return {"kv_cells_between_requests_mean": round(statistics.mean(out["kv"]), 1),
            "cached_tokens_mean": round(statistics.mean(out["cached"]), 1),
            "branches_s_median": round(statistics.median(out["branches"]), 4),
            "slowdown_vs_none": round(statistics.median(t / u for t, u in zip(out["branches"], base["branches"], strict=True)), 3),
            "prefill_tokens_per_s_median": round(statistics.median(out["prefill"]), 1),
            "prefill_slowdown_vs_none": round(statistics.median(u / r for r, u in zip(out["prefill"], base["prefill"], strict=True)), 3),
            "hit_prefill_s_median": round(statistics.median(out["hit"]), 4)}


def spilled_vs_resident(spilled: Samples, resident: Samples) -> dict[str, float]:
    """Per target state, the resident policy's time over the spilled one's (prefill as a rate: spilled over resident)."""
    return {"prefill_speedup": round(statistics.median(a / b for a, b in zip(spilled["prefill"], resident["prefill"], strict=True)), 3),
            "branches_speedup": round(statistics.median(b / a for a, b in zip(spilled["branches"], resident["branches"], strict=True)), 3)}


def run_residency(settings: Any, workload: Sequence[dict[str, Any]], resident: Sequence[int] = RESIDENT_LEVELS,
                  progress: bool = True) -> dict[str, Any]:
    """A new state's prefill rate, and its branch time once cached, while 0, 1, 2... other states are cached:
    spilled to host memory between requests (the default) against kept resident in KV cells, side by side.
    """
    from tqdm.auto import tqdm

    from ...decision.engine import DecisionEngine

    most = check_levels(workload, resident)
    room = STATE_ROOM * (most + 2)  # every other prefix plus the target, its branches and slack
    update = {"n_ctx": max(settings.n_ctx, 2 * room), "cache_tokens": room}
    engines = {p: DecisionEngine(settings.model_copy(update={**update, "cache_spill": p == "spilled"})) for p in RESIDENCY_POLICIES}
    keys = [(p, k) for k in resident for p in RESIDENCY_POLICIES]
    rows: dict[tuple[str, int], Samples] = {key: {"branches": [], "prefill": [], "hit": [], "kv": [], "cached": []} for key in keys}
    targets = workload[: len(workload) - most]
    try:
        for i, row in enumerate(tqdm(targets, desc="bench residency", unit="state", file=sys.stderr, disable=not progress)):
            for policy, k in keys:
                measure_target(engines[policy], row, workload[i + 1 : i + 1 + k], rows[(policy, k)], policy)
    finally:
        for engine in engines.values():
            engine.close()
    base = {p: rows[(p, resident[0])] for p in RESIDENCY_POLICIES}
    return {
        "workload": {"states": len(targets), "resident_levels": list(resident), "policies": list(RESIDENCY_POLICIES)},
        "policies": {p: {str(k): summarize_level(rows[(p, k)], base[p]) for k in resident} for p in RESIDENCY_POLICIES},
        "spilled_vs_resident": {str(k): spilled_vs_resident(rows[("spilled", k)], rows[("resident", k)]) for k in resident},
    }


def format_residency(doc: dict[str, Any]) -> str:
    """The results as `semif bench residency` prints them: each policy at each level, and spilled against resident, as JSON."""
    return json.dumps({k: doc[k] for k in ("policies", "spilled_vs_resident")}, indent=2)


def command_residency(args: Any) -> int:
    """`semif bench residency`: the run, its figures printed, results/bench/residency.json written."""
    settings, meta = describe_bench_run(args)
    workload = load_workload(args.workload, states=args.states)
    doc = {**meta, **run_residency(settings, workload, args.resident)}
    print(format_residency(doc))
    out = write_result(doc, args.output or settings.results_dir / "bench" / "residency.json")
    print(f"wrote {out}", file=sys.stderr)
    return 0
