"""Every file under data/ is read by the product's own readers and kept within its limits. No model is needed.

The JSON Lines files are the source of truth, edited by hand (tools/provenance/README.md says how
they were first made). Request files are read the way the benchmarks and notebooks read them
(`read_records`), and each line also passes the adapter's strict JSON rules (`parse_json_bytes`:
no duplicate keys, no NaN). Labeled sets go through `semif eval`'s reader (`read_labeled`). Every
request must pass the schema (`parse_request`) and the `Settings` limits that request preparation
and the adapter enforce with a 413 (`semif_lib.limits`): questions per request, options per choice
question, and body size.
"""

import json
import os
import re

import pytest

from semif_lib.decision.schema import parse_request
from semif_lib.decision.validation import parse_json_bytes
from semif_lib.errors import PayloadTooLargeError
from semif_lib.jsonlines import dump_record, read_lines, read_records
from semif_lib.limits import check_limit, check_question_counts
from semif_lib.measurement.quality.labeled import label_to_index, read_labeled

from conftest import DATA

REQUEST_FILES = ("examples.jsonl", "workload_37x21.jsonl")  # one request per line, each with an `id`
SINGLE_REQUESTS = ("bench_single_state.json",)  # one request per file (`semif bench readout-vs-generation`)
LABELED = sorted((DATA / "labeled").glob("*.jsonl"))
DOCUMENTS = ("labeled/README.md",)


@pytest.fixture(scope="module")
def limits():
    """The limits a server started with no `SEMIF_*` variables enforces."""
    from semif_lib.settings import Settings

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "environ", {})
        return Settings()


def check_request(record, limits, where):
    """`record` passes the schema and every request limit in `Settings` (a 413 names the file and line); returns the parsed request."""
    request = parse_request(record)
    try:
        check_question_counts(request.questions, max_questions=limits.max_questions, max_options=limits.max_options)
        check_limit("max_body_bytes", len(dump_record(record).encode("utf-8")), limits.max_body_bytes, field="body")
    except PayloadTooLargeError as exc:
        pytest.fail(f"{where}: {exc.message}")
    return request


def check_groups(records, where):
    """Ids are unique, and lines that share a `group_id` share their state."""
    ids = [r["id"] for r in records]
    assert len(set(ids)) == len(ids), f"{where}: duplicate ids {sorted({i for i in ids if ids.count(i) > 1})}"
    states = {}
    for r in records:
        group = r.get("group_id", r["id"])
        assert states.setdefault(group, r["state"]) == r["state"], f"{where}: group {group!r} has two states"


def test_every_file_under_data_is_checked_here():
    found = {p.relative_to(DATA).as_posix() for p in DATA.rglob("*") if p.is_file()}
    checked = {*REQUEST_FILES, *SINGLE_REQUESTS, *DOCUMENTS} | {p.relative_to(DATA).as_posix() for p in LABELED}
    assert found == checked, "data/ holds data files, each checked by this module (generators live in tools/provenance/)"


@pytest.mark.parametrize("name", REQUEST_FILES)
def test_request_files_parse_within_the_limits(name, limits):
    path = DATA / name
    records = read_records(path)
    assert records
    for (number, line), record in zip(read_lines(path), records, strict=True):
        assert parse_json_bytes(line) == record
        check_request(record, limits, f"{name}:{number}")
    check_groups(records, name)


@pytest.mark.parametrize("name", SINGLE_REQUESTS)
def test_single_requests_parse_within_the_limits(name, limits):
    path = DATA / name
    record = parse_json_bytes(path.read_bytes())
    assert record == json.loads(path.read_text(encoding="utf-8"))  # what the benchmark reads
    check_request(record, limits, name)


@pytest.mark.parametrize("path", LABELED, ids=[p.name for p in LABELED])
def test_labeled_sets_read_with_the_eval_reader(path, limits):
    items = read_labeled([path])  # every line a request, every label a valid answer to its question
    lines = read_lines(path)
    assert len(items) == len(lines)
    for item, (number, _) in zip(items, lines, strict=True):
        where = f"{path.name}:{number}"
        assert item.task == path.stem, f"{where}: task {item.task!r}"
        request = check_request(item.request, limits, where)
        assert set(item.labels) == set(request.questions), f"{where}: every question has a label, and only those"
        for qid, expected in item.labels.items():
            question = request.questions[qid]
            index = label_to_index(question, expected, where)
            assert 0 <= index < (2 if question.type == "noul" else len(question.criteria))
            if question.type == "choice":
                assert expected in question.criteria, f"{where}[{qid}]: {expected!r} is not an option"
    check_groups([{"id": it.id, "group_id": it.group_id, "state": it.request["state"]} for it in items], path.name)


def test_labeled_ids_are_unique_across_files():
    ids = [item.id for item in read_labeled(LABELED)]
    assert len(set(ids)) == len(ids)


def test_the_labeled_readme_counts_match_the_files():
    """The table in data/labeled/README.md: lines and labeled decisions per file, and the total."""
    readme = (DATA / "labeled" / "README.md").read_text(encoding="utf-8")
    table = {m[1]: (int(m[2]), int(m[3])) for m in re.finditer(r"^\| `([\w.]+\.jsonl)` \|[^|]*\| (\d+) \| (\d+) \|", readme, re.M)}
    actual = {}
    for path in LABELED:
        items = read_labeled([path])
        actual[path.name] = (len(items), sum(len(it.labels) for it in items))
    assert table == actual
    lines, decisions = map(sum, zip(*actual.values(), strict=True))
    assert f"Total: {lines} lines, {decisions} labeled decisions." in readme
