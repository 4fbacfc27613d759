"""The internal request (`decision.request`): both wires resolve into it once, the server's defaults in one function, the
body decoded once and each request prepared (rendered, tokenized) once however often it is counted or admitted."""

from __future__ import annotations

import dataclasses
import json

import pytest

from semif_lib.decision.openai_schema import OpenAIRequest, parse_decisions_request
from semif_lib.decision.request import InternalRequest, ServerDefaults, resolve_request
from semif_lib.decision.schema import DecisionRequest, parse_request
from semif_lib.settings import Settings

from support.fake_engines import FakeWing, answer
from support.paths import DATA

JEV = {"state": "Ticket: my parcel arrived broken, I want my money back.",
       "questions": {"refund": {"type": "noul", "instructions": "Is a refund asked for?"},
                     "queue": {"type": "choice", "instructions": "Which queue?", "criteria": {"billing": None, "shipping": None}}}}
OPENAI = {"model": "fake", "input": JEV["state"],
          "questions": [{"type": "predicate", "instructions": "Is a refund asked for?"},
                        {"type": "choice", "instructions": "Which queue?", "choices": [{"value": "billing"}, {"value": "shipping"}]}]}
# The request's own fields the resolver fills from the server when a request leaves them unset (wire alias -> internal field).
FLAGS = {"x_batch_invariant": "batch_invariant", "x_preamble": "preamble"}
SERVER_OFF = ServerDefaults(mode="parallel", batch_invariant=False, preamble=False, debias="none", rotations=4)
SERVER_ON = ServerDefaults(mode="serial", batch_invariant=True, preamble=True, debias="rotations", rotations=3)


def _wire_flags(model: type) -> set[str]:
    """A wire model's request-level `x_` fields, by the name a client sends."""
    return {info.alias or name for name, info in model.model_fields.items() if (info.alias or name).startswith("x_")}


def test_every_request_flag_on_either_wire_is_a_field_of_the_internal_request_and_resolved():
    """The places a request field lives, listed: a wire flag the internal request lacks, or one wire lacks, fails here."""
    internal = {f.name for f in dataclasses.fields(InternalRequest)}
    assert _wire_flags(DecisionRequest) == _wire_flags(OpenAIRequest) == set(FLAGS)
    assert set(FLAGS.values()) <= internal and set(FLAGS.values()) <= {f.name for f in dataclasses.fields(ServerDefaults)}
    for wire_flag, field in FLAGS.items():
        for value in (True, False):
            jev = resolve_request(parse_request({**JEV, wire_flag: value}), SERVER_ON if not value else SERVER_OFF)
            openai, _ = parse_decisions_request({**OPENAI, wire_flag: value})
            assert getattr(jev, field) is value  # the request's own value beats the server's
            assert getattr(resolve_request(openai, SERVER_ON if not value else SERVER_OFF), field) is value
        for server in (SERVER_OFF, SERVER_ON):  # unset: the server's
            assert getattr(resolve_request(parse_request(JEV), server), field) is getattr(server, field)


def test_the_resolver_fills_mode_debias_rotations_and_keeps_the_openai_context():
    jev = resolve_request(parse_request(JEV), SERVER_ON)
    assert jev.mode == "serial" and resolve_request(parse_request(JEV), SERVER_ON, "fresh").mode == "fresh"
    assert (jev.questions["queue"].debias, jev.questions["queue"].rotations) == ("rotations", 3)
    own = resolve_request(parse_request({**JEV, "questions": {"queue": {**JEV["questions"]["queue"], "x_debias": "none"}}}), SERVER_ON)
    assert own.questions["queue"].debias == "none" and own.questions["queue"].rotations == 3
    conversation = [{"role": "user", "content": "My parcel arrived broken."}]
    wire, _ = parse_decisions_request({**OPENAI, "input": conversation, "prompt_cache_key": "tenant-7"})
    resolved = resolve_request(wire, SERVER_OFF)
    assert resolved.cache_key == "tenant-7" and [turn["content"] for turn in resolved.conversation] == ["My parcel arrived broken."]
    with pytest.raises(Exception, match="mode must be one of") as refused:
        resolve_request(parse_request(JEV), SERVER_OFF, "warp")
    assert refused.value.status_code == 400 and refused.value.field == "mode"


def test_a_request_is_prepared_once_per_preparer_and_a_stage_anew():
    request = resolve_request(parse_request(JEV), SERVER_OFF)
    calls: list[object] = []

    def prepare(r: InternalRequest) -> object:
        calls.append(r)
        return object()

    first, second = object(), object()
    prep = request.prepared_by(first, prepare)
    assert request.prepared_by(first, prepare) is prep and len(calls) == 1  # counted, admitted, scored: one tokenization
    assert request.with_mode("fresh").prepared_by(first, prepare) is prep  # the mode does not change the prompt
    assert request.prepared_by(second, prepare) is not prep and len(calls) == 2  # another model's tokenizer prepares its own
    assert request.with_questions({"refund": request.questions["refund"]}).prepared_by(first, prepare) is not prep


def test_the_engine_scores_only_the_internal_request():
    from semif_lib.decision.engine import DecisionEngine

    engine = DecisionEngine.__new__(DecisionEngine)  # no model: the type check comes first
    for body in (JEV, json.dumps(JEV), parse_request(JEV)):
        with pytest.raises(TypeError, match="engine.ask"):
            engine.score(body)


def test_a_body_is_decoded_once_and_resolved_once_on_both_wires(monkeypatch):
    """Through the app, a session's questions-only request included: one JSON decode per body, one resolve per request."""
    from fastapi.testclient import TestClient

    from semif_lib.contract import NEW_SESSION, NEW_SESSION_HEADER, SESSION_HEADER
    from semif_lib.decision import validation
    from semif_lib.serving import routes, wire
    from semif_lib.serving.app import create_app

    seen: list[InternalRequest] = []

    class Answering(FakeWing):
        def score(self, request):
            seen.append(request)
            return answer(request)

    decodes: list[bytes] = []
    resolves: list[DecisionRequest] = []
    real_decode, real_resolve = validation.parse_json_bytes, routes.resolve_request
    monkeypatch.setattr(wire, "parse_json_bytes", lambda body: decodes.append(body) or real_decode(body))
    monkeypatch.setattr(routes, "resolve_request", lambda r, *a: resolves.append(r) or real_resolve(r, *a))
    request = json.loads((DATA / "examples.jsonl").read_text().splitlines()[0])
    settings = Settings(_env_file=None, stateful_sessions=True, batch_invariant=True)
    with TestClient(create_app(settings, engine_factory=lambda _: Answering())) as client:
        session = client.post("/invocations", json={"requestType": NEW_SESSION}).headers[NEW_SESSION_HEADER].split(";")[0]
        decodes.clear()
        for path, body in (("/invocations", request), ("/invocations", {"questions": request["questions"]}),
                           ("/v1/decisions", {**OPENAI, "questions": OPENAI["questions"][:1]})):  # the double answers yes/no
            response = client.post(path, json=body, headers={SESSION_HEADER: session})
            assert response.status_code == 200, response.text
    assert len(decodes) == 3 and len(resolves) == 3 and len(seen) == 3
    assert all(isinstance(r, InternalRequest) and r.batch_invariant and r.mode == settings.mode for r in seen)
    assert seen[1].state == request["state"]  # the session's state filled in from the decoded value


def test_counting_admitting_and_scoring_a_request_prepare_it_once(engine, monkeypatch):
    """A session's request in a body of several is counted (the token budget), admitted (its hold) and scored: one
    rendering and tokenization, on the real tokenizer."""
    calls: list[InternalRequest] = []
    real = engine.preparer.prepare
    monkeypatch.setattr(engine.preparer, "prepare", lambda r: calls.append(r) or real(r))
    request = engine.resolve(JEV)
    tokens = engine.count_prompt_tokens(request)
    assert set(engine.admit_session([request], "s-once", 100_000)) == {0}
    response = engine.score(request)
    assert len(calls) == 1 and response.usage.input_tokens == tokens
    engine.check_invariants(idle=True)
