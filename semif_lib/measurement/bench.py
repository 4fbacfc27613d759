"""Benchmarks that measure the project's two claims side by side, in one run, on this machine.

* `semif bench modes`: the 37-state x 21-criterion workload through every execution path
  (fresh, serial, parallel, cached, naive-user, oneshot), interleaved state by state so that
  machine noise hits every path alike. Reports decisions/s, state p50, prefill tokens/s, and
  argmax flips and max |dp| of each path against fresh.
* `semif bench readout-vs-generation`: 21 criteria on one state, read out directly against the
  model writing a JSON array of answers; median of N cold runs each.

Results are JSON files under `results/bench/`; the README quotes them with the command used.
Absolute times on shared 2-core machines are noisy: read the ratios.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ..arguments import add_engine_arguments, engine_overrides
from ..errors import InvalidRequestError, SemifError
from .workload import (
    DATA_DIR,
    QUICK_STATES,
    RESULTS_DIR,
    WORKLOAD,
    describe_machine,
    load_workload,
    positive_int,
    write_result,
)

SINGLE_STATE = DATA_DIR / "bench_single_state.json"
QUICK_FRESH_QUESTIONS = 3  # fresh costs ~20x the others; its per-decision cost does not depend on how many
PATHS = ("fresh", "serial", "parallel", "cached", "naive-user", "oneshot")
FORK_PATHS = ("serial", "parallel", "cached")

# Targets from the issue; checked and reported, never asserted in tests.
TARGET_FORK_VS_FRESH = 15.0
TARGET_FORK_VS_ONESHOT = 1.10
TARGET_CACHED_FRACTION = 0.85
TARGET_BEST_VS_NAIVE = 1.15


def compare_probabilities(reference: dict[str, dict[str, float]], other: dict[str, dict[str, float]]) -> tuple[int, float, int]:
    """(argmax flips, max |dp|, questions compared) over the questions both answered."""
    flips, worst, n = 0, 0.0, 0
    for qid, ref in reference.items():
        if qid not in other:
            continue
        oth = other[qid]
        n += 1
        flips += max(ref, key=ref.get) != max(oth, key=oth.get)
        worst = max(worst, max(abs(ref[k] - oth[k]) for k in ref))
    return flips, worst, n


def probabilities_of(response: Any) -> dict[str, dict[str, float]]:
    return {qid: dict(ans.probabilities) for qid, ans in response.answers.items()}


def subset_questions(request: dict[str, Any], count: int | None) -> dict[str, Any]:
    if not count:
        return request
    keep = dict(list(request["questions"].items())[:count])
    return {**request, "questions": keep}


def time_call(fn: Callable[[], Any]) -> tuple[float, Any]:
    """(seconds, result) of `fn()`: only the call itself is timed, never the cache clearing around it."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


@dataclass
class PathTally:
    """One path's totals across states: its time, its decisions, and how it differs from fresh."""

    seconds: list[float] = field(default_factory=list)
    decisions: int = 0
    flips: int = 0
    max_dp: float = 0.0
    compared: int = 0


@dataclass
class ModesRun:
    """One `run_modes` call: the loaded models, the paths to run, and everything gathered across states.

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
    decoded_bounds: list[float] = field(default_factory=list)  # the same bound counting the suffix tokens actually decoded (shared ones once)
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


class BenchmarkError(SemifError):
    """A premise of the measurement failed (a request that must hit the prefix cache missed it), so its figures would lie."""


def run_fresh_path(run: ModesRun, state: StateRun, path: str) -> float:
    """Fresh on the first `fresh_questions` questions only: its cost per decision does not depend on how many."""
    request = subset_questions(state.request, run.fresh_questions)
    seconds, response = time_call(lambda: run.engine.score(request, mode="fresh"))
    state.probs[path] = probabilities_of(response)
    run.tallies[path].decisions += len(request["questions"])
    return seconds


def score_fork(run: ModesRun, state: StateRun, path: str) -> tuple[float, Any]:
    """(seconds, response) of the whole state through the engine mode named `path`."""
    seconds, response = time_call(lambda: run.engine.score(state.request, mode=path))
    state.probs[path] = probabilities_of(response)
    run.tallies[path].decisions += state.n_questions
    return seconds, response


def run_fork_path(run: ModesRun, state: StateRun, path: str) -> float:
    """Serial or oneshot: one timed request, nothing else to record."""
    return score_fork(run, state, path)[0]


def run_parallel_path(run: ModesRun, state: StateRun, path: str) -> float:
    """Parallel's first request, whose token counts feed the statistics; the cached path is measured right after."""
    seconds, response = score_fork(run, state, path)
    record_fork_tokens(run, state, response.timing)
    if "cached" in run.paths:
        run_cached_path(run, state, seconds, response.timing)
    return seconds


def record_fork_tokens(run: ModesRun, state: StateRun, timing: dict[str, Any]) -> None:
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


def run_cached_path(run: ModesRun, state: StateRun, first_s: float, timing: dict[str, Any]) -> None:
    """The same request again with its prefix resident, against the bound that token counts allow."""
    seconds, response = time_call(lambda: run.engine.score(state.request, mode="parallel"))
    if response.usage.cached_tokens != timing["prefix_tokens"]:
        raise BenchmarkError(f"second request missed the cache (state {state.record['id']})")
    tally = run.tallies["cached"]
    tally.seconds.append(seconds)
    state.record["seconds"]["cached"] = round(seconds, 4)
    tally.decisions += state.n_questions
    state.probs["cached"] = probabilities_of(response)
    suffix_total = sum(timing["suffix_tokens"].values())
    run.bound_ratios.append((first_s / seconds, (timing["prefix_tokens"] + suffix_total) / suffix_total))
    run.decoded_bounds.append((timing["prefix_tokens"] + timing["branch_tokens"]) / timing["branch_tokens"])


def run_naive_user_path(run: ModesRun, state: StateRun, path: str) -> float:
    """What a llama-cpp-python chat user would do: one completion per question, top logprobs read back."""
    from .baseline import read_top_logprobs

    seconds, probs = time_call(lambda: read_top_logprobs(run.naive_llm, state.request, reset=True))
    state.probs[path] = probs
    run.tallies[path].decisions += state.n_questions
    return seconds


PathRunner = Callable[[ModesRun, StateRun, str], float]
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
    unknown = [p for p in paths if p not in PATHS]
    if unknown:
        raise InvalidRequestError(f"unknown path {unknown[0]!r} in --paths; valid paths: {', '.join(PATHS)}", field="paths")


def run_state(run: ModesRun, row: dict[str, Any]) -> None:
    """Every path on one state in `paths` order, each from an empty cache, then each compared with fresh."""
    state = StateRun(request={"state": row["state"], "questions": row["questions"]},
                     record={"id": row.get("id"), "seconds": {}})
    for path in run.paths:
        if path == "cached":
            continue  # measured right after parallel's first request
        run.engine.clear_cache()
        seconds = PATH_RUNNERS[path](run, state, path)
        run.tallies[path].seconds.append(seconds)
        state.record["seconds"][path] = round(seconds, 4)
    run.per_state.append(state.record)
    compare_with_fresh(run, state)


def compare_with_fresh(run: ModesRun, state: StateRun) -> None:
    """Add each path's argmax flips and max |dp| against fresh on this state to its tally."""
    if "fresh" not in state.probs:
        return
    for path, probs in state.probs.items():
        if path == "fresh":
            continue
        flips, worst, n = compare_probabilities(state.probs["fresh"], probs)
        tally = run.tallies[path]
        tally.flips += flips
        tally.max_dp = max(tally.max_dp, worst)
        tally.compared += n


def run_modes(
    settings: Any,
    workload: Sequence[dict[str, Any]],
    paths: Sequence[str] = PATHS,
    fresh_questions: int | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Every path on every state, interleaved per state; returns the results document."""
    from tqdm.auto import tqdm

    from ..decision.engine import DecisionEngine
    from .baseline import open_chat_model

    check_paths(paths)
    engine = DecisionEngine(settings)
    naive_llm = open_chat_model(settings, logits_all=True) if "naive-user" in paths else None
    run = ModesRun(engine=engine, naive_llm=naive_llm, paths=paths, fresh_questions=fresh_questions,
                   tallies={p: PathTally() for p in paths})
    try:
        for row in tqdm(workload, desc="bench modes", unit="state", file=sys.stderr, disable=not progress):
            run_state(run, row)
    finally:
        engine.close()
    return summarize_modes(run, workload)


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
            "argmax_flips_vs_fresh": tally.flips if path != "fresh" else 0,
            "max_abs_dp_vs_fresh": round(tally.max_dp, 4) if path != "fresh" else 0.0,
            "compared_with_fresh": tally.compared,
        }
    return summary


def summarize_modes(run: ModesRun, workload: Sequence[dict[str, Any]]) -> dict[str, Any]:
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
        "targets": check_targets(summary, bounds),
        "per_state": run.per_state,
    }


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


def check_targets(summary: dict[str, dict[str, Any]], bound_ratios: Sequence[tuple[float, float]]) -> dict[str, Any]:
    """The issue's targets, as measured ratios and pass/fail flags."""
    rate = {p: s["decisions_per_s"] for p, s in summary.items() if s["decisions_per_s"]}
    forks = {p: rate[p] for p in ("serial", "parallel") if p in rate}
    out: dict[str, Any] = {}
    if forks:
        best_path = max(forks, key=forks.get)
        best = forks[best_path]
        out["best_fork_path"] = best_path
        if "fresh" in rate:
            out["best_fork_vs_fresh"] = {"ratio": round(best / rate["fresh"], 2), "target": TARGET_FORK_VS_FRESH,
                                         "met": best / rate["fresh"] >= TARGET_FORK_VS_FRESH}
        if "oneshot" in rate:
            slower = rate["oneshot"] / best
            out["oneshot_vs_best_fork"] = {"ratio": round(slower, 3), "target_at_most": TARGET_FORK_VS_ONESHOT,
                                           "met": slower <= TARGET_FORK_VS_ONESHOT}
        if "naive-user" in rate:
            out["best_fork_vs_naive_user"] = {"ratio": round(best / rate["naive-user"], 2), "target": TARGET_BEST_VS_NAIVE,
                                              "met": best / rate["naive-user"] >= TARGET_BEST_VS_NAIVE}
    if bound_ratios:
        fraction = statistics.median(r / b for r, b in bound_ratios)
        out["cached_fraction_of_bound"] = {"ratio": round(fraction, 3), "target": TARGET_CACHED_FRACTION,
                                           "met": fraction >= TARGET_CACHED_FRACTION}
    return out


def run_readout_vs_generation(settings: Any, request_path: Path = SINGLE_STATE, runs: int = 3, progress: bool = True) -> dict[str, Any]:
    """Direct readout against greedy JSON generation of the same answers, median of `runs` cold runs."""
    from tqdm.auto import tqdm

    from ..decision.engine import DecisionEngine
    from ..decision.schema import parse_request
    from .baseline import generate_json_answers, open_chat_model

    request = parse_request(json.loads(request_path.read_text()))
    engine = DecisionEngine(settings)
    llm = open_chat_model(settings)
    readout_s: list[float] = []
    gen_s: list[float] = []
    gens = []
    response = None
    for _ in tqdm(range(runs), desc="readout vs generation", unit="run", file=sys.stderr, disable=not progress):
        engine.clear_cache()  # cold: both sides read the state from scratch
        t0 = time.perf_counter()
        response = engine.score(request, mode="parallel")
        readout_s.append(time.perf_counter() - t0)
        result = generate_json_answers(llm, request, reset=True)
        gen_s.append(result.seconds)
        gens.append(result)
    engine.close()
    argmax = {qid: (ans.noul >= 0.5 if ans.type == "noul" else getattr(ans, "choice", None) or round(ans.score))
              for qid, ans in response.answers.items()}
    last = gens[-1]
    agree = sum(last.answers.get(q) == a for q, a in argmax.items())
    readout_med, gen_med = statistics.median(readout_s), statistics.median(gen_s)
    return {
        "questions": len(request.questions),
        "readout": {"median_s": round(readout_med, 3), "runs_s": [round(x, 3) for x in readout_s], "output_tokens": 0,
                    "input_tokens": response.usage.input_tokens, "well_formed": True},
        "generation": {"median_s": round(gen_med, 3), "runs_s": [round(x, 3) for x in gen_s],
                       "output_tokens": last.output_tokens, "prompt_tokens": last.prompt_tokens,
                       "valid_json_runs": sum(g.valid_json for g in gens), "complete_runs": sum(g.complete for g in gens),
                       "runs": len(gens), "text_head": last.text[:200]},
        "speedup_readout_vs_generation": round(gen_med / readout_med, 3),
        "generation_agrees_with_readout_argmax": f"{agree}/{len(argmax)}",
    }


RESIDENCY_POLICIES = ("spilled", "resident")  # SEMIF_CACHE_SPILL true (the default) and false


def run_residency(settings: Any, workload: Sequence[dict[str, Any]], resident: Sequence[int] = (0, 1, 2),
                  progress: bool = True) -> dict[str, Any]:
    """A new state's prefill rate, and its branch time once cached, while 0, 1, 2... other states are cached:
    spilled to host memory between requests (the default) against kept resident in KV cells, side by side.

    With a unified KV cache every decode attends over all cells up to the highest one in use (other
    sequences' cells masked), so resident prefixes slow every later request; a spilled prefix costs a
    restore copy when it is hit (`hit_prefill_s`). Each target state is measured at every level under
    both policies in turn (two engines, one process); the other states are the next ones in the workload.
    """
    from tqdm.auto import tqdm

    from ..decision.engine import DecisionEngine

    if not resident or min(resident) < 0:
        raise InvalidRequestError(f"--resident needs numbers >= 0; got {list(resident)}", field="resident")
    most = max(resident)
    if len(workload) < most + 1:
        raise InvalidRequestError(f"--resident {most} needs at least {most + 1} states; got {len(workload)}", field="states")
    room = 2048 * (most + 2)  # every other prefix plus the target, its branches and slack
    update = {"n_ctx": max(settings.n_ctx, 2 * room), "cache_tokens": room}
    engines = {p: DecisionEngine(settings.model_copy(update={**update, "cache_spill": p == "spilled"})) for p in RESIDENCY_POLICIES}
    keys = [(p, k) for k in resident for p in RESIDENCY_POLICIES]
    rows: dict[tuple[str, int], dict[str, list[float]]] = {key: {"branches": [], "prefill": [], "hit": [], "kv": [], "cached": []} for key in keys}
    targets = workload[: len(workload) - most]
    try:
        for i, row in enumerate(tqdm(targets, desc="bench residency", unit="state", file=sys.stderr, disable=not progress)):
            request = {"state": row["state"], "questions": row["questions"]}
            for policy, k in keys:
                engine, out = engines[policy], rows[(policy, k)]
                engine.clear_cache()
                for other in workload[i + 1 : i + 1 + k]:
                    engine.score({"state": other["state"], "questions": other["questions"]}, mode="parallel")
                first = engine.score(request, mode="parallel")  # prefill the target; it stays cached
                out["prefill"].append((first.timing["prefix_tokens"] - first.usage.cached_tokens) / first.timing["prefill_s"])
                response = engine.score(request, mode="parallel")
                if response.usage.cached_tokens != response.timing["prefix_tokens"]:
                    raise BenchmarkError(f"the target missed the cache (state {row.get('id')}, {policy})")
                out["branches"].append(response.timing["branches_s"])
                out["hit"].append(response.timing["prefill_s"])
                out["kv"].append(engine.cache.resident_tokens)
                out["cached"].append(engine.cache.used_tokens)
    finally:
        for engine in engines.values():
            engine.close()
    base = {p: rows[(p, resident[0])] for p in RESIDENCY_POLICIES}

    def level(policy: str, k: int) -> dict[str, float]:
        out, b = rows[(policy, k)], base[policy]
        return {"kv_cells_between_requests_mean": round(statistics.mean(out["kv"]), 1),
                "cached_tokens_mean": round(statistics.mean(out["cached"]), 1),
                "branches_s_median": round(statistics.median(out["branches"]), 4),
                "slowdown_vs_none": round(statistics.median(t / u for t, u in zip(out["branches"], b["branches"])), 3),
                "prefill_tokens_per_s_median": round(statistics.median(out["prefill"]), 1),
                "prefill_slowdown_vs_none": round(statistics.median(u / r for r, u in zip(out["prefill"], b["prefill"])), 3),
                "hit_prefill_s_median": round(statistics.median(out["hit"]), 4)}

    def ratio(k: int, name: str, invert: bool = False) -> float:
        s, r = rows[("spilled", k)][name], rows[("resident", k)][name]
        return round(statistics.median((a / b) if invert else (b / a) for a, b in zip(s, r)), 3)

    return {
        "workload": {"states": len(targets), "resident_levels": list(resident), "policies": list(RESIDENCY_POLICIES)},
        "policies": {p: {str(k): level(p, k) for k in resident} for p in RESIDENCY_POLICIES},
        "spilled_vs_resident": {str(k): {"prefill_speedup": ratio(k, "prefill", invert=True), "branches_speedup": ratio(k, "branches")}
                                for k in resident},
    }


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
    rvg.add_argument("--runs", type=positive_int, default=3)
    res = which.add_parser("residency", help="a new state's prefill and a cached one's branches with other states cached: spilled against resident")
    res.add_argument("--states", type=positive_int, default=6, help="first N states; each is a target but the last ones, which stay resident for the earlier")
    res.add_argument("--workload", type=Path, default=WORKLOAD)
    res.add_argument("--resident", type=parse_int_list, default=[0, 1, 2], help="comma-separated numbers of other cached prefixes (default 0,1,2)")
    from .robustness import register_cli as register_robustness

    register_robustness(which)  # semif bench robustness: semif serve under load and faults (no engine flags: it starts servers)
    from .peer import register_cli as register_peer

    register_peer(which)  # semif bench peer: semif serve against the text DLC's llama-server (starts both servers)
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


def plot_readout_vs_generation(doc: dict[str, Any]) -> Any:
    """Wall time of direct readout against generating the same answers as JSON."""
    import matplotlib.pyplot as plt

    labels = ["readout\n(0 output tokens)", f"JSON generation\n({doc['generation']['output_tokens']} output tokens)"]
    values = [doc["readout"]["median_s"], doc["generation"]["median_s"]]
    fig, ax = plt.subplots(figsize=(6, 3))
    bars = ax.barh(labels, values, color=["#3b7dd8", "#bbbbbb"])
    ax.bar_label(bars, fmt="%.2f s")
    ax.set_xlabel(f"median seconds, {doc['questions']} questions on one state")
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
