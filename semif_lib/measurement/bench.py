"""`semif bench`: the command line of every benchmark, and the modes benchmark's report.

* `semif bench modes` (`modes.run_modes`): the 37-state x 21-criterion workload through every
  execution path (fresh, serial, parallel, cached, naive-user, oneshot), interleaved state by state
  so that machine noise hits every path alike. Reports decisions/s, state p50, prefill tokens/s, and
  argmax flips and max |Δp| of each path against fresh.
* `semif bench readout-vs-generation` (`readout_vs_generation`): 21 criteria on one state, read out
  directly against the model writing a JSON array of answers; median of N cold runs each.
* `semif bench residency` (`residency`): other cached prefixes spilled to host memory against kept in KV cells.
* `semif bench robustness` and `semif bench peer` register their own subcommands here.

Results are JSON files under `results/bench/`; the README quotes them with the command used.
Absolute times on shared 2-core machines are noisy: read the ratios. The notebooks read the
committed files through `load_or_run` and draw them with `plot_paths` and `plot_readout_vs_generation`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from ..arguments import add_engine_arguments, engine_overrides
from .modes import PATHS, QUICK_FRESH_QUESTIONS, run_modes
from .readout_vs_generation import READOUT_RUNS, SINGLE_STATE, plot_readout_vs_generation, run_readout_vs_generation
from .residency import RESIDENCY_STATES, RESIDENT_LEVELS, run_residency
from .workload import QUICK_STATES, RESULTS_DIR, WORKLOAD, describe_machine, load_workload, positive_int, write_result

__all__ = [
    "PATHS",
    "QUICK_FRESH_QUESTIONS",
    "QUICK_STATES",
    "RESULTS_DIR",
    "describe_machine",
    "format_markdown",
    "format_modes_table",
    "load_or_run",
    "load_workload",
    "plot_paths",
    "plot_readout_vs_generation",
    "register_cli",
    "run_modes",
    "run_readout_vs_generation",
    "run_residency",
]


def format_modes_table(doc: dict[str, Any]) -> str:
    import pandas as pd

    frame = pd.DataFrame.from_dict(doc["paths"], orient="index")
    cols = ["decisions", "seconds", "decisions_per_s", "state_p50_s", "argmax_flips_vs_fresh", "max_abs_dp_vs_fresh"]
    lines = [frame[cols].to_string(), ""]
    lines.append(f"prefill {doc['prefill_tokens_per_s']} tokens/s; suffix tokens mean {doc['workload']['suffix_tokens_mean']}, "
                 f"max {doc['workload']['suffix_tokens_max']}; prefix tokens mean {doc['workload']['prefix_tokens_mean']}")
    for name, target in doc["targets"].items():
        lines.append(f"{name}: {target}")
    if doc.get("fork_ceiling"):
        lines.append(f"fork ceiling: {doc['fork_ceiling']}")
    return "\n".join(lines)


def command_bench(args: argparse.Namespace) -> int:
    from ..settings import load_settings

    overrides = engine_overrides(args)
    overrides.update(flash_attn=args.flash_attn, n_ubatch=args.n_ubatch)
    settings = load_settings(**overrides)
    command = "semif bench " + " ".join(sys.argv[3:] if sys.argv[1:3] == ["bench", args.which] else [args.which])
    meta = {"command": " ".join(["semif", *sys.argv[1:]]) if sys.argv[1:2] == ["bench"] else command,
            "model": str(settings.model_path or "embedded SmolLM2-135M-Instruct Q4_1"), "machine": describe_machine(settings)}
    if args.which == "modes":
        workload = load_workload(args.workload, quick=args.quick, states=args.states)
        fresh_questions = args.fresh_questions or (QUICK_FRESH_QUESTIONS if args.quick else None)
        doc = {**meta, **run_modes(settings, workload, args.paths.split(","), fresh_questions)}
        print(format_modes_table(doc))
        name = "modes-quick.json" if args.quick else "modes.json"
    elif args.which == "residency":
        workload = load_workload(args.workload, states=args.states)
        doc = {**meta, **run_residency(settings, workload, args.resident)}
        print(json.dumps({k: doc[k] for k in ("policies", "spilled_vs_resident")}, indent=2))
        name = "residency.json"
    else:
        doc = {**meta, **run_readout_vs_generation(settings, args.request, args.runs)}
        print(json.dumps({k: v for k, v in doc.items() if k not in ("machine",)}, indent=2))
        name = "readout-vs-generation.json"
    out = write_result(doc, args.output or settings.results_dir / "bench" / name)
    print(f"wrote {out}", file=sys.stderr)
    return 0


def parse_int_list(text: str) -> list[int]:
    """`0,1,2` -> [0, 1, 2], for argparse (which turns the ValueError into a usage error)."""
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def register_cli(sub: Any) -> None:
    bench = sub.add_parser("bench", help="benchmarks: execution paths, readout against generation")
    which = bench.add_subparsers(dest="which", required=True)
    modes = which.add_parser("modes", help="the 37x21 workload through every path, interleaved per state")
    modes.add_argument("--quick", action="store_true",
                       help=f"first {QUICK_STATES} states, fresh on {QUICK_FRESH_QUESTIONS} questions each (a few minutes on 2 cores)")
    modes.add_argument("--states", type=positive_int, help="first N states")
    modes.add_argument("--workload", type=Path, default=WORKLOAD)
    modes.add_argument("--paths", default=",".join(PATHS), help="comma-separated subset of " + ",".join(PATHS))
    modes.add_argument("--fresh-questions", type=positive_int, dest="fresh_questions",
                       help="fresh scores only the first N questions per state (its cost per decision does not depend on N)")
    rvg = which.add_parser("readout-vs-generation", help="21 criteria on one state: readout against JSON generation")
    rvg.add_argument("--request", type=Path, default=SINGLE_STATE)
    rvg.add_argument("--runs", type=positive_int, default=READOUT_RUNS)
    res = which.add_parser("residency", help="a new state's prefill and a cached one's branches with other states cached: "
                                             "spilled against resident")
    res.add_argument("--states", type=positive_int, default=RESIDENCY_STATES,
                     help="first N states; each is a target but the last ones, which stay resident for the earlier")
    res.add_argument("--workload", type=Path, default=WORKLOAD)
    res.add_argument("--resident", type=parse_int_list, default=list(RESIDENT_LEVELS),
                     help="comma-separated numbers of other cached prefixes (default " + ",".join(map(str, RESIDENT_LEVELS)) + ")")
    from .robustness import register_cli as register_robustness

    register_robustness(which)  # semif bench robustness: semif serve under load and faults (no engine flags: it starts servers)
    from .peer import register_cli as register_peer

    register_peer(which)  # semif bench peer: semif serve against the text DLC's llama-server (starts both servers)
    from .rotations import register_cli as register_rotations

    register_rotations(which)  # semif bench rotations: x_debias rotations against plain choice questions
    for p in (modes, rvg, res):
        add_engine_arguments(p)
        p.add_argument("--flash-attn", choices=("auto", "on", "off"), dest="flash_attn")
        p.add_argument("--n-ubatch", type=int, dest="n_ubatch")
        p.add_argument("--output", type=Path, help="results file (default results/bench/<name>.json)")
        p.set_defaults(func=command_bench)


def load_or_run(names: str | Sequence[str], runner: Callable[[], dict[str, Any]], results_dir: Path = RESULTS_DIR) -> dict[str, Any]:
    """The first committed results file found among `names`, else a fresh run (notebooks must stay quick)."""
    for name in [names] if isinstance(names, str) else names:
        path = Path(results_dir) / "bench" / name
        if path.is_file():
            return json.loads(path.read_text())
    return runner()


def plot_paths(doc: dict[str, Any]) -> Any:
    """Bar chart of decisions/s per path, with the oneshot lower bound drawn as a line."""
    import matplotlib.pyplot as plt

    paths = [p for p in doc["paths"] if p != "oneshot"]
    rates = [doc["paths"][p]["decisions_per_s"] for p in paths]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    bars = ax.bar(paths, rates, color=["#bbbbbb" if p in ("fresh", "naive-user") else "#3b7dd8" for p in paths])
    ax.bar_label(bars, fmt="%.2f")
    if "oneshot" in doc["paths"]:
        ax.axhline(doc["paths"]["oneshot"]["decisions_per_s"], color="#d8533b", linestyle="--", label="oneshot bound (one batch)")
    ceiling, fresh = doc.get("fork_ceiling"), doc["paths"].get("fresh", {}).get("decisions_per_s")
    if ceiling and fresh:  # what the token counts and measured per-token costs allow a fork path
        ax.axhline(fresh * ceiling["fork_vs_fresh_at_measured_token_cost"], color="#555555", linestyle=":",
                   label=f"fork ceiling ({ceiling['fork_vs_fresh_at_measured_token_cost']}x fresh)")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left")
    ax.set_ylabel("decisions / s")
    ax.set_title(f"{doc['workload']['states']} states x 21 criteria, {doc['machine']['threads']} threads")
    fig.tight_layout()
    return fig


def format_markdown(doc: dict[str, Any]) -> str:
    """The paths table and the targets as Markdown, so the README can quote a results file verbatim."""
    rows = ["| path | decisions | decisions/s | state p50 (s) | argmax flips vs fresh | max \\|Δp\\| vs fresh |",
            "|---|---:|---:|---:|---:|---:|"]
    for path, r in doc["paths"].items():
        flips = "-" if path == "fresh" else r["argmax_flips_vs_fresh"]
        dp = "-" if path == "fresh" else f"{r['max_abs_dp_vs_fresh']:.3f}"
        rows.append(f"| {path} | {r['decisions']} | {r['decisions_per_s']:.3f} | {r['state_p50_s']:.2f} | {flips} | {dp} |")
    rows += ["", "| target | measured ratio | met |", "|---|---:|---|"]
    for name, t in doc["targets"].items():
        if isinstance(t, dict):
            limit = t.get("target", t.get("target_at_most"))
            rows.append(f"| {name} (target {limit}) | {t['ratio']} | {'yes' if t['met'] else 'no'} |")
    ceiling = doc.get("fork_ceiling")
    if ceiling:
        rows += ["", f"Fork against fresh, the most this workload allows: {ceiling['fork_vs_fresh_at_equal_token_cost']}x if a branch "
                 f"token cost what a prefill token costs, {ceiling['fork_vs_fresh_at_measured_token_cost']}x at the measured cost "
                 f"(a branch token costs {ceiling['branch_token_cost_vs_prefill']}x a prefill token; the token tree decoded "
                 f"{100 * ceiling['suffix_tokens_shared_by_tree']:.1f} % fewer suffix tokens)."]
    return "\n".join(rows)
