"""The measurement wing's command lines: `semif bench modes | readout-vs-generation | residency | robustness | peer | gpu | ubatch |
rotations | debias | invariance | preamble | coherence | scale | sys1bench`, `semif intervals`, `semif eval`, `semif eval-compare`,
`semif sets` and `semif calibrate`.

Every flag of the wing is declared here, and declaring them is light: the names and defaults their help
shows come from `options` and `bench.peer.config`, so `semif --help` loads no benchmark, no numpy and no
engine. `COMMANDS` is the one table of the wing's commands: each one's help, the function that runs it
("module:function", imported by `run_measurement` when that command runs: `bench.paths:command_paths` for
`semif bench modes`, ...) and the builder of its flags. That function reads the parsed flags, runs, prints
and writes the results file.
"""

from __future__ import annotations

import argparse
import importlib
from functools import partial
from pathlib import Path
from typing import Any, Callable, NamedTuple

from ..arguments import add_engine_arguments
from ..decision.schema import DEFAULT_ROTATIONS
from .bench.peer.config import peer_defaults
from .options import (
    ALL_LABELED,
    DEFAULT_MAX_ERROR,
    DEFAULT_TARGET_COVERAGE,
    LABELED,
    LONG_STATES,
    PATHS,
    PEER_PATHS,
    QUICK_FRESH_QUESTIONS,
    QUICK_STATES,
    READOUT_RUNS,
    RESIDENCY_STATES,
    RESIDENT_LEVELS,
    SINGLE_STATE,
    SYS1BENCH_GENERATORS,
    SYS1BENCH_ITEMS,
    SYS1BENCH_SEED,
    WORKLOAD,
    comma_list,
    parse_int_list,
    positive_int,
)

__all__ = ["COMMANDS", "register_bench_cli", "register_quality_cli", "run_measurement"]


# ---------------------------------------------------------------- each command's flags
def add_modes_flags(p: Any) -> None:
    p.add_argument("--quick", action="store_true",
                   help=f"first {QUICK_STATES} states, fresh on {QUICK_FRESH_QUESTIONS} questions each (a few minutes on 2 cores)")
    p.add_argument("--states", type=positive_int, help="first N states")
    p.add_argument("--workload", type=Path, default=WORKLOAD)
    p.add_argument("--paths", default=",".join(PATHS), help="comma-separated subset of " + ",".join(PATHS))
    p.add_argument("--fresh-questions", type=positive_int, dest="fresh_questions",
                   help="fresh scores only the first N questions per state (its cost per decision does not depend on N)")
    add_path_run_flags(p)


def add_readout_flags(p: Any) -> None:
    p.add_argument("--request", type=Path, default=SINGLE_STATE)
    p.add_argument("--runs", type=positive_int, default=READOUT_RUNS)
    add_path_run_flags(p)


def add_residency_flags(p: Any) -> None:
    p.add_argument("--states", type=positive_int, default=RESIDENCY_STATES,
                   help="first N states; each is a target but the last ones, which stay resident for the earlier")
    p.add_argument("--workload", type=Path, default=WORKLOAD)
    p.add_argument("--resident", type=parse_int_list, default=list(RESIDENT_LEVELS),
                   help="comma-separated numbers of other cached prefixes (default " + ",".join(map(str, RESIDENT_LEVELS)) + ")")
    add_path_run_flags(p)


def add_path_run_flags(p: Any) -> None:
    """The flags `modes`, `readout-vs-generation` and `residency` end with: the engine's, its attention and batch, the results file."""
    add_engine_arguments(p)
    p.add_argument("--flash-attn", choices=("auto", "on", "off"), dest="flash_attn")
    p.add_argument("--n-ubatch", type=int, dest="n_ubatch")
    p.add_argument("--output", type=Path, help="results file (default results/bench/<name>.json)")


def add_robustness_flags(p: Any) -> None:
    """No engine flags: it starts servers."""
    p.add_argument("--quick", action="store_true", help="8 clients x 5 requests, 20 nested, 40 fault requests (about 2 minutes)")
    p.add_argument("--threads", type=int, default=2, help="llama.cpp threads of the server (default 2)")
    p.add_argument("--port", type=int, default=18090, help="loopback port of the server (the fault server uses the next one)")
    p.add_argument("--output", type=Path, help="results file (default results/bench/robustness[-quick].json)")


def add_peer_flags(p: Any) -> None:
    """`semif bench peer`: every flag left out is None, and `bench.peer.config.PeerConfig`'s default applies."""
    d = peer_defaults()
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
    p.add_argument("--builds", type=parse_int_list, help="two llama.cpp builds (container/build_libllama.sh N): only the prefill gap, "
                   "on both, paired per state, into results/bench/peer-builds.json")
    p.add_argument("--output", type=Path, help="results file (default results/bench/peer[-quick].json)")


def add_gpu_flags(p: Any) -> None:
    p.add_argument("--dry-run", action="store_true", dest="dry_run", help="say every step, run the device check, stop there")
    p.add_argument("--library", choices=("auto", "venv", "build"), default="auto", help="CUDA llama.cpp: this environment's "
                   "(CMAKE_ARGS=-DGGML_CUDA=on), build_libllama.sh CUDA=1, or auto: the environment's if it has a GPU")
    p.add_argument("--lib-dir", type=Path, dest="lib_dir", help="the CUDA build's folder (default .semif/llama-cpp-b<build>-cuda)")
    p.add_argument("--build", type=positive_int, help="llama.cpp build to compile (default: what the DLC's tags carry)")
    p.add_argument("--model", help="GGUF file or hf:// reference (default: the embedded SmolLM2)")
    p.add_argument("--output-dir", type=Path, dest="output_dir", help="results folder (default results/bench/gpu/<device>)")


def add_ubatch_flags(p: Any) -> None:
    p.add_argument("--ids", type=comma_list, help="only these workload states, comma-separated ids (default: all 37)")
    p.add_argument("--repeats", type=positive_int, default=3, help="cached requests per state and arm, alternating (default 3)")
    p.add_argument("--fresh-questions", type=positive_int, dest="fresh_questions", help="also fresh on each state's first N")
    add_model_run_flags(p, "ubatch", "results/bench/ubatch.json")


def add_scale_flags(p: Any) -> None:
    p.add_argument("--quick", action="store_true", help=f"first {QUICK_STATES} states")
    p.add_argument("--states", type=positive_int, help="first N states (default: all 37)")
    p.add_argument("--questions", type=positive_int, default=5, help="first N questions of each state (default 5)")
    p.add_argument("--instances", type=parse_int_list, default=[1, 2, 4], help="comma-separated instance counts (default 1,2,4)")
    p.add_argument("--clients", type=positive_int, default=4, help="concurrent clients (default 4)")
    p.add_argument("--threads", type=positive_int, default=2, help="llama.cpp threads split between the instances (default 2)")
    p.add_argument("--port", type=int, default=18200, help="loopback port of the first instance; the others take the next ones")
    p.add_argument("--output", type=Path, help="results file (default results/bench/scale[-quick].json; the plot beside it)")


def add_rotations_flags(p: Any) -> None:
    p.add_argument("input", nargs="*", type=Path, default=[Path(x) for x in LABELED], help="labeled JSON Lines with choice questions")
    p.add_argument("--rotations", type=int, default=DEFAULT_ROTATIONS, help=f"orders per question (default {DEFAULT_ROTATIONS})")
    p.add_argument("--limit", type=int, help="first N lines of each file")
    p.add_argument("--states", type=int, default=LONG_STATES,
                   help=f"long workload states for the cost on many questions (default {LONG_STATES})")
    add_model_run_flags(p, "rotations", "results/bench/rotations.json")


def add_debias_flags(p: Any) -> None:
    p.add_argument("input", nargs="*", type=Path, default=[Path(x) for x in LABELED], help="labeled JSON Lines with choice questions")
    p.add_argument("--rotations", type=int, default=DEFAULT_ROTATIONS,
                   help=f"orders the rotations arm averages (default {DEFAULT_ROTATIONS})")
    p.add_argument("--limit", type=int, help="first N lines of each file")
    p.add_argument("--calibration-out", type=Path, dest="calibration_out",
                   help="also write the position prior into this calibration file (merged into this model's, or a new one)")
    add_model_run_flags(p, "debias")


def add_invariance_flags(p: Any) -> None:
    p.add_argument("--states", type=positive_int, default=3, help="first N workload states (default 3)")
    p.add_argument("--questions", type=positive_int, default=20, help="first N questions of each state (default 20)")
    add_model_run_flags(p, "invariance")


def add_preamble_flags(p: Any) -> None:
    p.add_argument("input", nargs="*", type=Path, default=[Path(x) for x in ALL_LABELED], help="labeled JSON Lines (default: every set)")
    p.add_argument("--limit", type=int, help="first N lines of each file")
    add_model_run_flags(p, "preamble")


def add_coherence_flags(p: Any) -> None:
    p.add_argument("--states", type=positive_int, default=5, help="first N workload states beside the labeled policy set (default 5)")
    add_model_run_flags(p, "coherence")


def add_model_run_flags(p: Any, which: str, output: str = "results/bench/{which}-<model>.json") -> None:
    """The flags every in-process benchmark ends with: its results file, its progress bar, the engine's settings."""
    p.add_argument("--output", type=Path, help=f"results file (default {output.format(which=which)})")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_engine_arguments(p)


def add_intervals_flags(p: Any) -> None:
    p.add_argument("files", nargs="+", type=Path, help="results files of `semif bench modes` or `semif bench peer`, rewritten in place")


def add_sys1bench_flags(p: Any) -> None:
    p.add_argument("--model", type=Path, dest="model_path", metavar="MODEL", help="GGUF file (default: the embedded SmolLM2)")
    p.add_argument("--generators", type=comma_list, default=list(SYS1BENCH_GENERATORS),
                   help="comma-separated sys1bench generators (default " + ",".join(SYS1BENCH_GENERATORS) + ")")
    p.add_argument("--items", type=positive_int, default=SYS1BENCH_ITEMS, help=f"items per generator (default {SYS1BENCH_ITEMS})")
    p.add_argument("--seed", type=int, default=SYS1BENCH_SEED, help=f"the generators' seed (default {SYS1BENCH_SEED})")
    p.add_argument("--calibration", type=Path, help="calibration file fitted on data/labeled/ for this model: applied by semif serve")
    p.add_argument("--threads", type=positive_int, default=2, help="llama.cpp threads of each server (default 2)")
    p.add_argument("--port", type=int, default=18370, help="loopback port of semif serve; llama-server takes the next one")
    p.add_argument("--log-dir", type=Path, dest="log_dir", default=Path("results/tmp"), help="server logs (default results/tmp)")
    p.add_argument("--output", type=Path, help="results file (default results/eval/sys1bench-<model>.json)")


def add_eval_flags(p: Any) -> None:
    p.add_argument("input", nargs="+", type=Path, help="labeled JSON Lines files (data/labeled/*.jsonl)")
    p.add_argument("--calibrate", action="store_true",
                   help="out-of-fold temperature scaling per question type, and write a calibration file")
    p.add_argument("--coverage", type=float, default=DEFAULT_TARGET_COVERAGE,
                   help=f"with --calibrate: prediction sets' target coverage (default {DEFAULT_TARGET_COVERAGE})")
    p.add_argument("--max-error", type=float, default=DEFAULT_MAX_ERROR, dest="max_error",
                   help=f"with --calibrate: abstain below the confidence where answered error reaches this (default {DEFAULT_MAX_ERROR})")
    p.add_argument("--folds", type=int, default=5, help="grouped k-fold splits for out-of-fold calibration (default 5)")
    p.add_argument("--permute", type=int, default=0, metavar="N", help="ask each choice question under N rotations of its option order")
    p.add_argument("--debias", action="store_true",
                   help="contextual calibration: divide out the option prior read from content-free states")
    p.add_argument("--no-baseline", action="store_true", help="skip the JSON-generation baseline")
    p.add_argument("--bootstrap", type=int, default=500, help="bootstrap resamples (over states) for 95%% intervals; 0 = none")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--limit", type=int, help="use only the first N lines of each file")
    p.add_argument("--sample", type=int, metavar="N",
                   help="at most N lines per workload, drawn stratified by label (seeded by --seed), for a slow model")
    p.add_argument("--output", type=Path, help="write the full report as JSON (and the reliability plot next to it as .png)")
    p.add_argument("--plot", type=Path, help="reliability diagram + confidence histogram PNG (default: next to --output)")
    p.add_argument("--calibration-out", type=Path, dest="calibration_out",
                   help="where --calibrate writes the calibration file (default: results/calibration/MODEL.json)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    add_engine_arguments(p)


def add_compare_flags(p: Any) -> None:
    p.add_argument("reports", nargs="+", help="LABEL=REPORT.json (or REPORT.json: labelled by its folder)")
    p.add_argument("--output", type=Path, help="write the comparison as JSON")
    p.add_argument("--markdown", type=Path, help="write the Markdown tables")


def add_sets_flags(p: Any) -> None:
    p.add_argument("report", type=Path, help="a report written by `semif eval --output` (it stores every raw decision)")
    p.add_argument("--coverage", type=float, default=DEFAULT_TARGET_COVERAGE, help=f"target coverage (default {DEFAULT_TARGET_COVERAGE})")
    p.add_argument("--max-error", type=float, default=DEFAULT_MAX_ERROR, dest="max_error",
                   help=f"abstain below the confidence where the answered error reaches this (default {DEFAULT_MAX_ERROR})")
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--debias", action="store_true", help="remove the report's content-free priors first, as its calibration file does")
    p.add_argument("--output", type=Path, help="write the summary as JSON, and its plot next to it as .png")


def add_calibrate_flags(p: Any) -> None:
    p.add_argument("report", type=Path, help="a report written by `semif eval --output` (it stores every raw decision and prior)")
    p.add_argument("--calibration-out", type=Path, dest="calibration_out", required=True, help="where to write the calibration file")
    p.add_argument("--coverage", type=float, default=DEFAULT_TARGET_COVERAGE, help=f"target coverage (default {DEFAULT_TARGET_COVERAGE})")
    p.add_argument("--max-error", type=float, default=DEFAULT_MAX_ERROR, dest="max_error",
                   help=f"abstain below the confidence where the answered error reaches this (default {DEFAULT_MAX_ERROR})")
    p.add_argument("--bootstrap", type=int, default=500, help="bootstrap resamples (over states) for 95%% intervals; 0 = none")
    p.add_argument("--output", type=Path, help="write the refitted report as JSON")


# ---------------------------------------------------------------- the table, and the one function that runs a row
class Command(NamedTuple):
    run: str  # "module:function" under `semif_lib.measurement`, imported when the command runs
    help: str
    add_flags: Callable[[Any], None]


# `semif bench <x>` rows first, in the order `semif bench --help` lists them; then the wing's top-level commands
COMMANDS: dict[str, Command] = {
    "bench modes": Command("bench.paths:command_paths", "the 37x21 workload through every path, interleaved per state", add_modes_flags),
    "bench readout-vs-generation": Command("bench.readout:command_readout",
                                           "21 criteria on one state: readout against JSON generation", add_readout_flags),
    "bench residency": Command("bench.residency:command_residency", "a new state's prefill and a cached one's branches with other "
                               "states cached: spilled against resident", add_residency_flags),
    "bench robustness": Command("bench.robustness:command_robustness", "semif serve under load, KV pressure, nested prefixes, bad "
                                "input and decode faults", add_robustness_flags),
    # semif serve against the text DLC's llama-server (starts both servers)
    "bench peer": Command("bench.peer.command:command_peer", "the decision path against the text DLC's llama-server, same model, same "
                          "workload, one run", add_peer_flags),
    "bench gpu": Command("bench.gpu:command_gpu", "on a machine with an NVIDIA GPU: a CUDA llama.cpp, every layer on the GPU "
                         "(checked), then modes --quick, readout-vs-generation and invariance into results/bench/gpu/<device>/",
                         add_gpu_flags),
    "bench ubatch": Command("bench.ubatch:command_ubatch", "the micro-batch rule: a small remainder joins the micro-batch before it, "
                            "against none, paired per state (cold and cached requests)", add_ubatch_flags),
    "bench rotations": Command("bench.rotations:command_rotations", "x_debias rotations against plain choice questions: flip rate, "
                               "accuracy, cost (one run)", add_rotations_flags),
    "bench debias": Command("quality.debias:command_debias", "choice answers without their order bias, four ways in one run: none, "
                            "content-free, the position prior (x_debias prior), rotations; flip rate, accuracy, ECE, cost",
                            add_debias_flags),
    "bench invariance": Command("bench.invariance:command_invariance", "how far answers move with their neighbours, default mode "
                                "against x_batch_invariant (together, reversed, alone; one run)", add_invariance_flags),
    "bench preamble": Command("bench.preamble:command_preamble", "x_preamble against the plain slot readout, as written and asked in "
                              "bold: option mass, accuracy, lead-ins used, cost (one run)", add_preamble_flags),
    "bench coherence": Command("bench.coherence:command_coherence", "a yes/no question as a noul, as a two-option choice and swapped: "
                               "the gap in P(yes) and each one's accuracy (one run)", add_coherence_flags),
    "bench scale": Command("bench.scale:command_scale", "semif serve x 1, 2, 4 behind a SageMaker-like router: random routing against "
                           "stateful sessions (cache hits, decisions/s, p50/p95), and the cost per million decisions", add_scale_flags),
    "intervals": Command("bench.intervals:command_intervals", "add each target's interval over states to an older modes or peer "
                         "results file (from its own per-state seconds)", add_intervals_flags),
    "bench sys1bench": Command("quality.yardstick.run:command_yardstick", "sys1bench's labeled generators against semif serve, "
                               "llama-server (bridged llm_constrained) and majority_prior, on one model: accuracy with intervals, "
                               "calibration transfer", add_sys1bench_flags),
    "eval": Command("quality.evaluate:command_eval", "decision quality on labeled JSON Lines: accuracy, ECE, Brier, NLL; calibrate, "
                    "debias, permute", add_eval_flags),
    "eval-compare": Command("quality.comparison:command_compare", "several `semif eval --output` reports side by side (JSON and "
                            "Markdown)", add_compare_flags),
    "sets": Command("quality.prediction_sets:command_sets", "prediction sets and abstention, fitted and checked out of fold on a "
                    "`semif eval` report", add_sets_flags),
    "calibrate": Command("quality.evaluate:command_calibrate", "the calibration file refitted from a `semif eval` report's stored "
                         "decisions, without the model", add_calibrate_flags),
}


def run_measurement(name: str, args: argparse.Namespace) -> int:
    """Run the command `name` of `COMMANDS`: its module is imported now, so building the parser imports none.

    Every `semif bench` command runs inside `conditions.recording`: the machine, its load and a baseline are
    read before it starts and go into every results file it writes.
    """
    module, _, function = COMMANDS[name].run.partition(":")
    run = getattr(importlib.import_module(f"{__package__}.{module}"), function)
    if not name.startswith("bench "):
        return run(args)
    from .conditions import recording

    with recording(getattr(args, "threads", None)):
        return run(args)


def add_commands(subparsers: Any, prefix: str) -> None:
    """A parser for each row of `COMMANDS` named `<prefix><x>` (and no further word), in the table's order."""
    for name, command in COMMANDS.items():
        leaf = name.removeprefix(prefix)
        if name.startswith(prefix) and " " not in leaf:
            p = subparsers.add_parser(leaf, help=command.help)
            command.add_flags(p)
            p.set_defaults(func=partial(run_measurement, name))


def register_bench_cli(sub: Any) -> None:
    """`semif bench` and its subcommands."""
    bench = sub.add_parser("bench", help="benchmarks: execution paths, readout against generation")
    add_commands(bench.add_subparsers(dest="which", required=True), "bench ")


def register_quality_cli(sub: Any) -> None:
    """`semif eval`, `semif eval-compare`, `semif sets` and `semif calibrate`."""
    add_commands(sub, "")
