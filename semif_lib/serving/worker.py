"""The inference worker: the one thread that loads, owns and closes the decision engine.

The llama context is not thread-safe, so one worker thread loads it, owns it and closes it.
HTTP handlers only parse and validate, then hand requests to that worker through a bounded
queue and await a future: the event loop never runs inference, so `/ping` answers in
milliseconds while a decision is being computed. The worker drains everything queued at once
and hands it to `engine.score_batch`, whose planner (`plan_rounds`) decides which requests share
a round within the KV cells and the round's token budget; each request is answered as soon as
its round is done. A full queue answers 503 with `Retry-After` instead of letting clients time out.

Nothing here knows HTTP: a `Submission` (`work`) carries parsed requests in and `resolve_submission` hands the
results back to the event loop that is awaiting them.

The worker is supervised: a submission whose client has gone is dropped when its turn comes, one that
waited longer than `SEMIF_REQUEST_TIMEOUT` gets a 503 instead of work nobody will read, and if
the thread itself dies every waiting request gets a 503 at once, `/ping` turns 503 and
`on_death` lets the server exit non-zero, so SageMaker replaces the container instead of
routing traffic to a process that can no longer answer. A body's work is bounded (`work`): one over
`SEMIF_MAX_SUBMISSION_TOKENS` gets its 413 before anything is decoded, and one whose client left or whose deadline
passed stops between rounds (`stopped`, `skipped` count them; each is logged).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from typing import Any, Callable

from ..contract import answer_deadline_s
from ..decision.request import InternalRequest
from ..decision.responses import DecisionResponse
from ..decision.seam import DecisionWing, HeldState, missing_members
from ..errors import ModelLoadError, SemifError, ServiceBusyError, ShuttingDownError, WorkStoppedError
from ..settings import Settings
from .sessionbook import SessionBook
from .work import Submission, refuse_over_budget, resolve_submission, score_requests

__all__ = ["InferenceWorker", "Submission", "WorkerFailedError", "resolve_submission"]

log = logging.getLogger("semif.adapter")  # the adapter's logger name, shared with `app`


class WorkerFailedError(ServiceBusyError):
    """The inference thread died: this instance can no longer answer (503, and the process exits)."""

    error_type = "worker_failed"

    def __init__(self, message: str) -> None:
        super().__init__(message, retry_after=1)


class InferenceWorker:
    """One thread that loads, owns and closes the engine; submissions reach it through a bounded queue.

    `submit` never blocks: it raises 503 when `max_queue` submissions are already waiting, or while the
    model is not loaded. `stop` lets the worker finish every submission already accepted before it
    closes the engine, so no accepted request is lost on shutdown.
    """

    def __init__(
        self,
        settings: Settings,
        engine_factory: Callable[[Settings], DecisionWing],
        max_queue: int,
        on_load_error: Callable[[BaseException], None] | None = None,
        on_death: Callable[[BaseException], None] | None = None,
        sessions: SessionBook | None = None,
    ) -> None:
        self.settings = settings
        self.sessions = sessions or SessionBook(settings)  # the open sessions, asked before a session's state is held
        self.engine_factory = engine_factory
        self.max_queue = max_queue
        self.on_load_error = on_load_error
        self.on_death = on_death
        self.engine: DecisionWing | None = None
        self.load_error: BaseException | None = None
        self.death: BaseException | None = None  # why the worker thread ended while serving
        self.dropped = 0  # submissions whose client had gone when their turn came
        self.expired = 0  # submissions that had waited past SEMIF_REQUEST_TIMEOUT
        self.scored = 0  # requests answered by the engine (a refusal in its slot included), for /ping
        self.stopped = 0  # submissions stopped between rounds (client gone, or past the answer deadline)
        self.skipped = 0  # their requests never scored
        self.deadline_s = answer_deadline_s(settings.request_timeout_s)  # the handler's: past it nobody reads the answer
        self.ready = threading.Event()
        self._submissions: deque[Submission] = deque()
        self._cond = threading.Condition()
        self._closing = False
        self._pending = 0  # accepted submissions not yet answered (queued or being scored)
        self._thread = threading.Thread(target=self._run, name="semif-inference", daemon=True)

    # --------------------------------------------------------------- called from the event loop
    def start(self) -> None:
        self._thread.start()

    @property
    def loading(self) -> bool:
        """The model is still loading (neither ready nor failed)."""
        return not self.ready.is_set() and self.load_error is None and self.death is None

    def unavailable(self) -> SemifError | None:
        """Why no request can be taken now, as the error a client gets (`/ping` and `submit` both say it); None when ready."""
        if self.death is not None:
            return WorkerFailedError(f"the inference worker stopped ({type(self.death).__name__}); the server is exiting")
        if self.ready.is_set():
            return None
        if self.load_error is not None:
            return ModelLoadError(f"the model failed to load: {getattr(self.load_error, 'message', self.load_error)}")
        return ServiceBusyError("the model is still loading; retry shortly", retry_after=2)

    def submit(self, submission: Submission) -> None:
        error = self.unavailable()
        if error is not None:
            raise error
        with self._cond:
            if self._closing:
                raise ShuttingDownError("the server is shutting down (SIGTERM); retry (another instance will answer)", retry_after=1)
            if self.queued >= self.max_queue:
                raise ServiceBusyError(f"{self.queued} requests are already waiting (SEMIF_QUEUE_SIZE={self.max_queue}); retry shortly",
                                       retry_after=1)
            self._submissions.append(submission)
            self._pending += 1
            self._cond.notify()

    def run_task(self, task: Callable[[DecisionWing], Any]) -> asyncio.Future:
        """`task(engine)` in the worker thread, between requests; its result (or SemifError) comes as a one-item list.

        Not bounded by `max_queue`: a session's release must run. Nothing to run on (no engine, or the worker is
        ending): answered None at once.
        """
        loop = asyncio.get_running_loop()
        submission = Submission(items=[], loop=loop, future=loop.create_future(), task=task)
        with self._cond:
            if self.engine is None or self._closing or self.death is not None:
                submission.future.set_result([None])
                return submission.future
            self._submissions.append(submission)
            self._pending += 1
            self._cond.notify()
        return submission.future

    @property
    def queued(self) -> int:
        return len(self._submissions)

    @property
    def pending(self) -> int:
        return self._pending

    def stop(self, timeout: float | None = 60.0) -> None:
        """Finish the accepted submissions, then close the engine in the thread that owns it (waits at most `timeout` s)."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        if self._thread.is_alive():
            self._thread.join(timeout)

    # --------------------------------------------------------------- the worker thread
    def _run(self) -> None:
        try:
            engine = self.engine_factory(self.settings)
            if not isinstance(engine, DecisionWing):  # the seam, checked once: the worker never probes an engine after this
                with contextlib.suppress(AttributeError):
                    engine.close()  # free what was loaded, if it can be
                raise TypeError(f"{type(engine).__name__} is not a DecisionWing (decision.seam): it lacks "
                                + ", ".join(missing_members(engine)))
        except BaseException as exc:  # noqa: BLE001 - any load failure must end the server, not hang it
            self.load_error = exc
            log.error("cannot load the model: %s", getattr(exc, "message", exc))
            if self.on_load_error is not None:
                self.on_load_error(exc)
            return
        self.engine = engine
        self.ready.set()
        log.info("model %s loaded; serving", engine.model_id)
        submissions: list[Submission] = []
        try:
            while True:
                with self._cond:
                    while not self._submissions and not self._closing:
                        self._cond.wait()
                    if not self._submissions:
                        break
                    submissions = list(self._submissions)
                    self._submissions.clear()
                try:
                    self._run_tasks(submissions)
                    self._process(self._admit([submission for submission in submissions if submission.task is None]))
                except Exception as exc:  # never leave a client waiting on a worker bug
                    log.exception("worker failed on %d submissions", len(submissions))
                    for submission in submissions:  # _answer skips the ones already answered
                        self._answer(submission, [SemifError(f"internal error: {type(exc).__name__}")] * len(submission.items))
                finally:
                    with self._cond:  # the dropped ones: never answered, no longer pending
                        self._pending -= sum(not submission.answered for submission in submissions)
                submissions = []
        except BaseException as exc:  # noqa: BLE001 - the thread is dying: answer everyone, then let the server exit
            self._die(exc, submissions)
        finally:
            engine.close()

    def _run_tasks(self, submissions: list[Submission]) -> None:
        """The drained tasks, first: a session closed before a request in this drain is released before it could be held."""
        for submission in submissions:
            if submission.task is not None:
                try:
                    out = submission.task(self.engine)
                except SemifError as exc:
                    out = exc
                self._answer(submission, [out])

    def _answer(self, submission: Submission, results: list[DecisionResponse | SemifError]) -> None:
        """Count the submission as answered before its client can see the answer, so a /ping sent right after reads 0 pending."""
        with self._cond:
            if submission.answered:
                return
            submission.answered = True
            self._pending -= 1
        resolve_submission(submission, results)

    def _admit(self, submissions: list[Submission]) -> list[Submission]:
        """The submissions still worth computing: drop those whose client left, answer 503 to those past the timeout, and
        413 to a body over its token budget (`work.refuse_over_budget`)."""
        now, keep = time.monotonic(), []
        for submission in submissions:
            waited = now - submission.created
            if submission.abandoned:
                self.dropped += 1
            elif waited > self.settings.request_timeout_s:
                self.expired += 1
                busy = ServiceBusyError(f"the request waited {waited:.0f} s for the model, longer than SEMIF_REQUEST_TIMEOUT="
                                        f"{self.settings.request_timeout_s:g} s; retry", retry_after=2)
                self._answer(submission, [busy] * len(submission.items))
            elif (refusal := refuse_over_budget(self.engine, submission.items, self.settings.max_submission_tokens)) is not None:
                submission.refusal = refusal  # the whole body's 413, before anything is decoded
                self._answer(submission, [refusal] * len(submission.items))
            else:
                keep.append(submission)
        return keep

    def _die(self, exc: BaseException, in_flight: list[Submission]) -> None:
        """Record the death, answer every accepted submission with a 503, and tell the server to exit."""
        self.death = exc
        self.ready.clear()
        log.critical("the inference worker died: %s: %s", type(exc).__name__, exc)
        with self._cond:
            waiting = in_flight + list(self._submissions)
            self._submissions.clear()
            self._pending = 0
        failed = WorkerFailedError(f"the inference worker stopped ({type(exc).__name__}); retry on another instance")
        for submission in waiting:
            resolve_submission(submission, [failed] * len(submission.items))
        if self.on_death is not None:
            self.on_death(exc)

    def _process(self, submissions: list[Submission]) -> None:
        """Score every queued submission; the requests of one mode go to the engine in one `score_batch` call.

        How many share a round is the engine's planner's decision (KV cells, the round's token
        budget), not the worker's. A submission is answered as soon as its last request is scored (the
        engine reports each round), not when the whole drained queue is done.
        """
        engine = self.engine
        assert engine is not None  # the worker thread loaded it before it took a submission
        states = {id(submission): engine.admit_session(submission.items, submission.session, self.settings.session_tokens)
                  for submission in submissions if submission.session is not None}  # 429s in their slots
        results: dict[int, list[Any]] = {id(submission): list(submission.items) for submission in submissions}
        left = {id(submission): sum(isinstance(item, InternalRequest) for item in submission.items) for submission in submissions}
        by_mode: dict[str, list[tuple[Submission, int]]] = {}
        for submission in submissions:
            for k, item in enumerate(submission.items):
                if isinstance(item, InternalRequest):
                    by_mode.setdefault(item.mode, []).append((submission, k))
            if not left[id(submission)]:
                self._answer(submission, results[id(submission)])

        def record(submission: Submission, k: int, out: Any) -> None:
            results[id(submission)][k] = out
            if submission.session is not None and not isinstance(out, SemifError):
                self._hold(submission.session, states[id(submission)].get(k))
            submission.skipped += isinstance(out, WorkStoppedError)
            submission.scored += not isinstance(out, WorkStoppedError)
            self.scored += not isinstance(out, WorkStoppedError)
            left[id(submission)] -= 1
            if not left[id(submission)]:
                self._count_stopped(submission)
                self._answer(submission, results[id(submission)])

        for slots in by_mode.values():
            score_requests(engine, [submission.items[k] for submission, k in slots],
                           lambda i, out, slots=slots: record(*slots[i], out), lambda i, slots=slots: slots[i][0].stopped(self.deadline_s))
        for submission in submissions:  # normally all answered already; never leave one waiting
            self._answer(submission, results[id(submission)])

    def _hold(self, session: str, state: HeldState | None) -> None:
        """After a session's request is answered: hold its state for the session, unless the session ended meanwhile."""
        if state is not None and self.engine is not None and self.sessions.is_open(session):
            self.engine.hold_session_state(session, state)

    def _count_stopped(self, submission: Submission) -> None:
        """A submission stopped between rounds, counted and logged: how much of it ran, and how much after its client left."""
        if not submission.skipped:
            return
        self.stopped += 1
        self.skipped += submission.skipped
        after = "" if submission.scored_when_abandoned is None else \
            f", {submission.scored - submission.scored_when_abandoned} of them after {submission.why}"
        log.info("stopped a submission between rounds (%s): %d of %d requests scored%s, %d skipped", submission.why,
                 submission.scored, submission.scored + submission.skipped, after, submission.skipped)
