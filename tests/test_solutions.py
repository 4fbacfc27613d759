"""The notebooks' exercises: every solution in notebooks/solutions/ runs, and gives what the notebook shows.

Each notebook ends with one exercise whose solution lives apart (notebooks/solutions/README.md lists them); a solution
that stops working, or drifts from what the library computes, fails here.
"""

from __future__ import annotations

import importlib.util
import json
import tarfile
from pathlib import Path

import pytest

from support.paths import ROOT

SOLUTIONS = ROOT / "notebooks" / "solutions"


def load(name: str):
    """Import a solution module from notebooks/solutions/ by its file name (the folder is not a package)."""
    spec = importlib.util.spec_from_file_location(f"solution_{name}", SOLUTIONS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_notebook_ends_with_a_recap_and_an_exercise_whose_solution_is_listed():
    """The cell before each notebook's last ("Next") holds "What you learned" and an exercise linking its solution, which
    exists here and in the README's table (and a test below runs it)."""
    listed = (SOLUTIONS / "README.md").read_text(encoding="utf-8")
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        recap = "".join(cells[-2]["source"])
        assert cells[-2]["cell_type"] == "markdown" and recap.startswith("## What you learned"), path.name
        assert "**Exercise.**" in recap, path.name
        (solution,) = {part.split(")")[0] for part in recap.split("(solutions/")[1:]}
        assert (SOLUTIONS / solution).is_file() and f"]({solution})" in listed and solution.startswith(f"s{path.name[:2]}_"), path.name


def test_s00_confidence_is_jevs_formula():
    confidence = load("s00_confidence").jev_confidence
    assert confidence({"a": 0.25, "b": 0.25, "c": 0.25, "d": 0.25}) == 0.0
    assert confidence({"a": 1.0, "b": 0.0}) == 1.0
    assert confidence({"a": 0.5, "b": 0.25, "c": 0.25}) == pytest.approx(0.25)


def test_s00_confidence_matches_the_engines_answers(engine, example_requests):
    """On the embedded model: the solution recomputes every choice answer's `confidence` from its probabilities."""
    from semif_lib.measurement.answers import read_response

    confidence = load("s00_confidence").jev_confidence
    answers = read_response(engine.ask(example_requests[0]))["answers"]
    choices = [a for a in answers.values() if a["type"] == "choice"]
    assert choices
    for answer in choices:
        assert confidence(answer["probabilities"]) == pytest.approx(answer["confidence"], abs=1e-6)


def test_s01_verify_package_reads_the_recorded_sha256_and_refuses_a_nested_gguf(fake_gguf, tmp_path):
    from semif_lib.model.package import build_model_tarball
    from semif_lib.settings import Settings

    verify = load("s01_verify_package").verify_package
    package = build_model_tarball(fake_gguf, out_dir=tmp_path / "packages", settings=Settings())
    assert verify(package.tarball) == package.sha256
    nested = tmp_path / "nested.tar.gz"
    with tarfile.open(nested, "w:gz") as archive:
        archive.add(fake_gguf, arcname="models/x.gguf")
    with pytest.raises(ValueError, match="at the root"):
        verify(nested)


def test_s02_the_dlc_gets_the_context_and_threads_as_flags():
    solution = load("s02_container_env")
    env = solution.container_env(4096, 4)
    assert env["SM_LLAMA_CPP_CTX_SIZE"] == "4096" and env["SM_LLAMA_CPP_THREADS"] == "4"
    flags = solution.server_flags(env)
    assert flags[flags.index("--ctx-size") + 1] == "4096" and flags[flags.index("--threads") + 1] == "4"


def test_s03_the_adapter_loads_the_dlcs_libllama():
    assert load("s03_dlc_library").find_library_path() == "/opt/llama.cpp/bin"
    cells = json.loads((ROOT / "notebooks" / "03_build_adapter_image.ipynb").read_text(encoding="utf-8"))["cells"]
    told = "".join("".join(c["source"]) for c in cells[:-2] if c["cell_type"] == "markdown")
    assert "LLAMA_CPP_LIB_PATH=/opt/llama.cpp/bin" in told  # what 03 tells the reader before the exercise


def test_s04_the_hand_made_decisions_body_is_one_the_server_reads():
    from semif_lib import notebook
    from semif_lib.decision.openai_schema import OpenAIRequest

    body = load("s04_decisions_body").to_decisions_body(notebook.read_examples()[0])
    parsed = OpenAIRequest.model_validate(body)
    assert [q.type for q in parsed.questions] == ["predicate", "choice", "score"]
    assert [c["value"] for c in body["questions"][1]["choices"]] == ["billing", "technical", "shipping", "account"]


def test_s05_predicts_what_the_token_table_reports():
    from semif_lib.notebook import tabulate_tokens
    from semif_lib.notebook.reference import merge_fresh_responses

    predict = load("s05_predict_tokens").predict_tokens

    def response(questions, prefix, cached=0, mode="parallel"):
        suffixes = {q: 10 + k for k, q in enumerate(questions)}
        usage = {"input_tokens": prefix + sum(suffixes.values()), "x_cached_tokens": cached}
        return {"answers": {q: {} for q in questions}, "usage": usage,
                "x_timing": {"mode": mode, "prefix_tokens": prefix, "suffix_tokens": suffixes, "total_s": 1.0}}

    fresh = merge_fresh_responses([response([q], 100, mode="fresh") for q in "abc"])
    table = tabulate_tokens({"fresh": fresh, "fork": response(list("abc"), 100), "cached": response(list("abc"), 100, 100)})
    assert predict(100, [10, 10, 10], "fresh") == table.loc["fresh", "evaluated_tokens"]
    assert predict(100, [10, 11, 12], "fork") == table.loc["fork", "evaluated_tokens"]
    assert predict(100, [10, 11, 12], "fork", cached=100) == table.loc["cached", "evaluated_tokens"]


def test_s06_the_speedup_is_the_committed_ratio():
    best, ratio = load("s06_speedup").fork_speedup()
    modes = json.loads((ROOT / "results" / "bench" / "modes.json").read_text(encoding="utf-8"))
    assert best == modes["targets"]["best_fork_path"]
    assert ratio == pytest.approx(modes["targets"]["best_fork_vs_fresh"]["ratio"], rel=0.01)


def test_s07_the_hand_picked_threshold_is_where_the_abstention_curve_first_holds():
    from semif_lib.measurement.quality.prediction_sets import abstention_curve

    pick = load("s07_threshold").pick_threshold
    top, correct = [0.95, 0.9, 0.82, 0.71, 0.63, 0.52], [True, True, True, False, True, False]
    threshold = pick(top, correct, max_error=0.2)
    assert threshold == 0.63  # answers 5, one wrong: error 0.2
    # the library's curve at the grid point just below answers the same five decisions, with the same error
    point = max((p for p in abstention_curve(top, correct, points=21) if p["min_confidence"] <= threshold),
                key=lambda p: p["min_confidence"])
    assert point["answered_share"] == pytest.approx(5 / 6) and 1 - point["accuracy_answered"] <= 0.2 + 1e-12
    assert pick(top, [False] * 6, max_error=0.2) is None


def test_s99_a_forgotten_cleanup_costs_the_room_what_the_budget_says():
    from semif_lib.notebook import estimate_run_cost

    cost = load("s99_forgotten_cost").forgotten_cost(30, 60.0)
    assert cost == pytest.approx(30 * estimate_run_cost()["forgotten_day_usd"] * 2.5, abs=0.01)


def test_the_solutions_are_listed_once_each():
    files = sorted(p.name for p in SOLUTIONS.glob("s*.py"))
    notebooks = sorted(p.name[:2] for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert [name[1:3] for name in files] == notebooks
    assert Path(SOLUTIONS / "README.md").read_text(encoding="utf-8").count(".py)") == len(files)
