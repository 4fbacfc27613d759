"""`semif intervals FILE...`: the bootstrap intervals of a results file written before runs recorded them.

`semif bench modes` and `semif bench peer` write each target's interval as they run (`bounds`,
`peer.report`). Their older files hold the per-state seconds those intervals resample, so the interval a
run would have written can be read from its own file: this adds it to each target that lacks one, by the
same functions and seed, and changes nothing else. Not the ratios or the met flags (computed from the
run's unrounded figures), and no `conditions`: the machine of that day was not recorded, and today's
would be a false statement about it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ...errors import InvalidRequestError
from .bounds import fraction_interval, rate_interval
from .peer.report import readout_interval, speed_interval
from .peer.results import PeerResults

__all__ = ["add_modes_intervals", "add_peer_intervals", "command_intervals"]

MODES_TARGETS = {"best_fork_vs_fresh": ("{best}", "fresh", False), "oneshot_vs_best_fork": ("oneshot", "{best}", True),
                 "best_fork_vs_naive_user": ("{best}", "naive-user", False)}


def add_peer_intervals(doc: dict[str, Any]) -> dict[str, Any]:
    """A `semif bench peer` file with an interval on each paired target (cold, cached, readout) that lacks one."""
    results = PeerResults.of(doc)
    targets, states = results.targets, results.per_state
    for target, ours in ((targets.cold_vs_best_server, "decision-cold"), (targets.cached_vs_best_server, "decision-cached")):
        if target is not None and target.interval is None and (interval := speed_interval(states, ours, target.best_server_path,
                                                                                          target.target)):
            target.interval = interval
    readout = targets.readout_vs_server_json
    if readout is not None and readout.interval is None:
        speedups = [s.seconds["server-json"] / s.seconds["decision-cold"] for s in states
                    if s.seconds.get("server-json", 0) > 0 and s.seconds.get("decision-cold", 0) > 0]
        readout.interval = readout_interval(speedups)
    return results.to_json()


def add_modes_intervals(doc: dict[str, Any]) -> dict[str, Any]:
    """A `semif bench modes` file with an interval on each target that lacks one, from `per_state`: each path's
    seconds, its questions (fresh: `fresh_questions_per_state`), the cached path's speedup and bound."""
    fresh = doc["workload"].get("fresh_questions_per_state")
    pairs: dict[str, list[tuple[int, float]]] = {}
    bounds: list[tuple[float, float]] = []
    for state in doc["per_state"]:
        questions = len(state["suffix_tokens"])
        for path, seconds in state["seconds"].items():
            pairs.setdefault(path, []).append((fresh if path == "fresh" and isinstance(fresh, int) else questions, seconds))
        if "cached" in state["seconds"] and "parallel" in state["seconds"]:
            suffix = sum(state["suffix_tokens"].values())
            bounds.append((state["seconds"]["parallel"] / state["seconds"]["cached"], (state["prefix_tokens"] + suffix) / suffix))
    targets = doc["targets"]
    best = targets.get("best_fork_path")
    for name, (ours, theirs, at_most) in MODES_TARGETS.items():
        target = targets.get(name)
        if target and "interval" not in target:
            limit = target.get("target", target.get("target_at_most"))
            target.update(rate_interval(pairs, ours.format(best=best), theirs.format(best=best), limit, at_most))
    cached = targets.get("cached_fraction_of_bound")
    if cached and "interval" not in cached and bounds:
        cached.update(fraction_interval(bounds))
    return doc


def command_intervals(args: Any) -> int:
    """`semif intervals FILE...`: each file rewritten with its targets' intervals (modes or peer, told by its keys)."""
    for path in args.files:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        if "decision_server" in doc:
            out = add_peer_intervals(doc)
        elif "fork_ceiling" in doc:
            out = add_modes_intervals(doc)
        else:
            raise InvalidRequestError(f"{path} is neither a `semif bench modes` nor a `semif bench peer` results file", field="files")
        Path(path).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)
    return 0
