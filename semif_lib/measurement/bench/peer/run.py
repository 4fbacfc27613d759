"""The run of `semif bench peer`: the decision path side by side with the text DLC's own server, llama-server.

Both sides are servers on loopback, called over HTTP as a SageMaker client calls them: `semif serve`
(the decision path) and the text DLC as deployed (the DLC replica image when a container runtime
has it, else llama-server built natively by `container/build_libllama.sh`; `peer.kind` in the
results says which). Same GGUF, same threads, same KV cells, same batch sizes. Every state of the
37 x 21 workload goes through every path before the next state, and the two sides take turns
going first:

* `decision-cold`, `decision-cached`: one `/invocations` request with all the state's questions, then the same again;
* `server-logprobs`, `server-logprobs-cached`: what a DLC user does today for probabilities: one chat
  completion per question (`max_tokens: 1`, `logprobs`, `top_logprobs: 20`, the decision path's
  rendered prompt), one after another so the prompt cache keeps the state; then all of them again;
* `server-logprobs-concurrent` (and `-cached`): the same requests all at once, to `--parallel` slots on a unified KV cache;
* `server-json`: the README's generation baseline: all answers written as one JSON array, greedy.

**Cold means unseen by that server.** llama-server keeps prompts across slot reuse (idle slots are
saved to host memory) and `semif serve` keeps recent prefixes, so every cold pass starts the state
with a marker line that no server has seen (`Case reference: <run>-<state>-<pass>`). Both sides then
reuse only the system prompt before it, as for any new state. The two servers are separate
processes, so the decision path and `server-logprobs` read the same marked text and are compared
exactly; the concurrent pass has its own marker, and an untimed decision request on that text is
its reference.

A second phase puts 8 clients, each with its own states, on each server in turn (llama-server with
`--parallel 8`; `semif serve` batching across requests): throughput and p50/p95 latency per state.

`run_peer` returns the results as `results.PeerResults` (`command_peer` writes them to
`results/bench/peer.json`; `--quick`: `peer-quick.json`). Nothing here imports the serving wing;
the servers are separate processes, as in production.
"""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from ....errors import InvalidRequestError
from ....settings import ContainerSettings
from ...conditions import paired_order, remeasure_baseline
from ...options import PEER_PATHS
from ..harness import refuse_unknown, running_serve
from .config import CLIENT_TIMEOUT_S, N_BATCH, N_UBATCH, PeerConfig
from .protocol import (
    TOP_LOGPROBS,
    Pass,
    argmax_answers,
    ask_decision,
    ask_server_json,
    ask_server_logprobs,
    decision_request,
    plan_peer_questions,
    run_clients,
    warm_up,
)
from .report import PeerTally, check_peer_targets, estimate_peer_ceiling, summarize_paths
from .results import (
    CLIENT_SIDES,
    ClientPhase,
    ClientPhases,
    DecisionServer,
    PeerResults,
    PeerServer,
    RunConfig,
    StateRecord,
    WorkloadSummary,
)

__all__ = ["check_paths", "choose_decision_library", "opened_peer", "run_peer", "run_state", "say_on_stderr"]

REFERENCE_B = "reference-b"  # the untimed decision request on the concurrent pass's text: that pass's reference


@dataclass
class PeerRun:
    """One `run_peer` call: both servers, the paths to run, and everything gathered across states."""

    config: PeerConfig
    decision_url: str
    chat_url: str
    http: Any
    tallies: dict[str, PeerTally]
    model: Path
    peer: PeerServer
    decision_server: DecisionServer
    baseline: dict[str, Any] | None = None  # measured on the library `semif serve` runs on (a `build`'s), inside `recording`
    per_state: list[StateRecord] = field(default_factory=list)
    json_speedups: list[float] = field(default_factory=list)  # server-json s / decision-cold s, per state


def check_paths(paths: Sequence[str]) -> None:
    """Refuse unknown paths, and a cached path without the cold pass it repeats (decision-cold is always the reference)."""
    refuse_unknown(paths, PEER_PATHS)
    needs = {"decision-cold": None, "decision-cached": "decision-cold", "server-logprobs-cached": "server-logprobs",
             "server-logprobs-concurrent-cached": "server-logprobs-concurrent"}
    if "decision-cold" not in paths:
        raise InvalidRequestError("--paths must include decision-cold: it is the reference every peer path is compared with", field="paths")
    for path, base in needs.items():
        if base and path in paths and base not in paths:
            raise InvalidRequestError(f"--paths: {path} repeats {base}, so it needs {base} too", field="paths")


def run_decision_side(run: PeerRun, requests: dict[str, dict[str, Any]]) -> dict[str, Pass]:
    """decision-cold and decision-cached on marker a; an untimed reference on marker b for the concurrent pass."""
    out = {"decision-cold": ask_decision(run.http, run.decision_url, requests["a"])}
    if "decision-cached" in run.config.paths:
        out["decision-cached"] = ask_decision(run.http, run.decision_url, requests["a"])
    if "server-logprobs-concurrent" in run.config.paths:
        out[REFERENCE_B] = ask_decision(run.http, run.decision_url, requests["b"])
    return out


def run_server_side(run: PeerRun, requests: dict[str, dict[str, Any]]) -> dict[str, Pass]:
    """The llama-server passes: sequential log-probs (a), concurrent log-probs (b), each then repeated; JSON (a)."""
    paths, out = run.config.paths, {}
    steps = [("server-logprobs", "a", 1), ("server-logprobs-cached", "a", 1),
             ("server-logprobs-concurrent", "b", run.config.parallel), ("server-logprobs-concurrent-cached", "b", run.config.parallel)]
    planned = {tag: plan_peer_questions(requests[tag]) for tag in ("a", "b")}
    for path, tag, concurrent in steps:
        if path in paths:
            out[path] = ask_server_logprobs(run.http, run.chat_url, planned[tag], concurrent)
    if "server-json" in paths:
        out["server-json"] = ask_server_json(run.http, run.chat_url, requests["a"])
    return out


def run_state(run: PeerRun, index: int, row: dict[str, Any]) -> None:
    """Every path on one state; the side that goes first alternates from state to state."""
    tag = f"{run.config.run_id}-{index:02d}"
    requests = {m: decision_request(row, f"{tag}-{m}", run.config.questions) for m in ("a", "b")}
    sides: list[Callable[[PeerRun, dict[str, dict[str, Any]]], dict[str, Pass]]] = [run_decision_side, run_server_side]
    passes: dict[str, Pass] = {}
    for side in paired_order(index, sides):
        passes.update(side(run, requests))
    reference = passes["decision-cold"].probs
    for path, result in passes.items():
        if path == REFERENCE_B:
            continue
        tally = run.tallies[path]
        tally.add(result)
        if path.startswith("server-logprobs") or path == "decision-cached":
            tally.compare(passes[REFERENCE_B].probs if "concurrent" in path else reference, result)
    if "server-json" in passes:
        tally_json(run, passes["server-json"], passes["decision-cold"], requests["a"])
    run.per_state.append(StateRecord(id=row.get("id"), decision_first=index % 2 == 0,
                                     seconds={p: round(r.seconds, 4) for p, r in passes.items() if p != REFERENCE_B},
                                     evaluated_tokens={p: r.evaluated_tokens for p, r in passes.items() if p != REFERENCE_B}))


def tally_json(run: PeerRun, generated: Pass, decision: Pass, request: dict[str, Any]) -> None:
    """Validity of the generated JSON, its agreement with the decision path's argmax, and the time ratio."""
    tally, generation = run.tallies["server-json"], generated.generation
    assert generation is not None, "server-json passes carry what the server wrote"
    tally.json_valid += generation.valid_json
    tally.json_complete += generation.complete
    wanted = argmax_answers(decision.probs, request)
    tally.json_agree += sum(generation.answers.get(q) == a for q, a in wanted.items())
    run.json_speedups.append(generated.seconds / decision.seconds)


# ---------------------------------------------------------------- 8 clients at once, against each server in turn
def run_concurrency(run: PeerRun, workload: Sequence[dict[str, Any]], progress: Callable[[str], None]) -> ClientPhases:
    """The same unseen states from `clients` clients, against llama-server and then against `semif serve`."""
    config = run.config
    rows = list(workload)[: config.concurrency_states] if config.concurrency_states else list(workload)
    out: dict[str, ClientPhase] = {}
    ask: dict[str, Callable[[Any, dict[str, Any]], Pass]] = {
        "server-logprobs": lambda http, r: ask_server_logprobs(http, run.chat_url, plan_peer_questions(r)),
        "decision": lambda http, r: ask_decision(http, run.decision_url, r),
    }
    for side in CLIENT_SIDES:
        requests = [decision_request(row, f"{config.run_id}-{i:02d}-{side}", config.questions) for i, row in enumerate(rows)]
        progress(f"{config.clients} clients, {len(rows)} states against {side}")
        out[side] = run_clients(config.clients, requests, ask[side])
    out["decision"].note = ("one /invocations request per state; concurrent requests share rounds while their branches fit one "
                            "micro-batch, each answered when its round ends")
    out["server-logprobs"].note = "one chat completion per question, sent one after another by each client (prompt cache on)"
    return ClientPhases(**out)


# ---------------------------------------------------------------- the run
def choose_decision_library(choice: str, machine: ContainerSettings) -> tuple[str, dict[str, str], dict[str, Any]]:
    """(module, environment, description) for `semif serve` on the chosen libllama.

    `build` runs the decision path on the llama.cpp build the peer runs (`container/build_libllama.sh`
    puts libllama and the matching llama-cpp-python bindings beside llama-server), through
    `semif_lib.serving.llamabinding` exactly as the adapter image runs on the DLC's libllama: same
    kernels on both sides. `venv` runs on llama-cpp-python's own build. `auto` takes `build` when it is there.
    """
    from ....containers.textserver import find_llama_server

    binary = find_llama_server(machine)
    directory = binary.parent.resolve() if binary else None
    usable = directory is not None and (directory / "libllama.so").is_file() and (directory / "python" / "llama_cpp").is_dir()
    if choice == "build" and not usable:
        raise InvalidRequestError("--decision-llama build needs container/build_libllama.sh's output: libllama.so and python/llama_cpp "
                                  "beside llama-server", field="decision_llama")
    if choice == "venv" or not usable:
        return "semif_lib.cli", {}, {"library": "venv", "llama_cpp_python": metadata.version("llama-cpp-python")}
    assert directory is not None
    path = os.pathsep.join(p for p in (str(directory / "python"), os.environ.get("PYTHONPATH", "")) if p)
    build = (directory / "BUILD_NUMBER").read_text().strip() if (directory / "BUILD_NUMBER").is_file() else None
    return ("semif_lib.serving.llamabinding", {"PYTHONPATH": path, "LLAMA_CPP_LIB_PATH": str(directory)},
            {"library": "build", "lib_dir": str(directory), "llama_cpp_build": int(build) if build and build.isdigit() else build})


def offers_flag(flag: str, machine: ContainerSettings) -> bool | None:
    """Whether the native llama-server's `--help` lists `flag` (None when there is no native binary to ask)."""
    from ....containers.textserver import find_llama_server

    binary = find_llama_server(machine)
    if binary is None:
        return None
    env = {**os.environ, "LD_LIBRARY_PATH": f"{binary.parent}:{os.environ.get('LD_LIBRARY_PATH', '')}"}
    done = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=60, env=env)
    return flag in done.stdout + done.stderr


def describe_peer(server: Any, sm_env: dict[str, str]) -> PeerServer:
    """Which text server was measured (replica container or native), its build, flags and CPU backend."""
    info: dict[str, Any] = {"kind": server.kind, "llama_cpp_build": server.build, "image": server.image,
                            "chat_path": server.chat_path, "sm_env": sm_env, "command": server.command[1:] if server.command else None,
                            "fallback_reason": getattr(server, "fallback_reason", None)}
    if server.command:  # native: the CPU backend modules beside the binary (GGML_BACKEND_DL loads the best one)
        info["cpu_backends"] = sorted(p.name for p in Path(server.command[0]).parent.glob("libggml-cpu*.so"))
    return PeerServer(**info)


def say_on_stderr(progress: bool) -> Callable[[str], None]:
    """The run's progress lines: on stderr, or nowhere when `progress` is off."""
    return (lambda text: print(text, file=sys.stderr)) if progress else (lambda text: None)


@contextmanager
def opened_peer(config: PeerConfig, say: Callable[[str], None] = lambda text: None) -> Iterator[PeerRun]:
    """Both servers of `config` up and warmed (`semif serve` on the chosen libllama, the text DLC), as a `PeerRun`."""
    import httpx

    from ....containers.textserver import run_text_server
    from ....model.locate import find_model_path

    check_paths(config.paths)
    model = find_model_path(config.model_path)
    machine = config.machine or ContainerSettings.model_construct()  # unset: the defaults, no environment read here
    sm_env = config.sm_env(kv_unified=offers_flag("--kv-unified", machine) is not False)
    module, library_env, library = choose_decision_library(config.decision_llama, machine)
    # the baseline on the library `semif serve` runs on, not this process's
    baseline = remeasure_baseline(config.threads, library_env, module) if library_env else None
    serve_env = {**config.serve_env(model), **library_env}
    decision_server = DecisionServer(**library, env={k: v for k, v in serve_env.items() if k.startswith("SEMIF_")})
    with running_serve(config.port, serve_env, config.log_dir / f"peer-serve-{config.port}.log", module=module) as decision_url, \
            run_text_server(model, sm_env, config.port + 1, machine, kind=config.kind, log_dir=config.log_dir) as server, \
            httpx.Client(timeout=CLIENT_TIMEOUT_S) as http:
        run = PeerRun(config, decision_url, server.base_url + server.chat_path, http, {p: PeerTally() for p in config.paths},
                      model=model, peer=describe_peer(server, sm_env), decision_server=decision_server, baseline=baseline)
        say(f"decision path: {decision_url} on {library}; text DLC: {server.kind} (llama.cpp b{server.build}) at {run.chat_url}")
        warm_up(http, decision_url, run.chat_url)
        yield run


def run_peer(config: PeerConfig, workload: Sequence[dict[str, Any]], concurrency_workload: Sequence[dict[str, Any]] = (),
             progress: bool = True, checkpoint: Callable[[PeerResults], None] | None = None) -> PeerResults:
    """Both servers up, every path on every state (interleaved), then the client phase; returns the results.

    `checkpoint` gets the results so far (`partial` says what is missing) after every state and
    before the client phase: a run of two hours that fails late keeps what it measured.
    """
    from tqdm.auto import tqdm

    say = say_on_stderr(progress)
    with opened_peer(config, say) as run:
        clients = bool(concurrency_workload and config.clients)
        for i, row in enumerate(tqdm(workload, desc="bench peer", unit="state", file=sys.stderr, disable=not progress)):
            run_state(run, i, row)
            missing = ([f"states {i + 2}-{len(workload)}"] if i + 1 < len(workload) else []) + (["the client phase"] if clients else [])
            if checkpoint and missing:  # the complete results are returned, not checkpointed
                checkpoint(assemble_peer(run, None, partial=", ".join(missing)))
        concurrency = run_concurrency(run, concurrency_workload, say) if clients else None
    return assemble_peer(run, concurrency)


def assemble_peer(run: PeerRun, concurrency: ClientPhases | None, partial: str | None = None) -> PeerResults:
    """The results from what the run has gathered so far (`partial`: what they do not hold yet)."""
    config = run.config
    paths = summarize_paths(run.tallies)
    return PeerResults(
        **({"partial": f"not measured yet: {partial}"} if partial else {}),
        workload=WorkloadSummary(states=len(run.per_state), decisions=run.tallies["decision-cold"].decisions,
                                 questions_per_state=config.questions or "all", run_id=config.run_id),
        config=RunConfig(threads=config.threads, n_ctx=config.n_ctx, parallel=config.parallel, n_batch=N_BATCH, n_ubatch=N_UBATCH,
                         flash_attn="auto", top_logprobs=TOP_LOGPROBS, model=str(run.model),
                         # OpenMP settings both native servers inherit: with 2 threads on 2 cores, any other busy process
                         # stalls every barrier of the default (spinning) policy, so a run must have the machine to itself
                         openmp_env={k: v for k, v in sorted(os.environ.items()) if k.startswith(("OMP_", "GOMP_", "KMP_"))}),
        peer=run.peer,
        decision_server=run.decision_server,
        paths=paths,
        concurrency=concurrency,
        ceiling=estimate_peer_ceiling(paths),
        targets=check_peer_targets(paths, concurrency, run.json_speedups, run.per_state),
        per_state=run.per_state,
    )
