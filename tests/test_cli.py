import json

from semif_lib.cli import main


def test_score_writes_one_response_per_line_with_ids(tmp_path, example_requests):
    src = tmp_path / "in.jsonl"
    lines = [json.dumps(r) for r in example_requests[:2]] + ['{"id": "bad", "state": "s", "questions": {}}', "not json"]
    src.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.jsonl"
    rc = main(["score", str(src), "--mode", "serial", "--output", str(out), "--n-ctx", "2048"])
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert rc == 1  # some lines failed, and the exit code says so
    assert [r["id"] for r in records] == [example_requests[0]["id"], example_requests[1]["id"], "bad", "line-4"]
    assert set(records[0]["answers"]) == set(example_requests[0]["questions"])
    assert records[2]["status"] == 400 and records[2]["error"]["field"] == "questions"
    assert records[3]["error"]["type"] == "invalid_request"


def test_score_prints_a_table(tmp_path, example_requests, capsys):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(example_requests[0]) + "\n")
    assert main(["score", str(src), "--n-ctx", "2048"]) == 0
    out = capsys.readouterr().out
    assert "option_mass" in out and "ticket-refund" in out and "queue" in out


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
        assert record["status"] == 400 and record["error"]["type"] == "invalid_request", record
    assert records[1]["error"]["field"] == "state"


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
