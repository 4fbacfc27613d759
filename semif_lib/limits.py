"""Work limits and the one way a request over one is refused: 413 `payload_too_large` naming the limit.

Each limit is a `Settings` field (`max_questions` is `SEMIF_MAX_QUESTIONS`); its default and its
hard ceiling (the field's `le` bound) live there and nowhere else. Two places check them, and
both build their message here:

- the request schema (`decision.schema`), which knows no settings, refuses what is over the
  hard ceiling (`limit=None`), so that 300 questions are a 413 before any question is validated;
- request preparation refuses what is over the configured value (`Settings.max_questions`):
  `check_question_counts(request.questions, max_questions=s.max_questions, max_options=s.max_options)`.

`refuse_limit(setting, count, limit=None, *, field, subject=None, detail=None) -> PayloadTooLargeError`
builds the error (the caller raises it), e.g.
`raise refuse_limit("max_branch_tokens", 20000, s.max_branch_tokens, field="questions")`:

    the questions need 20000 tokens after the shared prefix; the limit is 16384 (SEMIF_MAX_BRANCH_TOKENS):
    fewer questions or options, or slot readout

A JSON Lines body's work is bounded the same way: its records (`max_records`, counted before any is parsed) and the
prompt tokens they need together (`max_submission_tokens`, counted before any is decoded). Names are bounded by one
fixed `MAX_NAME_CHARS`: over it is a 422 naming the field (`check_name_lengths`, pydantic's `max_length`), the name
itself never echoed.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from .errors import PayloadTooLargeError, RequestValidationError
from .settings import Settings, env_names

__all__ = ["MAX_NAME_CHARS", "check_limit", "check_name_lengths", "check_question_counts", "check_record_id", "hard_ceiling",
           "refuse_limit", "setting_variable"]

# What is counted, as the message's opening words ({count} is the request's amount).
PHRASES: dict[str, str] = {
    "max_questions": "{count} questions in one request",
    "max_options": "{count} options",
    "max_branch_tokens": "the questions need {count} tokens after the shared prefix",
    "max_body_bytes": "body is {count} bytes",
    "n_ctx": "the prompt needs {count} tokens",
    "max_records": "{count} JSON Lines records in one body",
    "max_submission_tokens": "the body's records need more than {count} prompt tokens",
}
UNITS: dict[str, str] = {"max_body_bytes": " bytes", "n_ctx": " tokens of context", "max_submission_tokens": " tokens"}
HINTS: dict[str, str] = {
    "max_branch_tokens": "fewer questions or options, or slot readout",
    "max_body_bytes": "SageMaker's real-time payload limit; send fewer requests per body",
    "n_ctx": "a shorter state or shorter questions",
    "max_records": "send fewer records per body (Batch Transform: a smaller MaxPayloadInMB)",
    "max_submission_tokens": "send fewer or shorter records per body (Batch Transform: a smaller MaxPayloadInMB)",
}
# Any name a request gives (question ids, option names and values, score labels, a record's id, `model`, OpenAI's
# `prompt_cache_key`, tool call ids and names): a key, never content, so a fixed bound (SageMaker's session ids have the same).
MAX_NAME_CHARS = 256


def setting_variable(setting: str) -> str:
    """The environment variable of the `Settings` field `setting` (`max_records`: SEMIF_MAX_RECORDS), as its field names it."""
    return env_names()[setting]


def hard_ceiling(setting: str) -> int | None:
    """The highest value the `Settings` field `setting` accepts (its `le` bound), or None if unbounded."""
    for bound in Settings.model_fields[setting].metadata:
        if getattr(bound, "le", None) is not None:
            return int(bound.le)
    return None


def refuse_limit(setting: str, count: int | str, limit: int | None = None, *, field: str,
                 subject: str | None = None, detail: str | None = None) -> PayloadTooLargeError:
    """The 413 for `count` over the limit `setting` (a `Settings` field); the caller raises it.

    `limit` is the configured value (None: the field's hard ceiling). `subject` goes first
    (`questions.q7`), `detail` replaces the counted phrase (the context check's token sum). The
    message names the variable, and its ceiling when it could be raised.
    """
    ceiling = hard_ceiling(setting)
    limit = ceiling if limit is None else limit
    if limit is None:
        raise ValueError(f"{setting} has no hard ceiling; pass the configured limit")
    variable = setting_variable(setting)
    if ceiling is not None:
        variable += ", its maximum" if limit >= ceiling else f", at most {ceiling}"
    phrase = detail if detail is not None else PHRASES[setting].format(count=count)
    message = f"{subject + ': ' if subject else ''}{phrase}; the limit is {limit}{UNITS.get(setting, '')} ({variable})"
    if setting in HINTS:
        message += f": {HINTS[setting]}"
    return PayloadTooLargeError(message, field=field)


def check_limit(setting: str, count: int, limit: int | None = None, *, field: str, subject: str | None = None) -> None:
    """Raise `refuse_limit(...)` when `count` is over `limit` (None: the setting's hard ceiling)."""
    bound = hard_ceiling(setting) if limit is None else limit
    if bound is not None and count > bound:
        raise refuse_limit(setting, count, limit, field=field, subject=subject)


def check_question_counts(questions: Mapping[str, Any], *, max_questions: int | None = None,
                          max_options: int | None = None) -> None:
    """How many questions, and options per choice question, one request may ask (None: the hard ceilings).

    `questions` is the request's mapping, validated (`DecisionRequest.questions`) or still raw
    JSON (the schema checks before validating, so an oversized request costs nothing).
    """
    check_limit("max_questions", len(questions), max_questions, field="questions")
    for qid, question in questions.items():
        kind, criteria = _kind_and_criteria(question)
        if kind == "choice" and isinstance(criteria, (dict, list)):
            check_limit("max_options", len(criteria), max_options, field=f"questions.{qid}.criteria", subject=f"questions.{qid}")


def _kind_and_criteria(question: Any) -> tuple[Any, Any]:
    if isinstance(question, Mapping):
        return question.get("type"), question.get("criteria")
    return getattr(question, "type", None), getattr(question, "criteria", None)


def check_name_lengths(names: Iterable[Any], *, field: str, what: str) -> None:
    """422 naming `field` when one of `names` (question ids, option names) is longer than `MAX_NAME_CHARS`; the
    name itself is not echoed (it may be megabytes)."""
    for name in names:
        if isinstance(name, str) and len(name) > MAX_NAME_CHARS:
            raise RequestValidationError(f"{field}: {what} is {len(name)} characters; the limit is {MAX_NAME_CHARS}",
                                         field=field, kind="string_too_long")


def check_record_id(value: Any) -> None:
    """A request's `id`, echoed in its answer: at most `MAX_NAME_CHARS` as JSON (a string, a number), else a 422 naming `id`."""
    size = len(value) if isinstance(value, str) else len(json.dumps(value, ensure_ascii=False, default=str))
    if size > MAX_NAME_CHARS:
        raise RequestValidationError(f"id: {size} characters; the limit is {MAX_NAME_CHARS}", field="id", kind="string_too_long")
