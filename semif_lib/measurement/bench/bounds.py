"""What a run of `semif bench modes` is held to: the most forking can gain on its workload, and the issue's targets.

`estimate_fork_ceiling` reads the ceiling from token counts and the per-token costs the run measured;
`check_targets` turns the paths' rates and the cached path's bounds into measured ratios and met flags
(reported, never asserted in tests), each with its bootstrap interval over states (`conditions`).
"""

from __future__ import annotations

import statistics
from typing import Any, Sequence

from ..conditions import bootstrap_ratio, interval_against

__all__ = ["check_targets", "estimate_fork_ceiling", "fraction_interval", "rate_interval"]

# Targets from the issue; checked and reported, never asserted in tests.
TARGET_FORK_VS_FRESH = 15.0
TARGET_FORK_VS_ONESHOT = 1.10
TARGET_CACHED_FRACTION = 0.85
TARGET_BEST_VS_NAIVE = 1.15


def estimate_fork_ceiling(forks: Sequence[dict[str, float]]) -> dict[str, Any] | None:
    """How far forking can beat fresh on this workload, from token counts and the measured per-token costs.

    Fresh decodes n*P + S tokens per state (every question re-reads the prefix P); a fork decodes P + D,
    where D are the branch tokens actually decoded. At equal cost per token the ratio is
    (n*P + S) / (P + D). A branch token attends to the whole prefix while an average prefill token
    attends to half of it, so a branch token costs more; weighting D by that measured cost gives
    the ceiling the hardware allows.
    """
    forks = [f for f in forks if f["prefill_s"] > 0 and f["decoded"] > 0]
    if not forks:
        return None
    prefix = sum(f["prefix"] for f in forks)
    decoded = sum(f["decoded"] for f in forks)
    prefill_rate = prefix / sum(f["prefill_s"] for f in forks)
    branch_rate = decoded / sum(f["branches_s"] for f in forks)
    cost = prefill_rate / branch_rate
    fresh_tokens = sum(f["questions"] * f["prefix"] + f["suffix"] for f in forks)
    return {
        "prefill_tokens_per_s": round(prefill_rate, 1),
        "branch_tokens_per_s": round(branch_rate, 1),
        "branch_token_cost_vs_prefill": round(cost, 3),
        "suffix_tokens_shared_by_tree": round(1 - decoded / sum(f["suffix"] for f in forks), 4),
        "fork_vs_fresh_at_equal_token_cost": round(fresh_tokens / (prefix + decoded), 2),
        "fork_vs_fresh_at_measured_token_cost": round(fresh_tokens / (prefix + cost * decoded), 2),
    }


def check_targets(summary: dict[str, dict[str, Any]], bound_ratios: Sequence[tuple[float, float]],
                  per_state: dict[str, Sequence[tuple[int, float]]] | None = None) -> dict[str, Any]:
    """The issue's targets, as measured ratios and pass/fail flags, each with its interval over states where
    `per_state` holds each path's (decisions, seconds) per state (`conditions.bootstrap_ratio`)."""
    rate = {p: s["decisions_per_s"] for p, s in summary.items() if s["decisions_per_s"]}
    forks = {p: rate[p] for p in ("serial", "parallel") if p in rate}
    pairs = per_state or {}

    out: dict[str, Any] = {}
    if forks:
        best_path = max(forks, key=forks.get)
        best = forks[best_path]
        out["best_fork_path"] = best_path
        if "fresh" in rate:
            out["best_fork_vs_fresh"] = {"ratio": round(best / rate["fresh"], 2), "target": TARGET_FORK_VS_FRESH,
                                         "met": best / rate["fresh"] >= TARGET_FORK_VS_FRESH,
                                         **rate_interval(pairs, best_path, "fresh", TARGET_FORK_VS_FRESH)}
        if "oneshot" in rate:
            slower = rate["oneshot"] / best
            out["oneshot_vs_best_fork"] = {"ratio": round(slower, 3), "target_at_most": TARGET_FORK_VS_ONESHOT,
                                           "met": slower <= TARGET_FORK_VS_ONESHOT,
                                           **rate_interval(pairs, "oneshot", best_path, TARGET_FORK_VS_ONESHOT, at_most=True)}
        if "naive-user" in rate:
            out["best_fork_vs_naive_user"] = {"ratio": round(best / rate["naive-user"], 2), "target": TARGET_BEST_VS_NAIVE,
                                              "met": best / rate["naive-user"] >= TARGET_BEST_VS_NAIVE,
                                              **rate_interval(pairs, best_path, "naive-user", TARGET_BEST_VS_NAIVE)}
    if bound_ratios:
        fraction = statistics.median(r / b for r, b in bound_ratios)
        out["cached_fraction_of_bound"] = {"ratio": round(fraction, 3), "target": TARGET_CACHED_FRACTION,
                                           "met": fraction >= TARGET_CACHED_FRACTION,
                                           **fraction_interval(bound_ratios)}
    return out


def rate_interval(pairs: dict[str, Sequence[tuple[int, float]]], ours: str, theirs: str, target: float,
                  at_most: bool = False) -> dict[str, Any]:
    """`{"interval": ...}` of `ours`' rate against `theirs`' over the states both ran ({} without both)."""
    if ours not in pairs or theirs not in pairs:
        return {}
    return {"interval": interval_against(bootstrap_ratio(pairs[ours], pairs[theirs]), target, at_most)}


def fraction_interval(bound_ratios: Sequence[tuple[float, float]]) -> dict[str, Any]:
    """`{"interval": ...}` of the cached path's median fraction of its bound, per state (speedup, bound)."""
    return {"interval": interval_against(bootstrap_ratio(bound_ratios), TARGET_CACHED_FRACTION)}
