"""The worker hands the engine what is queued (the engine's planner decides the rounds), says why it
cannot take a request in one place, and the drain window has one source. Model-free, no sockets."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from semif_lib.contract import KILL_AFTER_S
from semif_lib.decision.request import ServerDefaults, resolve_request
from semif_lib.decision.schema import parse_request
from semif_lib.errors import ModelLoadError, ServiceBusyError
from semif_lib.serving.runner import Drain
from semif_lib.serving.worker import InferenceWorker, Submission, WorkerFailedError
from semif_lib.settings import Settings

from support.fake_engines import FakeWing, answer

REQUEST = resolve_request(parse_request({"state": "s", "questions": {"q": {"type": "noul", "instructions": "Is it?"}}}),
                          ServerDefaults.of(Settings(_env_file=None)))


class BatchEngine(FakeWing):
    """`score` waits on `gate` (so requests queue behind it); `score_batch` of several records its sizes."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.holding = threading.Event()
        self.batches: list[int] = []

    def score(self, request):
        self.holding.set()
        self.gate.wait(30)
        return answer(request)

    def score_batch(self, requests, on_done=None, stop=None):
        if len(requests) == 1:  # one request is scored alone, as the real engine does: it waits on `gate`
            return super().score_batch(requests, on_done, stop)
        self.batches.append(len(requests))
        out = [answer(r) for r in requests]
        if on_done is not None:
            on_done(list(range(len(requests))), out)
        return out

    def close(self) -> None:
        self.gate.set()


def make_submission(loop: asyncio.AbstractEventLoop) -> Submission:
    return Submission(items=[REQUEST], loop=loop, future=loop.create_future())


def wait_until(condition, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_everything_queued_goes_to_the_engine_in_one_batch():
    """The worker hands the whole queue to the engine, uncut: the engine's planner sizes the rounds (it knows the KV cells)."""
    engine = BatchEngine()
    worker = InferenceWorker(Settings(), lambda _: engine, max_queue=64)
    loop = asyncio.new_event_loop()
    try:
        worker.start()
        assert worker.ready.wait(10)
        worker.submit(make_submission(loop))  # held inside engine.score
        assert engine.holding.wait(10)
        submissions = [make_submission(loop) for _ in range(20)]
        for submission in submissions:
            worker.submit(submission)
        engine.gate.set()
        wait_until(lambda: worker.pending == 0)
        assert engine.batches == [20]
    finally:
        worker.stop(10)
        loop.close()


def test_ping_and_submit_say_the_same_thing_about_an_unavailable_worker():
    loading = threading.Event()

    def fail_to_load(_settings):
        loading.wait(30)
        raise ValueError("bad gguf")

    worker = InferenceWorker(Settings(), fail_to_load, max_queue=4)
    loop = asyncio.new_event_loop()
    try:
        worker.start()
        assert worker.loading
        error = worker.unavailable()
        assert isinstance(error, ServiceBusyError) and "still loading" in error.message
        with pytest.raises(ServiceBusyError, match="still loading"):
            worker.submit(make_submission(loop))
        loading.set()
        wait_until(lambda: worker.load_error is not None)
        assert not worker.loading
        error = worker.unavailable()
        assert isinstance(error, ModelLoadError) and error.message == "the model failed to load: bad gguf"
        with pytest.raises(ModelLoadError) as info:
            worker.submit(make_submission(loop))
        assert info.value.message == error.message
        worker.death = RuntimeError("gone")
        assert isinstance(worker.unavailable(), WorkerFailedError)
    finally:
        worker.stop(10)
        loop.close()


def test_the_drain_window_and_its_tail_fit_before_sagemakers_sigkill():
    """One source: Settings bounds SEMIF_DRAIN_S so that uvicorn's timeout and the worker's budget end before SIGKILL."""
    assert Drain().window_s == Settings().drain_s
    longest = Settings.model_fields["drain_s"].metadata
    ceiling = next(b.le for b in longest if getattr(b, "le", None) is not None)
    drain = Drain(window_s=Settings(drain_s=ceiling).drain_s)
    assert drain.server_timeout_s < KILL_AFTER_S and drain.worker_budget_s < KILL_AFTER_S
    assert drain.worker_budget_s >= drain.server_timeout_s  # the worker may finish what uvicorn waited for
    with pytest.raises(ValueError):
        Settings(drain_s=ceiling + 0.5)


def test_the_text_twin_drains_within_the_same_setting(tmp_path):
    from semif_lib.serving.texttwin import build_text_config

    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF")  # discovery only; nothing is loaded here
    assert build_text_config(Settings(model_path=gguf, drain_s=3), {}).drain_s == 3
    assert build_text_config(Settings(model_path=gguf), {}).drain_s == Drain().window_s
