"""OpenAI Decisions: the `openai` SDK's own `client.decisions.create(...)` against a live `semif serve`.

One server (embedded SmolLM2, bearer token set) serves this module. The SDK parses every answer
type into its own models (`openai.types.Decision`); the same engine answers as on the Jev wire, so
the prefix cache reports its hits in `usage.input_tokens_details.cached_tokens`.
"""

from __future__ import annotations

import pytest

from support.fixtures_model import KEYED_API_KEY
from support.servers import ADAPTER_COMMAND, ServerProcess, free_port, running_server, server_env

pytestmark = [pytest.mark.model, pytest.mark.server]

API_KEY = KEYED_API_KEY
QUESTIONS = [
    {"type": "predicate", "instructions": "Is the customer asking for money back?", "name": "refund"},
    {"type": "choice", "instructions": "Did the lookup find the order?", "choices": [{"value": True, "description": "found"},
                                                                                    {"value": False}]},
    {"type": "choice", "instructions": "Which team should handle this?", "name": "team",
     "choices": [{"value": "Billing", "description": "payments, refunds"}, {"value": "Technical"}, {"value": "Sales"}]},
    {"type": "score", "instructions": "How frustrated is the customer?", "name": "anger",
     "levels": [{"label": "Calm"}, {"label": "Frustrated"}, {"label": "Very angry", "description": "threats"}]},
]
CONVERSATION = [
    {"role": "developer", "content": "You are a support agent."},
    {"role": "user", "content": "I was charged twice for order 4471. Refund me or I dispute it."},
    {"type": "function_call", "call_id": "call_1", "name": "lookup_order", "arguments": '{"order": 4471}'},
    {"type": "function_call_output", "call_id": "call_1", "output": '{"status": "charged twice", "amount": 40}'},
    {"role": "assistant", "content": [{"type": "output_text", "text": "I can see the double charge."}]},
]


@pytest.fixture(scope="module")
def server(keyed_server) -> ServerProcess:
    """The session's keyed `semif serve` (support.fixtures_model.keyed_server)."""
    return keyed_server


@pytest.fixture(scope="module")
def model_id(server) -> str:
    """The served model's id, as /ping (and GET /v1/models, and every answer's `model`) says it."""
    import httpx

    return httpx.get(server.url + "/ping", timeout=30).json()["model"]


@pytest.fixture(scope="module")
def client(server):
    from openai import OpenAI

    with OpenAI(base_url=server.url + "/v1", api_key=API_KEY, max_retries=0, timeout=120) as c:
        yield c


def check_answers(decision) -> None:
    from openai.types.decision import (
        AnswerAnswerResourceChoice,
        AnswerAnswerResourcePredicate,
        AnswerAnswerResourceScore,
    )

    refund, found, team, anger = decision.answers
    assert isinstance(refund, AnswerAnswerResourcePredicate) and refund.name == "refund" and 0 <= refund.probability <= 1
    assert isinstance(found, AnswerAnswerResourceChoice) and found.name is None and isinstance(found.choice, bool)
    assert [p.value for p in found.probabilities] == [True, False]
    assert isinstance(team, AnswerAnswerResourceChoice) and team.choice in {"Billing", "Technical", "Sales"}
    probs = {p.value: p.probability for p in team.probabilities}
    assert sum(probs.values()) == pytest.approx(1) and probs[team.choice] == max(probs.values())
    assert team.confidence == pytest.approx((max(probs.values()) - 1 / 3) / (1 - 1 / 3))  # Jev's reference formula
    assert team.model_extra["x_top_probability"] == pytest.approx(max(probs.values()))
    assert isinstance(anger, AnswerAnswerResourceScore) and [p.label for p in anger.probabilities] == ["Calm", "Frustrated", "Very angry"]
    assert anger.score == pytest.approx(sum(p.value * p.probability for p in anger.probabilities))


def test_text_input_every_question_type(client):
    decision = client.decisions.create(model="jev-latest", input="I was charged twice, refund me today.", questions=QUESTIONS)
    check_answers(decision)
    assert decision.usage.input_tokens > 0 and decision.usage.total_tokens == decision.usage.input_tokens


def test_messages_with_a_function_call_and_its_output_and_the_cache(client, server, model_id):
    """The conversation is the state; asked again, its prefix is a cache hit; another prompt_cache_key is a cold cache."""
    first = client.with_options(base_url=server.url + "/v1").decisions.create(
        model=model_id, input=CONVERSATION, questions=QUESTIONS, prompt_cache_key="tenant-a")
    check_answers(first)
    assert first.model == model_id
    again = client.decisions.create(model=model_id, input=CONVERSATION, questions=QUESTIONS, prompt_cache_key="tenant-a")
    other = client.decisions.create(model=model_id, input=CONVERSATION, questions=QUESTIONS, prompt_cache_key="tenant-b")
    assert again.usage.input_tokens_details.cached_tokens > 0 and again.usage.input_tokens_details.cache_write_tokens == 0
    assert other.usage.input_tokens_details.cached_tokens == 0  # prompt_cache_key partitions the prefix cache
    assert again.answers[2].probabilities[0].probability == pytest.approx(first.answers[2].probabilities[0].probability, abs=0.02)


def test_images_are_a_400_naming_them_and_validation_is_openai_shaped(client, model_id):
    import openai

    image = [{"role": "user", "content": [{"type": "input_text", "text": "see"}, {"type": "input_image", "image_url": "https://x/a.png"}]}]
    with pytest.raises(openai.BadRequestError) as info:
        client.decisions.create(model=model_id, input=image, questions=QUESTIONS)
    assert info.value.status_code == 400 and "input[0].content[1]" in info.value.message and "input_image" in info.value.message
    with pytest.raises(openai.BadRequestError) as info:
        client.decisions.create(model=model_id, input="x", questions=[{"type": "score", "instructions": "q", "levels": [{"label": "a"}]}])
    assert info.value.body["param"] == "questions.0.levels" and info.value.body["type"] == "invalid_request_error"
    with pytest.raises(openai.AuthenticationError):
        client.with_options(api_key="wrong").decisions.create(model=model_id, input="x", questions=QUESTIONS[:1])


@pytest.mark.parametrize("part", [{"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
                                  {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}])
def test_an_image_part_anywhere_is_a_400_naming_its_path(client, model_id, part):
    """In a user message, a tool's output or a question's instructions: refused by path, never answered without it."""
    import openai

    text = {"type": "input_text", "text": "The parcel:"}
    call = {"type": "function_call", "call_id": "c1", "name": "photo", "arguments": "{}"}
    asks = [
        ("input[0].content[1]", [{"role": "user", "content": [text, part]}], QUESTIONS[:1]),
        ("input[1].output[0]", [call, {"type": "function_call_output", "call_id": "c1", "output": [part]}], QUESTIONS[:1]),
        ("questions[0].instructions[1]", "The parcel arrived broken.", [{**QUESTIONS[0], "instructions": [text, part]}]),
    ]
    for path, given, questions in asks:
        with pytest.raises(openai.BadRequestError) as info:
            client.decisions.create(model=model_id, input=given, questions=questions)
        error = info.value.body
        assert info.value.status_code == 400 and error["param"] == path and error["type"] == "invalid_request_error", error
        assert error["message"].startswith(f"{path}: {part['type']} parts are not supported: this engine reads text only")


class ZstdTransport:
    """An httpx2 transport that zstd-compresses every request body on its way out, as a compressing proxy or client would."""

    def __init__(self) -> None:
        import httpx2

        self.inner = httpx2.HTTPTransport()
        self.sent: list[tuple[str, int, int]] = []  # (Content-Encoding, bytes sent, bytes before compression)

    def handle_request(self, request):
        import httpx2

        from semif_lib.serving.bodies import load_zstd

        data = request.read()
        packed = load_zstd().compress(data)
        headers = [(k, v) for k, v in request.headers.items() if k.lower() != "content-length"] + [("Content-Encoding", "zstd")]
        self.sent.append(("zstd", len(packed), len(data)))
        return self.inner.handle_request(httpx2.Request(request.method, request.url, headers=headers, content=packed,
                                                        extensions=request.extensions))

    def close(self) -> None:
        self.inner.close()


def test_the_openai_sdk_through_a_compressing_transport_gets_its_decision(server, model_id):
    import httpx2
    from openai import OpenAI

    transport = ZstdTransport()
    with OpenAI(base_url=server.url + "/v1", api_key=API_KEY, max_retries=0,
                http_client=httpx2.Client(transport=transport, timeout=120)) as c:
        decision = c.decisions.create(model=model_id, input=CONVERSATION, questions=QUESTIONS)
    check_answers(decision)
    ((coding, sent, plain),) = transport.sent
    assert coding == "zstd" and sent < plain


def test_compressed_body_refusals_take_openais_shape(server):
    """A bomb is the 413 naming SEMIF_MAX_BODY_BYTES, an unknown coding the 415 naming it, both as OpenAI errors."""
    import httpx

    from support.encodings import MIB, compress_zeros

    headers = {"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=120) as c:
        bomb = c.post("/v1/decisions", content=compress_zeros("zstd", 64 * MIB), headers={"Content-Encoding": "zstd"})
        br = c.post("/v1/decisions", content=b'{"input": "x"}', headers={"Content-Encoding": "br"})
    error = bomb.json()["error"]
    assert bomb.status_code == 413 and error["param"] == "body" and error["code"] == "payload_too_large"
    assert "SEMIF_MAX_BODY_BYTES" in error["message"] and "decodes (Content-Encoding: zstd)" in error["message"]
    error = br.json()["error"]
    assert br.status_code == 415 and error["param"] == "content-encoding" and "'br'" in error["message"]
    assert error["type"] == "invalid_request_error" and br.headers["accept-encoding"] == "zstd, gzip"


def test_invocations_takes_the_openai_body_too(server, model_id):
    import httpx

    body = {"model": model_id + ".gguf", "input": "Refund me.", "questions": QUESTIONS[:1]}  # the file name is accepted too
    r = httpx.post(server.url + "/invocations", json=body, headers={"Authorization": f"Bearer {API_KEY}"}, timeout=120)
    assert r.status_code == 200 and r.json()["answers"][0]["type"] == "predicate" and "input_tokens_details" in r.json()["usage"]


def test_a_model_this_server_does_not_serve_is_openais_404_model_not_found_on_both_routes(client, server, model_id):
    """What OpenAI answers for an unknown model, and what the SDK raises (NotFoundError); the message lists the names accepted."""
    import httpx
    import openai

    with pytest.raises(openai.NotFoundError) as info:
        client.decisions.create(model="gpt-4o", input="Refund me.", questions=QUESTIONS[:1])
    error = info.value.body
    assert info.value.status_code == 404 and error["code"] == "model_not_found" and error["param"] == "model"
    assert error["type"] == "invalid_request_error" and "'gpt-4o'" in error["message"] and repr(model_id) in error["message"]
    body = {"model": "gpt-4o", "input": "Refund me.", "questions": QUESTIONS[:1]}
    r = httpx.post(server.url + "/invocations", json=body, headers={"Authorization": f"Bearer {API_KEY}"}, timeout=120)
    assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found"


def test_an_sdk_user_finds_the_model_with_models_list_then_decides_with_it(client, model_id):
    """The OpenAI walk from nothing: `models.list()` names what this server serves, and that id is accepted."""
    listed = client.models.list()
    assert [m.id for m in listed.data] == [model_id] and listed.data[0].object == "model" and listed.data[0].created > 0
    decision = client.decisions.create(model=listed.data[0].id, input="Refund me.", questions=QUESTIONS[:1])
    assert decision.model == model_id and 0 <= decision.answers[0].probability <= 1


def test_a_calibration_file_that_abstains_makes_refusals_and_the_others_still_answer(tmp_path):
    """Abstention is the OpenAI wire's `refusal`, only where the loaded file's rule says so; sets ride as x_ fields."""
    import json

    from openai import OpenAI
    from openai.types.decision import AnswerAnswerResourcePredicate, AnswerAnswerResourceRefusal

    from semif_lib.decision.calibrator import CALIBRATION_FORMAT
    from semif_lib.decision.prompt import PROMPT_VERSION
    from semif_lib.model.locate import find_model_path, hash_file

    model = find_model_path(None)
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({
        "format": CALIBRATION_FORMAT, "model_sha256": hash_file(model), "model_file": model.name, "prompt_version": PROMPT_VERSION,
        "temperatures": {"noul": 1.0, "choice": 1.0, "score": 1.0},
        "prediction_sets": {"score": {"q": 0.5, "target_coverage": 0.5}},
        "abstention": {"choice": {"min_confidence": 1.01, "target_error": 0.0}},  # no choice is ever that sure: always refuse
    }))
    port = free_port()
    with running_server(ADAPTER_COMMAND, server_env(port, SEMIF_CALIBRATION=str(path), SEMIF_MODEL_ALIASES="semif, decider"), port) as srv:
        with OpenAI(base_url=srv.url + "/v1", api_key="unused", max_retries=0, timeout=120) as c:
            decision = c.decisions.create(model="semif", input="I was charged twice. Refund me.", questions=QUESTIONS)  # an alias
    refund, found, team, anger = decision.answers
    assert isinstance(refund, AnswerAnswerResourcePredicate)  # no rule for predicates: answered
    assert isinstance(found, AnswerAnswerResourceRefusal) and found.name is None
    assert isinstance(team, AnswerAnswerResourceRefusal) and team.name == "team" and team.model_extra["x_abstain"] is True
    assert anger.type == "score" and "x_abstain" not in anger.model_extra  # no rule for scores
    best = max(anger.probabilities, key=lambda p: p.probability).value
    assert best in anger.model_extra["x_prediction_set"] and anger.model_extra["x_prediction_coverage"] == 0.5


def test_x_batch_invariant_through_the_sdk_gives_the_same_bits_in_either_order(client, model_id):
    """The Jev wire's flag, sent by an SDK user in extra_body: the reversed list answers each question with the same bits."""
    def ask(questions):
        return client.decisions.create(
            model=model_id, input="I was charged twice, refund me today.", questions=questions, extra_body={"x_batch_invariant": True})

    forward, backward = ask(QUESTIONS), ask(QUESTIONS[::-1])
    assert forward.model_extra["x_timing"]["batch_invariant"] is True
    bits = lambda answer: [p.probability for p in answer.probabilities] if hasattr(answer, "probabilities") \
        else [answer.probability]
    assert [bits(a) for a in forward.answers] == [bits(b) for b in backward.answers[::-1]]
    from openai import BadRequestError

    with pytest.raises(BadRequestError) as info:
        client.decisions.create(model=model_id, input="x", questions=QUESTIONS, extra_body={"x_batch_invariant": "yes"})
    assert "x_batch_invariant" in str(info.value)
