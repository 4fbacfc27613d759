"""The results of `semif bench peer` as typed summaries, serialized to the keys of `results/bench/peer*.json`.

The run builds these models (`run`), the report reads them (`report`), and a results
file on disk validates into them (`PeerResults.read`). Every model forbids keys it does not
declare and requires those it does, so a misspelt figure fails where it is first built (after the
first state, when the run checkpoints) or where a file is first read, not in the report at the end
of a 92-minute run. A key a file may lack (a figure only some paths have) is optional with default
None and is written only when it was set (`to_json` drops unset fields), so a file round-trips byte
for byte.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CLIENT_SIDES",
    "SERVER_CACHED",
    "SERVER_COLD",
    "Ceiling",
    "ClientPhase",
    "ClientPhases",
    "ClientsTarget",
    "DecisionServer",
    "Interval",
    "PathSummary",
    "PeerResults",
    "PeerServer",
    "PeerTargets",
    "ReadoutTarget",
    "RunConfig",
    "SpeedTarget",
    "StateRecord",
    "WorkloadSummary",
]

SERVER_COLD = ("server-logprobs", "server-logprobs-concurrent")
SERVER_CACHED = ("server-logprobs-cached", "server-logprobs-concurrent-cached")  # every path: `options.PEER_PATHS`
CLIENT_SIDES = ("server-logprobs", "decision")  # the 8-client phase, in the order it runs


class Summary(BaseModel):
    """A part of the results file: declared keys only, each figure typed."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, validate_assignment=True)

    def to_json(self) -> dict[str, Any]:
        """The keys of the results file, in its order; fields never set are left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


class PathSummary(Summary):
    """One path's figures across states; coverage, agreement and JSON figures only where the path has them."""

    decisions: int
    seconds: float
    decisions_per_s: float | None
    state_p50_s: float | None
    requests: int
    output_tokens: int
    evaluated_tokens: int  # tokens the server ran through the model (its own counters; cached ones excluded)
    compute_s: float
    prefill_tokens_per_s: float | None
    # every path but server-json: questions whose every option is in the top log-probs (decision: well-formed)
    option_coverage: float | None = None
    options_missing: int | None = None
    # every path but decision-cold and server-json: against the decision path, where every option was covered
    compared_with_decision: int | None = None
    argmax_agreement: float | None = None
    max_abs_dp_vs_decision: float | None = None
    # server-json only
    valid_json_states: int | None = None
    complete_states: int | None = None
    states: int | None = None
    answers_agreeing_with_decision_argmax: int | None = None


class ClientPhase(Summary):
    """One side of the 8-client phase: throughput, failures and p50/p95 latency per state and per request."""

    clients: int
    states: int
    decisions: int
    requests: int
    failed_states: int
    first_failure: str | None  # None when no state failed
    seconds: float
    decisions_per_s: float
    state_latency_p50_s: float | None
    state_latency_p95_s: float | None
    request_latency_p50_s: float | None
    request_latency_p95_s: float | None
    note: str | None = None


class ClientPhases(Summary):
    """The client phase against llama-server, then against `semif serve`."""

    server_logprobs: ClientPhase = Field(alias="server-logprobs")
    decision: ClientPhase

    def sides(self) -> dict[str, ClientPhase]:
        """`{side name in the file: its phase}`, in file order."""
        return {"server-logprobs": self.server_logprobs, "decision": self.decision}


class Interval(Summary):
    """A ratio's 95 % bootstrap interval over states (`conditions.bootstrap_ratio`) and what it says of the target."""

    bounds: list[float] | None  # [low, high]; None with fewer than 2 states
    states: int
    statistic: str
    verdict: str  # `conditions.judge`: "met", "not met", "spans the target" or "no interval"
    level: float | None = None
    resamples: int | None = None
    seed: int | None = None


class SpeedTarget(Summary):
    """The decision path against llama-server's best strategy on the same states (cold or repeated)."""

    best_server_path: str
    ratio: float
    target: float
    decision_option_coverage: float | str  # 1.0, or "below 1"
    server_option_coverage: float | None
    met: bool
    interval: Interval | None = None  # absent in files written before intervals were recorded


class ClientsTarget(Summary):
    """8 clients: the throughput ratio, at a p95 no worse than llama-server's and with no failed state."""

    ratio: float | None  # None when llama-server answered nothing (JSON has no infinity)
    target: float
    decision_p95_s: float | None
    server_p95_s: float | None
    failed_states: dict[str, int]  # {"decision": n, "server-logprobs": n}
    met: bool


class ReadoutTarget(Summary):
    """Reading the answers out against llama-server writing them as JSON (median time ratio per state)."""

    ratio: float
    target: float
    decision_output_tokens: int
    server_json_output_tokens: int
    met: bool
    interval: Interval | None = None


class PeerTargets(Summary):
    """The issue's targets as measured ratios and met flags (never asserted in tests); a target without its paths is absent."""

    cold_vs_best_server: SpeedTarget | None = None
    cached_vs_best_server: SpeedTarget | None = None
    concurrent_clients: ClientsTarget | None = None
    readout_vs_server_json: ReadoutTarget | None = None

    def measured(self) -> dict[str, SpeedTarget | ClientsTarget | ReadoutTarget]:
        """`{target name: its figures}` for the targets this run measured, in file order."""
        return {name: value for name in type(self).model_fields if (value := getattr(self, name)) is not None}


class Ceiling(Summary):
    """How far the decision path can beat llama-server's best strategy, from each side's own token counters."""

    server_path: str
    server_tokens_per_decision: float
    decision_tokens_per_decision: float
    server_tokens_per_s: float
    decision_tokens_per_s: float
    server_overhead_s_per_request: float
    decision_overhead_s_per_request: float
    at_equal_token_cost: float
    at_measured_token_cost: float
    measured: float


class WorkloadSummary(Summary):
    states: int
    decisions: int
    questions_per_state: int | str  # a number, or "all"
    run_id: str


class RunConfig(Summary):
    """What both servers shared."""

    threads: int
    n_ctx: int
    parallel: int
    n_batch: int
    n_ubatch: int
    flash_attn: str
    top_logprobs: int
    model: str
    openmp_env: dict[str, str]


class PeerServer(Summary):
    """Which text server was measured (replica container or native), its build, flags and CPU backend."""

    kind: str
    llama_cpp_build: int | str | None
    image: str | None
    chat_path: str
    sm_env: dict[str, str]
    command: list[str] | None
    fallback_reason: str | None
    cpu_backends: list[str] | None = None  # native only: the CPU backend modules beside the binary


class DecisionServer(Summary):
    """Which libllama `semif serve` ran on ("venv": llama-cpp-python's own, "build": the peer's) and its `SEMIF_*` environment."""

    library: str
    llama_cpp_python: str | None = None  # venv
    lib_dir: str | None = None  # build
    llama_cpp_build: int | str | None = None  # build
    env: dict[str, str] = Field(default_factory=dict)


class StateRecord(Summary):
    """One state: which side went first, and each path's seconds and evaluated tokens."""

    id: str | None
    decision_first: bool
    seconds: dict[str, float]
    evaluated_tokens: dict[str, int]


class PeerResults(Summary):
    """The whole results file; `command` and `machine` come from the command line, `partial` from a checkpoint,
    `conditions` from the one writer of results files."""

    command: str | None = None
    machine: dict[str, Any] | None = None
    partial: str | None = None  # "not measured yet: ..." in a checkpoint
    workload: WorkloadSummary
    config: RunConfig
    peer: PeerServer
    decision_server: DecisionServer
    paths: dict[str, PathSummary]
    concurrency: ClientPhases | None
    ceiling: dict[str, Ceiling]  # "cold", "cached"
    targets: PeerTargets
    per_state: list[StateRecord]
    conditions: dict[str, Any] | None = None  # `conditions.attach_conditions`: machine, load, baseline (newer files)

    @classmethod
    def read(cls, path: Path) -> "PeerResults":
        """A results file, validated (a key it should not have, or lacks, fails here)."""
        return cls.model_validate(json.loads(Path(path).read_text(encoding="utf-8")))

    @classmethod
    def of(cls, doc: "PeerResults | dict[str, Any]") -> "PeerResults":
        """`doc` as typed results: itself, or a results file's JSON validated."""
        return doc if isinstance(doc, cls) else cls.model_validate(doc)
