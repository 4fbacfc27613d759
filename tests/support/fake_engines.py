"""Engines for the adapter's supervision tests: they answer noul questions without a model and
let a test hold, crash or count the worker's calls. Only the worker and the HTTP layer are under
test here; the real engine's own failures are tested in test_engine_faults.py."""

from __future__ import annotations

import threading

from semif_lib.decision.responses import DecisionResponse


def answer(request) -> DecisionResponse:
    answers = {qid: {"type": "noul", "noul": 0.5, "probabilities": {"true": 0.5, "false": 0.5}, "option_mass": 1.0}
               for qid in request.questions}
    return DecisionResponse.model_validate({"model": "fake", "answers": answers, "usage": {"input_tokens": 1}})


class FakeWing:
    """The seam (`decision.seam.DecisionWing`) for a double that only says how it scores one request (`score`): a batch is
    its requests one by one, with the real engine's `on_done` and `stop` rules; it counts one prompt token a request and
    holds nothing for a session."""

    model_id = "fake"
    model_path = None
    model_info: dict = {}

    def score(self, request):
        raise NotImplementedError

    def score_batch(self, requests, on_done=None, stop=None):
        from semif_lib.decision.seam import score_each

        return score_each(self.score, requests, on_done, stop)

    def count_prompt_tokens(self, request) -> int:
        return 1

    def admit_session(self, requests, session, session_tokens):
        return {}

    def hold_session_state(self, session, state) -> bool:
        return False

    def release_sessions(self, sessions, check) -> int:
        return 0

    def close(self) -> None:
        pass


class GateEngine(FakeWing):
    """`score` waits until `gate` is set; `started` counts the calls that began."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.started = threading.Semaphore(0)
        self.calls = 0

    def score(self, request):
        self.calls += 1
        self.started.release()
        if not self.gate.wait(60):
            raise RuntimeError("the test never opened the gate")
        return answer(request)

    def close(self) -> None:
        self.gate.set()


class Crash(BaseException):
    """Not an Exception: what kills a thread (as a C extension's fatal error, or a stray SystemExit, would)."""


class CrashingEngine(FakeWing):
    def score(self, request):
        raise Crash("the engine thread is gone")

    def close(self) -> None:
        pass


class RoundEngine(GateEngine):
    """A batch runs in two rounds: the first request is reported done (`on_done`), then the rest wait on `rounds`.

    `score` (one request at a time) waits on `gate`, as GateEngine's does, so a test can queue
    requests behind a held one until the worker drains them into one `score_batch` call.
    """

    def __init__(self) -> None:
        super().__init__()
        self.rounds = threading.Event()
        self.batches: list[int] = []

    def score_batch(self, requests, on_done=None, stop=None):
        if len(requests) == 1:  # one request is scored alone, as the real engine does: it waits on `gate`
            return super().score_batch(requests, on_done, stop)
        self.batches.append(len(requests))
        out = [answer(requests[0])] + [None] * (len(requests) - 1)
        if on_done is not None:
            on_done([0], out)
        if not self.rounds.wait(60):
            raise RuntimeError("the test never let the second round run")
        out[1:] = [answer(r) for r in requests[1:]]
        if on_done is not None:
            on_done(list(range(1, len(requests))), out)
        return out

    def close(self) -> None:
        super().close()
        self.rounds.set()
