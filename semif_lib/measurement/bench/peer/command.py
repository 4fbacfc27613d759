"""`semif bench peer`'s command: the flags read once into a `PeerConfig`, then the full run (`run`) or, with
`--builds A,B`, the prefill gap on two llama.cpp builds (`builds`); the results file and the report written."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ....settings import ContainerSettings, load_settings
from ...options import QUICK_STATES
from ..workload import describe_machine, load_workload, write_result
from .builds import command_builds
from .config import N_UBATCH, PeerConfig
from .report import format_peer, save_peer_plot
from .results import PeerResults
from .run import check_paths, run_peer

__all__ = ["command_peer", "config_from_args"]


def config_from_args(args: Any, machine: ContainerSettings) -> PeerConfig:
    """The run's `PeerConfig` from the flags given; every flag left out (None) keeps the config's default."""
    names = ("threads", "n_ctx", "parallel", "clients", "questions", "paths", "kind", "decision_llama", "port", "log_dir", "model_path")
    return PeerConfig.from_options(machine=machine, **{name: getattr(args, name) for name in names})


def command_peer(args: Any) -> int:
    """`semif bench peer`: the run, checkpointed after every state, the Markdown printed, results and plot written."""
    config = config_from_args(args, load_settings())  # the command reads the environment once: this machine's tools
    check_paths(config.paths)
    workload = load_workload(args.workload, states=args.states or (QUICK_STATES if args.quick else None))
    phase = args.concurrency_states or (config.clients if args.quick else None)
    concurrency = load_workload(args.workload, states=phase) if config.clients else []
    head = {"command": " ".join(["semif", *sys.argv[1:]]) if sys.argv[1:3] == ["bench", "peer"] else "semif bench peer",
            "machine": describe_machine(SimpleNamespace(threads=config.threads, flash_attn="auto", n_ubatch=N_UBATCH))}
    if args.builds:  # only the prefill gap, on two builds
        return command_builds(args, config, workload, head)
    output = args.output or Path("results/bench") / ("peer-quick.json" if args.quick else "peer.json")

    def checkpoint(partial: PeerResults) -> None:
        write_result(partial.model_copy(update=head).to_json(), output)
        format_peer(partial)  # the report reads every figure after the first state already, not first at the end

    results = run_peer(config, workload, concurrency, checkpoint=checkpoint).model_copy(update=head)
    out = write_result(results.to_json(), output)
    print(format_peer(results))
    print(f"wrote {out} and {save_peer_plot(results, out.with_suffix('.png'))}", file=sys.stderr)
    return 0
