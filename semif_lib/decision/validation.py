"""A request body refused by name before the models see it: strict JSON, values the engine cannot use, non-text parts.

Both wires (`schema.parse_request`, `openai_schema`) parse through here, so a duplicate key, a NaN, a lone
surrogate, deep nesting or an image asset is the same 422 or 400 on either, and a pydantic error becomes
one `RequestValidationError` naming its field.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from pydantic import ValidationError

from ..errors import InvalidRequestError, RequestValidationError
from ..jsonlines import decode_utf8

MAX_NESTING = 64  # JSON depth of a whole request; a structured state rarely needs 10


def _reject_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise RequestValidationError(f"duplicate JSON key {key!r}", field=key, loc=[key], kind="json_invalid")
        out[key] = value
    return out


def _reject_constant(name: str) -> Any:
    raise RequestValidationError(f"{name} is not a JSON number (RFC 8259); send a string or a finite number", field="body",
                                 kind="json_invalid")


def parse_json_bytes(body: bytes | str) -> Any:
    """Parse JSON strictly: UTF-8 only, no duplicate keys (such as a repeated option), no NaN or
    Infinity, numbers Python can convert, and nesting no deeper than `MAX_NESTING`; every failure
    is a 422 naming the body (Jev's validation shape), never a crash."""
    if isinstance(body, bytes):
        try:
            body = decode_utf8(body)
        except InvalidRequestError as exc:
            raise RequestValidationError(exc.message, field="body", kind="json_invalid") from None
    try:
        data = json.loads(body, object_pairs_hook=_reject_duplicate_keys, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise RequestValidationError(f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", field="body",
                                     loc=[exc.pos], kind="json_invalid") from exc
    except RecursionError:
        raise RequestValidationError(f"JSON nested deeper than {MAX_NESTING} levels", field="body", kind="json_invalid") from None
    except ValueError:  # an integer longer than Python's digit limit: our words, not the interpreter's advice
        raise RequestValidationError(f"malformed JSON: a number longer than {sys.get_int_max_str_digits()} digits", field="body",
                                     kind="json_invalid") from None
    check_json_value(data)
    return data


def check_json_value(data: Any) -> None:
    """Refuse what JSON parsing lets through but the engine cannot use: deep nesting, lone surrogates,
    non-finite floats (from a caller that built the dict itself). Iterative: depth cannot crash it."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if depth > MAX_NESTING:
            raise RequestValidationError(f"{path or 'body'}: JSON nested deeper than {MAX_NESTING} levels", field=path or "body")
        if isinstance(value, str):
            _check_text(value, path)
        elif isinstance(value, float) and not math.isfinite(value):
            raise RequestValidationError(f"{path or 'body'}: NaN and Infinity are not JSON numbers", field=path or "body")
        elif isinstance(value, dict):
            for key, item in value.items():
                shown = str(key).encode("utf-8", "backslashreplace").decode("utf-8")  # a bad key must not break the error body
                sub = f"{path}.{shown}" if path else shown
                _check_text(str(key), sub)
                stack.append((item, sub, depth + 1))
        elif isinstance(value, list):
            stack.extend((item, f"{path}[{k}]", depth + 1) for k, item in enumerate(value))


def _check_text(text: str, path: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        where = path or "body"
        raise RequestValidationError(f"{where}: text holds a lone surrogate (U+{ord(text[exc.start]):04X}) that UTF-8 cannot encode",
                                     field=where) from None


_UNION_TAGS = ("noul", "choice", "score", "predicate")  # Jev's question types and the OpenAI wire's
_CONTENT_MEMBERS = ("str", "dict[str,any]", "list[any]")  # pydantic names a Content union's members in `loc`


def format_validation_error(exc: ValidationError) -> RequestValidationError:
    """First pydantic error as a 422 `RequestValidationError`, with its `loc`, a dotted field path and pydantic's limit text."""
    err = exc.errors()[0]
    raw = list(err["loc"])
    if len(raw) > 2 and raw[0] == "questions" and raw[2] in _UNION_TAGS:  # the discriminator's own step
        del raw[2]
    while raw and raw[-1] in _CONTENT_MEMBERS:
        raw.pop()
    loc = [str(part) for part in raw]
    field = ".".join(loc) or "body"
    message = err["msg"].removeprefix("Value error, ")
    if err["type"] == "union_tag_invalid":
        message = "unknown question type; expected one of 'noul', 'choice', 'score'"
    elif err["type"] == "union_tag_not_found":
        message = "question needs a 'type': one of 'noul', 'choice', 'score'"
    return RequestValidationError(f"{field}: {message}", field=field, loc=raw, kind=err["type"])


TEXT_ONLY = "this engine reads text only"


def check_text_only(data: dict[str, Any]) -> None:
    """Refuse by name what Jev 1.14 clients may send that is not text, rather than answer without it: image
    `assets` (inline `data_base64`, a URL, or a multipart part) and `box` questions, each a 400 naming the part."""
    assets = data.get("assets")
    if assets:  # null, {} and [] carry nothing
        name, asset = next(iter(assets.items())) if isinstance(assets, dict) else (None, assets)
        field = "assets" if name is None else f"assets.{name}"
        carried = [key for key in ("data_base64", "url", "part") if isinstance(asset, dict) and asset.get(key)]
        how = f" ({carried[0]})" if carried else ""
        raise InvalidRequestError(f"{field}: image assets{how} are not supported: {TEXT_ONLY}; send the state as text or JSON, "
                                  "describing the image in words", field=field)
    questions = data.get("questions")
    for qid, question in (questions.items() if isinstance(questions, dict) else ()):
        if isinstance(question, dict) and question.get("type") == "box":
            raise InvalidRequestError(f"questions.{qid}: box questions locate a region of an image, and {TEXT_ONLY}; ask a noul, "
                                      "choice or score question", field=f"questions.{qid}")

