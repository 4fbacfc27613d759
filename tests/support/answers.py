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


def assert_error(response, status: int, field: str | None = None) -> dict:
    """An httpx response is the JSON error body the adapter answers with: `{"error": {type, message, field}}`."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert set(error) == {"type", "message", "field"} and error["message"]
    if field is not None:
        assert error["field"] == field, error
    return error
