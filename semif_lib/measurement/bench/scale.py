"""`semif bench scale`: the prefix cache on a scaled endpoint, random routing against stateful sessions, and the cost
per million decisions.

A SageMaker endpoint with N instances sends each request to any of them, so a state asked again lands on a cold
instance (N-1)/N of the time under random routing; in a stateful session it goes back to the instance that holds it.
This runs N `semif serve` processes (1, 2 and 4; the machine's threads split between them, and one thread each once
there are more instances than threads: oversubscribed, and the results say so) behind the router of
`bench.router`, which routes as SageMaker's does. Each arm asks every state of the workload twice in a row from
`clients` concurrent clients, with its own tag in the state so that every arm starts cold:

* `random`: `RoutingStrategy` RANDOM, no session (SageMaker's default);
* `sessions`: LEAST_OUTSTANDING_REQUESTS (the decision endpoint's) and one stateful session per state, opened before
  its first ask and closed after its second.

A repeat is a hit when the whole state came from the cache (`x_cached_tokens == x_timing.prefix_tokens`). Per
instance count and arm: the repeat hit rate, decisions/s over the arm's wall time, and p50/p95 per request.
`cost_per_million` turns decisions/s into dollars on the workshop's CPU instance: this machine's figure scaled by
the instance's vCPUs over the threads measured (linear scaling, an assumption a real endpoint would check) at the list
price in `semif_lib.prices`.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Sequence

from ...contract import CLOSE_SESSION, NEW_SESSION, NEW_SESSION_HEADER, SESSION_HEADER
from ...errors import InvalidRequestError
from ...prices import INSTANCE_VCPUS, PRICE_SOURCES, PRICES, PRICES_AS_OF
from ...settings import Settings
from ..options import QUICK_STATES, RESULTS_DIR, WORKLOAD
from .harness import BenchmarkError, percentile, rounded, running_serve, server_env
from .router import EndpointRouter
from .workload import describe_machine, first_questions, load_workload, write_result

__all__ = ["SCALE_ARMS", "SCALE_INSTANCES", "command_scale", "cost_per_million", "format_scale", "plot_scale", "run_scale"]

SCALE_INSTANCES = (1, 2, 4)
SCALE_ARMS = ("random", "sessions")
SCALE_QUESTIONS = 5  # per state: the figures are about the state's prefill, which the questions do not change
SCALE_CLIENTS = 4
ARM_ROUTING = {"random": "RANDOM", "sessions": "LEAST_OUTSTANDING_REQUESTS"}
COST_INSTANCE = "ml.c6i.xlarge"  # the workshop's CPU endpoint (`PRICES["endpoint"]`)


def instance_env(threads: int) -> dict[str, str]:
    """One instance's `semif serve` environment: sessions on, room for every client's state and session."""
    return server_env(threads, SAGEMAKER_ENABLE_STATEFUL_SESSIONS="true", SEMIF_N_CTX="8192", SEMIF_CACHE_TOKENS="8192",
                      SEMIF_SESSION_TOKENS="8192", SEMIF_CHECK_INVARIANTS="0")


def _post(http: Any, body: dict[str, Any], headers: dict[str, str]) -> tuple[float, Any]:
    start = time.perf_counter()
    response = http.post("/invocations", json=body, headers=headers)
    if response.status_code != 200:
        raise BenchmarkError(f"POST /invocations answered {response.status_code}: {response.text[:300]}")
    return time.perf_counter() - start, response


def ask_twice(http: Any, request: dict[str, Any], arm: str) -> list[dict[str, Any]]:
    """One state asked twice in a row (in its own session on the `sessions` arm): a record per ask."""
    headers: dict[str, str] = {}
    if arm == "sessions":
        _, opened = _post(http, {"requestType": NEW_SESSION}, {SESSION_HEADER: NEW_SESSION})
        headers = {SESSION_HEADER: opened.headers[NEW_SESSION_HEADER].split(";")[0].strip()}
    records = []
    for ask in (1, 2):
        seconds, response = _post(http, request, headers)
        body = response.json()
        records.append({"state": request["id"], "ask": ask, "seconds": seconds, "decisions": len(request["questions"]),
                        "cached": body["usage"]["x_cached_tokens"], "prefix": body["x_timing"]["prefix_tokens"]})
    if headers:
        _post(http, {"requestType": CLOSE_SESSION}, headers)
    return records


def run_arm(url: str, requests: Sequence[dict[str, Any]], arm: str, clients: int) -> tuple[float, list[dict[str, Any]]]:
    """Every request asked twice by `clients` threads taking states in turn; (wall seconds, records)."""
    import httpx

    pending, records, failures = list(reversed(requests)), [], []
    lock = threading.Lock()

    def client() -> None:
        with httpx.Client(base_url=url, timeout=900) as http:
            while True:
                with lock:
                    if not pending or failures:
                        return
                    request = pending.pop()
                try:
                    got = ask_twice(http, request, arm)
                except Exception as exc:  # noqa: BLE001 - stop every client and report the first failure
                    with lock:
                        failures.append(exc)
                    return
                with lock:
                    records.extend(got)

    start = time.perf_counter()
    threads = [threading.Thread(target=client, name=f"scale-client-{k}") for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]
    return time.perf_counter() - start, records


def summarize_arm(seconds: float, records: Sequence[dict[str, Any]], routed: Sequence[int]) -> dict[str, Any]:
    repeats = [r for r in records if r["ask"] == 2]
    latencies = [r["seconds"] for r in records]
    decisions = sum(r["decisions"] for r in records)
    return {"requests": len(records), "decisions": decisions, "seconds": round(seconds, 3),
            "decisions_per_s": round(decisions / seconds, 3),
            "repeat_hit_rate": round(sum(r["cached"] == r["prefix"] > 0 for r in repeats) / len(repeats), 3),
            "first_hit_rate": round(sum(r["cached"] == r["prefix"] > 0 for r in records if r["ask"] == 1) / len(repeats), 3),
            "p50_s": rounded(percentile(latencies, 0.5)), "p95_s": rounded(percentile(latencies, 0.95)),
            "instances_used": len(set(routed))}


def tagged(row: dict[str, Any], tag: str, questions: int | None) -> dict[str, Any]:
    """The workload row as a request whose state no instance has cached yet (`tag` first)."""
    request = first_questions({"id": row.get("id", "state"), "state": row["state"], "questions": row["questions"]}, questions)
    return {**request, "state": f"[{tag}] {request['state']}"}


def run_scale(states: int | None = None, questions: int | None = SCALE_QUESTIONS, instances: Sequence[int] = SCALE_INSTANCES,
              clients: int = SCALE_CLIENTS, threads: int = 2, quick: bool = False, port: int = 18200,
              log_dir: Path = Path("results/tmp"), workload: Path = WORKLOAD) -> dict[str, Any]:
    """Both arms at each instance count, on the same servers (each arm's states tagged apart); the results document."""
    if not instances or min(instances) < 1 or clients < 1 or threads < 1:
        raise InvalidRequestError("--instances, --clients and --threads need numbers >= 1", field="instances")
    rows = load_workload(workload, quick=quick, states=states)
    runs: dict[str, Any] = {}
    for count in instances:
        per = max(1, threads // count)
        with ExitStack() as stack:
            urls = [stack.enter_context(running_serve(port + k, instance_env(per), log_dir / f"scale-{count}-{k}.log"))
                    for k in range(count)]
            for arm in SCALE_ARMS:
                requests = [tagged(row, f"scale {arm} x{count}", questions) for row in rows]
                with EndpointRouter(urls, ARM_ROUTING[arm], seed=count) as router:
                    seconds, records = run_arm(router.url, requests, arm, clients)
                    routed = list(router.routed)
                runs[f"{count}/{arm}"] = {"instances": count, "arm": arm, "routing": ARM_ROUTING[arm], "threads_per_instance": per,
                                          "oversubscribed": per * count > threads, **summarize_arm(seconds, records, routed)}
                print(f"  {count} instance(s), {arm}: {runs[f'{count}/{arm}']['repeat_hit_rate']:.0%} of repeats hit, "
                      f"{runs[f'{count}/{arm}']['decisions_per_s']:.2f} decisions/s", file=sys.stderr)
    return {"workload": {"states": len(rows), "questions_per_state": questions or "all", "asks_per_state": 2, "clients": clients},
            "threads": threads, "runs": runs, "cost": cost_table(runs, threads)}


def cost_per_million(decisions_per_s: float, threads: int, instance: str = COST_INSTANCE) -> float:
    """US dollars per million decisions on `instance` at list price, this machine's rate scaled by vCPUs / threads."""
    per_instance = decisions_per_s * INSTANCE_VCPUS[instance] / threads
    return PRICES["endpoint"].usd / (per_instance * 3600) * 1e6


def cost_table(runs: dict[str, Any], threads: int, peer_file: Path = RESULTS_DIR / "bench" / "peer.json") -> dict[str, Any]:
    """Cost per million decisions: this run's one-instance arms, and the text path's best decision method against the
    decision path from the committed peer benchmark (one run of its own, same model and workload)."""
    rows = [{"path": f"decision path, this run: 1 instance, {arm}", "decisions_per_s": runs[f"1/{arm}"]["decisions_per_s"],
             "threads": runs["1/" + arm]["threads_per_instance"]} for arm in SCALE_ARMS if f"1/{arm}" in runs]
    if peer_file.is_file():
        peer = json.loads(peer_file.read_text())
        for name, label in (("decision-cold", "decision path, every state new"), ("decision-cached", "decision path, state cached"),
                            ("server-logprobs", "text path (llama-server logprobs), every state new"),
                            ("server-logprobs-cached", "text path (llama-server logprobs), prompt cache warm")):
            if name in peer.get("paths", {}):
                rows.append({"path": f"{label} ({peer_file.name})", "decisions_per_s": peer["paths"][name]["decisions_per_s"],
                             "threads": peer["config"]["threads"]})
    for row in rows:
        row["usd_per_million"] = round(cost_per_million(row["decisions_per_s"], row["threads"]), 2)
    return {"instance": COST_INSTANCE, "vcpus": INSTANCE_VCPUS[COST_INSTANCE], "usd_per_hour": PRICES["endpoint"].usd,
            "prices_as_of": PRICES_AS_OF, "source": PRICE_SOURCES["sagemaker"], "rows": rows}


def format_scale(doc: dict[str, Any]) -> str:
    """The Markdown docs/benchmarks.md quotes: the routing table, then the cost table."""
    w = doc["workload"]
    lines = [f"{w['states']} states x {w['questions_per_state']} questions, each state asked twice in a row by {w['clients']} "
             f"clients; {doc['threads']} threads on this machine split between the instances.", "",
             "| instances | threads each | arm | routing | repeats that hit | decisions/s | p50 s | p95 s |",
             "|---|---|---|---|---|---|---|---|"]
    for run in doc["runs"].values():
        note = " (oversubscribed)" if run["oversubscribed"] else ""
        lines.append(f"| {run['instances']} | {run['threads_per_instance']}{note} | {run['arm']} | {run['routing']} | "
                     f"{run['repeat_hit_rate']:.0%} | {run['decisions_per_s']:.2f} | {run['p50_s']:.2f} | {run['p95_s']:.2f} |")
    cost = doc["cost"]
    lines += ["", f"Cost per million decisions on {cost['instance']} ({cost['vcpus']} vCPUs, ${cost['usd_per_hour']:g} an hour, "
              f"list price of {cost['prices_as_of']}, {cost['source']}), this machine's rate scaled by vCPUs / threads:", "",
              "| path | decisions/s here | threads | $ per million decisions |", "|---|---|---|---|"]
    lines += [f"| {r['path']} | {r['decisions_per_s']:.2f} | {r['threads']} | ${r['usd_per_million']:.2f} |" for r in cost["rows"]]
    return "\n".join(lines)


def plot_scale(doc: dict[str, Any], path: Path) -> Path:
    """Repeat hit rate and decisions/s against the instance count, one line per arm."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (hits, rate) = plt.subplots(1, 2, figsize=(10, 3.8))
    for arm in SCALE_ARMS:
        runs = [r for r in doc["runs"].values() if r["arm"] == arm]
        counts = [r["instances"] for r in runs]
        hits.plot(counts, [r["repeat_hit_rate"] for r in runs], marker="o", label=arm)
        rate.plot(counts, [r["decisions_per_s"] for r in runs], marker="o", label=arm)
    counts = sorted({r["instances"] for r in doc["runs"].values()})
    hits.plot(counts, [1 / n for n in counts], linestyle=":", color="grey", label="1/N (random, in expectation)")
    hits.set(title="a state asked again: whole prefix cached", xlabel="instances", ylabel="repeats that hit", ylim=(0, 1.05))
    rate.set(title="throughput", xlabel="instances", ylabel="decisions/s", ylim=(0, None))
    for ax in (hits, rate):
        ax.set_xticks(counts)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def command_scale(args: Any) -> int:
    doc = run_scale(states=args.states, questions=args.questions, instances=args.instances, clients=args.clients,
                    threads=args.threads, quick=args.quick, port=args.port)
    flags = " ".join(sys.argv[3:]) if sys.argv[1:3] == ["bench", "scale"] else ""
    doc = {"command": f"semif bench scale {flags}".strip(), "machine": describe_machine(Settings(threads=args.threads)),
           "quick_states": QUICK_STATES if args.quick else None, **doc}
    output = args.output or RESULTS_DIR / "bench" / ("scale-quick.json" if args.quick else "scale.json")
    write_result(doc, output)
    plot_scale(doc, output.with_suffix(".png"))
    print(format_scale(doc))
    print(f"\nwrote {output} and {output.with_suffix('.png')}", file=sys.stderr)
    return 0
