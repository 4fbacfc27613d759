"""`semif bench peer`: what it sends llama-server, how it reads the answers, and a tiny run end to end.

Nothing is timed here: the figures the README quotes come from the full run on a quiet machine.
Tests that need llama-server skip when `find_llama_server()` finds none (`bash container/build_libllama.sh`).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from semif_lib.errors import InvalidRequestError
from semif_lib.measurement import options
from semif_lib.measurement.bench.peer import config as peer_config
from semif_lib.measurement.bench.peer import protocol as peer_protocol
from semif_lib.measurement.bench.peer import report as peer_report
from semif_lib.measurement.bench.peer import results as peer_results
from semif_lib.measurement.bench.peer import run as peer_run
from semif_lib.measurement.options import RESULTS_DIR

from support.answers import MAX_ABS_DIFF
from support.paths import DATA
from support.servers import free_port


def _top(pairs: dict[str, float]) -> dict:
    """A chat completion shaped as llama-server answers one with `logprobs` (only what the reader reads)."""
    top = [{"id": i, "token": token, "logprob": math.log(p)} for i, (token, p) in enumerate(pairs.items())]
    return {"choices": [{"logprobs": {"content": [{"token": top[0]["token"], "logprob": top[0]["logprob"], "top_logprobs": top}]}}]}


def _path_summary(**figures) -> "peer_results.PathSummary":
    """One path's figures, zero but for `figures`."""
    zero = {"decisions": 0, "seconds": 0.0, "decisions_per_s": None, "state_p50_s": None, "requests": 0, "output_tokens": 0,
            "evaluated_tokens": 0, "compute_s": 0.0, "prefill_tokens_per_s": None}
    return peer_results.PathSummary(**{**zero, **figures})


def _committed_results() -> "peer_results.PeerResults":
    return peer_results.PeerResults.read(RESULTS_DIR / "bench" / "peer-quick.json")


def _first_plan(request: dict, qid: str):
    return next(plan for plan, _ in peer_protocol.plan_peer_questions(request) if plan.qid == qid)


def test_slot_probabilities_are_renormalised_over_the_options_and_missing_ones_counted(example_requests):
    request = example_requests[0]  # is_billing (noul), queue (4-way choice), urgency (score)
    noul = _first_plan(request, "is_billing")
    probs, missing = peer_protocol.read_slot_probabilities(_top({"Yes": 0.3, "The": 0.4, "No": 0.1}), noul)
    assert missing == 0 and probs == pytest.approx({"true": 0.75, "false": 0.25})
    choice = _first_plan(request, "queue")
    assert choice.slots == ["A", "B", "C", "D"]
    keys = choice.keys
    assert keys == list(request["questions"]["queue"]["criteria"])
    probs, missing = peer_protocol.read_slot_probabilities(_top({"B": 0.5, "A": 0.2, "Yes": 0.2}), choice)
    assert missing == 2 and probs[keys[2]] == 0.0 and probs[keys[3]] == 0.0
    assert probs[keys[0]] == pytest.approx(0.2 / 0.7) and sum(probs.values()) == pytest.approx(1.0)
    probs, missing = peer_protocol.read_slot_probabilities(_top({"The": 0.9}), choice)
    assert missing == 4 and set(probs.values()) == {0.25}


def test_agreement_is_counted_only_where_the_peer_saw_every_option():
    tally = peer_report.PeerTally()
    reference = {"q1": {"true": 0.6, "false": 0.4}, "q2": {"a": 0.2, "b": 0.8}, "q3": {"a": 0.9, "b": 0.1}}
    probs = {"q1": {"true": 0.45, "false": 0.55}, "q2": {"a": 0.25, "b": 0.75}, "q3": {"a": 0.0, "b": 1.0}}
    answered = peer_protocol.Pass(1.0, probs=probs, missing={"q1": 0, "q2": 0, "q3": 1})
    tally.add(answered)
    tally.compare(reference, answered)
    assert (tally.agreement.compared, tally.agreement.agree, tally.covered, tally.options_missing) == (2, 1, 2, 1)
    assert tally.agreement.max_dp == pytest.approx(0.15)


def test_cold_passes_get_a_marker_no_server_has_seen(example_requests):
    row = example_requests[0]
    a, b = (peer_protocol.decision_request(row, f"run1-00-{m}") for m in "ab")
    assert a["state"].startswith("Case reference: run1-00-a\n") and a["state"].endswith(row["state"])
    assert a["state"] != b["state"] and a["questions"] == row["questions"]
    assert list(peer_protocol.decision_request(row, "t", questions=2)["questions"]) == list(row["questions"])[:2]


def test_a_failed_state_in_the_client_phase_is_counted_not_raised():
    """A 503 or a timeout for one state (the full run once lost two hours to one) leaves the others measured."""
    def ask(http, request):
        if request["id"] == "s2":
            raise RuntimeError("POST /invocations answered 503: queue wait")
        return peer_protocol.Pass(0.01, decisions=len(request["questions"]), requests=1)

    requests = [{"id": f"s{i}", "questions": {"a": {}, "b": {}}} for i in range(5)]
    out = peer_protocol.run_clients(2, requests, ask)
    assert (out.states, out.failed_states, out.decisions, out.requests) == (5, 1, 8, 4)
    assert "503" in out.first_failure and out.state_latency_p95_s == 0.01
    nothing = peer_protocol.run_clients(2, requests[2:3], ask)
    assert nothing.decisions == 0 and nothing.state_latency_p50_s is None
    covered = {"decision-cold": _path_summary(option_coverage=1.0)}
    targets = peer_report.check_peer_targets(covered, peer_results.ClientPhases(decision=nothing, server_logprobs=out), [])
    assert targets.concurrent_clients.met is False and targets.concurrent_clients.failed_states["decision"] == 1
    silent = peer_report.check_peer_targets(covered, peer_results.ClientPhases(decision=out, server_logprobs=nothing), [])
    assert silent.concurrent_clients.ratio is None and silent.concurrent_clients.met is False
    json.dumps(silent.to_json(), allow_nan=False)  # the results file stays standard JSON
    committed = _committed_results()
    failed = committed.model_copy(update={"concurrency": peer_results.ClientPhases(decision=nothing, server_logprobs=out)})
    assert "1 failed" in peer_report.format_peer(failed)
    partial = peer_report.format_peer(committed.model_copy(update={"partial": "not measured yet: the client phase"}))
    assert partial.startswith("**Partial run** (not measured yet: the client phase)")


def test_semif_serve_lets_a_request_wait_as_long_as_the_client_does(tmp_path):
    """The client phase queues a state behind a whole round of others: SageMaker's 55 s would turn it into a 503."""
    from semif_lib.settings import Settings

    env = peer_config.PeerConfig().serve_env(tmp_path / "model.gguf")
    assert float(env["SEMIF_REQUEST_TIMEOUT_S"]) >= peer_config.CLIENT_TIMEOUT_S > Settings.model_fields["request_timeout_s"].default


def test_paths_are_checked_before_any_server_starts():
    with pytest.raises(InvalidRequestError, match="valid paths"):
        peer_run.check_paths(["decision-cold", "warp"])
    with pytest.raises(InvalidRequestError, match="reference"):
        peer_run.check_paths(["server-logprobs"])
    with pytest.raises(InvalidRequestError, match="needs server-logprobs"):
        peer_run.check_paths(["decision-cold", "server-logprobs-cached"])
    peer_run.check_paths(options.PEER_PATHS)


def test_the_decision_path_prompt_is_what_the_engine_renders(engine, example_requests):
    """The messages sent to llama-server, through the GGUF's template, are the engine's prompt for that question."""
    from semif_lib.decision.prompt import build_messages
    from semif_lib.decision.schema import render_content

    slot_only = [r for r in example_requests if all(q.get("readout", "slot") == "slot" for q in r["questions"].values())]
    assert len(slot_only) >= 4
    for request in slot_only:
        prep = engine.prepare(engine.resolve(request))
        state_text = render_content(request["state"])
        for (plan, messages), branch in zip(peer_protocol.plan_peer_questions(request), prep.branches, strict=True):
            assert messages == build_messages(state_text, plan.block)
            assert engine.tokenize(engine.renderer.render(state_text, plan.block)) == prep.prefix + list(branch.tokens)
            assert plan.slots == [engine.token_text(t) for t in prep.slot_tokens[branch.plan_index]]
    with pytest.raises(InvalidRequestError, match="sequence"):
        peer_protocol.plan_peer_questions(next(r for r in example_requests if r not in slot_only))


# ---------------------------------------------------------------- against a running llama-server
@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    from semif_lib.containers.textserver import find_llama_server, start_native_text_server
    from semif_lib.model.locate import find_model_path
    from semif_lib.processes import stop_process
    from semif_lib.settings import load_settings

    if (binary := find_llama_server(load_settings())) is None:
        pytest.skip("no llama-server: run `bash container/build_libllama.sh` (about 7.5 min on 2 cores)")
    config = peer_config.PeerConfig(n_ctx=4096, parallel=2)
    process, server = start_native_text_server(find_model_path(), config.sm_env(), free_port(),
                                               tmp_path_factory.mktemp("llama") / "llama-server.log", binary)
    yield server
    stop_process(process.pid, timeout_s=30)


@pytest.mark.server
def test_llama_server_renders_and_tokenizes_the_same_prompt(llama_server, engine, example_requests):
    import httpx

    from semif_lib.decision.schema import render_content

    request = peer_protocol.decision_request(example_requests[0], "render-check")
    prep = engine.prepare(engine.resolve(request))
    with httpx.Client(base_url=llama_server.base_url, timeout=120) as http:
        for (plan, messages), branch in zip(peer_protocol.plan_peer_questions(request), prep.branches, strict=True):
            prompt = http.post("/apply-template", json={"messages": messages}).raise_for_status().json()["prompt"]
            assert prompt == engine.renderer.render(render_content(request["state"]), plan.block)
            tokens = http.post("/tokenize", json={"content": prompt, "add_special": False, "parse_special": True}).json()["tokens"]
            assert tokens == prep.prefix + list(branch.tokens)
            answer = http.post(llama_server.chat_path, json=peer_protocol.logprob_body(messages)).raise_for_status().json()
            assert answer["usage"]["prompt_tokens"] == len(tokens) and answer["usage"]["completion_tokens"] == 1
            assert answer["timings"]["prompt_n"] >= 1


@pytest.mark.server
def test_real_answers_agree_with_the_decision_path(llama_server, engine, example_requests):
    """Where the top 20 hold every option, llama-server's renormalised log-probs are the decision path's probabilities."""
    import httpx

    request = peer_protocol.decision_request(example_requests[2], "agree-check")  # tool (4-way choice), needs_tool (noul)
    response = engine.ask(request, mode="parallel")
    with httpx.Client(timeout=120) as http:
        chat_url = llama_server.base_url + llama_server.chat_path
        answered = peer_protocol.ask_server_logprobs(http, chat_url, peer_protocol.plan_peer_questions(request))
    assert answered.requests == 2 and answered.output_tokens == 2 and answered.evaluated_tokens > 0
    tally = peer_report.PeerTally()
    tally.compare({q: dict(a.probabilities) for q, a in response.answers.items()}, answered)
    assert answered.missing["needs_tool"] == 0 and tally.agreement.compared >= 1
    assert tally.agreement.max_dp <= MAX_ABS_DIFF


@pytest.mark.model
@pytest.mark.server
def test_quick_run_end_to_end(llama_server, tmp_path):
    """`semif bench peer` on two short states and two clients: every path answers, the file has every figure."""
    out = tmp_path / "peer-quick.json"
    command = [sys.executable, "-m", "semif_lib.cli", "bench", "peer", "--workload", str(DATA / "examples.jsonl"), "--states", "2",
               "--clients", "2", "--concurrency-states", "2", "--parallel", "2", "--n-ctx", "4096", "--text-server", "native",
               "--port", str(free_port()), "--log-dir", str(tmp_path), "--output", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["peer"]["kind"] == "native-llama-server" and doc["peer"]["llama_cpp_build"]
    if doc["decision_server"]["library"] == "build":  # auto: semif serve on the peer's own llama.cpp build, when it is there
        assert doc["decision_server"]["llama_cpp_build"] == doc["peer"]["llama_cpp_build"]
    assert doc["decision_server"]["env"]["SEMIF_N_CTX"] == "4096" == doc["peer"]["sm_env"]["SM_LLAMA_CPP_CTX_SIZE"]
    assert list(doc["paths"]) == list(options.PEER_PATHS)
    decisions = doc["paths"]["decision-cold"]["decisions"]
    assert decisions == 6 and all(p["decisions"] == decisions and p["decisions_per_s"] > 0 for p in doc["paths"].values())
    assert doc["paths"]["decision-cold"]["option_coverage"] == 1.0 and doc["paths"]["decision-cold"]["output_tokens"] == 0
    assert doc["paths"]["server-logprobs"]["requests"] == decisions and doc["paths"]["server-logprobs"]["compared_with_decision"] >= 1
    assert doc["paths"]["server-json"]["output_tokens"] > 0 and doc["paths"]["server-json"]["states"] == 2
    assert {"decision", "server-logprobs"} == set(doc["concurrency"]) and doc["concurrency"]["decision"]["states"] == 2
    assert {"cold_vs_best_server", "cached_vs_best_server", "concurrent_clients", "readout_vs_server_json"} <= set(doc["targets"])
    assert all(isinstance(t["met"], bool) for t in doc["targets"].values())
    assert set(doc["ceiling"]) == {"cold", "cached"} and len(doc["per_state"]) == 2
    assert peer_report.format_peer(doc) in done.stdout
    assert "partial" not in doc and doc["concurrency"]["decision"]["failed_states"] == 0
    assert out.with_suffix(".png").read_bytes().startswith(b"\x89PNG"), "the plot is written next to the results"


def test_readme_quotes_the_committed_peer_results_verbatim():
    """docs/benchmarks.md's side-by-side tables are the committed run, with the command that produced it; the
    README's headline quotes the same run's targets."""
    from semif_lib.measurement.bench.peer.report import format_peer

    results = [p for p in (RESULTS_DIR / "bench" / "peer.json", RESULTS_DIR / "bench" / "peer-quick.json") if p.is_file()]
    if not results:
        pytest.skip("no committed results/bench/peer*.json")
    doc = json.loads(results[0].read_text())
    benchmarks = (RESULTS_DIR.parent / "docs" / "benchmarks.md").read_text()
    readme = (RESULTS_DIR.parent / "README.md").read_text()
    assert format_peer(doc) in benchmarks
    assert f"`{doc['command']}`" in benchmarks
    targets = next(block for block in format_peer(doc).split("\n\n") if block.startswith("| target |"))
    assert targets in readme and f"`{doc['command']}`" in readme
