"""Model-free: the benchmarks' shared rules and `semif bench peer`'s typed results.

Committed results files read into `PeerResults` and write back byte for byte; a misspelt or
missing figure fails where the summary is built or the file is read; argmax agreement and max
|Δp|, "first N questions" and the peer benchmark's defaults each have one source. The whole
`semif bench peer` command runs against fake servers (no process, no model): every path, the
client phase, the checkpoints, the Markdown and the plot, and a misspelt figure stops it after
its first state.
"""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from semif_lib.cli import build_parser
from semif_lib.measurement import options
from semif_lib.measurement.agreement import Agreement, compare_question
from semif_lib.measurement.answers import read_argmax, read_probabilities, top_option
from semif_lib.measurement.bench.peer import command as peer_command
from semif_lib.measurement.bench.peer import config as peer_config
from semif_lib.measurement.bench.peer import protocol as peer_protocol
from semif_lib.measurement.bench.peer import report as peer_report
from semif_lib.measurement.bench.peer import results as peer_results
from semif_lib.measurement.bench.peer import run as peer_run
from semif_lib.measurement.bench.workload import first_questions, load_workload
from semif_lib.measurement.options import QUICK_STATES, RESULTS_DIR

# Every committed `semif bench peer` results file, named (a parametrize over a glob that matched nothing would
# be a collection error for the whole module); the next test holds the list to what results/bench/ holds
# (but for `--builds`' file, of its own shape, which tests/test_bench_builds.py reads).
PEER_FILES = tuple(RESULTS_DIR / "bench" / name for name in ("peer-clients.json", "peer-quick.json", "peer.json"))


def test_every_committed_peer_results_file_is_read_here():
    found = [p for p in (RESULTS_DIR / "bench").glob("peer*.json") if p.name != "peer-builds.json"]
    assert sorted(found) == sorted(PEER_FILES)


@pytest.mark.parametrize("path", PEER_FILES, ids=lambda p: p.name)
def test_a_committed_peer_results_file_round_trips_through_the_typed_summary(path):
    text = path.read_text(encoding="utf-8")
    results = peer_results.PeerResults.read(path)
    assert json.dumps(results.to_json(), indent=2) + "\n" == text  # the same keys, in the same order, the same values
    assert peer_report.format_peer(results) == peer_report.format_peer(json.loads(text))


def test_a_file_without_the_failure_counts_is_refused_when_read():
    """Every results file counts the client phase's failed states (a throughput that hides failures is no result)."""
    doc = json.loads(PEER_FILES[0].read_text())
    doc["concurrency"]["decision"].pop("failed_states")
    with pytest.raises(ValidationError, match="failed_states"):
        peer_results.PeerResults.model_validate(doc)
    doc = json.loads(PEER_FILES[0].read_text())
    doc["targets"]["concurrent_clients"].pop("failed_states")
    with pytest.raises(ValidationError, match="failed_states"):
        peer_results.PeerResults.model_validate(doc)


def test_a_misspelt_or_missing_figure_fails_when_the_file_is_read():
    doc = json.loads(PEER_FILES[0].read_text())
    cold = doc["paths"]["decision-cold"]
    cold["decisons_per_s"] = cold.pop("decisions_per_s")
    with pytest.raises(ValidationError) as info:
        peer_results.PeerResults.model_validate(doc)
    assert "decisons_per_s" in str(info.value) and "decisions_per_s" in str(info.value)  # the extra key and the missing one
    doc = json.loads(PEER_FILES[0].read_text())
    doc["targets"]["cold_vs_best_server"]["mett"] = True
    with pytest.raises(ValidationError, match="mett"):
        peer_report.format_peer(doc)


def test_a_misspelt_figure_fails_where_the_summary_is_built():
    """The run builds its summaries after the first state (the checkpoint), so a typo stops it there, not after 92 minutes."""
    tally = peer_report.PeerTally(seconds=[1.0], decisions=2, requests=1)
    assert peer_report.summarize_path("decision-cold", tally).decisions_per_s == 2.0
    with pytest.raises(ValidationError, match="decisons_per_s"):
        peer_results.PathSummary(**{**peer_report.summarize_path("decision-cold", tally).to_json(), "decisons_per_s": 2.0})
    with pytest.raises(ValidationError):
        peer_results.ClientPhase(clients=8, states=1, decisions=1, requests=1, failed_states=0, first_failure=None, seconds=1.0,
                               decisions_per_s=1.0, state_latency_p50_s=1.0, state_latency_p95_s=1.0,
                               request_latency_p50_s=1.0)  # one latency missing


def test_argmax_agreement_and_max_dp_have_one_rule():
    assert top_option({"a": 0.4, "b": 0.4, "c": 0.2}) == "a" and top_option({}) is None  # the first of equals
    same = compare_question({"a": 0.7, "b": 0.3}, {"a": 0.6, "b": 0.4})
    assert same.same_argmax and same.max_abs_dp == pytest.approx(0.1)
    flipped = compare_question({"a": 0.7, "b": 0.3}, {"b": 1.0})  # an option the other side lacks counts as 0
    assert not flipped.same_argmax and flipped.max_abs_dp == pytest.approx(0.7)
    with pytest.raises(ValueError, match="the reference side has no options"):  # nothing to agree on is not agreement
        compare_question({}, {"a": 1.0})
    with pytest.raises(ValueError, match="the other side has no options"):
        compare_question({"a": 1.0}, {})
    with pytest.raises(ValueError, match="no options"):
        compare_question({}, {})
    tally = Agreement()
    reference = {"q1": {"a": 0.6, "b": 0.4}, "q2": {"a": 0.2, "b": 0.8}, "q3": {"a": 0.9, "b": 0.1}}
    tally.add(reference, {"q1": {"a": 0.3, "b": 0.7}, "q2": {"a": 0.25, "b": 0.75}, "q3": {"a": 0.0, "b": 1.0}}, skip={"q3"})
    tally.add(reference, {"q2": {"a": 0.2, "b": 0.8}})  # a question the other side did not answer is not compared
    assert (tally.compared, tally.agree, tally.flips, tally.rate) == (3, 2, 1, pytest.approx(2 / 3))
    assert tally.max_dp == pytest.approx(0.3) and Agreement().rate is None


def test_an_answers_probabilities_have_one_reader():
    """Served JSON (a noul's ride as `x_probabilities`), a `decision.responses` answer and its dump read alike; none is refused."""
    from semif_lib.decision.responses import DecisionResponse

    body = {"model": "m", "usage": {"input_tokens": 1}, "answers": {
        "ok": {"type": "noul", "noul": 0.3, "x_probabilities": {"true": 0.3, "false": 0.7}, "x_option_mass": 0.9},
        "queue": {"type": "choice", "choice": "b", "confidence": 0.2, "probabilities": {"a": 0.4, "b": 0.4, "c": 0.2},
                  "x_top_probability": 0.4, "x_option_mass": 0.9}}}
    assert read_probabilities(body["answers"]["ok"]) == {"true": 0.3, "false": 0.7}
    assert read_probabilities(body["answers"]["queue"]) == {"a": 0.4, "b": 0.4, "c": 0.2}
    parsed = DecisionResponse.model_validate(body)
    for qid, answer in parsed.answers.items():
        assert read_probabilities(answer) == read_probabilities(body["answers"][qid])
        assert read_probabilities(parsed.model_dump(mode="json")["answers"][qid]) == read_probabilities(answer)
    assert read_argmax(body["answers"]["ok"]) == "false" and read_argmax(parsed.answers["queue"]) == "a"  # the first of equals
    with pytest.raises(ValueError, match="without probabilities"):
        read_probabilities({"type": "noul", "noul": 0.3})


def test_first_questions_and_quick_states_have_one_source():
    row = load_workload(quick=True)[0]
    assert len(load_workload(quick=True)) == QUICK_STATES
    kept = first_questions(row, 3)
    assert list(kept["questions"]) == list(row["questions"])[:3] and kept["state"] == row["state"] and len(row["questions"]) == 21
    assert first_questions(row, None) == row == first_questions(row, 0)
    assert list(peer_protocol.decision_request(row, "t", questions=3)["questions"]) == list(kept["questions"])


def test_bench_peer_flags_default_to_the_config(capsys):
    """`semif bench peer` with no flags runs `PeerConfig()`; each flag given replaces one field."""
    from semif_lib.settings import Settings

    machine = Settings(_env_file=None, llama_server="/opt/llama/llama-server")
    args = build_parser().parse_args(["bench", "peer"])
    config = peer_command.config_from_args(args, machine)
    assert config == peer_config.PeerConfig(run_id=config.run_id, machine=machine)  # this machine's tools, handed down
    args = build_parser().parse_args(["bench", "peer", "--threads", "4", "--text-server", "native", "--paths", "decision-cold,server-json",
                                      "--clients", "0", "--model", "m.gguf"])
    config = peer_command.config_from_args(args, machine)
    assert (config.threads, config.kind, list(config.paths), config.clients, str(config.model_path)) == (
        4, "native", ["decision-cold", "server-json"], 0, "m.gguf")
    assert config.n_ctx == peer_config.PeerConfig().n_ctx and config.parallel == peer_config.PeerConfig().parallel
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "peer", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert f"default {peer_config.PeerConfig().n_ctx}" in help_text and f"default {peer_config.PeerConfig().port}" in help_text


# ---------------------------------------------------------------- the whole `semif bench peer` against fake servers
SLOT_TOKENS = ("Yes", "No", "A", "B", "C", "D", "E", "0", "1", "2", "3", "4")


class _FakeResponse:
    def __init__(self, body: dict) -> None:
        self.status_code, self._body, self.text = 200, body, json.dumps(body)

    def json(self) -> dict:
        return self._body


class _FakeServers:
    """`semif serve` at http://decision and llama-server at http://text, answering as they do (what the run reads only)."""

    calls: list[str] = []

    def __init__(self, timeout: float | None = None) -> None:
        pass

    def __enter__(self) -> "_FakeServers":
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def post(self, url: str, json: dict) -> _FakeResponse:
        type(self).calls.append(url)
        if url.startswith("http://decision"):
            return _FakeResponse(self._decision(json))
        timings = {"prompt_n": 300, "prompt_ms": 30.0, "predicted_ms": 1.0}
        if json.get("logprobs"):
            top = [{"token": t, "logprob": -0.1 * (i + 1)} for i, t in enumerate(SLOT_TOKENS)]
            return _FakeResponse({"choices": [{"logprobs": {"content": [{"token": "Yes", "logprob": -0.1, "top_logprobs": top}]}}],
                                  "usage": {"completion_tokens": 1}, "timings": timings})
        return _FakeResponse({"choices": [{"message": {"content": "[true]"}}], "usage": {"completion_tokens": 4}, "timings": timings})

    @staticmethod
    def _decision(request: dict) -> dict:
        answers = {}
        for plan, _ in peer_protocol.plan_peer_questions(request):
            weights = [1.0 / (i + 1) for i in range(len(plan.keys))]
            answers[plan.qid] = {"probabilities": {k: w / sum(weights) for k, w in zip(plan.keys, weights, strict=True)}}
        return {"answers": answers, "usage": {"x_cached_tokens": 0, "output_tokens": 0},
                "x_timing": {"prefix_tokens": 300, "prefill_s": 0.03, "branch_tokens": 12, "branches_s": 0.01}}


@pytest.fixture
def fake_peer(monkeypatch):
    """Both servers faked: no process starts, every request is answered at once."""
    from contextlib import contextmanager
    from pathlib import Path
    from types import SimpleNamespace

    import httpx

    from semif_lib.containers import textserver
    from semif_lib.model import locate

    @contextmanager
    def serve(port, env, log_path, module="semif_lib.cli"):
        yield "http://decision"

    @contextmanager
    def text_server(model, sm_env, port, machine, kind="auto", log_dir=None):
        yield SimpleNamespace(kind="native-llama-server", build=1, image=None, chat_path="/v1/chat/completions", command=None,
                              base_url="http://text", fallback_reason=None)

    from semif_lib.measurement import conditions

    _FakeServers.calls = []
    monkeypatch.setattr(conditions, "measure_baseline", lambda threads, env=None, module=None: {"error": "not measured in tests"})
    monkeypatch.setattr(httpx, "Client", _FakeServers)
    monkeypatch.setattr(peer_run, "running_serve", serve)
    monkeypatch.setattr(textserver, "run_text_server", text_server)
    monkeypatch.setattr(locate, "find_model_path", lambda path=None: Path("model.gguf"))
    written: list[dict] = []
    write = peer_command.write_result
    monkeypatch.setattr(peer_command, "write_result", lambda doc, output: (written.append(doc), write(doc, output))[1])
    return written


def _bench_peer(tmp_path):
    from semif_lib.cli import main

    out = tmp_path / "peer.json"
    code = main(["bench", "peer", "--workload", str(RESULTS_DIR.parent / "data" / "examples.jsonl"), "--states", "2", "--clients", "2",
                 "--concurrency-states", "2", "--parallel", "2", "--decision-llama", "venv", "--log-dir", str(tmp_path),
                 "--output", str(out)])
    return code, out


def test_bench_peer_runs_end_to_end_against_fake_servers(fake_peer, tmp_path, capsys):
    code, out = _bench_peer(tmp_path)
    assert code == 0
    results = peer_results.PeerResults.read(out)
    assert json.dumps(results.to_json(), indent=2) + "\n" == out.read_text()
    assert list(results.paths) == list(options.PEER_PATHS) and results.workload.states == 2 and len(results.per_state) == 2
    assert results.paths["decision-cold"].option_coverage == 1.0 and results.paths["server-logprobs"].compared_with_decision > 0
    assert results.concurrency.decision.states == 2 and results.concurrency.decision.failed_states == 0
    expected = {"cold_vs_best_server", "cached_vs_best_server", "concurrent_clients", "readout_vs_server_json"}
    assert set(results.targets.measured()) == expected
    assert peer_report.format_peer(results) in capsys.readouterr().out
    assert out.with_suffix(".png").read_bytes().startswith(b"\x89PNG")
    partial = [peer_results.PeerResults.model_validate(doc) for doc in fake_peer[:-1]]  # the checkpoints, then the complete file
    assert [p.partial for p in partial] == ["not measured yet: states 2-2, the client phase", "not measured yet: the client phase"]
    assert "partial" not in fake_peer[-1] and fake_peer[-1]["command"] == "semif bench peer"


def test_bench_peer_writes_the_machine_the_baseline_and_an_interval_on_each_paired_ratio(fake_peer, tmp_path):
    code, out = _bench_peer(tmp_path)
    assert code == 0
    doc = json.loads(out.read_text())
    assert list(doc)[-1] == "conditions" and doc["conditions"]["machine"]["cpu"] and doc["conditions"]["start"]
    assert doc["conditions"]["baseline"] == {"error": "not measured in tests"}  # the fixture's: recorded as it came
    targets = peer_results.PeerResults.read(out).targets
    for target in (targets.cold_vs_best_server, targets.cached_vs_best_server, targets.readout_vs_server_json):
        assert target.interval.states == 2 and target.interval.verdict in ("met", "not met", "spans the target")
        low, high = target.interval.bounds
        assert low <= high  # (against fake servers the per-state seconds are too small to hold the ratio itself)
    assert targets.concurrent_clients.model_fields_set.isdisjoint({"interval"})  # the client phase pairs no states
    assert "over 2 states:" in peer_report.format_peer(doc)


def test_a_misspelt_figure_stops_bench_peer_after_its_first_state(fake_peer, tmp_path, monkeypatch):
    """The summaries are built (and the report rendered) at the checkpoint after each state: a typo fails there."""
    summarize = peer_report.summarize_path
    monkeypatch.setattr(peer_report, "summarize_path", lambda path, t: peer_results.PathSummary(
        **{**summarize(path, t).to_json(), "decisons_per_s": 1.0}))
    with pytest.raises(ValidationError, match="decisons_per_s"):
        _bench_peer(tmp_path)
    decision_calls = [c for c in _FakeServers.calls if c.startswith("http://decision")]
    assert len(decision_calls) == 1 + 3  # the warm-up, then one state's cold, cached and concurrent-reference requests
    assert fake_peer == []  # nothing written: it never got past the first state


# ---------------------------------------------------------------- `semif bench modes` against a fake engine
class _FakeEngine:
    """Answers as `DecisionEngine.ask` does (what `modes` reads only): a prefix cached after the first parallel request."""

    def __init__(self, settings=None) -> None:
        self.cached = False

    def clear_cache(self) -> None:
        self.cached = False

    def close(self) -> None:
        pass

    def ask(self, request: dict, mode: str = "parallel"):
        from types import SimpleNamespace

        questions = request["questions"]
        shift = {"fresh": 0.0, "serial": 0.01, "parallel": 0.02, "oneshot": 0.03}[mode]
        answers = {qid: SimpleNamespace(probabilities={"true": 0.6 - shift * (i % 2), "false": 0.4 + shift * (i % 2)})
                   for i, qid in enumerate(questions)}
        if mode == "oneshot":  # one question flips
            answers[next(iter(questions))] = SimpleNamespace(probabilities={"true": 0.3, "false": 0.7})
        cached = 400 if self.cached and mode == "parallel" else 0
        self.cached = self.cached or mode == "parallel"
        timing = {"prefix_tokens": 400, "suffix_tokens": {qid: 10 for qid in questions}, "branch_tokens": 8 * len(questions),
                  "prefill_s": 0.0 if cached else 0.4, "branches_s": 0.05}
        return SimpleNamespace(answers=answers, timing=timing, usage=SimpleNamespace(cached_tokens=cached))


def test_bench_modes_summarizes_every_path_against_fresh(monkeypatch):
    from semif_lib.decision import engine
    from semif_lib.measurement.bench import paths as bench_paths

    monkeypatch.setattr(engine, "DecisionEngine", _FakeEngine)
    paths = [p for p in options.PATHS if p != "naive-user"]  # naive-user loads llama-cpp-python's chat model
    doc = bench_paths.run_paths(None, load_workload(states=2), paths, fresh_questions=options.QUICK_FRESH_QUESTIONS, progress=False)
    summary = doc["paths"]
    assert list(summary) == paths and summary["fresh"]["decisions"] == 2 * options.QUICK_FRESH_QUESTIONS
    assert all(summary[p]["decisions"] == 42 and summary[p]["compared_with_fresh"] == 6 for p in paths if p != "fresh")
    assert (summary["serial"]["argmax_flips_vs_fresh"], summary["serial"]["max_abs_dp_vs_fresh"]) == (0, 0.01)
    assert (summary["oneshot"]["argmax_flips_vs_fresh"], summary["oneshot"]["max_abs_dp_vs_fresh"]) == (2, 0.3)
    assert summary["fresh"]["argmax_flips_vs_fresh"] == 0 and summary["fresh"]["max_abs_dp_vs_fresh"] == 0.0
    assert doc["cached"]["bound"] == round((400 + 210) / 210, 3) and doc["prefill_tokens_per_s"] == 1000.0
    assert {"best_fork_vs_fresh", "oneshot_vs_best_fork", "cached_fraction_of_bound"} <= set(doc["targets"])
    assert len(doc["per_state"]) == 2 and set(doc["per_state"][0]["seconds"]) == set(paths)
