"""`semif bench peer --builds A,B`: the prefill gap on two llama.cpp builds, paired per state.

The figures and their refusals without a server; the run end to end on two real builds when this
machine has two (`container/build_libllama.sh N` each), else it skips saying which to build.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from semif_lib.cli import main
from semif_lib.containers.images import llama_cpp_dir
from semif_lib.errors import InvalidRequestError
from semif_lib.llamabuilds import binding_for_build
from semif_lib.measurement import conditions
from semif_lib.measurement.bench.peer import builds
from semif_lib.measurement.bench.peer.config import PeerConfig
from semif_lib.measurement.options import RESULTS_DIR

from support.paths import DATA, ROOT
from support.servers import free_port


def _state(first: dict[str, float], second: dict[str, float]) -> dict:
    return {"id": "s", "first": 1, "prefill_tokens_per_s": {"1": first, "2": second}}


def test_the_figures_pair_each_state_and_say_when_a_change_is_not_shown():
    """Build 2's decision side 20 % slower on every state: the change clears 1 from below; llama-server's noise spans 1."""
    per_state = [_state({"decision": 200.0 + i, "llama-server": 210.0 + (-1) ** i * 5},
                        {"decision": (200.0 + i) * 0.8, "llama-server": 210.0 - (-1) ** i * 5}) for i in range(12)]
    figures = builds.figures(per_state, [1, 2])
    assert figures["states_counted"] == 12
    assert figures["decision_b2_over_b1"]["ratio"] == pytest.approx(0.8, abs=1e-3)
    assert figures["decision_b2_over_b1"]["interval"]["verdict"] == "not met"
    assert figures["llama-server_b2_over_b1"]["interval"]["verdict"] == "spans the target"
    assert figures["gap_b2_over_b1"]["ratio"] < 0.85
    table = builds.format_builds({"figures": figures})
    assert "| decision b2 / b1 | 0.8x |" in table and "spans the target" in table


def test_a_state_one_side_did_not_count_is_left_out_of_every_figure():
    per_state = [_state({"decision": 200.0, "llama-server": 200.0}, {"decision": 190.0, "llama-server": None}),
                 *[_state({"decision": 200.0, "llama-server": 200.0}, {"decision": 100.0, "llama-server": 200.0})] * 3]
    figures = builds.figures(per_state, [1, 2])
    assert figures["states_counted"] == 3 and figures["decision_b2_over_b1"]["ratio"] == 0.5
    assert builds.figures(per_state[:1], [1, 2]) == {"states_counted": 0}


@pytest.mark.parametrize("given", [[10970], [10970, 10970], [10970, 10435, 11434]])
def test_two_different_builds_are_asked_for(given):
    with pytest.raises(InvalidRequestError, match="two different build numbers") as caught:
        builds.run_builds(PeerConfig(), given, [])
    assert caught.value.field == "builds"


def test_a_build_that_is_not_built_is_refused_with_the_command_that_builds_it(capsys, monkeypatch):
    monkeypatch.setattr(conditions, "measure_baseline", lambda threads, env=None, module=None: {"error": "not measured in tests"})
    assert main(["bench", "peer", "--builds", "1,2", "--states", "1", "--output", "/dev/null"]) == 2
    err = capsys.readouterr().err
    assert "llama.cpp b1 is not built" in err and "container/build_libllama.sh 1" in err


def test_the_committed_run_pairs_enough_states_and_the_docs_quote_it():
    """results/bench/peer-builds.json (b10435 against b10970, run alone): 12 states or more, each build's baseline on
    its own library, and docs/benchmarks.md quotes its table as the command prints it."""
    doc = json.loads((RESULTS_DIR / "bench" / "peer-builds.json").read_text())
    assert doc["figures"]["states_counted"] >= 12 and doc["conditions"]["baseline"]
    for b in map(str, doc["builds"]):
        assert doc["servers"][b]["baseline"]["library"]["llama_cpp_python"] == binding_for_build(int(b))
    text = (ROOT / "docs" / "benchmarks.md").read_text()
    assert builds.format_builds(doc) in text and doc["command"] in text


@pytest.mark.model
@pytest.mark.server
def test_two_builds_end_to_end(tmp_path):
    """Both builds' servers up at once, two states: every state has both sides' rates on both builds, and the file has them."""
    present = sorted(int(d.name.removeprefix("llama-cpp-b")) for d in llama_cpp_dir(0).parent.glob("llama-cpp-b*")
                     if d.name.removeprefix("llama-cpp-b").isdigit() and (d / "llama-server").exists() and (d / "python").is_dir())
    if len(present) < 2:
        pytest.skip(f"needs two llama.cpp builds in .semif (container/build_libllama.sh N), this machine has {present}")
    out = tmp_path / "builds.json"
    command = [sys.executable, "-m", "semif_lib.cli", "bench", "peer", "--builds", f"{present[0]},{present[-1]}",
               "--workload", str(DATA / "workload_37x21.jsonl"), "--states", "2", "--questions", "2", "--n-ctx", "4096",
               "--port", str(free_port()), "--log-dir", str(tmp_path), "--output", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["builds"] == [present[0], present[-1]] and [s["first"] for s in doc["per_state"]] == [present[0], present[-1]]
    for b in map(str, doc["builds"]):
        assert doc["servers"][b]["llama_cpp_build"] == int(b) == doc["servers"][b]["decision_server"]["llama_cpp_build"]
        library = doc["servers"][b]["baseline"]["library"]  # the baseline ran on that build, through its own binding
        assert library["build"] == int(b) and library["llama_cpp_python"] == binding_for_build(int(b))
        assert all(s["prefill_tokens_per_s"][b]["decision"] > 0 and s["prefill_tokens_per_s"][b]["llama-server"] > 0
                   for s in doc["per_state"])
    assert doc["figures"]["states_counted"] == 2 and doc["conditions"]["machine"]
    assert "| gap b" in done.stdout
