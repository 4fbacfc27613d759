"""JSON Lines, read and written one way everywhere: records split on `\n` only.

`str.splitlines()` also breaks on U+2028, U+2029, U+0085 and a few control characters, which
may sit unescaped inside a JSON string (the adapter writes with `ensure_ascii=False`), so a
reader built on it cuts a record in two. Every reader and writer in the project goes through
this module: the adapter's request bodies and responses, `semif score`, `semif eval`, the
benchmark workload and the workshop's local Batch Transform stand-in.

A file or body of requests is read one way too (`iter_records`): each line parsed on its own, a
bad line becoming that line's error record (`error_record`), with the record's `id`, else
`line-N` (`record_id`); and bytes become text through `decode_utf8` only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TypeVar

from .errors import InvalidRequestError, SemifError
from .limits import check_record_id

__all__ = [
    "decode_utf8",
    "dump_record",
    "dump_records",
    "error_record",
    "iter_records",
    "parse_records",
    "read_lines",
    "read_records",
    "record_id",
    "split_lines",
    "write_records",
]

T = TypeVar("T")


def decode_utf8(data: bytes, what: str = "body", field: str = "body") -> str:
    """`data` as text; anything but UTF-8 is a 400 naming `what` and the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRequestError(f"{what} is not UTF-8 text (byte {exc.start})", field=field) from None


def split_lines(text: str) -> Iterator[tuple[int, str]]:
    """The non-blank lines of `text` with their 1-based numbers, split on `\n` only (a trailing `\r` is dropped)."""
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            yield number, line.removesuffix("\r")


def read_lines(path: Path | str) -> list[tuple[int, str]]:
    """Numbered non-blank lines of a JSON Lines file; `-` reads standard input.

    A missing, unreadable or non-UTF-8 file is an `InvalidRequestError` naming it (one line on the CLI).
    """
    try:
        text = sys.stdin.read() if str(path) == "-" else decode_utf8(Path(path).read_bytes(), what=str(path), field="input")
    except FileNotFoundError:
        raise InvalidRequestError(f"{path}: no such file", field="input") from None
    except OSError as exc:
        raise InvalidRequestError(f"{path}: cannot read it ({exc.strerror})", field="input") from None
    return list(split_lines(text))


def read_records(path: Path | str) -> list[Any]:
    """Every record of a JSON Lines file, parsed; a bad line is an `InvalidRequestError` naming the file and line."""
    return parse_records(read_lines(path), str(path))


def parse_records(lines: Iterable[tuple[int, str]], where: str) -> list[Any]:
    """Every numbered line parsed (`split_lines`' output); a bad line is an `InvalidRequestError` naming `where` and the line."""
    records = []
    for number, line in lines:
        try:
            records.append(json.loads(line))
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, over-long integers, deep nesting
            raise InvalidRequestError(f"{where}:{number}: not valid JSON ({getattr(exc, 'msg', None) or type(exc).__name__})",
                                      field="input") from None
    return records


def record_id(data: Any, number: int) -> Any:
    """A request record's id: its own `"id"`, else `line-N` (its 1-based line number). An id over `limits.MAX_NAME_CHARS`
    is a 422 (`iter_records` answers that record under `line-N`: the id is echoed in every answer)."""
    if isinstance(data, dict) and "id" in data:
        check_record_id(data["id"])
        return data["id"]
    return f"line-{number}"


def error_record(exc: SemifError, rid: Any) -> dict[str, Any]:
    """A record's error line: its id, the error body and the status it would have had alone."""
    return {"id": rid, **exc.to_body(), "status": exc.status_code}


def iter_records(lines: Iterable[tuple[int, str]], load: Callable[[str], Any],
                 validate: Callable[[Any], T]) -> Iterator[tuple[Any, T | SemifError]]:
    """`(id, validate(load(line)))` for each numbered line; a line that fails yields its `SemifError` instead.

    `load` parses one line (strict JSON), `validate` turns the value into a request; the id is
    read between the two, so a record that parses but is refused keeps its own id.
    """
    for number, line in lines:
        rid: Any = f"line-{number}"
        try:
            data = load(line)
            rid = record_id(data, number)
            yield rid, validate(data)
        except SemifError as exc:
            yield rid, exc


def dump_record(record: Any) -> str:
    """One record as one line, UTF-8 kept as is; `json.dumps` escapes every `\n` inside strings."""
    return json.dumps(record, ensure_ascii=False) + "\n"


def dump_records(records: Iterable[Any]) -> str:
    return "".join(dump_record(r) for r in records)


def write_records(path: Path | str, records: Iterable[Any]) -> Path:
    """Write records to `path` (parent folders created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_records(records), encoding="utf-8")
    return path
