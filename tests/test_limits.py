"""Work limits: one status (413 `payload_too_large`) and one message naming the `SEMIF_*` variable,
whether the schema refuses a request over a limit's hard ceiling or the engine one over the
configured value. Model-free."""

from __future__ import annotations

import json

import pytest

from semif_lib.decision.schema import parse_request
from semif_lib.errors import PayloadTooLargeError, read_error
from semif_lib.limits import check_question_counts, hard_ceiling, refuse_limit
from semif_lib.settings import Settings

from support.fake_engines import FakeWing


def noul_questions(count: int) -> dict:
    return {f"q{i}": {"type": "noul", "instructions": f"Is fact {i} true?"} for i in range(count)}


def request_with(questions: dict) -> dict:
    return {"state": "s", "questions": questions}


MANY_OPTIONS = {"q": {"type": "choice", "instructions": "Which?", "criteria": {f"o{i}": None for i in range(256)}}}


def test_the_ceilings_are_the_settings_bounds():
    assert hard_ceiling("max_questions") == 256 and hard_ceiling("max_options") == 255
    assert hard_ceiling("max_branch_tokens") is None
    assert Settings().max_questions < hard_ceiling("max_questions")


@pytest.mark.parametrize("as_bytes", [False, True])
def test_300_questions_are_a_413_naming_the_limit_not_a_400(as_bytes):
    data = request_with(noul_questions(300))
    with pytest.raises(PayloadTooLargeError) as info:
        parse_request(json.dumps(data).encode() if as_bytes else data)
    assert info.value.status_code == 413 and info.value.error_type == "payload_too_large"
    assert info.value.field == "questions"
    assert "300 questions" in info.value.message and "SEMIF_MAX_QUESTIONS" in info.value.message


def test_256_options_are_a_413_naming_the_question_and_the_limit():
    with pytest.raises(PayloadTooLargeError) as info:
        parse_request(request_with(MANY_OPTIONS))
    assert info.value.field == "questions.q.criteria"
    assert info.value.message.startswith("questions.q: 256 options") and "SEMIF_MAX_OPTIONS" in info.value.message


def test_the_schema_and_the_configured_check_give_the_same_message():
    """200 questions pass the schema (under the ceiling) and are refused at the configured 128, in the same words."""
    request = parse_request(request_with(noul_questions(200)))
    with pytest.raises(PayloadTooLargeError) as configured:
        check_question_counts(request.questions, max_questions=128, max_options=255)
    with pytest.raises(PayloadTooLargeError) as ceiling:
        parse_request(request_with(noul_questions(300)))
    assert configured.value.message == "200 questions in one request; the limit is 128 (SEMIF_MAX_QUESTIONS, at most 256)"
    assert ceiling.value.message == "300 questions in one request; the limit is 256 (SEMIF_MAX_QUESTIONS, its maximum)"
    assert configured.value.field == ceiling.value.field == "questions"


def test_a_limit_without_a_ceiling_says_what_to_do():
    error = refuse_limit("max_branch_tokens", 20000, 16384, field="questions")
    assert error.status_code == 413
    assert error.message == ("the questions need 20000 tokens after the shared prefix; the limit is 16384 "
                             "(SEMIF_MAX_BRANCH_TOKENS): fewer questions or options, or slot readout")
    with pytest.raises(ValueError):
        refuse_limit("max_branch_tokens", 20000, field="questions")  # no ceiling to fall back on


class AnsweringEngine(FakeWing):
    def score(self, request):
        from support.fake_engines import answer

        return answer(request)

    def close(self) -> None:
        pass


def test_over_http_300_questions_are_a_413_for_json_and_for_each_json_lines_record():
    from fastapi.testclient import TestClient

    from semif_lib.serving.app import create_app

    app = create_app(Settings(accept_jsonlines=True), engine_factory=lambda _: AnsweringEngine())
    with TestClient(app) as client:
        response = client.post("/invocations", json=request_with(noul_questions(300)))
        assert response.status_code == 413, response.text
        error = read_error(response.json())
        assert error["type"] == "payload_too_large" and error["field"] == "questions" and "SEMIF_MAX_QUESTIONS" in error["message"]
        lines = "\n".join(json.dumps({"id": rid, **body}) for rid, body in
                          (("big", request_with(noul_questions(300))), ("small", request_with(noul_questions(1)))))
        response = client.post("/invocations", content=lines, headers={"Content-Type": "application/jsonlines"})
        assert response.status_code == 200, response.text
        big, small = (json.loads(line) for line in response.text.splitlines())
        assert big["id"] == "big" and big["status"] == 413 and "SEMIF_MAX_QUESTIONS" in read_error(big)["message"]
        assert small["id"] == "small" and "answers" in small


def test_a_body_over_its_limit_names_semif_max_body_bytes():
    import asyncio

    from semif_lib.serving.bodies import read_limited_body

    class Body:
        headers = {"content-length": "5000"}

        async def stream(self):
            yield b"x" * 5000

    with pytest.raises(PayloadTooLargeError) as info:
        asyncio.run(read_limited_body(Body(), 1024))
    assert info.value.field == "body"
    assert info.value.message.startswith("body is 5000 bytes; the limit is 1024 bytes (SEMIF_MAX_BODY_BYTES)")
