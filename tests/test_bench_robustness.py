"""`semif bench robustness` phase by phase, small, against real `semif serve` processes (no timing asserted:
the figures the README quotes come from the full run on a quiet machine)."""

from __future__ import annotations

import pytest

from semif_lib.measurement.bench import robustness
from semif_lib.measurement.bench.harness import running_serve, server_env

from support.paths import ROOT
from support.servers import free_port


@pytest.mark.model
@pytest.mark.server
def test_every_phase_runs_and_hostile_input_is_4xx(tmp_path):
    assert len(robustness.bad_input_cases()) >= 40
    with running_serve(free_port(), server_env(2), tmp_path / "serve.log") as url:
        load = robustness.run_load(url, clients=3, per_client=2)
        assert load["requests"] == 6 and load["lost"] == 0 and load["answered_5xx"] == 0 and load["ping_non_200"] == 0
        kv = robustness.run_kv_pressure(url, concurrent=4, small=3)
        assert kv["long_2xx"] == 4 and kv["small_after_2xx"] == 3
        nested = robustness.run_nested_prefixes(url, requests=6)
        assert nested["answered_2xx"] == 6 and nested["full_cache_hits"] >= 2 and nested["pending_after"] == 0
        bad = robustness.run_bad_inputs(url)
        wrong = [c for c in bad["cases"] if not c["as_expected"]]  # the benchmark's own rule (422 meets a validation 400)
        assert wrong == [] and bad["answered_5xx"] == 0
    env = server_env(2, SEMIF_FAULT_RATE="0.2", SEMIF_FAULT_SEED="3")
    with running_serve(free_port(), env, tmp_path / "faults.log") as url:
        faults = robustness.run_decode_faults(url, requests=12)
    assert faults["answers"].get("503 decode_failed", 0) >= 1, faults
    assert faults["failed_not_recovered"] == 0 and faults["other_5xx"] == 0
    assert set(faults["last_20_status"]) <= {"200", "503"}


def test_readme_quotes_the_robustness_results_verbatim():
    import json

    doc = json.loads((ROOT / "results" / "bench" / "robustness.json").read_text())
    for quoting in (ROOT / "docs" / "serving.md", ROOT / "README.md"):  # the full section, and the README's headline
        text = quoting.read_text()
        assert robustness.format_robustness(doc) in text, quoting
        assert "semif bench robustness --threads 2" in text and doc["command"] == "semif bench robustness --threads 2"
    assert all(figure["met"] for figure in doc["figures"].values())
    expected = {case[0]: case[-1] for case in robustness.bad_input_cases()}  # a file older than a changed rule is stale
    assert {case["class"]: case["expected"] for case in doc["bad_inputs"]["cases"]} == expected
