"""One JSON Lines reader and writer: records split on `\\n` only, never on U+2028, U+2029 or U+0085."""

from __future__ import annotations

import json

import pytest

from semif_lib.errors import InvalidRequestError
from semif_lib.jsonlines import dump_records, read_lines, read_records, split_lines, write_records

ODD = {"id": "a\u2028b", "state": "one\u2029two\u0085three\x1cfour", "n": 1}


def test_round_trip_keeps_unicode_line_separators_inside_strings(tmp_path):
    text = dump_records([ODD, {"id": "plain"}])
    assert "\u2028" in text and text.count("\n") == 2  # written raw, one record per line
    assert len(text.splitlines()) > 2  # what str.splitlines() would have cut
    assert [json.loads(line) for _, line in split_lines(text)] == [ODD, {"id": "plain"}]
    path = write_records(tmp_path / "sub" / "out.jsonl", [ODD])
    assert read_records(path) == [ODD]


def test_blank_lines_are_skipped_numbers_kept_and_crlf_accepted(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'{"a": 1}\r\n\r\n  \n{"a": 2}\n')
    assert read_lines(path) == [(1, '{"a": 1}'), (4, '{"a": 2}')]


def test_a_bad_line_is_named(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"a": 1}\n{"a": \n', encoding="utf-8")
    with pytest.raises(InvalidRequestError, match=r"bad.jsonl:2"):
        read_records(path)


def test_labeled_sets_read_through_the_same_reader(tmp_path):
    from semif_lib.measurement.quality.labeled import read_labeled

    line = {"id": "x\u2028y", "state": "s\u2028t", "labels": {"q": True},
            "questions": {"q": {"type": "noul", "instructions": "Is it?"}}}
    path = tmp_path / "labeled.jsonl"
    path.write_text(dump_records([line, {**line, "id": "z"}]), encoding="utf-8")
    assert [item.id for item in read_labeled([path])] == ["x\u2028y", "z"]


def test_request_lines_are_read_one_way_a_bad_line_is_its_own_error_record():
    """The CLI and the adapter's JSON Lines body both read requests with `iter_records`."""
    from semif_lib.decision.schema import parse_request
    from semif_lib.decision.validation import parse_json_bytes
    from semif_lib.errors import SemifError
    from semif_lib.jsonlines import error_record, iter_records

    good = {"id": "g", "state": "s", "questions": {"q": {"type": "noul", "instructions": "ok?"}}}
    lines = [(1, json.dumps(good)), (3, "not json"), (4, '{"id": 7, "state": "s", "questions": {}}'),
             (5, json.dumps({k: v for k, v in good.items() if k != "id"}))]
    records = list(iter_records(lines, parse_json_bytes, parse_request))
    assert [rid for rid, _ in records] == ["g", "line-3", 7, "line-5"]
    assert [isinstance(item, SemifError) for _, item in records] == [False, True, True, False]
    bad = error_record(records[2][1], 7)
    assert bad["id"] == 7 and bad["status"] == 422  # Jev's validation shape: detail[] with loc from "body"
    assert bad["detail"][0]["loc"] == ["body", "questions"] and bad["detail"][0]["field"] == "questions"


def test_bytes_that_are_not_utf8_are_one_400_wherever_they_arrive(tmp_path):
    from semif_lib.decision.validation import parse_json_bytes
    from semif_lib.jsonlines import decode_utf8
    from semif_lib.serving.wire import parse_jsonlines_body

    latin1 = '{"state": "caf\xe9"}'.encode("latin-1")
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(latin1)
    for call, what in ((lambda: decode_utf8(latin1), "body"), (lambda: parse_json_bytes(latin1), "body"),
                       (lambda: parse_jsonlines_body(latin1), "body"), (lambda: read_lines(path), str(path))):
        with pytest.raises(InvalidRequestError) as info:
            call()
        assert info.value.message == f"{what} is not UTF-8 text (byte 14)"
