"""What the measurement commands accept and default to: one source for the command line (`cli`) and the runs.

`semif --help` builds every command's flags, so the names and numbers their help shows live here, beside
nothing that does work: the workload and results folders, what `--quick` keeps, the paths each
benchmark knows, the labeled sets `semif bench rotations` reads, the targets of prediction sets, and the
argument types their flags parse with.
Standard library and `paths` only.
"""

from __future__ import annotations

import argparse

from ..paths import repo_root

__all__ = [
    "DATA_DIR",
    "DEFAULT_MAX_ERROR",
    "DEFAULT_TARGET_COVERAGE",
    "ALL_LABELED",
    "LABELED",
    "LONG_STATES",
    "PATHS",
    "PEER_PATHS",
    "QUICK_FRESH_QUESTIONS",
    "QUICK_STATES",
    "READOUT_RUNS",
    "RESIDENCY_STATES",
    "RESIDENT_LEVELS",
    "RESULTS_DIR",
    "SINGLE_STATE",
    "SYS1BENCH_GENERATORS",
    "SYS1BENCH_ITEMS",
    "SYS1BENCH_SEED",
    "WORKLOAD",
    "comma_list",
    "parse_int_list",
    "positive_int",
]

DATA_DIR = repo_root() / "data"
WORKLOAD = DATA_DIR / "workload_37x21.jsonl"
RESULTS_DIR = DATA_DIR.parent / "results"  # the committed figures the README quotes
QUICK_STATES = 4  # `--quick` of every benchmark: the first 4 states

# `semif bench modes`: every execution path, and fresh's questions per state under --quick
PATHS = ("fresh", "serial", "parallel", "cached", "naive-user", "oneshot")
QUICK_FRESH_QUESTIONS = 3  # fresh costs ~20x the others; its per-decision cost does not depend on how many

# `semif bench readout-vs-generation`: one state, its criteria read out against written as JSON
SINGLE_STATE = DATA_DIR / "bench_single_state.json"
READOUT_RUNS = 3  # cold runs of each side; the median is reported

# `semif bench residency`
RESIDENT_LEVELS = (0, 1, 2)  # other prefixes cached while a target is measured
RESIDENCY_STATES = 6  # the first 6 states: 4 targets with 0, 1, 2 others after each

# `semif bench peer`: the decision path's and llama-server's paths, in run order
PEER_PATHS = ("decision-cold", "decision-cached", "server-logprobs", "server-logprobs-cached",
              "server-logprobs-concurrent", "server-logprobs-concurrent-cached", "server-json")

# `semif bench rotations`: the labeled sets with choice questions, and the long workload states of the cost phase
LABELED = ("data/labeled/routing.jsonl", "data/labeled/tools.jsonl", "data/labeled/code_search.jsonl")
# `semif bench preamble`: every labeled set, the yes/no and score questions too
ALL_LABELED = (*LABELED, "data/labeled/policy.jsonl", "data/labeled/severity.jsonl")
LONG_STATES = 8

# `semif eval --calibrate` and `semif sets`: prediction sets' coverage and abstention's error
DEFAULT_TARGET_COVERAGE = 0.9
DEFAULT_MAX_ERROR = 0.2

# `semif bench sys1bench`: sys1bench's labeled generators, items each and seed (sizes that finish on 2 cores)
SYS1BENCH_GENERATORS = ("support_tickets", "policy_compliance", "log_triage", "guardrail_intent")
SYS1BENCH_ITEMS = 20
SYS1BENCH_SEED = 42


# ---------------------------------------------------------------- argument types
def positive_int(text: str) -> int:
    """An integer >= 1, for argparse: `--states 0` or `--runs 0` is a usage error, not "all" or a crash."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def parse_int_list(text: str) -> list[int]:
    """`0,1,2` -> [0, 1, 2], for argparse (which turns the ValueError into a usage error)."""
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def comma_list(text: str) -> list[str]:
    return text.split(",")
