import json

import pytest

from semif_lib.cli import main
from semif_lib.errors import read_error

from support.fake_engines import FakeWing


@pytest.mark.model
def test_score_writes_one_response_per_line_with_ids(tmp_path, example_requests):
    src = tmp_path / "in.jsonl"
    lines = [json.dumps(r) for r in example_requests[:2]] + ['{"id": "bad", "state": "s", "questions": {}}', "not json",
                                                             json.dumps({**example_requests[0], "id": "other", "model": "gpt-4o"})]
    src.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.jsonl"
    rc = main(["score", str(src), "--mode", "serial", "--output", str(out), "--n-ctx", "2048"])
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert rc == 1  # some lines failed, and the exit code says so
    assert [r["id"] for r in records] == [example_requests[0]["id"], example_requests[1]["id"], "bad", "line-4", "other"]
    assert set(records[0]["answers"]) == set(example_requests[0]["questions"])
    assert records[2]["status"] == 422 and read_error(records[2])["field"] == "questions"  # Jev's validation error
    assert read_error(records[3])["type"] == "validation_error"
    assert records[4]["status"] == 404 and read_error(records[4])["field"] == "model"  # the server's rule: not this model


@pytest.mark.model
def test_score_prints_a_table(tmp_path, example_requests, capsys):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(example_requests[0]) + "\n")
    assert main(["score", str(src), "--n-ctx", "2048"]) == 0
    out = capsys.readouterr().out
    assert "option_mass" in out and "ticket-refund" in out and "queue" in out


@pytest.mark.model
def test_score_keeps_hostile_lines_as_error_records_and_writes_as_it_goes(tmp_path, example_requests, monkeypatch):
    """A surrogate, deep nesting, NaN or a huge number is that line's 400; the lines before it are on disk already."""
    src = tmp_path / "in.jsonl"
    hostile = ['{"id": "sur", "state": "\\ud800", "questions": {"q": {"type": "noul", "instructions": "x"}}}',
               '{"id": "deep", "state": ' + "[" * 50_000 + "]" * 50_000 + "}",
               '{"id": "nan", "state": NaN, "questions": {"q": {"type": "noul", "instructions": "x"}}}',
               '{"id": "big", "state": ' + "9" * 5000 + ', "questions": {"q": {"type": "noul", "instructions": "x"}}}']
    src.write_text("\n".join([json.dumps(example_requests[0])] + hostile) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    import semif_lib.cli as cli

    seen_on_disk: list[int] = []
    real = cli.score_lines

    def watching(engine, lines, mode, progress=True, on_result=None):
        def record(r):
            on_result(r)
            seen_on_disk.append(len(out.read_text(encoding="utf-8").splitlines()))
        return real(engine, lines, mode, progress, on_result=record)

    monkeypatch.setattr(cli, "score_lines", watching)
    assert main(["score", str(src), "--output", str(out), "--n-ctx", "2048"]) == 1
    assert seen_on_disk == [1, 2, 3, 4, 5]  # each response was written when it was scored
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").split("\n") if line]
    assert "answers" in records[0]
    for record in records[1:]:
        assert record["status"] == 422 and read_error(record)["type"] == "validation_error", record
    assert read_error(records[1])["field"] == "state"


def test_score_input_and_setting_errors_are_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    bad_bytes = tmp_path / "latin1.jsonl"
    bad_bytes.write_bytes(b'{"state": "caf\xe9"}\n')
    src = tmp_path / "in.jsonl"
    src.write_text('{"state": "s", "questions": {"q": {"type": "noul", "instructions": "x"}}}\n')
    cases = [
        (["score", str(tmp_path / "missing.jsonl")], "missing.jsonl: no such file"),
        (["score", str(bad_bytes)], "not UTF-8"),
        (["score", str(src), "--n-ctx", "100"], "--n-ctx=100"),
        (["score", str(src), "--threads", "0"], "--threads=0"),
    ]
    for argv, needle in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert needle in err and "Traceback" not in err and err.count("\n") == 1, err
    monkeypatch.setenv("SEMIF_MODE", "warp")
    assert main(["score", str(src)]) == 2
    assert "SEMIF_MODE='warp'" in capsys.readouterr().err


class RecordingEngine(FakeWing):
    """What `open_engine` gives `semif score`, without a model: the settings it was built from, the modes it ran."""

    def __init__(self, **overrides):
        from semif_lib.settings import load_settings

        self.settings = load_settings(**overrides)
        self.modes: list[str] = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass

    def ask(self, data, mode=None):
        from semif_lib.decision.responses import DecisionResponse
        from semif_lib.decision.schema import DecisionRequest, parse_request

        self.modes.append(mode)
        request = data if isinstance(data, DecisionRequest) else parse_request(data)  # as DecisionEngine.ask
        answers = {qid: {"type": "noul", "noul": 0.5, "x_probabilities": {"true": 0.5, "false": 0.5}, "x_option_mass": 1.0}
                   for qid in request.questions}
        return DecisionResponse.model_validate({"model": "fake", "answers": answers, "usage": {"input_tokens": 1},
                                                "x_timing": {"total_s": 0.0}})


def test_score_mode_falls_back_to_semif_mode_and_the_flag_overrides_it(tmp_path, monkeypatch, capsys):
    """README: "CLI flags override settings" -- and an unset flag leaves the setting alone (it once ran parallel)."""
    import semif_lib.decision.engine as engine_module

    engines: list[RecordingEngine] = []
    monkeypatch.setattr(engine_module, "open_engine", lambda **kw: engines.append(RecordingEngine(**kw)) or engines[-1])
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "r", "state": "s", "questions": {"q": {"type": "noul", "instructions": "ok?"}}}) + "\n")
    monkeypatch.setenv("SEMIF_MODE", "serial")
    assert main(["score", str(src), "--output", str(tmp_path / "out.jsonl")]) == 0
    assert engines[-1].modes == ["serial"] and "mode serial" in capsys.readouterr().err
    assert main(["score", str(src), "--mode", "fresh", "--output", str(tmp_path / "out.jsonl")]) == 0
    assert engines[-1].modes == ["fresh"] and engines[-1].settings.mode == "fresh"
    monkeypatch.delenv("SEMIF_MODE")
    assert main(["score", str(src), "--output", str(tmp_path / "out.jsonl")]) == 0
    assert engines[-1].modes == ["parallel"]  # the Settings default


def test_no_flag_repeats_a_settings_default():
    """Every flag of every subcommand that names a setting defaults to None, so the setting decides."""
    import argparse

    from semif_lib.cli import build_parser
    from semif_lib.settings import Settings

    def walk(parser: argparse.ArgumentParser, path: str):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, f"{path} {name}")
            elif action.dest in Settings.model_fields and action.option_strings:
                yield f"{path} {action.option_strings[0]}", action.default

    flags = dict(walk(build_parser(), "semif"))
    assert "semif score --mode" in flags and "semif serve --port" in flags
    # The benchmarks pin their own servers (2 threads on both sides, ports of their own), recorded in
    # their results; they are not the product's settings.
    pinned = {"semif bench peer --n-ctx": 16384, "semif bench peer --port": 18190, "semif bench peer --threads": 2,
              "semif bench robustness --port": 18090, "semif bench robustness --threads": 2,
              "semif bench scale --port": 18200, "semif bench scale --threads": 2,
              "semif bench sys1bench --port": 18370, "semif bench sys1bench --threads": 2}
    repeated = {name: default for name, default in flags.items() if default is not None}
    assert {name: default for name, default in repeated.items() if pinned.get(name) != default} == {}
