"""Work per request, bounded: what one body may make the single inference worker do, and how long it may hold it.

Each abusive body that `semif serve` once accepted is a clear 4xx, in our words, naming the field and the limit: a JSON
Lines body where no transform job asked for one (415 naming SEMIF_ACCEPT_JSONLINES), too many records or too many tokens
in one (413 naming SEMIF_MAX_RECORDS or SEMIF_MAX_SUBMISSION_TOKENS), a 4 MiB name, a deeply nested session body. A batch
whose client leaves stops within one round and leaves the KV books balanced; empty sessions give their room back.
Real `semif serve` processes on the embedded model, through httpx."""

from __future__ import annotations

import asyncio
import gzip
import json
import re
import time

import httpx
import pytest

from semif_lib.contract import NEW_SESSION, NEW_SESSION_HEADER, SESSION_HEADER
from semif_lib.errors import SessionLimitError, WorkStoppedError, read_error
from semif_lib.serving.sessionbook import SessionBook
from semif_lib.settings import Settings

from support.servers import ADAPTER_COMMAND, free_port, running_server, server_env

pytestmark = [pytest.mark.model, pytest.mark.server]

MIB = 1 << 20
QUESTION = {"q": {"type": "noul", "instructions": "Is a refund asked for?"}}
OPENAI_QUESTION = [{"type": "predicate", "instructions": "Is a refund asked for?"}]
# What no message of ours may carry: an interpreter's or a library's own words, a traceback, a path.
FOREIGN = re.compile(r"Traceback|RecursionError|Error -\d|set_int_max_str_digits|/work/|site-packages|\.py\b")


def record(k: int, **extra: object) -> dict:
    return {"id": f"r{k}", "state": f"Ticket {k}: customer {k * 7919 % 1000} says parcel {k} arrived broken on day {k % 28}.",
            "questions": QUESTION, **extra}


def jsonlines(records: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def wait_for(condition, what: str, timeout: float = 120) -> None:
    """Poll until `condition()` holds (a wait with a generous bound, never a timing asserted)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def assert_ours(response: httpx.Response, status: int, field: str, *words: str) -> dict:
    """A 4xx JSON error in either wire's shape, naming `field`, with `words` in a message written by us (and short: no
    abusive value echoed)."""
    assert response.status_code == status, response.text[:500]
    body = response.json()
    error = read_error(body) if "detail" in body else {"message": body["error"]["message"], "field": body["error"]["param"]}
    assert error["field"] == field, error
    assert all(word in error["message"] for word in words), error["message"]
    assert not FOREIGN.search(error["message"]) and len(response.content) < 2000, error["message"][:300]
    return error


@pytest.fixture(scope="module")
def realtime():
    """`semif serve` as a real-time endpoint runs it: no JSON Lines, sessions on (16, empty ones ended after 3 s)."""
    port = free_port()
    env = server_env(port, SAGEMAKER_ENABLE_STATEFUL_SESSIONS="true", SEMIF_MAX_SESSIONS="16", SEMIF_EMPTY_SESSION_S="3")
    with running_server(ADAPTER_COMMAND, env, port) as server:
        yield server


@pytest.fixture(scope="module")
def transform():
    """`semif serve` as a transform job runs it (JSON Lines read), with a small token budget, one request per round and the
    KV books checked after every batch (a broken book answers 500)."""
    port = free_port()
    env = server_env(port, SEMIF_ACCEPT_JSONLINES="true", SEMIF_MAX_SUBMISSION_TOKENS="65536", SEMIF_ROUND_TOKENS="1",
                     SEMIF_CHECK_INVARIANTS="1")
    with running_server(ADAPTER_COMMAND, env, port) as server:
        yield server


# ----------------------------------------------------------------- bodies refused before any work
def test_json_lines_is_read_only_where_a_transform_job_asks(realtime, transform):
    body = jsonlines([{"state": "s" * 35, "questions": {}}] * 94_000)  # 66 bytes a record: just under SEMIF_MAX_BODY_BYTES
    assert 5 * MIB < len(body) <= 6 * MIB
    refused = httpx.post(realtime.url + "/invocations", content=body, headers={"Content-Type": "application/jsonlines"}, timeout=60)
    assert_ours(refused, 415, "content-type", "SEMIF_ACCEPT_JSONLINES=true", "Batch Transform")
    too_many = httpx.post(transform.url + "/invocations", content=body, headers={"Content-Type": "application/jsonlines"}, timeout=60)
    assert_ours(too_many, 413, "body", "94000 JSON Lines records", "the limit is 1024", "SEMIF_MAX_RECORDS")
    few = httpx.post(transform.url + "/invocations", content=jsonlines([record(k) for k in range(3)]),
                     headers={"Content-Type": "application/jsonlines"}, timeout=120)
    assert few.status_code == 200 and [json.loads(line)["id"] for line in few.text.splitlines()] == ["r0", "r1", "r2"]


def test_a_body_over_its_token_budget_is_one_413_before_anything_is_decoded(transform):
    long_state = " ".join(f"line {i}: the parcel from order {i * 31} arrived with a cracked screen." for i in range(80))
    body = jsonlines([{**record(k), "state": f"{k}: {long_state}"} for k in range(60)])  # about 60 x 1,300 tokens
    before = httpx.get(transform.url + "/ping").json()
    response = httpx.post(transform.url + "/invocations", content=body, headers={"Content-Type": "application/jsonlines"}, timeout=300)
    assert_ours(response, 413, "body", "more than 65536 prompt tokens", "SEMIF_MAX_SUBMISSION_TOKENS")
    after = httpx.get(transform.url + "/ping").json()
    assert after["pending"] == 0 and after["skipped"] == before["skipped"]  # refused whole, not stopped part-way


@pytest.mark.parametrize("path, body, status, field", [
    ("/v1/decisions", {"input": "Refund me.", "questions": OPENAI_QUESTION, "prompt_cache_key": "k" * (4 * MIB)}, 400,
     "prompt_cache_key"),
    ("/invocations", {"input": "Refund me.", "questions": OPENAI_QUESTION, "prompt_cache_key": "k" * (4 * MIB)}, 422,
     "prompt_cache_key"),
    ("/v1/decisions", {"input": "Refund me.", "questions": [{**OPENAI_QUESTION[0], "name": "n" * 300}]}, 400, "questions.0.name"),
    ("/v1/systemone", {"state": "s", "questions": {"q" * (4 * MIB): QUESTION["q"]}}, 422, "questions"),
    ("/v1/systemone", {"state": "s", "questions": {"q": {"type": "choice", "instructions": "Which?",
                                                         "criteria": {"o" * 300: None, "b": None}}}}, 422, "questions.q.criteria"),
    ("/v1/systemone", {"model": "m" * (4 * MIB), "state": "s", "questions": QUESTION}, 422, "model"),
    ("/v1/systemone", {"id": "i" * (4 * MIB), "state": "s", "questions": QUESTION}, 422, "id"),
])
def test_every_free_form_name_is_bounded(realtime, path, body, status, field):
    response = httpx.post(realtime.url + path, json=body, timeout=60)
    assert_ours(response, status, field, "256")


@pytest.mark.parametrize("body, field, words", [
    (b'{"requestType": "NEW_SESSION", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "body", ("nested deeper than 64",)),
    (b'{"state": "s", "questions": {}, "x": ' + b"9" * 5000 + b"}", "body", ("a number longer than",)),
])
def test_a_parse_error_is_a_4xx_in_our_words(realtime, body, field, words):
    response = httpx.post(realtime.url + "/invocations", content=body, headers={"Content-Type": "application/json"}, timeout=60)
    assert_ours(response, 422, field, *words)


def test_a_body_that_is_not_its_coding_is_a_400_in_our_words(realtime):
    corrupt = gzip.compress(json.dumps(record(1)).encode())[:-20] + b"\xff" * 40
    response = httpx.post(realtime.url + "/invocations", content=corrupt,
                          headers={"Content-Type": "application/json", "Content-Encoding": "gzip"}, timeout=60)
    assert_ours(response, 400, "content-encoding", "not valid gzip data")


# ----------------------------------------------------------------- a batch whose client leaves
async def _leave_mid_batch(url: str, body: bytes, rounds: int) -> None:
    """Send the batch, wait until the worker has scored `rounds` of its requests, then close the connection (cancelling the call)."""
    async with httpx.AsyncClient(timeout=600) as client:
        scored = (await client.get(url + "/ping")).json()["scored"]
        call = asyncio.ensure_future(client.post(url + "/invocations", content=body, headers={"Content-Type": "application/jsonlines"}))
        while True:
            if (await client.get(url + "/ping")).json()["scored"] >= scored + rounds:
                break
            assert not call.done(), "the batch ended before its client could leave"
            await asyncio.sleep(0.02)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call


def test_a_batch_whose_client_left_stops_within_one_round_and_leaks_nothing(transform):
    before = httpx.get(transform.url + "/ping").json()
    asyncio.run(_leave_mid_batch(transform.url, jsonlines([record(1000 + k) for k in range(400)]), rounds=3))
    wait_for(lambda: httpx.get(transform.url + "/ping").json()["pending"] == 0, "the stopped batch to release the worker")
    ping = httpx.get(transform.url + "/ping").json()
    assert ping["stopped"] == before["stopped"] + 1 and ping["skipped"] > before["skipped"]
    lines = [line for line in transform.log().splitlines() if "stopped a submission between rounds (its client left)" in line]
    assert len(lines) == 1, transform.log()[-3000:]
    scored, total, after, skipped = map(int, re.search(r"(\d+) of (\d+) requests scored, (\d+) of them after its client left, "
                                                       r"(\d+) skipped", lines[0]).groups())
    assert total == 400 and scored + skipped == total and scored >= 3 and skipped > 0  # it left mid-batch
    assert after <= 1, lines[0]  # SEMIF_ROUND_TOKENS=1: one request per round, so at most one ran after it left
    assert "score_batch failed" not in transform.log() and "engine_state" not in transform.log()
    # the books balanced (SEMIF_CHECK_INVARIANTS=1 answers 500 otherwise), and the worker serves the next body
    again = httpx.post(transform.url + "/invocations", json=record(1), timeout=120)
    assert again.status_code == 200, again.text


def test_a_batch_past_its_deadline_stops_within_one_round():
    """SEMIF_REQUEST_TIMEOUT_S=2: the handler answers 503 at its 4 s deadline, and the worker stops the batch there."""
    port = free_port()
    env = server_env(port, SEMIF_ACCEPT_JSONLINES="true", SEMIF_REQUEST_TIMEOUT_S="2", SEMIF_ROUND_TOKENS="1",
                     SEMIF_CHECK_INVARIANTS="1")
    detail = " ".join(f"item {i} of the order was scratched." for i in range(12))
    body = jsonlines([{**record(3000 + k), "state": f"{record(3000 + k)['state']} {detail}"} for k in range(400)])
    with running_server(ADAPTER_COMMAND, env, port) as server:
        late = httpx.post(server.url + "/invocations", content=body, headers={"Content-Type": "application/jsonlines"}, timeout=120)
        assert_ours(late, 503, None, "no answer within 4 s")
        wait_for(lambda: httpx.get(server.url + "/ping").json()["pending"] == 0, "the stopped batch to release the worker")
        lines = [line for line in server.log().splitlines() if "stopped a submission between rounds (its deadline passed)" in line]
        assert len(lines) == 1, server.log()[-3000:]
        scored, total, after, skipped = map(int, re.search(r"(\d+) of (\d+) requests scored, (\d+) of them after its deadline "
                                                           r"passed, (\d+) skipped", lines[0]).groups())
        assert total == 400 and skipped > 0 and after <= 1, lines[0]
        assert httpx.post(server.url + "/invocations", json=record(1), timeout=120).status_code == 200


def test_the_engine_stops_a_batch_between_rounds_and_its_books_balance(engine):
    """In this process: `stop` turns true once the first round is done; the rest get WorkStoppedError, nothing is held."""
    bodies = [record(2000 + k) for k in range(4)]
    saved = engine.settings
    engine.settings = saved.model_copy(update={"round_tokens": 1})  # one request per round
    try:
        for mode in ("parallel", "serial"):
            done: list[int] = []
            requests = [engine.resolve(body, mode) for body in bodies]
            out = engine.score_batch(requests, on_done=lambda indices, _: done.extend(indices), stop=lambda i: bool(done))
            assert not isinstance(out[0], Exception), out[0]
            assert all(isinstance(r, WorkStoppedError) and r.status_code == 499 for r in out[1:]), out
            engine.check_invariants(idle=True)
        assert not isinstance(engine.score_batch([engine.resolve(body, "parallel") for body in bodies[1:]])[0], Exception)
        engine.check_invariants(idle=True)
    finally:
        engine.settings = saved


# ----------------------------------------------------------------- sessions that cannot starve others
def test_empty_sessions_give_their_room_back(realtime):
    """Empty opens fill SEMIF_MAX_SESSIONS (16 here, 256 by default); they end after SEMIF_EMPTY_SESSION_S, while a session
    that answered a request lives on."""
    with httpx.Client(base_url=realtime.url, timeout=60) as client:
        def open_one() -> httpx.Response:
            return client.post("/invocations", json={"requestType": NEW_SESSION}, headers={SESSION_HEADER: NEW_SESSION})

        first = open_one().headers[NEW_SESSION_HEADER].split(";")[0]
        assert client.post("/invocations", json=record(1), headers={SESSION_HEADER: first}).status_code == 200
        opened = [open_one() for _ in range(15)]
        assert all(r.status_code == 200 for r in opened)
        assert_ours(open_one(), 429, "requestType", "SEMIF_MAX_SESSIONS", "SEMIF_EMPTY_SESSION_S=3")
        wait_for(lambda: open_one().status_code == 200, "the empty sessions to end")
        assert client.post("/invocations", json={"questions": QUESTION}, headers={SESSION_HEADER: first}).status_code == 200
        empty = opened[0].headers[NEW_SESSION_HEADER].split(";")[0]
        gone = client.post("/invocations", json=record(1), headers={SESSION_HEADER: empty})
        assert_ours(gone, 400, SESSION_HEADER, "without answering a request", "SEMIF_EMPTY_SESSION_S=3")


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def test_the_book_ends_empty_sessions_and_keeps_each_peers_share():
    clock = Clock()
    book = SessionBook(Settings(_env_file=None, stateful_sessions=True, empty_session_s=30, sessions_per_peer=2), clock=clock)
    used, _ = book.open("10.0.0.1")
    empty, _ = book.open("10.0.0.1")
    with pytest.raises(SessionLimitError, match="SEMIF_SESSIONS_PER_PEER") as refused:
        book.open("10.0.0.1")
    assert refused.value.status_code == 429
    other, _ = book.open("10.0.0.2")  # another client's share is its own
    book.mark_used(used)
    clock.now += 30
    assert sorted(book.sweep()) == sorted([empty, other]) and book.is_open(used)
    assert book.open("10.0.0.1")  # the peer's empty one went: its share has room again
