"""`semif bench modes`: the 37-state x 21-criterion workload through every execution path, side by side.

Fresh, serial, parallel, cached, naive-user and oneshot (`options.PATHS`) run interleaved state by
state, each from an empty cache, so that machine noise hits every path alike (`run_paths`). The
results report decisions/s, state p50, prefill tokens/s, argmax flips and max |Δp| of each path
against fresh (`agreement`), the cached path against the bound its token counts allow, the most
forking can gain on this workload and the issue's targets (`bounds`); `format_paths`
is the Markdown docs/benchmarks.md quotes, `plot_paths` the notebooks' chart, `command_paths` the command.
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..agreement import Agreement
from ..answers import read_probabilities
from ..baseline import open_chat_model, read_top_logprobs
from ..conditions import format_interval
from ..options import PATHS, QUICK_FRESH_QUESTIONS
from .bounds import check_targets, estimate_fork_ceiling
from .harness import BenchmarkError, refuse_unknown, time_call
from .workload import describe_bench_run, first_questions, load_workload, write_result

__all__ = ["FORK_PATHS", "check_paths", "command_paths", "format_paths", "format_paths_table", "plot_paths",
           "run_paths"]

FORK_PATHS = ("serial", "parallel", "cached")


def probabilities_of(response: Any) -> dict[str, dict[str, float]]:
    return {qid: read_probabilities(answer) for qid, answer in response.answers.items()}


@dataclass
class PathTally:
    """One path's totals across states: its time, its decisions, and how it differs from fresh."""

    seconds: list[float] = field(default_factory=list)
    decisions: int = 0
    agreement: Agreement = field(default_factory=Agreement)  # against fresh, on the questions fresh scored
    counts: list[int] = field(default_factory=list)  # decisions per state, beside `seconds`: the pairs intervals resample

    def add_state(self, seconds: float, decisions: int) -> None:
        self.seconds.append(seconds)
        self.counts.append(decisions)
        self.decisions += decisions


@dataclass
class PathsRun:
    """One `run_paths` call: the loaded models, the paths to run, and everything gathered across states.

    The token statistics come from parallel's first request on each state (it reports the prefix,
    suffix and branch token counts), and the cache bounds from the cached request right after it.
    """

    engine: Any
    naive_llm: Any
    paths: Sequence[str]
    fresh_questions: int | None
    tallies: dict[str, PathTally]
    prefill_rates: list[float] = field(default_factory=list)
    suffix_lengths: list[int] = field(default_factory=list)
    prefix_lengths: list[int] = field(default_factory=list)
    bound_ratios: list[tuple[float, float]] = field(default_factory=list)  # (first request s / cached s, (prefix+suffix) / suffix tokens)
    decoded_bounds: list[float] = field(default_factory=list)  # the same bound counting the suffix tokens decoded (shared ones once)
    forks: list[dict[str, float]] = field(default_factory=list)  # parallel first requests: token counts and times, for the ceiling estimate
    per_state: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class StateRun:
    """One state's request, its per-state record in the results, and each path's probabilities."""

    request: dict[str, Any]
    record: dict[str, Any]
    probs: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)

    @property
    def n_questions(self) -> int:
        return len(self.request["questions"])


def run_fresh_path(run: PathsRun, state: StateRun, path: str) -> float:
    """Fresh on the first `fresh_questions` questions only: its cost per decision does not depend on how many."""
    request = first_questions(state.request, run.fresh_questions)
    seconds, response = time_call(lambda: run.engine.ask(request, mode="fresh"))
    state.probs[path] = probabilities_of(response)
    return seconds


def score_fork(run: PathsRun, state: StateRun, path: str) -> tuple[float, Any]:
    """(seconds, response) of the whole state through the engine mode named `path`."""
    seconds, response = time_call(lambda: run.engine.ask(state.request, mode=path))
    state.probs[path] = probabilities_of(response)
    return seconds, response


def run_fork_path(run: PathsRun, state: StateRun, path: str) -> float:
    """Serial or oneshot: one timed request, nothing else to record."""
    return score_fork(run, state, path)[0]


def run_parallel_path(run: PathsRun, state: StateRun, path: str) -> float:
    """Parallel's first request, whose token counts feed the statistics; the cached path is measured right after."""
    seconds, response = score_fork(run, state, path)
    record_fork_tokens(run, state, response.timing)
    if "cached" in run.paths:
        run_cached_path(run, state, seconds, response.timing)
    return seconds


def record_fork_tokens(run: PathsRun, state: StateRun, timing: dict[str, Any]) -> None:
    """Prefix, suffix and branch token counts and prefill speed of a parallel first request."""
    state.record["prefix_tokens"] = timing["prefix_tokens"]
    state.record["suffix_tokens"] = timing["suffix_tokens"]
    run.prefix_lengths.append(timing["prefix_tokens"])
    run.suffix_lengths.extend(timing["suffix_tokens"].values())
    state.record["branch_tokens"] = timing["branch_tokens"]
    if timing["prefill_s"] > 0:
        run.prefill_rates.append(timing["prefix_tokens"] / timing["prefill_s"])
    run.forks.append({"questions": state.n_questions, "prefix": timing["prefix_tokens"],
                      "suffix": sum(timing["suffix_tokens"].values()), "decoded": timing["branch_tokens"],
                      "prefill_s": timing["prefill_s"], "branches_s": timing["branches_s"]})


def run_cached_path(run: PathsRun, state: StateRun, first_s: float, timing: dict[str, Any]) -> None:
    """The same request again with its prefix resident, against the bound that token counts allow."""
    seconds, response = time_call(lambda: run.engine.ask(state.request, mode="parallel"))
    if response.usage.cached_tokens != timing["prefix_tokens"]:
        raise BenchmarkError(f"second request missed the cache (state {state.record['id']})")
    run.tallies["cached"].add_state(seconds, state.n_questions)
    state.record["seconds"]["cached"] = round(seconds, 4)
    state.probs["cached"] = probabilities_of(response)
    suffix_total = sum(timing["suffix_tokens"].values())
    run.bound_ratios.append((first_s / seconds, (timing["prefix_tokens"] + suffix_total) / suffix_total))
    run.decoded_bounds.append((timing["prefix_tokens"] + timing["branch_tokens"]) / timing["branch_tokens"])


def run_naive_user_path(run: PathsRun, state: StateRun, path: str) -> float:
    """What a llama-cpp-python chat user would do: one completion per question, top logprobs read back."""
    seconds, probs = time_call(lambda: read_top_logprobs(run.naive_llm, state.request, reset=True))
    state.probs[path] = probs
    return seconds


PathRunner = Callable[[PathsRun, StateRun, str], float]
# Every path but "cached", which `run_parallel_path` measures right after parallel's first request.
PATH_RUNNERS: dict[str, PathRunner] = {
    "fresh": run_fresh_path,
    "serial": run_fork_path,
    "parallel": run_parallel_path,
    "oneshot": run_fork_path,
    "naive-user": run_naive_user_path,
}


def check_paths(paths: Sequence[str]) -> None:
    """Refuse an unknown path name before any model loads, naming the valid ones."""
    refuse_unknown(paths, PATHS)


def run_state(run: PathsRun, row: dict[str, Any]) -> None:
    """Every path on one state in `paths` order, each from an empty cache, then each compared with fresh."""
    state = StateRun(request={"state": row["state"], "questions": row["questions"]},
                     record={"id": row.get("id"), "seconds": {}})
    for path in run.paths:
        if path == "cached":
            continue  # measured right after parallel's first request
        run.engine.clear_cache()
        seconds = PATH_RUNNERS[path](run, state, path)
        asked = run.fresh_questions if path == "fresh" else None
        run.tallies[path].add_state(seconds, len(first_questions(state.request, asked)["questions"]))
        state.record["seconds"][path] = round(seconds, 4)
    run.per_state.append(state.record)
    compare_with_fresh(run, state)


def compare_with_fresh(run: PathsRun, state: StateRun) -> None:
    """Add each path's argmax flips and max |dp| against fresh on this state to its tally."""
    if "fresh" not in state.probs:
        return
    for path, probs in state.probs.items():
        if path != "fresh":
            run.tallies[path].agreement.add(state.probs["fresh"], probs)


def run_paths(
    settings: Any,
    workload: Sequence[dict[str, Any]],
    paths: Sequence[str] = PATHS,
    fresh_questions: int | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Every path on every state, interleaved per state; returns the results document."""
    from tqdm.auto import tqdm

    from ...decision.engine import DecisionEngine

    check_paths(paths)
    engine = DecisionEngine(settings)
    naive_llm = open_chat_model(settings, logits_all=True) if "naive-user" in paths else None
    run = PathsRun(engine=engine, naive_llm=naive_llm, paths=paths, fresh_questions=fresh_questions,
                   tallies={p: PathTally() for p in paths})
    try:
        for row in tqdm(workload, desc="bench modes", unit="state", file=sys.stderr, disable=not progress):
            run_state(run, row)
    finally:
        engine.close()
    return summarize_run(run, workload)


def summarize_paths(tallies: dict[str, PathTally]) -> dict[str, dict[str, Any]]:
    """Per path: decisions, total and median-state seconds, and its differences from fresh."""
    summary: dict[str, dict[str, Any]] = {}
    for path, tally in tallies.items():
        total = sum(tally.seconds)
        summary[path] = {
            "decisions": tally.decisions,
            "seconds": round(total, 3),
            "decisions_per_s": round(tally.decisions / total, 3) if total else None,
            "state_p50_s": round(statistics.median(tally.seconds), 3) if tally.seconds else None,
            "argmax_flips_vs_fresh": tally.agreement.flips if path != "fresh" else 0,
            "max_abs_dp_vs_fresh": round(tally.agreement.max_dp, 4) if path != "fresh" else 0.0,
            "compared_with_fresh": tally.agreement.compared,
        }
    return summary


def summarize_run(run: PathsRun, workload: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The results document: workload shape, per-path figures, cache bounds, fork ceiling, targets, per state."""
    summary = summarize_paths(run.tallies)
    suffix, prefix, bounds = run.suffix_lengths, run.prefix_lengths, run.bound_ratios
    return {
        "workload": {"states": len(workload), "decisions": sum(len(r["questions"]) for r in workload),
                     "fresh_questions_per_state": run.fresh_questions or "all",
                     "prefix_tokens_mean": round(statistics.mean(prefix), 1) if prefix else None,
                     "suffix_tokens_mean": round(statistics.mean(suffix), 1) if suffix else None,
                     "suffix_tokens_max": max(suffix) if suffix else None},
        "paths": summary,
        "prefill_tokens_per_s": round(statistics.median(run.prefill_rates), 1) if run.prefill_rates else None,
        "cached": {
            "speedup_vs_first_request": round(statistics.median(r for r, _ in bounds), 3) if bounds else None,
            "bound": round(statistics.median(b for _, b in bounds), 3) if bounds else None,
            "bound_decoded_tokens": round(statistics.median(run.decoded_bounds), 3) if run.decoded_bounds else None,
        },
        "fork_ceiling": estimate_fork_ceiling(run.forks),
        "targets": check_targets(summary, bounds, {p: list(zip(t.counts, t.seconds, strict=True)) for p, t in run.tallies.items()}),
        "per_state": run.per_state,
    }


def format_paths_table(doc: dict[str, Any]) -> str:
    """The paths as `semif bench modes` prints them: a plain table, the token counts, the targets and the fork ceiling."""
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


def format_paths(doc: dict[str, Any]) -> str:
    """The paths table and the targets as Markdown, so the README can quote a results file verbatim."""
    rows = ["| path | decisions | decisions/s | state p50 (s) | argmax flips vs fresh | max \\|Δp\\| vs fresh |",
            "|---|---:|---:|---:|---:|---:|"]
    for path, r in doc["paths"].items():
        flips = "-" if path == "fresh" else r["argmax_flips_vs_fresh"]
        dp = "-" if path == "fresh" else f"{r['max_abs_dp_vs_fresh']:.3f}"
        rows.append(f"| {path} | {r['decisions']} | {r['decisions_per_s']:.3f} | {r['state_p50_s']:.2f} | {flips} | {dp} |")
    rows += ["", "| target | measured ratio | 95 % interval over states | met |", "|---|---:|---|---|"]
    for name, t in doc["targets"].items():
        if isinstance(t, dict):
            limit = t.get("target", t.get("target_at_most"))
            rows.append(f"| {name} (target {limit}) | {t['ratio']} | {format_interval(t.get('interval'))} | "
                        f"{'yes' if t['met'] else 'no'} |")
    ceiling = doc.get("fork_ceiling")
    if ceiling:
        rows += ["", f"Fork against fresh, the most this workload allows: {ceiling['fork_vs_fresh_at_equal_token_cost']}x if a branch "
                 f"token cost what a prefill token costs, {ceiling['fork_vs_fresh_at_measured_token_cost']}x at the measured cost "
                 f"(a branch token costs {ceiling['branch_token_cost_vs_prefill']}x a prefill token; the token tree decoded "
                 f"{100 * ceiling['suffix_tokens_shared_by_tree']:.1f} % fewer suffix tokens)."]
    return "\n".join(rows)


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


def command_paths(args: Any) -> int:
    """`semif bench modes`: the run on the workload's states, its table printed, results/bench/modes[-quick].json written."""
    settings, meta = describe_bench_run(args)
    workload = load_workload(args.workload, quick=args.quick, states=args.states)
    fresh_questions = args.fresh_questions or (QUICK_FRESH_QUESTIONS if args.quick else None)
    doc = {**meta, **run_paths(settings, workload, args.paths.split(","), fresh_questions)}
    print(format_paths_table(doc))
    out = write_result(doc, args.output or settings.results_dir / "bench" / ("modes-quick.json" if args.quick else "modes.json"))
    print(f"wrote {out}", file=sys.stderr)
    return 0
