"""Labeled JSON Lines (data/labeled/README.md): one decision request per line with its expected answers.

`semif eval` reads its input here, and so does `tests/test_data_files.py`, which checks every
committed set. A line is read with the adapter's JSON rules (`parse_json_bytes`) and validated as
a request (`parse_request`), and every label must be a valid answer to its question. Standard
library and the decision schema only.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ...decision.schema import parse_request
from ...decision.validation import parse_json_bytes
from ...errors import InvalidRequestError
from ...jsonlines import read_lines

__all__ = ["LabeledItem", "describe_missing_labels", "label_to_index", "read_labeled", "read_labeled_limited", "stratified_subset"]


@dataclass
class LabeledItem:
    """One labeled request line: the request itself, and the expected answer per question id."""

    id: str
    group_id: str
    task: str
    request: dict[str, Any]
    labels: dict[str, Any]


def _read_files(paths: Sequence[Path | str], limit: int | None) -> list[list[LabeledItem]]:
    """Each file's items, its first `limit` lines only when a limit is given."""
    files = []
    for path in paths:
        path = Path(path)
        lines = read_lines(path)
        if limit is not None:
            lines = lines[:max(limit, 0)]
        files.append([parse_labeled_line(path, number, line) for number, line in lines])
    return files


def _joined(files: Sequence[Sequence[LabeledItem]]) -> list[LabeledItem]:
    items = [item for file in files for item in file]
    if not items:
        raise InvalidRequestError("no labeled lines found", field="input")
    return items


def read_labeled(paths: Sequence[Path | str], limit: int | None = None) -> list[LabeledItem]:
    """Labeled JSON Lines (see data/labeled/README.md); `limit` keeps the first N lines of each file."""
    return _joined(_read_files(paths, limit))


def read_labeled_limited(paths: Sequence[Path | str], limit: int | None) -> tuple[list[LabeledItem], str | None]:
    """`read_labeled(paths, limit)` and, with a limit, `describe_missing_labels`' warning about what the first
    lines leave out (None without one). Each file is read once; with a limit every line is still validated."""
    if limit is None:
        return read_labeled(paths), None
    files = _read_files(paths, None)
    kept = _joined([file[:max(limit, 0)] for file in files])
    return kept, describe_missing_labels(kept, _joined(files))


def stratified_subset(items: Sequence[LabeledItem], per_task: int, seed: int = 0) -> list[LabeledItem]:
    """At most `per_task` lines of each workload, allotted to its label strata in proportion (seeded; input order kept).

    For `semif eval --sample N` on a model too slow for every line: each workload keeps its share of every
    answer (routing's six queues, severity's four levels), so accuracy and balanced accuracy stay comparable
    with the full set's, within the wider intervals of a smaller sample. A stratum is a line's whole label set;
    the largest remainders, ties broken by the seed, get the lines left over after rounding down.
    """
    if per_task < 1:
        raise InvalidRequestError(f"--sample keeps at least 1 line per workload, got {per_task}", field="sample")
    rng = random.Random(seed)
    keep: set[int] = set()
    for task in sorted({item.task for item in items}):
        rows = [i for i, item in enumerate(items) if item.task == task]
        strata: dict[str, list[int]] = {}
        for i in rows:
            strata.setdefault(json.dumps(items[i].labels, sort_keys=True), []).append(i)
        quota = {key: per_task * len(members) / len(rows) for key, members in sorted(strata.items())}
        counts = {key: min(math.floor(q), len(strata[key])) for key, q in quota.items()}
        ties = {key: rng.random() for key in quota}
        leftover = min(per_task, len(rows)) - sum(counts.values())
        for key in sorted(quota, key=lambda k: (counts[k] - quota[k], ties[k]))[:leftover]:
            counts[key] += 1
        for key, members in sorted(strata.items()):
            keep.update(rng.sample(members, counts[key]))
    return [item for i, item in enumerate(items) if i in keep]


def _strata(items: Sequence[LabeledItem]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for item in items:
        found.setdefault(item.task, set()).add(json.dumps(item.labels, sort_keys=True))
    return found


def describe_missing_labels(kept: Sequence[LabeledItem], full: Sequence[LabeledItem]) -> str | None:
    """One line when `kept` (the first lines, `--limit`) lacks answers the whole files have, else None.

    The labeled files are grouped by answer, so their first lines can hold one or two labels of seven, and
    accuracy read there (debiased most of all: it pushes the answers a model favours down) measures the
    subset's label mix, not the model. `--sample` draws every label in proportion instead."""
    have, every = _strata(kept), _strata(full)
    short = [f"{task} {len(have.get(task, ()))} of {len(every[task])}" for task in sorted(every)
             if task in have and len(have[task]) < len(every[task])]
    if not short:
        return None
    return (f"warning: --limit kept the first lines, which hold only some of the answers ({', '.join(short)} label sets); "
            f"figures read off them describe that mix, not the workload: --sample N draws every label in proportion")


def parse_labeled_line(path: Path, number: int, line: str) -> LabeledItem:
    """One line of a labeled file; any error names `file:line`."""
    where = f"{path.name}:{number}"
    try:
        data = parse_json_bytes(line)
    except InvalidRequestError as exc:
        raise InvalidRequestError(f"{where}: {exc.message}", field="input") from None
    if not isinstance(data, dict):
        raise InvalidRequestError(f"{where}: a labeled line is a JSON object", field="input")
    labels = data.get("labels")
    if not isinstance(labels, dict) or not labels:
        raise InvalidRequestError(f"{where}: a labeled line needs \"labels\": {{QID: expected}}", field="labels")
    request = {k: v for k, v in data.items() if k in ("state", "questions")}
    parsed = parse_request(request)
    for qid, expected in labels.items():
        if qid not in parsed.questions:
            raise InvalidRequestError(f"{where}: label for unknown question {qid!r}", field=f"labels.{qid}")
        label_to_index(parsed.questions[qid], expected, where)
    item_id = str(data.get("id", f"{path.stem}-{number}"))
    return LabeledItem(item_id, str(data.get("group_id", item_id)), str(data.get("task", path.stem)), request, labels)


def label_to_index(question: Any, expected: Any, where: str = "") -> int:
    """Index of the expected answer among the question's options (true=0/false=1, option name, level)."""
    kind = question.type
    if kind == "noul" and isinstance(expected, bool):
        return 0 if expected else 1
    if kind == "choice" and isinstance(expected, str) and expected in question.criteria:
        return list(question.criteria).index(expected)
    if kind == "score" and isinstance(expected, int) and not isinstance(expected, bool) and 0 <= expected < len(question.criteria):
        return expected
    raise InvalidRequestError(f"{where}: label {expected!r} is not a valid answer to a {kind} question", field="labels")
