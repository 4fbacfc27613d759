"""What every benchmark results file carries beside its figures (`measurement.conditions`): the machine, its load,
a baseline of what it delivered, and a seeded bootstrap interval on each ratio, judged against its target.

Model-free but the last test, which measures the real baseline on the embedded GGUF in a subprocess. Nothing is
timed here: the tests check that the figures are recorded and computed by their rule, not how fast anything ran.
"""

from __future__ import annotations

import json

import pytest

from semif_lib.measurement import conditions, machine

STUB_BASELINE = {"model": "stub.gguf", "prefill_tokens_per_s": 1.0, "decode_tokens_per_s": 1.0}


@pytest.fixture
def stub_baseline(monkeypatch):
    """The baseline without a model (what `recording` stores is under test, not the measurement)."""
    calls: list[tuple] = []
    monkeypatch.setattr(conditions, "measure_baseline", lambda threads, env=None, module=None: calls.append((threads, env, module))
                        or dict(STUB_BASELINE))
    monkeypatch.setattr(conditions, "sample_load", lambda window_s=1.0: {"loadavg": [0.0, 0.0, 0.0], "busy_share": 0.1,
                                                                         "steal_share": 0.0})
    return calls


def test_a_ratio_of_rates_and_its_interval_are_resampled_over_states_with_a_seed():
    ours = [(21, 7.0), (21, 8.0), (21, 6.5), (21, 9.0), (21, 7.5)]
    theirs = [(21, 10.0), (21, 9.0), (21, 11.0), (21, 10.5), (21, 9.5)]
    out = conditions.bootstrap_ratio(ours, theirs)
    assert out["ratio"] == pytest.approx(50.0 / 38.0, abs=1e-3)  # sum(d)/sum(s) each: 105/38 against 105/50
    low, high = out["interval"]
    assert low <= out["ratio"] <= high and low < high and out["states"] == 5 and out["level"] == 0.95
    assert conditions.bootstrap_ratio(ours, theirs) == out  # seeded: the same file from the same figures
    assert out["seed"] == 0 and conditions.bootstrap_ratio(ours, theirs, seed=1)["seed"] == 1  # the file says how it was drawn
    fresh = [(3, 15.0)] * 5  # a path timed on 3 of 21 questions: rates, not seconds, are compared
    assert conditions.bootstrap_ratio(ours, fresh)["ratio"] == pytest.approx((105 / 38) / (15 / 75), abs=1e-3)


def test_a_median_of_per_state_ratios_and_the_edges():
    out = conditions.bootstrap_ratio([(2.0, 1.0), (3.0, 1.0), (4.0, 2.0)])
    assert out["ratio"] == 2.0 and out["statistic"] == "median of per-state ratios"
    assert 2.0 <= out["interval"][1] <= 3.0 and out["interval"][0] >= 2.0
    one = conditions.bootstrap_ratio([(1, 2.0)], [(1, 4.0)])
    assert one["ratio"] == 2.0 and one["interval"] is None  # one state: no interval, never a fake one
    with pytest.raises(ValueError, match="same states"):
        conditions.bootstrap_ratio([(1, 1.0)], [(1, 1.0), (1, 2.0)])


def test_an_interval_that_spans_its_target_says_so():
    assert conditions.judge([1.22, 1.317], 1.3) == "spans the target"
    assert conditions.judge([1.32, 1.4], 1.3) == "met" and conditions.judge([1.1, 1.2], 1.3) == "not met"
    assert conditions.judge([0.9, 1.05], 1.1, at_most=True) == "met"  # lower is better (oneshot against the best fork)
    assert conditions.judge([1.12, 1.2], 1.1, at_most=True) == "not met"
    assert conditions.judge(None, 1.3) == "no interval"
    cell = conditions.format_interval(conditions.interval_against(conditions.bootstrap_ratio([(1.25, 1), (1.3, 1), (1.35, 1)]), 1.3))
    assert cell.endswith("over 3 states: spans the target") and conditions.format_interval(None) == "-"


def test_paired_arms_take_turns_going_first():
    arms = ["b10435", "b10970"]
    firsts = [conditions.paired_order(i, arms)[0] for i in range(6)]
    assert firsts == ["b10435", "b10970"] * 3
    assert sorted(conditions.paired_order(4, ["a", "b", "c"])) == ["a", "b", "c"]  # every arm, every state


def test_the_machine_and_its_load_are_read_from_proc_and_lscpu():
    found = machine.read_machine()
    assert found["cpu"] != "unknown" and found["cpus_usable"] >= 1
    assert set(found["flags"]) <= set(open("/proc/cpuinfo").read().split())  # only flags this CPU has
    assert all(machine.KERNEL_FLAGS.match(flag) for flag in found["flags"])
    load = machine.sample_load(0.2)
    assert len(load["loadavg"]) == 3 and 0 <= load["busy_share"] <= 1 and 0 <= load["steal_share"] <= 1


def test_a_file_written_inside_a_recording_carries_the_machine_the_load_and_the_baseline(stub_baseline, tmp_path):
    with conditions.recording(threads=2):
        out = conditions.write_results_file({"figure": 1}, tmp_path / "r.json")
    doc = json.loads(out.read_text())
    assert list(doc) == ["figure", "conditions"] and stub_baseline == [(2, None, None)]
    cond = doc["conditions"]
    assert cond["baseline"] == STUB_BASELINE and cond["machine"]["cpu"] and cond["start"]["busy_share"] == 0.1
    assert cond["end"]["run_s"] >= 0 and 0 <= cond["end"]["busy_share"] <= 1 and len(cond["end"]["loadavg"]) == 3
    outside = json.loads(conditions.write_results_file({"figure": 1}, tmp_path / "o.json").read_text())["conditions"]
    assert outside["baseline"] is None and "no baseline" in outside["note"]  # called as a function: said, not hidden


def test_the_baseline_is_measured_again_on_the_library_a_server_runs_on(stub_baseline):
    env = {"LLAMA_CPP_LIB_PATH": "/lib/b10970"}
    with conditions.recording(threads=2) as record:
        conditions.remeasure_baseline(2, env, "semif_lib.serving.llamabinding")
    assert stub_baseline == [(2, None, None), (2, env, "semif_lib.serving.llamabinding")] and record.baseline == STUB_BASELINE
    conditions.remeasure_baseline(2, env, "m")  # outside a recording: nothing to measure for
    assert len(stub_baseline) == 2


def test_every_bench_command_runs_inside_a_recording(stub_baseline, monkeypatch, tmp_path):
    """`semif bench modes` (its run stubbed) writes a file with conditions; `semif eval` is no benchmark and records none."""
    from semif_lib.cli import main
    from semif_lib.measurement.bench import paths as bench_paths

    monkeypatch.setattr(bench_paths, "run_paths", lambda settings, workload, paths, fresh: {"paths": {}, "targets": {}})
    monkeypatch.setattr(bench_paths, "format_paths_table", lambda doc: "")
    out = tmp_path / "modes.json"
    assert main(["bench", "modes", "--quick", "--threads", "2", "--output", str(out)]) == 0
    cond = json.loads(out.read_text())["conditions"]
    assert cond["baseline"] == STUB_BASELINE and cond["start"] is not None and stub_baseline == [(2, None, None)]


def test_a_failed_baseline_is_recorded_not_raised(monkeypatch):
    monkeypatch.setattr(conditions, "BASELINE_MODULE", "semif_lib.no_such_module")
    out = conditions.measure_baseline(1)
    assert "error" in out and "no_such_module" in out["error"]


@pytest.mark.model
def test_the_baseline_measures_the_embedded_model_on_the_library_it_names():
    out = conditions.measure_baseline(2)
    assert "error" not in out, out
    assert out["prefill_tokens"] == machine.BASELINE_PREFILL and out["decode_tokens"] == machine.BASELINE_DECODE
    assert out["prefill_tokens_per_s"] > 0 and out["decode_tokens_per_s"] > 0 and len(out["prefill_runs_s"]) == 3
    library = out["library"]
    assert library["source"] == "llama-cpp-python's bundled build" and ("AVX" in library["system_info"] or "NEON" in library["system_info"])
    assert out["model"].startswith("SmolLM2")


@pytest.mark.parametrize("name", ["modes.json", "modes-quick-bundled.json", "peer.json", "peer-clients.json"])
def test_an_older_file_gets_the_intervals_its_run_would_have_written_and_nothing_else(name, tmp_path):
    """`semif intervals` reads the per-state seconds of a file written before runs recorded intervals: the committed
    file holds exactly what it adds (same rule, same seed), and without intervals everything else is unchanged."""
    from semif_lib.cli import main
    from semif_lib.measurement.options import RESULTS_DIR

    committed = json.loads((RESULTS_DIR / "bench" / name).read_text(encoding="utf-8"))
    stripped = json.loads(json.dumps(committed))
    for target in stripped["targets"].values():
        if isinstance(target, dict):
            target.pop("interval", None)
    path = tmp_path / name
    path.write_text(json.dumps(stripped, indent=2) + "\n", encoding="utf-8")
    assert main(["intervals", str(path)]) == 0
    assert json.loads(path.read_text(encoding="utf-8")) == committed
    assert "conditions" not in committed  # that day's machine was not recorded: none is made up
    verdicts = [t["interval"]["verdict"] for t in committed["targets"].values() if isinstance(t, dict) and "interval" in t]
    one_state = len(committed["per_state"]) < 2  # peer-clients.json: its single-client paths ran on one state
    assert verdicts and set(verdicts) <= ({"no interval"} if one_state else {"met", "not met", "spans the target"})


def test_intervals_refuses_a_file_of_another_benchmark(tmp_path, capsys):
    from semif_lib.cli import main

    path = tmp_path / "scale.json"
    path.write_text('{"arms": {}}\n', encoding="utf-8")
    assert main(["intervals", str(path)]) != 0
    assert "neither" in capsys.readouterr().err and path.read_text() == '{"arms": {}}\n'
