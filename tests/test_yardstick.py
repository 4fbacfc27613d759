"""The sys1bench yardstick (`semif bench sys1bench`): the bridge that reads llama-server's log-probabilities, its entry
point, the scores and refusal rule, the raw view of a calibrated server, and a tiny run end to end on real servers.

The scorecards themselves are benchmarks (docs/quality.md gives their commands), never run here.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import httpx
import pytest
from sys1bench.generators import get_generator
from sys1bench.runners.benchmark_runner import flatten
from sys1bench.schemas import DecisionResponse

from semif_lib.measurement.quality.yardstick import bridge, scores, systems

ROOT = Path(__file__).resolve().parents[1]


def llama_body(top: dict[str, float]) -> dict:
    """A `/v1/completions` answer shaped as llama-server b10970 writes its log-probabilities."""
    entries = [{"token": t, "logprob": v, "bytes": list(t.encode())} for t, v in top.items()]
    first = max(entries, key=lambda e: e["logprob"])
    return {"choices": [{"text": first["token"], "logprobs": {"content": [{**first, "top_logprobs": entries}]}}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 1}}


def legacy_body(top: dict[str, float]) -> dict:
    """The same in OpenAI's legacy completions shape, which sys1bench's own adapter reads."""
    return {"choices": [{"text": "A", "logprobs": {"top_logprobs": [top], "tokens": ["A"]}}]}


def adapter_answering(body: dict) -> bridge.LlamaCppConstrainedAdapter:
    adapter = bridge.LlamaCppConstrainedAdapter(model_id="m", base_url="http://127.0.0.1:1/v1")
    adapter._client = httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(200, json=body)))
    return adapter


@pytest.fixture(scope="module")
def ticket():
    return get_generator("support_tickets", n=1, seed=3).generate()[0]


@pytest.mark.parametrize("shape", [llama_body, legacy_body])
def test_the_bridge_reads_both_shapes(shape, ticket):
    """Letters with and without a leading space are found in either shape; their softmax is the answer."""
    question = ticket.questions["is_angry"]  # noul: A. yes / B. no
    adapter = adapter_answering(shape({" A": -0.5, "B": -1.5, "\n": -0.1}))
    answer, _ = adapter._one(ticket.state_text(), question)
    assert answer.ok and adapter.reads == [(2, 2 if shape is legacy_body else 0, 2)]
    expected = 1 / (1 + math.exp(-1.0))
    assert answer.probs[0] == pytest.approx(expected) and answer.argmax == question.option_keys[0]


def test_upstream_reads_nothing_from_llama_server_and_the_bridge_does(ticket):
    """The bug the bridge exists for: sys1bench 0.3.2's reading finds no letter in llama-server's shape."""
    question = ticket.questions["queue"]
    top = {" A": -2.0, " B": -0.3, " C": -3.0, " D": -4.0, " E": -5.0, " F": -6.0}
    adapter = adapter_answering(llama_body(top))
    answer, _ = adapter._one(ticket.state_text(), question)
    found, upstream, options = adapter.reads[0]
    assert (found, upstream, options) == (len(question.option_keys), 0, len(question.option_keys))
    assert answer.argmax == question.option_keys[1]


def test_a_question_without_a_letter_fails_instead_of_guessing_uniformly(ticket):
    adapter = adapter_answering(llama_body({"\n": -0.1, "The": -2.0}))
    answer, _ = adapter._one(ticket.state_text(), ticket.questions["priority"])
    assert not answer.ok and answer.error == bridge.NO_LETTER and adapter.reads[0][0] == 0


def test_the_entry_point_loads_the_bridge_through_sys1bench(tmp_path, monkeypatch):
    """pyproject.toml's `sys1bench.adapters` entry point, installed as a distribution would be, is what get_adapter finds."""
    from sys1bench.adapters import base

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["sys1bench.adapters"]
    assert declared == {bridge.ENTRY_POINT: "semif_lib.measurement.quality.yardstick.bridge:LlamaCppConstrainedAdapter"}
    info = tmp_path / "semif_yardstick_probe-0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: semif-yardstick-probe\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text("[sys1bench.adapters]\n" + "".join(f"{k} = {v}\n" for k, v in declared.items()))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(base._REGISTRY, bridge.ENTRY_POINT, raising=False)
    adapter = base.get_adapter(bridge.ENTRY_POINT, model_id="m", base_url="http://127.0.0.1:1/v1")
    assert type(adapter) is bridge.LlamaCppConstrainedAdapter and adapter.adapter_id == bridge.ENTRY_POINT


def test_a_system_that_read_too_few_letters_is_refused():
    assert scores.refusal(scores.read_summary([])) == "it answered no question"
    nothing = scores.read_summary([(0, 0, 2)] * 9 + [(2, 0, 2)])
    assert nothing["any_letter"] == 0.1 and "10%" in scores.refusal(nothing)
    assert scores.refusal(scores.read_summary([(2, 0, 2)] * 6 + [(0, 0, 2)] * 4)) is None


def rows_for(items, answers: dict[str, list[float]]):
    """Prediction rows as sys1bench flattens them, with the given probabilities per question key."""
    from sys1bench.adapters.base import finalize_answer
    from sys1bench.adapters.majority_prior import MajorityPriorAdapter
    from sys1bench.schemas import Answer

    out = []
    for item in items:
        parsed = {k: (finalize_answer(q, answers[k]) if answers.get(k) else Answer.failed(q, "transport"))
                  for k, q in item.questions.items()}
        response = DecisionResponse(answers=parsed, latency={"client_ms": 1.0}, provider={"adapter_id": "x", "model_id_requested": "m"})
        out += flatten(item, response, MajorityPriorAdapter(), "yardstick", "main")
    return out


def test_unanswered_decisions_count_as_wrong_and_the_gap_is_paired():
    items = get_generator("support_tickets", n=30, seed=5).generate()
    perfect = rows_for(items, {})
    for row in perfect:
        row.correct, row.error = True, None
    failing = rows_for(items, {})
    assert scores.accuracy(failing)["value"] == 0.0 and scores.accuracy(failing)["unanswered"] == 1.0
    gap = scores.paired_gap(perfect, failing)
    assert gap["value"] == 1.0 and gap["beats"] and gap["n"] == 90
    assert not scores.paired_gap(failing, failing)["beats"]


def test_the_raw_view_reads_x_raw_probabilities(ticket):
    """A calibrated answer's raw probabilities become the raw rows, through jev_typesafe's own parser."""
    adapter = systems.RecordingSystemOne("http://127.0.0.1:1/v1/systemone", "m")
    queue = ticket.questions["queue"].option_keys
    raw = dict(zip(queue, [0.5, 0.1, 0.1, 0.1, 0.1, 0.1], strict=True))
    adapter.bodies[ticket.row_id()] = {"answers": {
        "queue": {"type": "choice", "probabilities": {k: 1 / len(queue) for k in queue}, "x_raw_probabilities": raw},
        "is_angry": {"type": "noul", "noul": 0.5, "x_raw_probabilities": {"true": 0.9, "false": 0.1}},
        "priority": {"type": "score", "probabilities": {str(i): 0.2 for i in range(5)}}}}
    rows = {r.question_key: r for r in systems.raw_view([ticket], adapter)}
    assert rows["queue"].probs[0] == pytest.approx(0.5) and rows["queue"].argmax == queue[0]
    assert rows["is_angry"].probs == pytest.approx([0.9, 0.1])
    assert rows["priority"].probs == pytest.approx([0.2] * 5)


def test_calibration_transfer_reports_what_the_file_kept_and_whether_it_helps_here():
    items = get_generator("support_tickets", n=40, seed=9).generate()
    truth = {it.task_id: it.questions["is_angry"].ground_truth for it in items}
    raw = [r for r in rows_for(items, {"is_angry": [0.99, 0.01]}) if r.question_key == "is_angry"]
    flat = [r for r in rows_for(items, {"is_angry": [0.6, 0.4]}) if r.question_key == "is_angry"]
    assert any(str(v).lower() == "false" for v in truth.values())  # confident "yes" is wrong somewhere: flattening helps
    document = {"temperatures": {"noul": 3.0}, "verdicts": {"noul": {"temperature": {"kept": True, "reason": "helps"}}}}
    out = scores.calibration_transfer(raw, flat, document)
    assert out["noul"]["temperature_kept"] and out["noul"]["temperature"] == 3.0 and out["noul"]["n"] == 40
    assert out["noul"]["helps_here"] and out["noul"]["calibrated"]["nll"] < out["noul"]["raw"]["nll"]
    assert out["choice"]["n"] == 0 and "helps_here" not in out["choice"]


# ---------------------------------------------------------------- real servers, one item
@pytest.mark.model
@pytest.mark.server
def test_a_tiny_run_end_to_end(tmp_path):
    """One ticket through all three systems on the embedded model: the bridge reads letters where upstream read none."""
    from semif_lib.containers.textserver import find_llama_server
    from semif_lib.measurement.quality.yardstick.run import YardstickRun, format_yardstick, run_yardstick
    from semif_lib.model.locate import find_model_path
    from semif_lib.settings import load_settings

    if (binary := find_llama_server(load_settings())) is None:
        pytest.skip("no llama-server: run `bash container/build_libllama.sh` or set SEMIF_LLAMA_SERVER")
    calibration = ROOT / "results" / "eval" / "smollm2-135m-all" / "calibration.json"
    run = YardstickRun(model=find_model_path(None), generators=("support_tickets",), items=2, seed=1, port=18470,
                       calibration=calibration, log_dir=tmp_path, threads=1, llama_server=binary)
    doc = run_yardstick(run)
    reads = doc["systems"]["llama_server"]["letters_read"]
    assert reads["questions"] == 6 and reads["any_letter"] > 0 and reads["upstream_any_letter"] == 0
    assert set(doc["systems"]) == set(systems_names := ("majority_prior", "semif_serve", "semif_serve_calibrated", "llama_server"))
    assert doc["systems"]["semif_serve"]["accuracy"]["n"] == 6 and doc["calibration"]["transfer"]["noul"]["n"] == 2
    doc["model"] = {"id": "SmolLM2"}
    assert all(name in format_yardstick(doc) for name in systems_names)


# ---------------------------------------------------------------- the committed scorecards
SCORECARDS = sorted((ROOT / "results" / "eval").glob("sys1bench-*.json"))


def test_the_three_model_families_have_a_scorecard():
    assert {p.name for p in SCORECARDS} >= {"sys1bench-SmolLM2-135M-Instruct.Q4_1.json",
                                            "sys1bench-Qwen2.5-Coder-0.5B-Instruct-AWQ.Q4_K_M.json"}


@pytest.mark.parametrize("path", SCORECARDS, ids=lambda p: p.name)
def test_a_committed_scorecard_is_quoted_with_its_command_and_publishes_no_baseline_that_read_nothing(path):
    import json

    from semif_lib.measurement.quality.yardstick.run import format_transfer, format_yardstick

    doc = json.loads(path.read_text())
    docs = (ROOT / "docs" / "quality.md").read_text()
    assert doc["command"] in docs and doc["machine"]["cpu"] and doc["model"]["sha256"]
    for line in format_yardstick(doc).splitlines()[2:] + format_transfer(doc).splitlines()[2:]:
        assert line in docs, f"docs/quality.md does not quote {path.name}'s row {line!r}"
    llama = doc["systems"]["llama_server"]
    assert llama.get("refused") or llama["letters_read"]["any_letter"] >= scores.MIN_READ_SHARE
    for name, entry in doc["systems"].items():
        if not entry.get("refused"):
            low, high = entry["accuracy"]["ci95"]
            assert low <= entry["accuracy"]["value"] <= high, name
