"""`semif bench peer`: the decision path side by side with the text DLC's own server, llama-server.

The command line lives here; the rest is in four modules, each with one job:

* `peer_protocol`: what each server is sent and how its answers are read (`Pass`: one path on one state);
* `peer_run`: `PeerConfig`, both servers up, every path on every state, the 8-client phase (`run_peer`);
* `peer_report`: tallies across states, summaries, targets, ceiling, the Markdown and the plot;
* `peer_types`: the results as typed summaries (`PeerResults`), serialized to `results/bench/peer*.json`.

`PeerConfig` holds every default the command line has: a flag left out is None here and the
config's default applies. The public names of those modules are re-exported below.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from .peer_protocol import decision_request, logprob_body, mark_state, plan_peer_questions, read_slot_probabilities
from .peer_report import format_markdown, plot_peer, save_peer_plot
from .peer_run import N_UBATCH, PeerConfig, check_paths, peer_defaults, run_peer
from .peer_types import PEER_PATHS, PeerResults
from .workload import QUICK_STATES, WORKLOAD, describe_machine, load_workload, positive_int, write_result

__all__ = [
    "PEER_PATHS",
    "PeerConfig",
    "PeerResults",
    "command_peer",
    "config_from_args",
    "decision_request",
    "format_markdown",
    "logprob_body",
    "mark_state",
    "plan_peer_questions",
    "plot_peer",
    "read_slot_probabilities",
    "register_cli",
    "run_peer",
]


def comma_list(text: str) -> list[str]:
    return text.split(",")


def config_from_args(args: argparse.Namespace) -> PeerConfig:
    """The run's `PeerConfig` from the flags given; every flag left out (None) keeps the config's default."""
    names = ("threads", "n_ctx", "parallel", "clients", "questions", "paths", "kind", "decision_llama", "port", "log_dir", "model_path")
    return PeerConfig.from_options(**{name: getattr(args, name) for name in names})


def command_peer(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    check_paths(config.paths)
    workload = load_workload(args.workload, states=args.states or (QUICK_STATES if args.quick else None))
    phase = args.concurrency_states or (config.clients if args.quick else None)
    concurrency = load_workload(args.workload, states=phase) if config.clients else []
    head = {"command": " ".join(["semif", *sys.argv[1:]]) if sys.argv[1:3] == ["bench", "peer"] else "semif bench peer",
            "machine": describe_machine(SimpleNamespace(threads=config.threads, flash_attn="auto", n_ubatch=N_UBATCH))}
    output = args.output or Path("results/bench") / ("peer-quick.json" if args.quick else "peer.json")

    def checkpoint(partial: PeerResults) -> None:
        write_result(partial.model_copy(update=head).to_json(), output)
        format_markdown(partial)  # the report reads every figure after the first state already, not first at the end

    results = run_peer(config, workload, concurrency, checkpoint=checkpoint).model_copy(update=head)
    out = write_result(results.to_json(), output)
    print(format_markdown(results))
    print(f"wrote {out} and {save_peer_plot(results, out.with_suffix('.png'))}", file=sys.stderr)
    return 0


def register_cli(bench_subparsers: Any) -> None:
    """`semif bench peer` (registered by `bench.register_cli` under `semif bench`); defaults from `PeerConfig`."""
    d = peer_defaults()
    p = bench_subparsers.add_parser("peer", help="the decision path against the text DLC's llama-server, same model, same workload, "
                                                 "one run")
    p.add_argument("--quick", action="store_true", help=f"first {QUICK_STATES} states; the client phase on one state per client")
    p.add_argument("--states", type=positive_int, help="first N states")
    p.add_argument("--questions", type=positive_int, help="first N questions of each state (default: all)")
    p.add_argument("--workload", type=Path, default=WORKLOAD)
    p.add_argument("--paths", type=comma_list, help="comma-separated subset of " + ",".join(PEER_PATHS) + " (default: all)")
    p.add_argument("--threads", type=int, help=f"llama.cpp threads on both sides (default {d['threads']})")
    p.add_argument("--n-ctx", type=positive_int, dest="n_ctx", help=f"KV cells on both sides (default {d['n_ctx']})")
    p.add_argument("--parallel", type=positive_int,
                   help=f"llama-server slots, and requests in flight on the concurrent path (default {d['parallel']})")
    p.add_argument("--clients", type=int, help=f"clients in the concurrency phase (0 skips it; default {d['clients']})")
    p.add_argument("--concurrency-states", type=positive_int, dest="concurrency_states",
                   help="states in the concurrency phase (default: every state; --quick: one per client)")
    p.add_argument("--text-server", choices=("auto", "container", "native"), dest="kind",
                   help=f"the DLC replica container, native llama-server, or auto: the container when a runtime has the image "
                        f"(default {d['kind']})")
    p.add_argument("--decision-llama", choices=("auto", "build", "venv"), dest="decision_llama",
                   help="libllama under semif serve: the peer's llama.cpp build (as the adapter image runs), llama-cpp-python's own, "
                        f"or auto: the build when container/build_libllama.sh made it (default {d['decision_llama']})")
    p.add_argument("--model", type=Path, dest="model_path", metavar="MODEL", help="GGUF file (default: the embedded SmolLM2)")
    p.add_argument("--port", type=int, help=f"loopback port of semif serve; llama-server takes the next one (default {d['port']})")
    p.add_argument("--log-dir", type=Path, dest="log_dir", help=f"server logs (default {d['log_dir']})")
    p.add_argument("--output", type=Path, help="results file (default results/bench/peer[-quick].json)")
    p.set_defaults(func=command_peer)
