"""`semif bench peer --builds A,B`: the prefill gap between the decision path and llama-server on two llama.cpp builds, paired.

Two prefill figures from runs on two days (0.91 on b10435, 0.83 on b10970) cannot say whether a build
moved the gap or the machine did. Here one run holds both builds: for each, `semif serve` on that build's
libllama (through its verified binding, as the adapter image runs) and that build's llama-server, all
four servers up at once (an idle one takes no CPU), each build's baseline measured on its own library as its
servers start. Each state goes through `decision-cold` and
`server-logprobs` on one build, then on the other, the builds taking turns going first. Per state
and build: each side's prefill rate over the state's long prefill, from the servers' own timings.
Then, with 95 % bootstrap intervals over states: each build's gap (decision / llama-server), and the
second build against the first for each side and for the gap. An interval that spans 1 shows no change.
"""

from __future__ import annotations

import sys
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from ....errors import InvalidRequestError
from ....settings import ContainerSettings
from ...conditions import bootstrap_ratio, format_interval, interval_against, paired_order
from ..workload import write_result
from .config import PeerConfig
from .run import opened_peer, run_state, say_on_stderr

__all__ = ["command_builds", "format_builds", "run_builds"]

SIDES = {"decision": "decision-cold", "llama-server": "server-logprobs"}  # the path whose long prefill each side's rate is read from


def machine_for(build: int, machine: ContainerSettings) -> ContainerSettings:
    """`machine` with that build's llama-server; refused with the command to run when the build is not there."""
    from ....containers.images import llama_cpp_dir

    directory = llama_cpp_dir(build)
    if not all((directory / name).exists() for name in ("llama-server", "libllama.so", "python/llama_cpp")):
        raise InvalidRequestError(f"--builds: llama.cpp b{build} is not built in {directory}: run container/build_libllama.sh {build}",
                                  field="builds")
    return machine.model_copy(update={"llama_server": directory / "llama-server"})


def prefill_rates(run: Any, index: int, row: dict[str, Any]) -> dict[str, float | None]:
    """One state on one build; each side's prefill rate of it (None: its prefill was too short to count)."""
    before = {side: len(run.tallies[path].prefill_rates) for side, path in SIDES.items()}
    run_state(run, index, row)
    return {side: run.tallies[path].prefill_rates[-1] if len(run.tallies[path].prefill_rates) > before[side] else None
            for side, path in SIDES.items()}


def change(later: Sequence[float], earlier: Sequence[float], target: float = 1.0) -> dict[str, Any]:
    """The median per-state ratio later / earlier, with its interval and whether it clears `target`."""
    boot = bootstrap_ratio(list(zip(later, earlier, strict=True)))
    return {"ratio": boot["ratio"], "interval": interval_against(boot, target)}


def run_builds(config: PeerConfig, builds: Sequence[int], workload: Sequence[dict[str, Any]], progress: bool = True) -> dict[str, Any]:
    """Every state on every build, the builds taking turns; per-state rates, each build's gap and the changes between builds."""
    from tqdm.auto import tqdm

    if len(builds) != 2 or builds[0] == builds[1]:
        raise InvalidRequestError(f"--builds takes two different build numbers, got {list(builds)}", field="builds")
    base = config.machine or ContainerSettings.model_construct()
    configs = {b: replace(config, paths=tuple(SIDES.values()), clients=0, kind="native", decision_llama="build",
                          machine=machine_for(b, base), port=config.port + 2 * k) for k, b in enumerate(builds)}
    say = say_on_stderr(progress)
    per_state: list[dict[str, Any]] = []
    with ExitStack() as stack:
        runs = {b: stack.enter_context(opened_peer(configs[b], say)) for b in builds}
        for i, row in enumerate(tqdm(workload, desc="bench peer --builds", unit="state", file=sys.stderr, disable=not progress)):
            order = paired_order(i, list(builds))
            rates = {b: prefill_rates(runs[b], i, row) for b in order}
            per_state.append({"id": row.get("id"), "first": order[0], "prefill_tokens_per_s": {str(b): rates[b] for b in builds}})
        described = {str(b): {"llama_cpp_build": runs[b].peer.llama_cpp_build, "decision_server": runs[b].decision_server.model_dump(),
                              "baseline": runs[b].baseline} for b in builds}
    return {"builds": list(builds), "workload": {"states": len(per_state), "questions_per_state": config.questions or "all"},
            "config": {"threads": config.threads, "n_ctx": config.n_ctx, "paths": list(SIDES.values())},
            "servers": described, "figures": figures(per_state, builds), "per_state": per_state}


def figures(per_state: Sequence[dict[str, Any]], builds: Sequence[int]) -> dict[str, Any]:
    """Each build's gap, and the second build against the first (decision, llama-server, gap), over the states both sides counted."""
    first, second = (str(b) for b in builds)
    counted = [s["prefill_tokens_per_s"] for s in per_state
               if all(s["prefill_tokens_per_s"][b][side] for b in (first, second) for side in SIDES)]
    if not counted:
        return {"states_counted": 0}
    gap = {b: [r[b]["decision"] / r[b]["llama-server"] for r in counted] for b in (first, second)}
    out: dict[str, Any] = {"states_counted": len(counted)}
    for b in (first, second):
        out[f"gap_b{b}"] = change([r[b]["decision"] for r in counted], [r[b]["llama-server"] for r in counted])
    for side in SIDES:
        out[f"{side}_b{second}_over_b{first}"] = change([r[second][side] for r in counted], [r[first][side] for r in counted])
    out[f"gap_b{second}_over_b{first}"] = change(gap[second], gap[first])
    return out


def format_builds(doc: dict[str, Any]) -> str:
    """The figures as a Markdown table (docs/benchmarks.md quotes it)."""
    f = doc["figures"]
    rows = [f"Prefill, {f['states_counted']} states, paired per state (median of per-state ratios, 95 % bootstrap interval):", "",
            "| figure | ratio | 95 % interval over states, against 1 |", "|---|---:|---|"]
    for name, r in f.items():
        if isinstance(r, dict):
            label = name.replace("_over_", " / ").replace("_", " ")
            rows.append(f"| {label} | {r['ratio']}x | {format_interval(r['interval'])} |")
    return "\n".join(rows)


def command_builds(args: Any, config: PeerConfig, workload: Sequence[dict[str, Any]], head: dict[str, Any]) -> int:
    """`semif bench peer --builds A,B`: the run, its table printed, results/bench/peer-builds.json written."""
    doc = {**head, **run_builds(config, args.builds, workload)}
    print(format_builds(doc))
    out = write_result(doc, args.output or Path("results/bench") / "peer-builds.json")
    print(f"wrote {out}", file=sys.stderr)
    return 0
