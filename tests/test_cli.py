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
