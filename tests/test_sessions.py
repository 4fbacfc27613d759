"""SageMaker stateful sessions in the adapter (`serving.sessions`): the wire of AWS's container standard, the sessions' holds
on the KV store, their limits, and the KV books after every close, expiry and error."""

from __future__ import annotations

import json
import re

import pytest
from test_kvstore import make_store, use

from semif_lib.contract import CLOSED_SESSION_HEADER, NEW_SESSION, NEW_SESSION_HEADER, SESSION_HEADER
from semif_lib.errors import SessionError, SessionLimitError, read_error
from semif_lib.measurement.answers import read_probabilities
from semif_lib.serving.sessions import SessionBook, read_session_request
from semif_lib.settings import Settings

from support.answers import MAX_ABS_DIFF
from support.fake_engines import FakeWing, answer
from support.paths import DATA

NEW_SESSION_BODY = {"requestType": NEW_SESSION}
CLOSE_BODY = {"requestType": "CLOSE"}
# botocore's sagemaker-runtime NewSessionResponseHeader: what InvokeEndpoint hands the client as NewSessionId
NEW_SESSION_VALUE = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9])*;\sExpires=[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$")


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def book(**overrides) -> tuple[SessionBook, Clock]:
    clock = Clock()
    return SessionBook(Settings(_env_file=None, stateful_sessions=True, **overrides), clock=clock), clock


# ----------------------------------------------------------------- the wire, without a model
def test_a_session_request_is_exactly_the_standards_body():
    assert read_session_request(NEW_SESSION_BODY) == NEW_SESSION
    assert read_session_request({"requestType": "CLOSE"}) == "CLOSE"
    assert read_session_request({"state": "requestType is a word here", "questions": {}}) is None
    assert read_session_request(["requestType"]) is None
    for body in ({"requestType": "OPEN"}, {"requestType": "CLOSE", "state": "x"}):
        with pytest.raises(SessionError) as refused:
            read_session_request(body)
        assert refused.value.status_code == 400 and refused.value.field == "requestType"


def test_the_book_opens_checks_closes_and_expires_sessions_naming_the_header():
    sessions, clock = book(sessions_expiration_s=60, max_sessions=2)
    first, expires = sessions.open()
    assert expires == clock.now + 60 and sessions.check(first) == first
    assert sessions.check(None) is None and sessions.check(NEW_SESSION) is None  # SessionId=NEW_SESSION on a decision: none
    second, _ = sessions.open()
    with pytest.raises(SessionLimitError, match="SEMIF_MAX_SESSIONS") as full:
        sessions.open()
    assert full.value.status_code == 429
    assert sessions.close(second) == second
    clock.now += 61
    assert sessions.sweep() == [first] and len(sessions) == 0
    for sid, said in ((first, "expired at"), (second, "was closed"), ("never-seen", "is not open"), ("bad id!", "is not a session id")):
        with pytest.raises(SessionError, match=said) as refused:
            sessions.check(sid)
        assert refused.value.status_code == 400 and refused.value.field == SESSION_HEADER
    with pytest.raises(SessionError, match=SESSION_HEADER):
        sessions.close(None)


def test_sessions_off_refuse_the_header_and_the_body_as_the_standard_does():
    from fastapi.testclient import TestClient

    from semif_lib.serving.app import create_app

    class Answering(FakeWing):
        def score(self, request):
            return answer(request)

    request = json.loads((DATA / "examples.jsonl").read_text().splitlines()[0])
    with TestClient(create_app(Settings(_env_file=None), engine_factory=lambda _: Answering())) as client:
        assert client.post("/invocations", json=request).status_code == 200
        for body, headers, field in ((NEW_SESSION_BODY, {}, "requestType"), (request, {SESSION_HEADER: "abc"}, SESSION_HEADER)):
            response = client.post("/invocations", json=body, headers=headers)
            error = read_error(response.json())
            assert response.status_code == 400 and error["field"] == field, response.text
            assert error["type"] == "invalid_session" and "SAGEMAKER_ENABLE_STATEFUL_SESSIONS" in error["message"]


def test_the_sagemaker_variables_are_read_by_their_own_names(monkeypatch):
    from semif_lib.settings import env_names, load_settings

    monkeypatch.setenv("SAGEMAKER_ENABLE_STATEFUL_SESSIONS", "true")
    monkeypatch.setenv("SAGEMAKER_SESSIONS_EXPIRATION", "90")
    settings = load_settings()
    assert settings.stateful_sessions and settings.sessions_expiration_s == 90
    assert env_names()["sessions_expiration_s"] == "SAGEMAKER_SESSIONS_EXPIRATION" and env_names()["max_sessions"] == "SEMIF_MAX_SESSIONS"
    monkeypatch.setenv("SAGEMAKER_SESSIONS_EXPIRATION", "0")
    with pytest.raises(Exception, match="SAGEMAKER_SESSIONS_EXPIRATION"):
        load_settings()


def test_a_held_prefix_survives_the_budget_until_its_session_lets_go():
    """The LRU passes a held prefix over (spilled, not evicted); released, the next request's budget evicts it."""
    store, _ = make_store(spill=True, budget=80)
    held = list(range(0, 30))
    use(store, held)
    assert store.hold(held, None, "s1") and store.cache.held_tokens() == 30
    for k in range(1, 4):  # 90 tokens of other states through an 80-token budget
        use(store, list(range(1000 * k, 1000 * k + 30)))
    assert use(store, held) == 30  # still cached
    assert store.release_holder("s1") == 1 and store.cache.held_tokens() == 0
    for k in range(4, 6):
        use(store, list(range(1000 * k, 1000 * k + 30)))
    assert use(store, held) == 0  # an ordinary LRU entry again: it went
    store.check_invariants(idle=True)


def test_without_spilling_kv_cells_come_before_a_hold():
    """With SEMIF_CACHE_SPILL=false a held prefix stays resident, but a request that needs its cells still gets them."""
    store, _ = make_store(spill=False, budget=200, n_ctx=64, n_seq_max=4)
    held = list(range(0, 30))
    use(store, held)
    store.hold(held, None, "s1")
    use(store, list(range(500, 540)))  # 41 cells: only with the held prefix's cells
    store.check_invariants(idle=True)
    assert store.release_holder("s1") == 0  # it was evicted for them, and its hold with it


# ----------------------------------------------------------------- the adapter on the real model, in this process
class SharedEngine:
    """The session's engine for an app's worker, which closes its engine when the app stops: this one stays open."""

    def __init__(self, engine) -> None:
        self._engine = engine

    def __getattr__(self, name):
        return getattr(self._engine, name)

    def close(self) -> None:
        pass


@pytest.fixture
def session_app(engine):
    """An app factory on the shared engine with sessions on; whatever a test leaves held is released, the books checked."""
    from fastapi.testclient import TestClient

    from semif_lib.serving.app import create_app

    def make(**overrides):
        settings = Settings(_env_file=None, stateful_sessions=True, check_invariants=True, **overrides)
        return TestClient(create_app(settings, engine_factory=lambda _: SharedEngine(engine)))

    yield make
    for entry in engine.cache.entries():
        for holder in list(entry.holders):
            engine.store.release_holder(holder)
    engine.check_invariants(idle=True)


@pytest.fixture
def state_request():
    request = json.loads((DATA / "examples.jsonl").read_text().splitlines()[0])
    request["state"] += " (sessions test)"  # a state no other test caches
    return request


def open_session(client) -> str:
    response = client.post("/invocations", json=NEW_SESSION_BODY, headers={SESSION_HEADER: NEW_SESSION})
    assert response.status_code == 200, response.text
    value = response.headers[NEW_SESSION_HEADER]
    assert NEW_SESSION_VALUE.match(value), value
    return value.split(";")[0]


def holders(engine) -> set[str]:
    return {holder for entry in engine.cache.entries() for holder in entry.holders}


def test_a_session_keeps_its_state_cached_until_it_closes(session_app, engine, state_request):
    with session_app() as client:
        session = open_session(client)
        cached = []
        for _ in range(2):
            response = client.post("/invocations", json=state_request, headers={SESSION_HEADER: session})
            assert response.status_code == 200, response.text
            cached.append((response.json()["usage"]["x_cached_tokens"], response.json()["x_timing"]["prefix_tokens"]))
        # the first prefills the state (only the chat template's opening may be cached already, from any earlier request on
        # this engine), the second reads the whole prefix from the session's cache
        assert cached[0][0] < cached[0][1] and cached[1][0] == cached[1][1] > 0
        assert holders(engine) == {session}
        engine.check_invariants(idle=True)
        closed = client.post("/invocations", json=CLOSE_BODY, headers={SESSION_HEADER: session})
        assert closed.status_code == 200 and closed.headers[CLOSED_SESSION_HEADER] == session
        assert holders(engine) == set()
        engine.check_invariants(idle=True)
        again = client.post("/invocations", json=state_request, headers={SESSION_HEADER: session})
        assert again.status_code == 400 and "was closed" in read_error(again.json())["message"]


def test_an_expired_session_is_a_400_and_its_state_is_let_go(session_app, engine, state_request):
    with session_app(sessions_expiration_s=60) as client:
        session = open_session(client)
        assert client.post("/invocations", json=state_request, headers={SESSION_HEADER: session}).status_code == 200
        assert holders(engine) == {session}
        client.app.state.worker.sessions.clock = lambda: 4_000_000_000.0  # long after its Expires
        response = client.post("/invocations", json=state_request, headers={SESSION_HEADER: session})
        error = read_error(response.json())
        assert response.status_code == 400 and error["field"] == SESSION_HEADER and "expired at" in error["message"]
        assert client.post("/invocations", json=state_request).status_code == 200  # queued after the release
        assert holders(engine) == set()
        engine.check_invariants(idle=True)


def test_the_sessions_limits_are_429s_naming_them_and_hold_nothing(session_app, engine, state_request):
    with session_app(max_sessions=1, session_tokens=10) as client:
        session = open_session(client)
        full = client.post("/invocations", json=NEW_SESSION_BODY)
        assert full.status_code == 429 and "SEMIF_MAX_SESSIONS" in read_error(full.json())["message"]
        response = client.post("/invocations", json=state_request, headers={SESSION_HEADER: session})
        error = read_error(response.json())
        assert response.status_code == 429 and error["type"] == "session_limit" and "SEMIF_SESSION_TOKENS" in error["message"]
        too_many = {**state_request, "questions": {f"q{i}": {"type": "noul", "instructions": "Yes?"} for i in range(129)}}
        refused = client.post("/invocations", json=too_many, headers={SESSION_HEADER: session})
        assert refused.status_code == 413, refused.text
        assert holders(engine) == set()
        engine.check_invariants(idle=True)


def test_a_session_request_may_send_only_questions_on_both_wires(session_app, engine, state_request):
    """After one request with its state, the session's questions-only requests read that state, cached, on Jev's wire and
    on OpenAI's; a session with no state yet on a wire is a 400 naming the key it lacks."""
    questions_only = {"questions": state_request["questions"]}
    openai_request = {"model": "jev-latest", "input": state_request["state"] + " (openai)",
                      "questions": [{"type": "predicate", "instructions": "Is the customer asking for a refund?"}]}
    with session_app() as client:
        session = open_session(client)
        headers = {SESSION_HEADER: session}
        missing = client.post("/invocations", json=questions_only, headers=headers)
        assert missing.status_code == 400 and read_error(missing.json())["field"] == "state"
        full = client.post("/invocations", json=state_request, headers=headers).json()
        short = client.post("/invocations", json=questions_only, headers=headers)
        assert short.status_code == 200, short.text
        assert short.json()["usage"]["x_cached_tokens"] == short.json()["x_timing"]["prefix_tokens"] > 0
        for qid, answer in short.json()["answers"].items():  # the same state read again, from the cache: within the tolerance
            assert read_probabilities(answer) == pytest.approx(read_probabilities(full["answers"][qid]), abs=MAX_ABS_DIFF)
        assert client.post("/v1/decisions", json={"questions": openai_request["questions"]}, headers=headers).status_code == 400
        first = client.post("/v1/decisions", json=openai_request, headers=headers)
        again = client.post("/v1/decisions", json={"questions": openai_request["questions"]}, headers=headers)
        assert first.status_code == 200, first.text
        assert again.status_code == 200, again.text
        assert again.json()["usage"]["input_tokens_details"]["cached_tokens"] > 0
        assert again.json()["answers"] == first.json()["answers"]
        without = client.post("/invocations", json=questions_only)  # no session: no state to borrow
        assert without.status_code == 422
        client.post("/invocations", json=CLOSE_BODY, headers=headers)
        engine.check_invariants(idle=True)
