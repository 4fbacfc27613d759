"""The inference worker under supervision (no model: fake engines, so every step is deterministic):
a full queue answers 503 at once, a request past SEMIF_REQUEST_TIMEOUT gets a 503 instead of work,
a client that left is never computed, and a dead worker answers everyone, turns /ping 503 and
makes the server exit non-zero."""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from contextlib import contextmanager
from typing import Iterator

import httpx
import pytest

from semif_lib.processes import ServerProcess, start_server

from support.answers import assert_error
from support.fake_engines import CrashingEngine, GateEngine, RoundEngine
from support.paths import ROOT
from support.servers import free_port

SMALL = {"state": "s", "questions": {"q": {"type": "noul", "instructions": "Is it?"}}}


@contextmanager
def serving(engine, **settings_overrides) -> Iterator[tuple[str, object]]:
    """The real app under uvicorn in a thread (real sockets, so a client can really disconnect)."""
    import uvicorn

    from semif_lib.serving.app import create_app
    from semif_lib.settings import Settings

    deaths: list[BaseException] = []
    app = create_app(Settings(**settings_overrides), engine_factory=lambda _: engine, on_worker_death=deaths.append)
    app.state.deaths = deaths
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while not server.started or httpx.get(url + "/ping").status_code != 200:
        assert time.monotonic() < deadline, "the app did not start"
        time.sleep(0.05)
    try:
        yield url, app
    finally:
        engine.close()
        server.should_exit = True
        thread.join(30)


def post_in_background(url: str, results: dict, key: str, timeout: float = 60) -> threading.Thread:
    def call() -> None:
        try:
            results[key] = httpx.post(url + "/invocations", json=SMALL, timeout=timeout)
        except httpx.HTTPError as exc:
            results[key] = exc
    thread = threading.Thread(target=call)
    thread.start()
    return thread


def wait_until(condition, what: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_full_queue_answers_503_at_once_and_loses_nothing():
    engine = GateEngine()
    with serving(engine, queue_size=1) as (url, app):
        worker = app.state.worker
        results: dict = {}
        first = post_in_background(url, results, "first")
        assert engine.started.acquire(timeout=10)  # the worker holds the first request
        second = post_in_background(url, results, "second")
        wait_until(lambda: worker.queued == 1, "the second request to queue")
        third = httpx.post(url + "/invocations", json=SMALL, timeout=10)
        assert_error(third, 503)
        assert int(third.headers["retry-after"]) >= 1
        engine.gate.set()
        first.join(10), second.join(10)
        assert results["first"].status_code == 200 and results["second"].status_code == 200
        assert httpx.get(url + "/ping").json()["pending"] == 0


def test_an_answered_request_no_longer_counts_as_pending_when_its_client_sees_the_answer(monkeypatch):
    """/ping's `pending` is read by clients right after their last answer (CI saw 1 there): the worker must
    count a submission as answered before it hands the answer over, on the scored, expired and failed paths."""
    from semif_lib.serving import worker as worker_module

    seen: list[int] = []
    real_resolve = worker_module.resolve_submission
    engine = GateEngine()
    engine.gate.set()
    with serving(engine, request_timeout_s=1.0) as (url, app):
        def resolve(submission, results):
            seen.append(app.state.worker.pending)
            real_resolve(submission, results)
        monkeypatch.setattr(worker_module, "resolve_submission", resolve)
        for _ in range(3):
            assert httpx.post(url + "/invocations", json=SMALL, timeout=10).status_code == 200
            assert httpx.get(url + "/ping").json()["pending"] == 0
        engine.gate.clear()  # hold one request so that a second one expires in the queue
        results: dict = {}
        held = post_in_background(url, results, "held")
        for _ in range(4):  # the three answered calls, then the held one
            assert engine.started.acquire(timeout=10)
        late = post_in_background(url, results, "late")
        wait_until(lambda: app.state.worker.queued == 1, "the late request to queue")
        time.sleep(1.2)  # past SEMIF_REQUEST_TIMEOUT, well within the held request's 2x answer deadline (a loaded CI machine)
        engine.gate.set()
        held.join(10), late.join(10)
        assert results["held"].status_code == 200 and results["late"].status_code == 503
        assert httpx.get(url + "/ping").json()["pending"] == 0
    assert seen == [0, 0, 0, 1, 0]  # when the held one is answered, only the late one is still pending


def test_a_request_past_the_timeout_gets_503_instead_of_work():
    engine = GateEngine()
    with serving(engine, request_timeout_s=1.0) as (url, app):
        results: dict = {}
        first = post_in_background(url, results, "first")
        assert engine.started.acquire(timeout=10)
        late = post_in_background(url, results, "late")
        wait_until(lambda: app.state.worker.queued == 1, "the late request to queue")
        time.sleep(1.2)  # it now waits longer than SEMIF_REQUEST_TIMEOUT; the first, held as long, is within its 2x deadline
        engine.gate.set()
        first.join(10), late.join(10)
        assert results["first"].status_code == 200
        error = assert_error(results["late"], 503)
        assert "SEMIF_REQUEST_TIMEOUT" in error["message"] and results["late"].headers["retry-after"]
        assert engine.calls == 1 and app.state.worker.expired == 1


def test_a_request_whose_client_left_is_never_computed():
    engine = GateEngine()
    with serving(engine) as (url, app):
        results: dict = {}
        first = post_in_background(url, results, "first")
        assert engine.started.acquire(timeout=10)
        gone = post_in_background(url, results, "gone", timeout=0.5)  # gives up and closes its connection
        gone.join(10)
        assert isinstance(results["gone"], httpx.TimeoutException)
        time.sleep(0.3)  # the server notices the disconnect
        engine.gate.set()
        first.join(10)
        wait_until(lambda: app.state.worker.pending == 0, "the queue to drain")
        assert results["first"].status_code == 200
        assert engine.calls == 1 and app.state.worker.dropped == 1


def test_a_dead_worker_answers_everyone_pings_503_and_stops_the_server():
    with serving(CrashingEngine()) as (url, app):
        error = assert_error(httpx.post(url + "/invocations", json=SMALL, timeout=10), 503)
        assert "worker" in error["message"]
        assert_error(httpx.get(url + "/ping"), 503)
        assert_error(httpx.post(url + "/invocations", json=SMALL, timeout=10), 503)
        assert len(app.state.deaths) == 1


def start_fake_server(engine: str, **settings: object) -> ServerProcess:
    """`run_server` with a fake engine from support/fake_engines.py, as its own process (`processes.start_server`):
    answering /ping, stopped on exit from a `with`."""
    port = free_port()
    script = (f"import sys; sys.path.insert(0, {str(ROOT / 'tests')!r})\n"
              f"from support.fake_engines import {engine}\n"
              "from semif_lib.serving.app import run_server\n"
              "from semif_lib.settings import Settings\n"
              f"sys.exit(run_server(Settings(port={port}, **{settings!r}), engine_factory=lambda _: {engine}()))\n")
    return start_server([sys.executable, "-c", script], f"http://127.0.0.1:{port}", cwd=ROOT, startup_timeout_s=60)


@pytest.mark.server  # `run_server` as its own process, on a fake engine
def test_a_dead_worker_makes_semif_serve_exit_non_zero():
    with start_fake_server("CrashingEngine") as server:
        assert_error(httpx.post(server.url + "/invocations", json=SMALL, timeout=10), 503)
        code = server.wait(30)
    assert code == 3, server.output()
    assert "inference worker died" in server.output()


@pytest.mark.parametrize("body, field", [
    (b'{"state": NaN, "questions": {"q": {"type": "noul", "instructions": "x"}}}', "body"),
    (b'{"state": Infinity, "questions": {"q": {"type": "noul", "instructions": "x"}}}', "body"),
    (b'{"state": "\\ud800", "questions": {"q": {"type": "noul", "instructions": "x"}}}', "state"),
    (b'{"state": "s", "questions": {"q": {"type": "noul", "instructions": "\\udfff?"}}}', "questions.q.instructions"),
    (b'{"state": ' + b"[" * 100_000 + b"]" * 100_000 + b', "questions": {}}', "body"),
    (b'{"state": ' + b"[" * 80 + b"1" + b"]" * 80 + b', "questions": {"q": {"type": "noul", "instructions": "x"}}}', "state" + "[0]" * 64),
    (b'{"state": ' + b"9" * 5000 + b', "questions": {"q": {"type": "noul", "instructions": "x"}}}', "body"),
])
def test_hostile_json_is_a_422_naming_the_field(body, field):
    """Hostile JSON fails validation: Jev's 422 with `detail[]` naming the field (was 400 before jevcompat)."""
    engine = GateEngine()
    engine.gate.set()
    with serving(engine, accept_jsonlines=True) as (url, _):
        response = httpx.post(url + "/invocations", content=body, headers={"Content-Type": "application/json"}, timeout=30)
        assert_error(response, 422, field)
        good = b'{"id": "ok", "state": "s", "questions": {"q": {"type": "noul", "instructions": "x"}}}\n'
        lines = httpx.post(url + "/invocations", content=body + b"\n" + good,
                           headers={"Content-Type": "application/jsonlines"}, timeout=30)
        assert lines.status_code == 200
        records = [json.loads(line) for line in lines.text.split("\n") if line]
        assert records[0]["status"] == 422 and records[1]["id"] == "ok" and "answers" in records[1]
    assert engine.calls == 1  # only the good line reached the engine


@pytest.mark.server  # `run_server` as its own process, on a fake engine
def test_a_request_outliving_the_drain_window_gets_a_json_503_and_the_server_exits_0():
    """SIGTERM while a request cannot finish within SEMIF_DRAIN_S: a JSON 503 shutting_down with Retry-After
    (uvicorn alone would cancel it into a plain-text 500), then exit 0 before SageMaker's SIGKILL."""
    results: dict = {}
    with start_fake_server("GateEngine", drain_s=2) as server:
        caller = post_in_background(server.url, results, "held")
        wait_until(lambda: httpx.get(server.url + "/ping").json()["pending"] == 1, "the request to reach the worker")
        signalled = time.monotonic()
        server.send_signal(signal.SIGTERM)
        caller.join(30)
        code = server.wait(30)
        stopped = time.monotonic() - signalled
    error = assert_error(results["held"], 503)
    assert error["type"] == "shutting_down" and "SEMIF_DRAIN_S=2" in error["message"]
    assert results["held"].headers["Retry-After"] == "1"
    assert code == 0, server.output()
    assert stopped < 15, f"the server took {stopped:.1f} s to exit after SIGTERM"


def test_a_request_is_answered_when_its_round_ends_not_when_the_whole_batch_does():
    """Requests drained together are scored in rounds; each is answered as its own round finishes."""
    engine = RoundEngine()
    with serving(engine) as (url, app):
        results: dict = {}
        held = post_in_background(url, results, "held")  # keeps the worker busy while two more queue
        assert engine.started.acquire(timeout=10)
        first, second = post_in_background(url, results, "first"), post_in_background(url, results, "second")
        wait_until(lambda: app.state.worker.queued == 2, "two requests to queue")
        engine.gate.set()
        held.join(10)
        wait_until(lambda: "first" in results or "second" in results, "the first round's answer", timeout=10)
        assert engine.batches == [2] and len(results) == 2  # held, and one of the two; the other waits for its round
        assert app.state.worker.pending == 1
        engine.rounds.set()
        first.join(10), second.join(10)
        assert all(results[k].status_code == 200 for k in ("held", "first", "second"))
        assert httpx.get(url + "/ping").json()["pending"] == 0
