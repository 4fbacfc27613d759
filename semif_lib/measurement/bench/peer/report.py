"""`semif bench peer`'s figures: tallies across states, the summaries, targets and ceiling, and the report.

`PeerTally` gathers one path's totals while the run goes (`run`); `summarize_paths`,
`check_peer_targets` and `estimate_peer_ceiling` turn them into the typed summaries of
`results`; `format_peer` (the tables docs/benchmarks.md and the README quote verbatim), `plot_peer`
and `save_peer_plot` read a `PeerResults` or a results file's JSON.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ...agreement import Agreement
from ...conditions import bootstrap_ratio, format_interval, interval_against
from ...plots import save_figure
from ..harness import rounded
from .protocol import Pass
from .results import (
    SERVER_CACHED,
    SERVER_COLD,
    Ceiling,
    ClientPhases,
    ClientsTarget,
    Interval,
    PathSummary,
    PeerResults,
    PeerTargets,
    ReadoutTarget,
    SpeedTarget,
    StateRecord,
)

__all__ = ["PeerTally", "check_peer_targets", "estimate_peer_ceiling", "format_peer", "plot_peer", "readout_interval", "save_peer_plot",
           "speed_interval", "summarize_paths"]

# Targets from the issue; checked and reported, never asserted in tests.
TARGET_COLD = 1.3
TARGET_CACHED = 2.0
TARGET_CONCURRENT = 1.2
TARGET_READOUT = 1.0
LONG_PREFILL = 256  # tokens: a state's prefill, not a suffix or two


# ---------------------------------------------------------------- tallies across states
@dataclass
class PeerTally:
    """One path's totals across states."""

    seconds: list[float] = field(default_factory=list)
    decisions: int = 0
    requests: int = 0
    output_tokens: int = 0
    covered: int = 0  # questions whose every option is in the top log-probs (decision: well-formed)
    options_missing: int = 0
    agreement: Agreement = field(default_factory=Agreement)  # against the decision path, on questions with every option covered
    prefill_rates: list[float] = field(default_factory=list)
    evaluated_tokens: int = 0
    compute_s: float = 0.0
    json_valid: int = 0
    json_complete: int = 0
    json_agree: int = 0

    def add(self, result: Pass) -> None:
        self.seconds.append(result.seconds)
        self.decisions += result.decisions
        self.requests += result.requests
        self.output_tokens += result.output_tokens
        self.covered += sum(m == 0 for m in result.missing.values())
        self.options_missing += sum(result.missing.values())
        self.evaluated_tokens += result.evaluated_tokens
        self.compute_s += result.compute_s
        if result.prefill and result.prefill[0] >= LONG_PREFILL:
            self.prefill_rates.append(result.prefill[0] / result.prefill[1])

    def compare(self, reference: dict[str, dict[str, float]], result: Pass) -> None:
        """Argmax agreement and max |Δp| against the decision path, on questions with every option covered."""
        self.agreement.add(reference, result.probs, skip={qid for qid, missing in result.missing.items() if missing})


# ---------------------------------------------------------------- summary, targets, ceiling
def summarize_path(path: str, t: PeerTally) -> PathSummary:
    """Decisions/s, state p50, output tokens, coverage, agreement with the decision path, prefill tokens/s of one path."""
    total = sum(t.seconds)
    figures: dict[str, Any] = {
        "decisions": t.decisions, "seconds": round(total, 3),
        "decisions_per_s": round(t.decisions / total, 3) if total else None,
        "state_p50_s": round(statistics.median(t.seconds), 3) if t.seconds else None,
        "requests": t.requests, "output_tokens": t.output_tokens,
        "evaluated_tokens": t.evaluated_tokens, "compute_s": round(t.compute_s, 3),
        "prefill_tokens_per_s": round(statistics.median(t.prefill_rates), 1) if t.prefill_rates else None,
    }
    if path != "server-json":
        figures.update(option_coverage=round(t.covered / t.decisions, 4) if t.decisions else None, options_missing=t.options_missing)
    if path not in ("decision-cold", "server-json"):
        figures.update(compared_with_decision=t.agreement.compared, argmax_agreement=rounded(t.agreement.rate, 4),
                       max_abs_dp_vs_decision=round(t.agreement.max_dp, 4))
    if path == "server-json":
        figures.update(valid_json_states=t.json_valid, complete_states=t.json_complete, states=len(t.seconds),
                       answers_agreeing_with_decision_argmax=t.json_agree)
    return PathSummary(**figures)


def summarize_paths(tallies: dict[str, PeerTally]) -> dict[str, PathSummary]:
    """Every path's summary, in run order."""
    return {path: summarize_path(path, t) for path, t in tallies.items()}


def best_of(paths: dict[str, PathSummary], names: Sequence[str]) -> str | None:
    rated = [p for p in names if p in paths and paths[p].decisions_per_s]
    return max(rated, key=lambda p: paths[p].decisions_per_s or 0.0) if rated else None


def full_coverage(paths: dict[str, PathSummary]) -> bool:
    """Whether the decision path answered every option of every question, cold and cached."""
    cached = paths["decision-cached"].option_coverage if "decision-cached" in paths else 1.0
    return paths["decision-cold"].option_coverage == 1.0 and cached == 1.0


def interval_of(bootstrap: dict[str, Any], target: float) -> Interval:
    """`conditions.bootstrap_ratio`'s figures as the results file's `Interval`, judged against `target`."""
    return Interval(**interval_against(bootstrap, target))


def speed_interval(per_state: Sequence[StateRecord], ours: str, best: str, target: float) -> Interval | None:
    """The interval of `ours` against `best` over the states both ran: they score the same questions of each state,
    so the ratio of their rates is the ratio of their summed seconds."""
    states = [s for s in per_state if s.seconds.get(ours, 0) > 0 and s.seconds.get(best, 0) > 0]
    if not states:
        return None
    return interval_of(bootstrap_ratio([(1, s.seconds[ours]) for s in states], [(1, s.seconds[best]) for s in states]), target)


def readout_interval(json_speedups: Sequence[float]) -> Interval:
    """The interval of the median per-state time ratio of `server-json` against `decision-cold`."""
    return interval_of(bootstrap_ratio([(s, 1.0) for s in json_speedups]), TARGET_READOUT)


def speed_target(paths: dict[str, PathSummary], ours: str, theirs: Sequence[str], target: float,
                 per_state: Sequence[StateRecord] = ()) -> SpeedTarget | None:
    """The decision path against llama-server's fastest path on the same states (None without both), with the
    ratio's interval over those states."""
    best = best_of(paths, theirs)
    if ours not in paths or not best:
        return None
    ratio = paths[ours].decisions_per_s / paths[best].decisions_per_s  # type: ignore[operator]
    full = full_coverage(paths)
    interval = speed_interval(per_state, ours, best, target)
    return SpeedTarget(best_server_path=best, ratio=round(ratio, 3), target=target, decision_option_coverage=1.0 if full else "below 1",
                       server_option_coverage=paths[best].option_coverage, met=ratio >= target and full,
                       **({"interval": interval} if interval else {}))


def clients_target(concurrency: ClientPhases) -> ClientsTarget:
    """8 clients: faster by the target, at a p95 no worse than llama-server's, with no failed state."""
    dec, srv = concurrency.decision, concurrency.server_logprobs
    # no ratio when llama-server answered nothing (JSON has no infinity); the target is then not met
    ratio = dec.decisions_per_s / srv.decisions_per_s if srv.decisions_per_s else None
    met = (ratio is not None and ratio >= TARGET_CONCURRENT and not dec.failed_states and dec.decisions > 0
           and (srv.state_latency_p95_s is None or dec.state_latency_p95_s <= srv.state_latency_p95_s))  # type: ignore[operator]
    return ClientsTarget(ratio=rounded(ratio), target=TARGET_CONCURRENT, decision_p95_s=dec.state_latency_p95_s,
                         server_p95_s=srv.state_latency_p95_s,
                         failed_states={"decision": dec.failed_states, "server-logprobs": srv.failed_states}, met=met)


def readout_target(paths: dict[str, PathSummary], json_speedups: Sequence[float]) -> ReadoutTarget:
    """Reading out against llama-server writing the answers as JSON: the median time ratio per state."""
    speedup = statistics.median(json_speedups)
    tokens = paths["decision-cold"].output_tokens
    return ReadoutTarget(ratio=round(speedup, 3), target=TARGET_READOUT, decision_output_tokens=tokens,
                         server_json_output_tokens=paths["server-json"].output_tokens,
                         met=speedup > TARGET_READOUT and tokens == 0 and full_coverage(paths),
                         interval=readout_interval(json_speedups))


def check_peer_targets(paths: dict[str, PathSummary], concurrency: ClientPhases | None, json_speedups: Sequence[float],
                       per_state: Sequence[StateRecord] = ()) -> PeerTargets:
    """The issue's targets as measured ratios, met flags and intervals over states (never asserted in tests)."""
    measured: dict[str, Any] = {
        "cold_vs_best_server": speed_target(paths, "decision-cold", SERVER_COLD, TARGET_COLD, per_state),
        "cached_vs_best_server": speed_target(paths, "decision-cached", SERVER_CACHED, TARGET_CACHED, per_state),
        "concurrent_clients": clients_target(concurrency) if concurrency else None,
        "readout_vs_server_json": readout_target(paths, json_speedups) if json_speedups else None,
    }
    return PeerTargets(**{name: value for name, value in measured.items() if value is not None})


def estimate_peer_ceiling(paths: dict[str, PathSummary]) -> dict[str, Ceiling]:
    """How far the decision path can beat llama-server's best strategy here, from each side's own counters.

    Each side reports the tokens it ran through the model and the time it took (llama-server's
    `timings.prompt_n`/`prompt_ms`, the adapter's `timing.prefill_s`/`branches_s` with cached tokens
    excluded; for overlapping concurrent requests the wall time); the rest of the wall time is
    per-request overhead (HTTP, templating, tokenizing, queueing), reported per request.
    `at_equal_token_cost` is the token ratio: what the decision path gains if a token costs the same
    on both sides and nothing else costs, the analogue of `bounds.estimate_fork_ceiling` for fork
    against fresh. `at_measured_token_cost` weights each side's tokens by its own measured cost per
    token (one large batch of branches against many small requests), still without overheads.
    """
    out: dict[str, Ceiling] = {}
    for name, ours, theirs in (("cold", "decision-cold", SERVER_COLD), ("cached", "decision-cached", SERVER_CACHED)):
        best = best_of(paths, theirs)
        if ours not in paths or not best or not paths[ours].evaluated_tokens or not paths[ours].compute_s or not paths[best].compute_s:
            continue
        d, s = paths[ours], paths[best]
        server_cost, decision_cost = s.compute_s / s.evaluated_tokens, d.compute_s / d.evaluated_tokens
        server_tokens, decision_tokens = s.evaluated_tokens / s.decisions, d.evaluated_tokens / d.decisions
        out[name] = Ceiling(
            server_path=best,
            server_tokens_per_decision=round(server_tokens, 2),
            decision_tokens_per_decision=round(decision_tokens, 2),
            server_tokens_per_s=round(1 / server_cost, 1),
            decision_tokens_per_s=round(1 / decision_cost, 1),
            server_overhead_s_per_request=round((s.seconds - s.compute_s) / s.requests, 4),
            decision_overhead_s_per_request=round((d.seconds - d.compute_s) / d.requests, 4),
            at_equal_token_cost=round(server_tokens / decision_tokens, 3),
            at_measured_token_cost=round(server_tokens * server_cost / (decision_tokens * decision_cost), 3),
            measured=round(d.decisions_per_s / s.decisions_per_s, 3),  # type: ignore[operator]
        )
    return out


# ---------------------------------------------------------------- reading the results
def _cell(value: Any, fmt: str = "{}") -> str:
    return "-" if value is None else fmt.format(value)


def _path_row(path: str, r: PathSummary) -> str:
    coverage = _cell(r.option_coverage, "{:.1%}")
    agreement = "reference" if path == "decision-cold" else _cell(r.argmax_agreement, "{:.1%}")
    if path == "server-json":
        coverage = f"{r.complete_states}/{r.states} complete JSON"
        agreement = f"{r.answers_agreeing_with_decision_argmax}/{r.decisions}"
    return (f"| {path} | {r.decisions_per_s:.3f} | {r.state_p50_s:.2f} | {r.requests} | {r.output_tokens} | "
            f"{coverage} | {agreement} | {_cell(r.max_abs_dp_vs_decision, '{:.3f}')} | {_cell(r.prefill_tokens_per_s)} |")


def _clients_rows(concurrency: ClientPhases) -> list[str]:
    rows = ["", "| 8 clients | decisions/s | state p50 (s) | state p95 (s) | request p50 (s) | request p95 (s) |",
            "|---|---:|---:|---:|---:|---:|"]
    for side, c in concurrency.sides().items():
        failed = f", {c.failed_states} failed" if c.failed_states else ""
        latencies = (c.state_latency_p50_s, c.state_latency_p95_s, c.request_latency_p50_s, c.request_latency_p95_s)
        rows.append(f"| {side} ({c.clients} clients, {c.states} states{failed}) | {c.decisions_per_s:.3f} | "
                    + " | ".join(_cell(v, "{:.2f}") for v in latencies) + " |")
    return rows


def _ceiling_rows(name: str, c: Ceiling) -> list[str]:
    return ["", f"Ceiling, {name} states, against {c.server_path}: llama-server ran {c.server_tokens_per_decision} tokens per "
            f"decision at {c.server_tokens_per_s} tokens/s plus {c.server_overhead_s_per_request} s per request; the decision path "
            f"ran {c.decision_tokens_per_decision} at {c.decision_tokens_per_s} tokens/s. At equal cost per token the most the "
            f"decision path can gain is {c.at_equal_token_cost}x; at each side's measured cost per token and no overhead, "
            f"{c.at_measured_token_cost}x (measured {c.measured}x)."]


def format_peer(doc: PeerResults | dict[str, Any]) -> str:
    """Paths, the 8-client phase, the targets and the ceiling as Markdown, for the README to quote verbatim."""
    results = PeerResults.of(doc)
    rows = []
    if results.partial:
        rows += [f"**Partial run** ({results.partial}): the figures below are what it measured before it stopped.", ""]
    rows += ["| path | decisions/s | state p50 (s) | requests | output tokens | option coverage | argmax agreement | max \\|Δp\\| "
             "| prefill tokens/s |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    rows += [_path_row(path, r) for path, r in results.paths.items()]
    if results.concurrency:
        rows += _clients_rows(results.concurrency)
    rows += ["", "| target | measured | 95 % interval over states | met |", "|---|---:|---|---|"]
    for name, t in results.targets.measured().items():
        interval = getattr(t, "interval", None)  # the 8-client target has none: its states are not paired
        cell = format_interval(interval.to_json() if interval else None)
        rows.append(f"| {name} (target {t.target}x) | {_cell(t.ratio, '{}x')} | {cell} | {'yes' if t.met else 'no'} |")
    for name, c in results.ceiling.items():
        rows += _ceiling_rows(name, c)
    return "\n".join(rows)


def plot_peer(doc: PeerResults | dict[str, Any]) -> Any:
    """Decisions/s per path (decision path in blue, llama-server in grey, repeated states hatched) and the client phase."""
    import matplotlib.pyplot as plt

    results = PeerResults.of(doc)
    paths = list(results.paths)
    rates = [results.paths[p].decisions_per_s or 0.0 for p in paths]
    panels = 2 if results.concurrency else 1
    fig, axes = plt.subplots(1, panels, figsize=(7 + 3.5 * (panels - 1), 3.8), squeeze=False,
                             gridspec_kw={"width_ratios": [2, 1][:panels]})
    ax = axes[0][0]
    bars = ax.barh(paths, rates, color=["#3b7dd8" if p.startswith("decision") else "#bbbbbb" for p in paths])
    for bar, path in zip(bars, paths, strict=True):
        bar.set_hatch("//" if "cached" in path else None)
    ax.bar_label(bars, fmt="%.2f", padding=2, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, max(rates) * 1.2)
    ax.set_xlabel("decisions / s (hatched: the same state again)")
    ax.tick_params(labelsize=8)
    ax.set_title(f"{results.workload.states} states, {results.peer.kind} b{results.peer.llama_cpp_build}, {results.config.threads} threads",
                 fontsize=9)
    if results.concurrency:
        _plot_clients(axes[0][1], results.concurrency)
    fig.tight_layout()
    return fig


def _plot_clients(ax: Any, concurrency: ClientPhases) -> None:
    sides = concurrency.sides()
    values = [c.decisions_per_s for c in sides.values()]
    bars = ax.bar(list(sides), values, color=["#3b7dd8" if s == "decision" else "#bbbbbb" for s in sides])
    ax.bar_label(bars, labels=[f"{c.decisions_per_s:.2f}/s\np95 {_cell(c.state_latency_p95_s, '{:.1f}')} s" for c in sides.values()],
                 fontsize=8)
    ax.set_title(f"{concurrency.server_logprobs.clients} clients at once", fontsize=9)
    ax.set_ylim(0, max(values) * 1.35)
    ax.set_ylabel("decisions / s")
    ax.tick_params(labelsize=8)


def save_peer_plot(doc: PeerResults | dict[str, Any], path: Path) -> Path:
    """`plot_peer` as a PNG next to the results, for the README (headless: no display needed)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    return save_figure(plot_peer(doc), path)
