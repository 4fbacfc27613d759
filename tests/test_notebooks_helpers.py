"""The helpers the notebooks call (semif_lib.notebook, semif_lib.measurement.plots), without a kernel or a model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

def committed_at(path: Path) -> int | None:
    """When the last commit touching `path` was made (Unix seconds; None: never committed). Callers skip outside git."""
    import subprocess

    out = subprocess.run(["git", "log", "-1", "--format=%ct", "--", str(path.relative_to(ROOT))], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.strip()
    return int(out) if out else None


RESPONSE = {"model": "m", "answers": {
    "is_billing": {"type": "noul", "noul": 0.6, "x_probabilities": {"true": 0.6, "false": 0.4}, "x_option_mass": 0.2},
    "queue": {"type": "choice", "choice": "billing", "confidence": 0.5,
              "probabilities": {"billing": 0.5, "technical": 0.3, "shipping": 0.2}},
    "urgency": {"type": "score", "score": 1.2, "confidence": 0.6, "probabilities": {"0": 0.1, "1": 0.6, "2": 0.3}}},
    "usage": {"input_tokens": 10, "output_tokens": 0, "x_cached_tokens": 4},
    "x_timing": {"mode": "parallel", "prefill_s": 0.2, "branches_s": 0.1, "total_s": 0.3}}


def test_settings_are_anchored_at_the_repository_root(monkeypatch, tmp_path):
    from semif_lib import notebook

    monkeypatch.chdir(ROOT / "notebooks")
    monkeypatch.delenv("SEMIF_STATE_FILE", raising=False)
    monkeypatch.setenv("SEMIF_TARGET", "aws")
    settings = notebook.load_notebook_settings("local")
    assert settings.target == "local"  # the notebook's parameter wins over the environment
    assert notebook.find_repo_root() == ROOT
    assert settings.state_file == ROOT / ".semif" / "workshop_state.json"
    assert settings.results_dir == ROOT / "results"
    monkeypatch.setenv("SEMIF_STATE_FILE", str(tmp_path / "s.json"))
    assert notebook.load_notebook_settings("aws").state_file == tmp_path / "s.json"


def test_data_files_resolve_from_any_working_directory(monkeypatch, tmp_path):
    from semif_lib import notebook

    monkeypatch.chdir(tmp_path)
    examples = notebook.read_examples()
    assert examples[0]["id"] == "ticket-refund"
    row = notebook.load_workload_request(26, 3)
    assert len(row["questions"]) == 3 and len(row["state"]) > 3000


def test_form_round_trips_the_request_and_applies_edits():
    pytest.importorskip("ipywidgets")
    from semif_lib import notebook
    from semif_lib.decision.schema import parse_request

    request = notebook.read_examples()[0]
    form = notebook.DecisionForm(request)
    assert form.to_request() == request
    form.state.value = "Customer: my parcel never arrived."
    instructions, criteria = form.questions["queue"]
    criteria.value = "shipping: delivery problems\nbilling\n\n"
    form.questions["is_billing"][1].value = "true: about money\nfalse: anything else"
    edited = form.to_request()
    assert edited["state"] == "Customer: my parcel never arrived."
    assert edited["questions"]["queue"]["criteria"] == {"shipping": "delivery problems", "billing": None}
    assert edited["questions"]["is_billing"]["criteria"] == {"true": "about money", "false": "anything else"}
    assert edited["questions"]["urgency"]["criteria"] == request["questions"]["urgency"]["criteria"]
    parse_request(edited)  # still a valid request
    form.questions["is_billing"][1].value = "maybe: no"
    with pytest.raises(ValueError, match="is_billing"):
        form.to_request()


def test_form_button_scores_into_its_output():
    pytest.importorskip("ipywidgets")
    from semif_lib import notebook

    seen = []
    form = notebook.DecisionForm(notebook.read_examples()[0], score=lambda r: seen.append(r) or RESPONSE)
    form.button.click()
    assert seen and seen[0]["id"] == "ticket-refund"


def test_tables():
    from semif_lib import notebook

    table = notebook.tabulate_answers(RESPONSE)
    assert list(table.index) == ["is_billing", "queue", "urgency"]
    assert table.loc["queue", "answer"] == "billing"
    # Jev's confidence and the top probability are two columns: a yes/no has no confidence, only its top probability
    assert table.loc["is_billing", "x_top_probability"] == 0.6 and table["confidence"].isna()["is_billing"]
    assert (table.loc["queue", "confidence"], table.loc["queue", "x_top_probability"]) == (0.5, 0.5)
    served = json.loads(json.dumps(RESPONSE))
    served["answers"]["urgency"]["x_top_probability"] = 0.61  # what a served answer says is shown, not recomputed
    assert notebook.tabulate_answers(served).loc["urgency", ["confidence", "x_top_probability"]].tolist() == [0.6, 0.61]
    other = json.loads(json.dumps(RESPONSE))
    other["answers"]["queue"]["probabilities"] = {"billing": 0.2, "technical": 0.7, "shipping": 0.1}
    diff = notebook.compare_answers(RESPONSE, other)
    assert not diff.loc["queue", "same_argmax"] and diff.loc["queue", "max_abs_dp"] == pytest.approx(0.4)
    assert diff.loc["is_billing", "reference"] == "true" and diff.loc["is_billing", "max_abs_dp"] == 0.0  # a noul's x_probabilities
    other["answers"]["is_billing"]["x_probabilities"] = {"true": 0.3, "false": 0.7}
    flipped = notebook.compare_answers(RESPONSE, other).loc["is_billing"]
    assert (flipped["other"], flipped["same_argmax"], flipped["max_abs_dp"]) == ("false", False, pytest.approx(0.3))
    del other["answers"]["urgency"]
    with pytest.raises(ValueError, match="urgency"):  # a question left unanswered is not agreement
        notebook.compare_answers(RESPONSE, other)
    error_line = {"id": "b", "detail": {"error_type": "invalid_request", "message": "bad"}, "status": 400}
    records = notebook.tabulate_records([{"id": "a", **RESPONSE}, error_line])
    assert records.loc["a", "queue"] == "billing" and records.loc["b", "error"] == "bad"
    assert notebook.tabulate_records("s3://bucket/out.jsonl.out") == "s3://bucket/out.jsonl.out"


def test_plots_return_figures():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from semif_lib.measurement import plots

    fig = plots.plot_probabilities(RESPONSE)
    assert len([ax for ax in fig.axes if ax.get_visible()]) == 3
    fig2 = plots.plot_timings({"fresh": {**RESPONSE, "x_timing": {"prefill_s": 0, "total_s": 2.0}}, "cached": RESPONSE})
    assert fig2.axes[0].get_yticklabels()[0].get_text() == "fresh"
    plt.close("all")
    with pytest.raises(ValueError):
        plots.plot_probabilities({"answers": {}})


def test_build_context_is_complete():
    from semif_lib import notebook

    context = notebook.inspect_build_context()
    assert context["problems"] == [], context["checks"]
    assert "container/Dockerfile" in context["container_files"] and context["zip_bytes"] > 0


def test_stop_local_servers_keeps_the_other_values(tmp_path):
    import subprocess
    import sys

    from semif_lib import notebook
    from semif_lib.settings import Settings
    from semif_lib.workshop import load_state

    settings = Settings(target="local", state_file=tmp_path / "state.json", run_id="h3lp01")
    state = load_state(settings)
    state.set("model_package", {"sha256": "x"})
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    state.record("local_process", "decision-server", pid=proc.pid, url="http://127.0.0.1:1")
    assert notebook.stop_local_servers(settings, state) == [f"decision-server (pid {proc.pid})"]
    assert proc.wait(timeout=10) is not None
    again = load_state(settings)
    assert again.find("local_process") == [] and again.get("model_package") == {"sha256": "x"}
    assert notebook.stop_local_servers(settings, again) == []


def test_importing_the_helpers_stays_cheap():
    import subprocess
    import sys

    code = ("import sys, semif_lib.notebook, semif_lib.measurement.plots; "
            "print(sorted(m for m in ('pandas', 'matplotlib', 'ipywidgets', 'boto3', 'llama_cpp') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_build_context_check_finds_a_copy_source_missing_from_the_zip(tmp_path):
    """CodeBuild gets only the zip: a file the Dockerfile COPYs but the zip lacks is named before any build."""
    import shutil

    from semif_lib.notebook import inspect_build_context

    root = Path(__file__).resolve().parents[1]
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(root / name, tmp_path / name)
    shutil.copytree(root / "semif_lib", tmp_path / "semif_lib")
    shutil.copytree(root / "container", tmp_path / "container")
    assert inspect_build_context(tmp_path)["problems"] == []
    (tmp_path / "container" / "install_adapter.sh").unlink()
    report = inspect_build_context(tmp_path)
    assert "not in the zip: container/install_adapter.sh" in report["problems"]


# ---------------------------------------------------------------------- notebook 00: inside the forward pass
def test_slot_table_recomputes_the_softmax_from_the_logits():
    from semif_lib.notebook.slots import SlotReading, _cut_tail, tabulate_slots

    reading = SlotReading("queue", "choice", "...", ["billing", "technical"], [49, 50], ["A", "B"], [2.0, 1.0],
                          {"billing": 0.7310585786300049, "technical": 0.2689414213699951}, 0.4)
    table = tabulate_slots([reading])
    assert list(table.index) == [("queue", "billing"), ("queue", "technical")]
    assert table["softmax"].tolist() == pytest.approx([0.7310585786300049, 0.2689414213699951], abs=1e-15)
    assert table.loc[("queue", "billing"), "token"] == "'A'" and table["x_option_mass"].tolist() == [0.4, 0.4]
    assert _cut_tail("short", 10) == "short"
    assert _cut_tail("line one\nline two\nend", 12) == "...\nend"  # from the first whole line within the tail


@pytest.mark.model
def test_read_slots_shows_what_the_answer_is_made_of(engine, example_requests):
    """On the embedded model: each question's prompt ends where the answer starts, each option is one slot token
    (Yes/No, letters, digits), and the softmax of the printed logits is the answer's probabilities."""
    from semif_lib import notebook
    from semif_lib.measurement.answers import read_response

    request = example_requests[0]
    readings = notebook.read_slots(engine, request)
    assert [r.question for r in readings] == list(request["questions"])
    plain = read_response(engine.ask(request))["answers"]
    for reading in readings:
        assert reading.prompt_tail.rstrip().endswith("assistant"), reading.prompt_tail[-80:]
        assert len(set(reading.token_ids)) == len(reading.keys) == len(reading.logits)
        assert reading.softmax == pytest.approx(list(reading.probabilities.values()), abs=1e-9)
        assert 0 < reading.option_mass <= 1
        served = plain[reading.question]
        assert list(reading.probabilities) == list(served.get("probabilities") or served["x_probabilities"])
    assert [t.strip() for t in readings[0].token_texts] == ["Yes", "No"]
    table = notebook.tabulate_slots(readings)
    assert (table["softmax"] - table["probability"]).abs().max() < 1e-9


# ---------------------------------------------------------------------- the clock and the bill
def test_the_bill_is_priced_from_the_one_table_and_docs_aws_quotes_it():
    from semif_lib import prices
    from semif_lib.notebook import budget

    cost = budget.estimate_run_cost()
    assert cost["total_usd"] == pytest.approx(sum(row["usd"] for row in cost["rows"]), abs=0.011)
    assert 0 < cost["total_usd"] < 2, "a full run at list price is well under two dollars"
    assert cost["forgotten_day_usd"] == pytest.approx(2 * 24 * prices.PRICES["endpoint"].usd, abs=0.006)
    text = (ROOT / "docs" / "aws.md").read_text(encoding="utf-8")
    for price in prices.PRICES.values():
        assert f"| {price.item} | ${price.usd:g} per {price.unit} |" in text, price
    for row in cost["rows"]:
        assert f"| {row['what']} | {row['quantity']:g} {row['unit']}s | ${row['usd']:.2f} |" in text, row
    assert f"**${cost['total_usd']:.2f}**" in text and f"${cost['forgotten_day_usd']:.2f} a day" in text
    assert prices.PRICES_AS_OF in text and all(url in text for url in prices.PRICE_SOURCES.values())
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"${cost['total_usd']:.2f}" in readme and f"${cost['forgotten_day_usd']:.2f} a day" in readme
    assert set(budget.CLOCKS) == {p.name[:2] for p in (ROOT / "notebooks").glob("*.ipynb")}
    from semif_lib.notebook import clock

    measured = clock.read_clock()  # `semif workshop clock`, committed
    assert set(measured["seconds"]) == set(budget.CLOCKS)
    for name, seconds in measured["seconds"].items():  # the stated minutes round the measured run up
        assert budget.CLOCKS[name].here_min == clock.stated_minutes(seconds), name
    assert clock.check_clock(measured) == []


def test_the_clock_check_fails_a_notebook_over_twice_its_stated_minutes():
    from semif_lib.notebook import budget, clock

    stated = budget.CLOCKS["05"].here_min * 60
    assert clock.check_clock({"seconds": {"05": 2 * stated}}) == []
    (line,) = clock.check_clock({"seconds": {"05": 2 * stated + 1, "00": 1.0}})
    assert line.startswith("05: ") and f"state {clock.stated_minutes(2 * stated + 1)} min" in line


def test_a_relative_model_is_the_repositorys_and_a_hub_reference_stays_as_it_is(monkeypatch, tmp_path):
    """A kernel runs in notebooks/: MODEL = "models/x.gguf" means the repository's file, in 00, 01 and 07 alike."""
    from semif_lib.notebook import load_notebook_settings

    monkeypatch.chdir(tmp_path)
    assert load_notebook_settings(None, model_path="models/x.gguf").model_path == ROOT / "models" / "x.gguf"
    assert load_notebook_settings(None, model_path=tmp_path / "y.gguf").model_path == tmp_path / "y.gguf"
    hub = "hf://bartowski/SmolLM2-135M-Instruct-GGUF/SmolLM2-135M-Instruct-Q4_K_M.gguf"
    assert str(load_notebook_settings(None, model_path=hub).model_path) in (hub, hub.replace("hf://", "hf:/"))
    for name in ("00_local_quickstart", "01_package_gguf_to_s3", "07_calibrate_decisions"):
        text = (ROOT / "notebooks" / f"{name}.ipynb").read_text(encoding="utf-8")
        assert '"MODEL = None' in text and "GGUF = " not in text and "model_path=MODEL" in text, name


def test_the_token_arithmetic_predicts_what_each_way_evaluated():
    """05's table: fresh evaluates Q x P + sum(S), a fork P + sum(S), a cached fork sum(S); a count that does not follow
    its formula shows in `predicted`, which the notebook asserts equal."""
    from semif_lib.notebook import tabulate_tokens
    from semif_lib.notebook.reference import merge_fresh_responses

    def response(questions, prefix, cached=0, mode="parallel"):
        suffixes = {q: 10 + k for k, q in enumerate(questions)}
        usage = {"input_tokens": prefix + sum(suffixes.values()), "x_cached_tokens": cached}
        return {"answers": {q: {} for q in questions}, "usage": usage,
                "x_timing": {"mode": mode, "prefix_tokens": prefix, "suffix_tokens": suffixes, "total_s": 1.0}}

    fresh = merge_fresh_responses([response([q], 100, mode="fresh") for q in ("a", "b", "c")])
    assert fresh["x_timing"]["suffix_tokens"] == {"a": 10, "b": 10, "c": 10} and fresh["usage"]["input_tokens"] == 330
    table = tabulate_tokens({"fresh": fresh, "forked": response(["a", "b", "c"], 100), "cached": response(["a", "b", "c"], 100, 100)})
    assert list(table["evaluated_tokens"]) == list(table["predicted"]) == [330, 133, 33]
    assert table.loc["fresh", "formula"] == "Q x P + sum(S) = 3 x 100 + 30" and table.loc["fresh", "calls"] == 3
    lying = response(["a"], 100)
    lying["usage"]["input_tokens"] += 7
    assert tabulate_tokens({"x": lying}).loc["x", "predicted"] != tabulate_tokens({"x": lying}).loc["x", "evaluated_tokens"]


def test_no_committed_screenshot_is_older_than_the_notebook_it_shows():
    """tests/test_browser.py rewrites results/screenshots/ from the notebooks; committing a notebook without the
    screenshots it changed leaves pictures of code the notebook no longer has."""
    import shutil

    if not (ROOT / ".git").exists() or not shutil.which("git"):
        pytest.skip("not a git checkout: commit times unknown")

    shots = sorted((ROOT / "results" / "screenshots").glob("*.png"))
    assert shots, "no committed screenshots"
    stale = []
    for shot in shots:
        (notebook,) = (ROOT / "notebooks").glob(f"{shot.name[:2]}_*.ipynb")
        shot_time, notebook_time = committed_at(shot), committed_at(notebook)
        if shot_time is not None and notebook_time is not None and shot_time < notebook_time:
            stale.append(f"{shot.name} ({shot_time}) is older than {notebook.name} ({notebook_time})")
    assert not stale, "run tests/test_browser.py and commit results/screenshots/: " + "; ".join(stale)


# ---------------------------------------------------------------------- the README's first screen
def test_the_readme_first_screen_plans_the_hour_and_starts_the_aws_path():
    """The first 60 lines: the times (install with its compile, run, reading, computed here from the notebooks), the
    prerequisites by OS, the AWS checklist (quota, policies, environment, target), the wire's specification and the
    line saying the AWS figures are estimates; no placeholder for the repository's address."""
    from semif_lib.notebook import budget, clock
    from semif_lib.notebook.kernel import ENVIRONMENT_COMMAND, KERNEL_FIX

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    head = "\n".join(readme.splitlines()[:60])
    words = budget.count_prose_words()
    local_run = clock.stated_minutes(sum(clock.read_clock()["seconds"].values()))
    for needed in (f"about {budget.reading_minutes(words)} min: {round(words, -2):,} words", f"about {local_run} min of cells",
                   f"about {budget.aws_run_minutes()} min along 00 → 05 → 99", "4-5 min on 2 cores",
                   f"${budget.estimate_run_cost()['total_usd']:.2f}", "python3-venv", "g++", "xcode-select", "WSL2",
                   "ml.c6i.xlarge for endpoint usage", "ml.c6i.xlarge for transform job usage", "semif workshop policies",
                   "Create inline policy", "echo SEMIF_TARGET=aws >> ~/.semif/settings.env", ENVIRONMENT_COMMAND, KERNEL_FIX,
                   "estimates until", "semif workshop rehearse", "jevcompat/blob/main/SPEC.md", "REPO_URL"):
        assert needed in head, f"the README's first 60 lines lack {needed!r}"
    assert "<this repository's URL>" not in readme


def test_one_environment_command_everywhere():
    """Studio's environment is made by one command, under the home volume: the README, docs/aws.md and docs/workshop.md
    quote it whole wherever they create it, and the event team's lifecycle script runs the same (conda or mamba)."""
    from semif_lib.notebook.kernel import ENVIRONMENT_COMMAND

    for path in (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))):
        for line in path.read_text(encoding="utf-8").splitlines():
            if "env create" in line:
                assert ENVIRONMENT_COMMAND in line, f"{path.name}: {line.strip()}"
    lifecycle = (ROOT / "container" / "cfn" / "workshop-account.yaml").read_text(encoding="utf-8")
    assert 'env="$home/.conda/envs/semif-workshop"' in lifecycle
    assert 'CXXFLAGS=-U__AMX_INT8__ "$tool" env create -p "$env" -f environment.yml' in lifecycle


# ---------------------------------------------------------------------- what a reader sees without running
def test_the_executed_copies_ran_the_notebooks_cells_as_they_are():
    """results/notebooks/executed/ holds every notebook run locally (`semif workshop render`): each copy's cells are its
    notebook's cells now, and it has outputs. Committing a notebook without rendering it again fails here."""
    from semif_lib.notebook.executed import executed_dir, stale_copies

    assert stale_copies() == [], "run `semif workshop render` and commit results/notebooks/executed/"
    for copy in sorted(executed_dir().glob("*.ipynb")):
        cells = json.loads(copy.read_text(encoding="utf-8"))["cells"]
        code = [c for c in cells if c["cell_type"] == "code"]
        assert all(c["execution_count"] for c in code) and any(c["outputs"] for c in code), copy.name
        assert "/tmp/semif-render-" not in copy.read_text(encoding="utf-8"), f"{copy.name}: a machine path left in"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "results/notebooks/executed/" in readme


def test_every_screenshot_and_the_picture_are_shown_and_fresh():
    """Every screenshot is referenced from the docs; the two paths' picture (`semif workshop picture`) is shown by the
    README and notebook 00, and is no older in git than the module that draws it."""
    import shutil

    docs = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))))
    unreferenced = [shot.name for shot in sorted((ROOT / "results" / "screenshots").glob("*.png")) if shot.name not in docs]
    assert unreferenced == [], f"screenshots no page shows: {unreferenced}"
    assert "docs/images/paths.png" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert "../docs/images/paths.png" in (ROOT / "notebooks" / "00_local_quickstart.ipynb").read_text(encoding="utf-8")
    picture = ROOT / "docs" / "images" / "paths.png"
    assert picture.stat().st_size > 20_000
    if not (ROOT / ".git").exists() or not shutil.which("git"):
        pytest.skip("not a git checkout: commit times unknown")

    drawn, drawer = committed_at(picture), committed_at(ROOT / "semif_lib" / "notebook" / "picture.py")
    assert drawn is None or drawer is None or drawn >= drawer, "run `semif workshop picture` and commit docs/images/paths.png"


# ---------------------------------------------------------------------- small things an attendee reads
def test_answer_tables_show_whole_with_no_nan():
    """pandas cuts a cell at 50 characters and writes NaN where a yes/no has no confidence; the notebooks' answer table
    shows every probability and an empty cell instead, while its data stay as they are."""
    from semif_lib import notebook

    long = json.loads(json.dumps(RESPONSE))
    long["answers"]["queue"]["probabilities"] = {"billing": 0.25, "technical": 0.25, "shipping": 0.25, "account": 0.25}
    table = notebook.tabulate_answers(long)
    html = table._repr_html_()
    assert "billing=0.250, technical=0.250, shipping=0.250, account=0.250" in html and "NaN" not in html
    assert table["confidence"].isna()["is_billing"] and type(table.loc[["queue"]]) is type(table)  # still a DataFrame


def test_benchmark_ratios_read_in_words_without_the_projects_targets():
    from semif_lib import notebook

    modes = json.loads((ROOT / "results" / "bench" / "modes.json").read_text(encoding="utf-8"))
    table = notebook.tabulate_ratios(modes["targets"])
    assert list(table.columns) == ["what it compares", "measured"] and "best_fork_path" not in table.index
    assert table.loc["best_fork_vs_fresh", "measured"] == f"{modes['targets']['best_fork_vs_fresh']['ratio']:.2f}x"
    assert "fresh" in table.loc["best_fork_vs_fresh", "what it compares"]
    assert "met" not in table._repr_html_() and "target" not in table._repr_html_()


def test_the_openai_sdks_typed_answers_print_one_line_each():
    from openai.types.decision import Decision

    from semif_lib import notebook

    decision = Decision.model_validate({
        "id": "d1", "object": "decision", "created_at": 0, "model": "m",
        "answers": [{"type": "predicate", "name": "refund", "probability": 0.6123},
                    {"type": "choice", "name": "queue", "choice": "billing", "confidence": 0.4,
                     "probabilities": [{"value": "billing", "probability": 0.55}, {"value": "technical", "probability": 0.45}]},
                    {"type": "score", "name": "anger", "score": 0.7, "confidence": 0.2,
                     "probabilities": [{"label": "calm", "value": 0, "probability": 0.3},
                                       {"label": "angry", "value": 1, "probability": 0.7}]},
                    {"type": "refusal", "name": "late"}],
        "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0}, "output_tokens": 0,
                  "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 10}})
    lines = [notebook.format_typed_answer(a) for a in decision.answers]
    assert lines[0] == "refund (predicate): P(yes) = 0.612"
    assert lines[1] == "queue (choice): choice 'billing', confidence 0.400 | billing 0.550, technical 0.450"
    assert lines[2] == "anger (score): score 0.70, confidence 0.200 | calm 0.300, angry 0.700"
    assert lines[3].startswith("late (refusal): declined")


def test_the_form_labels_each_box_by_what_it_holds():
    """00's form: a header per question (its id and type), then a `question` box and a criteria box named for what it
    holds; a yes/no's box says its lines are optional, as the notebook's prose does."""
    pytest.importorskip("ipywidgets")
    from semif_lib import notebook

    form = notebook.DecisionForm(notebook.read_examples()[0])
    boxes = {qid: (instructions.description, criteria.description, criteria.placeholder)
             for qid, (instructions, criteria) in form.questions.items()}
    assert [b[:2] for b in boxes.values()] == [("question", "true/false"), ("question", "options"), ("question", "levels")]
    assert boxes["is_billing"][2].startswith("optional") and "'true: ...'" in boxes["is_billing"][2]
    headers = [w.value for w in form.widget.children if type(w).__name__ == "HTML"]
    assert headers == ["<b>is_billing</b>: a yes/no question (noul)", "<b>queue</b>: a choice among options",
                       "<b>urgency</b>: a score on ordered levels"]
