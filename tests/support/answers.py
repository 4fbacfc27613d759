"""Comparing decision responses, and the shape of an error answer."""

from __future__ import annotations

# Paths that disagree by more than this are a bug; below it, quantized CPU noise (LLAMA_CPP_NOTES.md).
MAX_ABS_DIFF = 0.10
MEAN_ABS_DIFF = 0.03


def flatten_probabilities(response) -> dict[tuple[str, str], float]:
    """{(qid, option): p} over every answer of a response, for comparing paths."""
    out = {}
    for qid, answer in response.answers.items():
        for key, p in answer.probabilities.items():
            out[(qid, key)] = p
    return out


def flatten_wire_probabilities(body: dict) -> dict[tuple[str, str], float]:
    """The same from a response's JSON, read by the wire's own model (a noul's are the extension `x_probabilities`)."""
    from semif_lib.decision.responses import DecisionResponse

    return flatten_probabilities(DecisionResponse.model_validate(body))


def assert_error(response, status: int, field: str | None = None) -> dict:
    """An httpx response is one of Jev's error bodies: `{"detail": {error_type, message, field}}`, or for a
    validation failure (422) `{"detail": [{loc: ["body", ...], msg, type, field}]}`; returns `{type, message, field}`."""
    from semif_lib.errors import read_error

    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    detail = response.json()["detail"]
    if status == 422:
        assert isinstance(detail, list) and detail[0]["loc"][0] == "body" and set(detail[0]) == {"loc", "msg", "type", "field"}
    else:
        assert set(detail) == {"error_type", "message", "field"}, detail
    error = read_error(response.json())
    assert error["message"]
    if field is not None:
        assert error["field"] == field, error
    return error
