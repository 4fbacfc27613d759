"""The quick benchmark runs end to end and every path answers; speed is not checked here."""

import json
from pathlib import Path

import pytest

from semif_lib.cli import main
from semif_lib.measurement.bench.workload import load_workload
from semif_lib.measurement.options import PATHS, QUICK_FRESH_QUESTIONS, QUICK_STATES


def test_workload_shape():
    rows = load_workload()
    assert len(rows) == 37
    assert all(len(r["questions"]) == 21 and r["group_id"] for r in rows)
    assert len({r["group_id"] for r in rows}) == 37
    assert len(load_workload(quick=True)) == QUICK_STATES


@pytest.fixture
def no_baseline(monkeypatch):
    """`semif bench` without its baseline run (a model load): tests of the model-free tier call the command itself."""
    from semif_lib.measurement import conditions

    monkeypatch.setattr(conditions, "measure_baseline", lambda threads, env=None, module=None: {"error": "not measured in tests"})


def test_quick_is_the_first_states_with_fresh_on_their_first_questions(monkeypatch, no_baseline):
    """`semif bench modes --quick` hands the run the first QUICK_STATES states, fresh on QUICK_FRESH_QUESTIONS
    of them, and writes modes-quick.json (the run itself: the next test, on fewer states)."""
    from semif_lib.measurement.bench import paths as bench_paths

    seen: dict = {}
    written: list = []
    monkeypatch.setattr(bench_paths, "run_paths", lambda settings, workload, paths, fresh: seen.update(
        states=len(workload), paths=list(paths), fresh=fresh) or {"paths": {}})
    monkeypatch.setattr(bench_paths, "format_paths_table", lambda doc: "")
    monkeypatch.setattr(bench_paths, "write_result", lambda doc, path: written.append(path) or path)
    assert main(["bench", "modes", "--quick", "--threads", "2"]) == 0
    assert seen == {"states": QUICK_STATES, "paths": list(PATHS), "fresh": QUICK_FRESH_QUESTIONS}
    assert written[-1].name == "modes-quick.json"


# The quick run end to end on two states, fresh on two questions: every path and figure of --quick's file,
# at a fraction of its cost (the per-state loop is the same; --quick alone took 5 min of CPU on 2 cores). The
# states are the workload's first two cut to their first lines: every path still reads a shared prefix several
# times its questions' suffixes, and prefill, which dominates on a CPU, costs a third of the full states'.
STATES, FRESH_QUESTIONS, STATE_LINES = 2, 2, 10


def short_workload(folder: Path) -> Path:
    """The workload's first STATES states, each cut to its first STATE_LINES lines, with all 21 questions."""
    from semif_lib.measurement.options import WORKLOAD

    rows = [json.loads(line) for line in WORKLOAD.read_text(encoding="utf-8").splitlines()[:STATES]]
    path = folder / "workload-short.jsonl"
    path.write_text("".join(json.dumps({**row, "state": "\n".join(row["state"].splitlines()[:STATE_LINES])}) + "\n"
                            for row in rows), encoding="utf-8")
    return path


@pytest.mark.model
def test_modes_benchmark_writes_complete_results(tmp_path):
    out = tmp_path / "modes-quick.json"
    argv = ["bench", "modes", "--states", str(STATES), "--fresh-questions", str(FRESH_QUESTIONS), "--threads", "2", "--output", str(out),
            "--workload", str(short_workload(tmp_path))]
    assert main(argv) == 0
    doc = json.loads(out.read_text())
    assert set(doc["paths"]) == set(PATHS)
    assert doc["workload"]["states"] == STATES
    for path, result in doc["paths"].items():
        expected = STATES * (FRESH_QUESTIONS if path == "fresh" else 21)
        assert result["decisions"] == expected, path
        assert result["decisions_per_s"] > 0 and result["state_p50_s"] > 0
        if path != "fresh":
            assert result["compared_with_fresh"] == STATES * FRESH_QUESTIONS
            assert 0 <= result["max_abs_dp_vs_fresh"] <= 1
    assert len(doc["per_state"]) == STATES
    assert all(len(s["suffix_tokens"]) == 21 and set(s["seconds"]) == set(PATHS) for s in doc["per_state"])
    assert doc["cached"]["bound"] > 1 and doc["prefill_tokens_per_s"] > 0
    assert {"best_fork_vs_fresh", "oneshot_vs_best_fork", "best_fork_vs_naive_user", "cached_fraction_of_bound"} <= set(doc["targets"])
    assert doc["machine"]["threads"] == 2 and doc["command"].startswith("semif")
    ceiling = doc["fork_ceiling"]
    assert ceiling["branch_tokens_per_s"] > 0 and ceiling["branch_token_cost_vs_prefill"] > 0
    assert 0 <= ceiling["suffix_tokens_shared_by_tree"] < 1
    assert 1 < ceiling["fork_vs_fresh_at_equal_token_cost"] <= 21
    assert all(0 < s["branch_tokens"] <= sum(s["suffix_tokens"].values()) for s in doc["per_state"])
    assert doc["cached"]["bound_decoded_tokens"] >= doc["cached"]["bound"]


def test_markdown_quotes_the_results_file():
    from semif_lib.measurement.bench.paths import format_paths
    from semif_lib.measurement.options import RESULTS_DIR

    doc = json.loads((RESULTS_DIR / "bench" / "modes-quick.json").read_text())
    text = format_paths(doc)
    for path, result in doc["paths"].items():
        assert f"| {path} | {result['decisions']} | {result['decisions_per_s']:.3f} |" in text
    assert text.count("| yes |") + text.count("| no |") == sum(isinstance(t, dict) for t in doc["targets"].values())


def test_readme_quotes_the_full_results_verbatim():
    """docs/benchmarks.md's tables are the committed full run, with the command that produced it; the README's
    headline quotes the same run's targets."""
    from semif_lib.measurement.bench.paths import format_paths
    from semif_lib.measurement.options import RESULTS_DIR

    doc = json.loads((RESULTS_DIR / "bench" / "modes.json").read_text())
    benchmarks = (RESULTS_DIR.parent / "docs" / "benchmarks.md").read_text()
    readme = (RESULTS_DIR.parent / "README.md").read_text()
    assert doc["workload"]["states"] == 37 and doc["workload"]["decisions"] == 777
    assert format_paths(doc) in benchmarks
    assert f"`{doc['command']}`" in benchmarks
    targets = next(block for block in format_paths(doc).split("\n\n") if block.startswith("| target |"))
    assert targets in readme and f"`{doc['command']}`" in readme


@pytest.mark.model
def test_residency_benchmark_writes_every_level_for_both_policies(tmp_path):
    out = tmp_path / "residency.json"
    assert main(["bench", "residency", "--states", "2", "--resident", "0,1", "--threads", "2", "--output", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["workload"] == {"states": 1, "resident_levels": [0, 1], "policies": ["spilled", "resident"]}
    for policy in ("spilled", "resident"):
        none, one = doc["policies"][policy]["0"], doc["policies"][policy]["1"]
        assert none["slowdown_vs_none"] == 1.0 and none["branches_s_median"] > 0 and one["branches_s_median"] > 0
        assert none["prefill_slowdown_vs_none"] == 1.0
        assert none["prefill_tokens_per_s_median"] > 0 and one["prefill_tokens_per_s_median"] > 0
        assert one["cached_tokens_mean"] > none["cached_tokens_mean"] > 1000  # the other state's prefix stayed cached
    resident, spilled = doc["policies"]["resident"], doc["policies"]["spilled"]
    assert resident["1"]["kv_cells_between_requests_mean"] > resident["0"]["kv_cells_between_requests_mean"] > 1000
    assert spilled["0"]["kv_cells_between_requests_mean"] == spilled["1"]["kv_cells_between_requests_mean"] == 0  # all in host memory
    assert set(doc["spilled_vs_resident"]) == {"0", "1"} and all(v["prefill_speedup"] > 0 for v in doc["spilled_vs_resident"].values())
    assert doc["command"].startswith("semif bench residency")


def test_residency_bad_arguments_get_one_clear_line(capsys, no_baseline):
    import pytest

    assert main(["bench", "residency", "--states", "1", "--resident", "0,2"]) == 2
    assert "needs at least 3 states" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["bench", "residency", "--resident", "a,b"])
    assert info.value.code == 2 and "comma-separated integers" in capsys.readouterr().err
