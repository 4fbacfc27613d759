"""`semif bench robustness`: `semif serve` under load, KV pressure, nested prefixes, hostile input and decode faults.

Each phase talks to a real `semif serve` process on loopback through httpx, as a SageMaker client
would, with `SEMIF_CHECK_INVARIANTS=1` so that any KV bookkeeping the engine got wrong answers 500
and shows up in the counts:

* `load`: N clients x M requests at once while `/ping` is polled: lost requests, 5xx, `/ping` p99;
* `kv_pressure`: 8 concurrent requests of distinct ~500-token states on a 2,048-cell context,
  then 20 small requests, all of which must answer 200;
* `nested_prefixes`: requests alternating a state and the same state with more text after it;
* `bad_inputs`: 40+ classes of hostile input, each of which must be a 4xx JSON error naming a field;
* `decode_faults`: a second server whose `llama_decode` fails at random (`SEMIF_FAULT_RATE`);
  every answer is 200 or a 503 `decode_failed`, and a retry of each failed request succeeds.

`run_robustness` runs every phase, `format_robustness` is the figures table docs/serving.md and the
README quote, and `command_robustness` writes `results/bench/robustness.json` (`--quick`:
`robustness-quick.json`). Nothing here imports the serving wing: the server is a separate process,
started by the benchmarks' harness (`harness.running_serve`), as in production.
"""

from __future__ import annotations

import json
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

from ...contract import CUSTOM_ATTRIBUTES_HEADER
from ...errors import read_error
from .harness import percentile, running_serve, server_env
from .workload import write_result

__all__ = ["bad_input_cases", "command_robustness", "format_robustness", "run_robustness"]

SMALL_QUESTIONS = {
    "bug": {"type": "noul", "instructions": "Is this a bug report?"},
    "area": {"type": "choice", "instructions": "Which area?", "criteria": {"mobile": None, "web": None, "billing": None}},
    "sev": {"type": "score", "instructions": "How severe?", "criteria": ["low", "medium", "high"]},
}


def small_request(i: int) -> dict[str, Any]:
    return {"id": f"small-{i}", "state": f"Ticket {i}: the app crashes when uploading photo number {i}.", "questions": SMALL_QUESTIONS}


def long_state(k: int, lines: int = 20) -> str:
    """A distinct state of about 25 tokens a line (k keeps states apart, so no two share a prefix)."""
    return "\n".join(f"[{k:03d}.{i:02d}] service-{(k * 7 + i) % 11} latency {100 + 13 * k + i} ms, errors {(k + i) % 5}, "
                     f"owner team-{(k + 2 * i) % 4}" for i in range(lines))


def classify(response: Any) -> str:
    if isinstance(response, Exception):
        return "lost"
    return f"{response.status_code // 100}xx"


# ---------------------------------------------------------------- phases
def run_load(url: str, clients: int, per_client: int) -> dict[str, Any]:
    """`clients` threads each send `per_client` requests back to back while `/ping` is polled."""
    import httpx

    stop = threading.Event()
    pings: list[float] = []
    ping_codes: list[int] = []

    def poll() -> None:
        with httpx.Client(timeout=10) as c:
            while not stop.is_set():
                t0 = time.perf_counter()
                try:
                    ping_codes.append(c.get(url + "/ping").status_code)
                except httpx.HTTPError:
                    ping_codes.append(0)
                pings.append(time.perf_counter() - t0)
                time.sleep(0.05)

    def client(c: int) -> list[tuple[str, float]]:
        out = []
        with httpx.Client(timeout=120) as http:
            for r in range(per_client):
                t0 = time.perf_counter()
                try:
                    response: Any = http.post(url + "/invocations", json=small_request(c * 1000 + r))
                except httpx.HTTPError as exc:
                    response = exc
                out.append((classify(response), time.perf_counter() - t0))
        return out

    pinger = threading.Thread(target=poll)
    pinger.start()
    started = time.perf_counter()
    try:
        with ThreadPoolExecutor(max_workers=clients) as pool:
            results = [x for chunk in pool.map(client, range(clients)) for x in chunk]
    finally:
        stop.set()
        pinger.join()
    wall = time.perf_counter() - started
    latencies = [t for _, t in results]
    kinds = [k for k, _ in results]
    return {"clients": clients, "requests_per_client": per_client, "requests": len(results),
            "answered_2xx": kinds.count("2xx"), "answered_4xx": kinds.count("4xx"), "answered_5xx": kinds.count("5xx"),
            "lost": kinds.count("lost"), "seconds": round(wall, 2), "requests_per_s": round(len(results) / wall, 2),
            "latency_p50_s": round(statistics.median(latencies), 3), "latency_p95_s": round(percentile(latencies, 0.95), 3),
            "ping_polls": len(pings), "ping_non_200": sum(code != 200 for code in ping_codes),
            "ping_p99_s": round(percentile(pings, 0.99), 3), "ping_max_s": round(max(pings), 3)}


def run_kv_pressure(url: str, concurrent: int = 8, small: int = 20) -> dict[str, Any]:
    """Distinct ~500-token states at once on a 2,048-cell context, then small requests."""
    import httpx

    def big(k: int) -> Any:
        try:
            return httpx.post(url + "/invocations", json={"state": long_state(100 + k), "questions": SMALL_QUESTIONS}, timeout=300)
        except httpx.HTTPError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=concurrent) as pool:
        heavy = [classify(r) for r in pool.map(big, range(concurrent))]
    with httpx.Client(timeout=120) as http:
        after = [classify(http.post(url + "/invocations", json=small_request(5000 + i))) for i in range(small)]
    return {"concurrent_long_states": concurrent, "long_2xx": heavy.count("2xx"), "long_other": len(heavy) - heavy.count("2xx"),
            "small_after": small, "small_after_2xx": after.count("2xx")}


def run_nested_prefixes(url: str, requests: int) -> dict[str, Any]:
    """One state and the same state with more text after it, alternating: a prefix nested in another."""
    import httpx

    base = long_state(300, lines=8)
    longer = base + "\n" + long_state(301, lines=2)
    kinds, cached = [], 0
    with httpx.Client(timeout=120) as http:
        for i in range(requests):
            response = http.post(url + "/invocations", json={"state": longer if i % 2 else base, "questions": SMALL_QUESTIONS})
            kinds.append(classify(response))
            if response.status_code == 200 and response.json()["usage"]["x_cached_tokens"] == response.json()["x_timing"]["prefix_tokens"]:
                cached += 1
        ping = http.get(url + "/ping").json()
    return {"requests": requests, "answered_2xx": kinds.count("2xx"), "other": len(kinds) - kinds.count("2xx"),
            "full_cache_hits": cached, "pending_after": ping.get("pending")}


def bad_input_cases() -> list[tuple[str, bytes, dict[str, str], str, int]]:
    """(name, body, headers, path, expected status): hostile inputs, each of which must answer 4xx naming what is wrong."""
    j = "application/json"

    def body(obj: Any) -> bytes:
        return json.dumps(obj).encode()

    def req(questions: Any = None, state: Any = "s") -> dict[str, Any]:
        return {"state": state, "questions": questions if questions is not None else {"q": {"type": "noul", "instructions": "x"}}}

    def choice(criteria: Any, **extra: Any) -> dict[str, Any]:
        return req({"q": {"type": "choice", "instructions": "Which?", "criteria": criteria, **extra}})

    deep = b'{"state": ' + b"[" * 100_000 + b"]" * 100_000 + b', "questions": {}}'
    cases: list[tuple[str, bytes, dict[str, str], str, int]] = [
        ("empty body", b"", {}, "/invocations", 400),
        ("whitespace body", b"   \n", {}, "/invocations", 400),
        ("malformed JSON", b'{"state": "s", "questions": ', {}, "/invocations", 400),
        ("JSON array", b"[1, 2]", {}, "/invocations", 400),
        ("JSON string", b'"hello"', {}, "/invocations", 400),
        ("not UTF-8", '{"state": "caf\xe9"}'.encode("latin-1"), {}, "/invocations", 400),
        ("UTF-16", json.dumps(req()).encode("utf-16"), {}, "/invocations", 400),
        ("NaN", b'{"state": NaN, "questions": {"q": {"type": "noul", "instructions": "x"}}}', {}, "/invocations", 400),
        ("Infinity", b'{"state": Infinity, "questions": {}}', {}, "/invocations", 400),
        ("-Infinity", b'{"state": -Infinity, "questions": {}}', {}, "/invocations", 400),
        ("overflowing float", b'{"state": 1e999, "questions": {"q": {"type": "noul", "instructions": "x"}}}', {}, "/invocations", 400),
        ("lone surrogate in state", b'{"state": "\\ud800", "questions": {"q": {"type": "noul", "instructions": "x"}}}', {},
         "/invocations", 400),
        ("lone surrogate in instructions", body(req()).replace(b'"x"', b'"\\udfff"'), {}, "/invocations", 400),
        ("lone surrogate in an option", body(choice({"a": None, "b": None})).replace(b'"a"', b'"\\ud83d"'), {}, "/invocations", 400),
        ("lone surrogate in a question id", body(req()).replace(b'"q"', b'"\\udc00"'), {}, "/invocations", 400),
        ("100,000 nested brackets", deep, {}, "/invocations", 400),
        ("80 nested lists", b'{"state": ' + b"[" * 80 + b"1" + b"]" * 80 + b', "questions": {}}', {}, "/invocations", 400),
        ("5,000-digit integer", b'{"state": ' + b"9" * 5000 + b', "questions": {}}', {}, "/invocations", 400),
        ("duplicate JSON key", b'{"state": "s", "state": "t", "questions": {}}', {}, "/invocations", 400),
        ("no state", body({"questions": {"q": {"type": "noul", "instructions": "x"}}}), {}, "/invocations", 400),
        ("no questions", body({"state": "s"}), {}, "/invocations", 400),
        ("empty questions", body(req({})), {}, "/invocations", 400),
        ("unknown question type", body(req({"q": {"type": "maybe", "instructions": "x"}})), {}, "/invocations", 400),
        ("question without type", body(req({"q": {"instructions": "x"}})), {}, "/invocations", 400),
        ("empty instructions", body(req({"q": {"type": "noul", "instructions": "  "}})), {}, "/invocations", 400),
        ("numeric instructions", body(req({"q": {"type": "noul", "instructions": 5}})), {}, "/invocations", 400),
        ("state is a number", body(req(state=42)), {}, "/invocations", 400),
        ("one option", body(choice({"a": None})), {}, "/invocations", 400),
        ("256 options", body(choice({f"o{i}": None for i in range(256)})), {}, "/invocations", 413),  # over SEMIF_MAX_OPTIONS: a limit
        ("options as a list", body(choice(["a", "b"])), {}, "/invocations", 400),
        ("one score level", body(req({"q": {"type": "score", "instructions": "x", "criteria": ["only"]}})), {}, "/invocations", 400),
        ("eleven score levels", body(req({"q": {"type": "score", "instructions": "x", "criteria": [str(i) for i in range(11)]}})), {},
         "/invocations", 400),
        ("unknown readout", body(choice({"a": None, "b": None}, readout="bogus")), {}, "/invocations", 400),
        ("mode=warp in the query", body(req()), {}, "/invocations?mode=warp", 400),
        ("mode=warp in CustomAttributes", body(req()), {CUSTOM_ATTRIBUTES_HEADER: "mode=warp"}, "/invocations", 400),
        ("text/plain", body(req()), {"Content-Type": "text/plain"}, "/invocations", 415),
        ("application/xml", b"<state/>", {"Content-Type": "application/xml"}, "/invocations", 415),
        ("body over 6 MB", b'{"state": "' + b"x" * (6 << 20) + b'"}', {}, "/invocations", 413),
        ("state longer than the context", body(req(state="word " * 3000)), {}, "/invocations", 413),
        ("more questions than SEMIF_MAX_QUESTIONS", body(req({f"q{i}": {"type": "noul", "instructions": "x"} for i in range(129)})), {},
         "/invocations", 413),
        ("JSON Lines with no record", b"\n\n", {"Content-Type": "application/jsonlines"}, "/invocations", 400),
        ("JSON Lines not UTF-8", b'{"state": "\xff"}\n', {"Content-Type": "application/jsonlines"}, "/invocations", 400),
        ("unknown route", b"", {}, "/nope", 404),
        ("GET on /invocations", b"", {}, "GET /invocations", 405),
    ]
    return [(name, data, {"Content-Type": j, **headers}, path, status) for name, data, headers, path, status in cases]


def run_bad_inputs(url: str) -> dict[str, Any]:
    """Every hostile class once: its status, and whether the body is Jev's error shape with a message (`errors.read_error`).

    A 400 expected for a body that fails validation is met by a 422: Jev's wire, which the adapter speaks, answers those with 422.
    """
    import httpx

    rows = []
    with httpx.Client(timeout=120) as http:
        for name, data, headers, path, expected in bad_input_cases():
            method, _, target = path.rpartition(" ")
            response = http.request(method or "POST", url + target, content=data if method != "GET" else None, headers=headers)
            try:
                error = read_error(response.json())
                well_formed = isinstance(error["type"], str) and bool(error["message"])
            except (ValueError, KeyError, TypeError):
                error, well_formed = {}, False
            rows.append({"class": name, "status": response.status_code, "expected": expected, "json_error": well_formed,
                         "field": error.get("field"), "message": str(error.get("message", ""))[:160]})
    for r in rows:  # the one rule for a case met, which the report and the tests read
        r["as_expected"] = r["json_error"] and (r["status"] == r["expected"] or (r["expected"] == 400 and r["status"] == 422))
    return {"classes": len(rows), "as_expected": sum(r["as_expected"] for r in rows),
            "answered_5xx": sum(r["status"] >= 500 for r in rows), "cases": rows}


def run_decode_faults(url: str, requests: int, retries: int = 3) -> dict[str, Any]:
    """Requests against a server whose decodes fail at random: 200 or a clear 503, and every retry recovers."""
    import httpx

    kinds: dict[str, int] = {}
    recovered = unrecovered = 0
    modes = ("parallel", "serial", "fresh")
    with httpx.Client(timeout=120) as http:
        for i in range(requests):
            target = f"{url}/invocations?mode={modes[i % 3]}"
            payload = small_request(i % 7) if i % 4 else {"state": long_state(400 + i % 5, lines=4), "questions": SMALL_QUESTIONS}
            response = http.post(target, json=payload)
            kind = "200" if response.status_code == 200 else f"{response.status_code} {read_error(response.json())['type']}"
            kinds[kind] = kinds.get(kind, 0) + 1
            if response.status_code == 503:
                for _ in range(retries):
                    if http.post(target, json=payload).status_code == 200:
                        recovered += 1
                        break
                else:
                    unrecovered += 1
        tail = [http.post(url + "/invocations", json=small_request(9000 + k)).status_code for k in range(20)]
    return {"requests": requests, "answers": kinds, "failed_then_recovered": recovered, "failed_not_recovered": unrecovered,
            "other_5xx": sum(v for k, v in kinds.items() if k.startswith("5") and "decode_failed" not in k),
            "last_20_status": {str(code): tail.count(code) for code in sorted(set(tail))}}


# ---------------------------------------------------------------- the run
def run_robustness(quick: bool = False, threads: int = 2, port: int = 18090, log_dir: Path = Path("results/tmp"),
                   fault_rate: float = 0.05, progress: Callable[[str], None] = print) -> dict[str, Any]:
    """All phases against fresh `semif serve` processes; returns the results document."""
    clients, per_client, nested, faults = (8, 5, 20, 40) if quick else (32, 30, 80, 200)
    doc: dict[str, Any] = {"quick": quick}
    with running_serve(port, server_env(threads), log_dir / "robustness-serve.log") as url:
        progress(f"load: {clients} clients x {per_client} requests")
        doc["load"] = run_load(url, clients, per_client)
        progress("kv pressure: 8 long states at once on 2,048 cells, then 20 small requests")
        doc["kv_pressure"] = run_kv_pressure(url)
        progress(f"nested prefixes: {nested} requests")
        doc["nested_prefixes"] = run_nested_prefixes(url, nested)
        progress("bad inputs")
        doc["bad_inputs"] = run_bad_inputs(url)
    fault_env = server_env(threads, SEMIF_FAULT_RATE=str(fault_rate), SEMIF_FAULT_SEED="7")
    with running_serve(port + 1, fault_env, log_dir / "robustness-faults.log") as url:
        progress(f"decode faults: {faults} requests at fault rate {fault_rate}")
        doc["decode_faults"] = {"fault_rate": fault_rate, **run_decode_faults(url, faults)}
    doc["figures"] = summarize_figures(doc)
    return doc


def summarize_figures(doc: dict[str, Any]) -> dict[str, Any]:
    """The issue's figures, each as measured value and met flag."""
    load, kv, nested, bad, faults = (doc[k] for k in ("load", "kv_pressure", "nested_prefixes", "bad_inputs", "decode_faults"))
    return {
        "load_lost_and_5xx": {"value": load["lost"] + load["answered_5xx"], "met": load["lost"] + load["answered_5xx"] == 0},
        "ping_p99_s_under_load": {"value": load["ping_p99_s"], "target_below": 2.0, "met": load["ping_p99_s"] < 2.0},
        "kv_pressure_then_20_small_all_200": {"value": kv["small_after_2xx"],
                                              "met": kv["small_after_2xx"] == kv["small_after"] and kv["long_other"] == 0},
        "nested_prefixes_all_200": {"value": nested["answered_2xx"], "met": nested["other"] == 0},
        "bad_input_classes_4xx": {"value": f"{bad['as_expected']}/{bad['classes']}",
                                  "met": bad["as_expected"] == bad["classes"] and bad["classes"] >= 40},
        "decode_faults_recovered": {"value": f"{faults['failed_then_recovered']} recovered, {faults['failed_not_recovered']} not",
                                    "met": faults["failed_not_recovered"] == 0 and faults["other_5xx"] == 0},
    }


def format_robustness(doc: dict[str, Any]) -> str:
    """The figures table the README quotes."""
    load, kv, nested, bad, faults = (doc[k] for k in ("load", "kv_pressure", "nested_prefixes", "bad_inputs", "decode_faults"))

    def met(name: str) -> str:
        return "yes" if doc["figures"][name]["met"] else "no"

    rows = ["| figure | measured | met |", "|---|---|---|",
            f"| {load['clients']} clients x {load['requests_per_client']} requests: lost + 5xx | "
            f"{load['lost']} + {load['answered_5xx']} of {load['requests']} | {met('load_lost_and_5xx')} |",
            f"| `/ping` p99 during that load | {load['ping_p99_s']} s ({load['ping_polls']} polls, max {load['ping_max_s']} s) | "
            f"{met('ping_p99_s_under_load')} |",
            f"| 8 long states at once on 2,048 cells, then 20 small | {kv['long_2xx']}/8 then {kv['small_after_2xx']}/20 answered 200 | "
            f"{met('kv_pressure_then_20_small_all_200')} |",
            f"| {nested['requests']} requests alternating nested prefixes | {nested['answered_2xx']} answered 200, "
            f"invariants checked after each | {met('nested_prefixes_all_200')} |",
            f"| classes of bad input | {bad['as_expected']}/{bad['classes']} a 4xx JSON error, {bad['answered_5xx']} answered 5xx | "
            f"{met('bad_input_classes_4xx')} |",
            f"| {faults['requests']} requests, decode fault rate {faults['fault_rate']} | answers {faults['answers']}; "
            f"{faults['failed_then_recovered']} failures recovered on retry, {faults['failed_not_recovered']} not | "
            f"{met('decode_faults_recovered')} |"]
    return "\n".join(rows)


def command_robustness(args: Any) -> int:
    """`semif bench robustness`: every phase, the table printed, results/bench/robustness[-quick].json written (exit 1: a figure missed)."""
    doc = {"command": "semif bench robustness" + (" --quick" if args.quick else "") + f" --threads {args.threads}",
           **run_robustness(quick=args.quick, threads=args.threads, port=args.port)}
    out = write_result(doc, args.output or Path("results/bench") / ("robustness-quick.json" if args.quick else "robustness.json"))
    print(format_robustness(doc))
    print(f"wrote {out}", file=sys.stderr)
    return 0 if all(f["met"] for f in doc["figures"].values()) else 1
