"""The body Strands Agents' `SageMakerDecisionModel` sends, to `/invocations` of a real `semif serve`, read as it reads it.

Strands (`strands.models.sagemaker_decision`, with `strands.models.typesafe` beside it; read 2026-12-05) builds
`{"state", "model", "questions"}` with `model` defaulting to `DEFAULT_MODEL_ID = "jev-latest"` and each question as
`_to_wire` writes it (choice criteria a mapping whose descriptions may be null; noul criteria `true`/`false`; score
criteria a list), serializes it with `json.dumps(body, ensure_ascii=False, default=str)` and sends it through
`InvokeEndpoint(ContentType="application/json", Accept="application/json")`, which SageMaker hands to the container's
`POST /invocations`. It takes the answer body as valid when `answers` is an object, validates every answer with the
official SDK's `typesafe_sdk.Answer` (`TypeAdapter(Answer).validate_json`, JSON mode), and reads `usage.input_tokens`,
`usage.output_tokens` and `model`. The server here runs without SEMIF_API_KEY, as behind SageMaker (IAM authenticates).
"""

from __future__ import annotations

import json
from typing import Iterator

import pytest

from support.servers import SEMIF_SERVE, ServerProcess, free_port, running_server, server_env

pytestmark = [pytest.mark.model, pytest.mark.server]

STRANDS_DEFAULT_MODEL = "jev-latest"  # strands.models.typesafe.DEFAULT_MODEL_ID
# The questions Strands' own test of this wire asserts, as `_to_wire` writes them (a Choice, a YesNo, a Score).
QUESTIONS = {
    "dept": {"type": "choice", "instructions": "Which team?", "criteria": {"billing": "Payments", "technical": None}},
    "urgent": {"type": "noul", "instructions": "Urgent?", "criteria": {"true": "Time pressure", "false": "Can wait"}},
    "anger": {"type": "score", "instructions": "How angry?", "criteria": ["calm", "upset", "furious"]},
}


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    port = free_port()
    with running_server(SEMIF_SERVE, server_env(port), port) as srv:
        yield srv


def strands_body(state: object) -> str:
    """`SageMakerDecisionModel._ask`'s body, serialized as it serializes it."""
    body = {"state": state, "model": STRANDS_DEFAULT_MODEL, "questions": QUESTIONS}
    return json.dumps(body, ensure_ascii=False, default=str)


def read_as_strands(raw: bytes) -> dict:
    """`SageMakerDecisionModel._invoke` and `_response`: an `answers` object, each answer valid for the official SDK."""
    from pydantic import TypeAdapter
    from typesafe_sdk import Answer

    payload = json.loads(raw)
    assert isinstance(payload, dict) and isinstance(payload.get("answers"), dict), payload
    adapter = TypeAdapter(Answer)
    answers = {qid: adapter.validate_json(json.dumps(answer)) for qid, answer in payload["answers"].items()}
    usage = payload.get("usage") or {}
    assert int(usage.get("input_tokens") or 0) > 0 and int(usage.get("output_tokens") or 0) >= 0
    assert isinstance(payload.get("model"), str) and payload["model"]
    return answers


@pytest.mark.parametrize("state", [{"ticket": "charged twice"}, "Kunde: zweimal belastet – bitte prüfen, sonst Rückbuchung."],
                         ids=["json-state", "text-state"])
def test_the_strands_body_is_answered_on_invocations_and_validates_with_the_sdks_answer(server, state):
    import httpx
    from typesafe_sdk import ChoiceAnswer, NoulAnswer, ScoreAnswer

    response = httpx.post(f"{server.url}/invocations", content=strands_body(state).encode(), timeout=120,
                          headers={"Content-Type": "application/json", "Accept": "application/json"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    answers = read_as_strands(response.content)
    assert set(answers) == set(QUESTIONS)
    dept, urgent, anger = answers["dept"], answers["urgent"], answers["anger"]
    assert isinstance(dept, ChoiceAnswer) and dept.choice in {"billing", "technical"}
    assert set(dept.probabilities) == {"billing", "technical"} and sum(dept.probabilities.values()) == pytest.approx(1, abs=1e-6)
    assert dept.probabilities[dept.choice] == max(dept.probabilities.values())
    assert isinstance(urgent, NoulAnswer) and 0 <= urgent.noul <= 1
    assert isinstance(anger, ScoreAnswer) and set(anger.probabilities) == {0, 1, 2} and anger.legend[2] == "furious"
    assert 0 <= anger.score <= 2 and sum(anger.probabilities.values()) == pytest.approx(1, abs=1e-6)
