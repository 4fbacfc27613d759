"""JSON Lines, read and written one way everywhere: records split on `\n` only.

`str.splitlines()` also breaks on U+2028, U+2029, U+0085 and a few control characters, which
may sit unescaped inside a JSON string (the adapter writes with `ensure_ascii=False`), so a
reader built on it cuts a record in two. Every reader and writer in the project goes through
this module: the adapter's request bodies and responses, `semif score`, `semif eval`, the
benchmark workload and the workshop's local Batch Transform stand-in.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Iterable, Iterator

from .errors import InvalidRequestError

__all__ = ["dump_record", "dump_records", "read_lines", "read_records", "split_lines", "write_records"]


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
        text = sys.stdin.read() if str(path) == "-" else Path(path).read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise InvalidRequestError(f"{path}: no such file", field="input") from None
    except UnicodeDecodeError as exc:
        raise InvalidRequestError(f"{path}: not UTF-8 text (byte {exc.start})", field="input") from None
    except OSError as exc:
        raise InvalidRequestError(f"{path}: cannot read it ({exc.strerror})", field="input") from None
    return list(split_lines(text))


def read_records(path: Path | str) -> list[Any]:
    """Every record of a JSON Lines file, parsed; a bad line is an `InvalidRequestError` naming the file and line."""
    records = []
    for number, line in read_lines(path):
        try:
            records.append(json.loads(line))
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, over-long integers, deep nesting
            raise InvalidRequestError(f"{path}:{number}: not valid JSON ({getattr(exc, 'msg', None) or type(exc).__name__})",
                                      field="input") from None
    return records


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
