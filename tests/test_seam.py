"""The typed seam between serving and decision (`decision.seam.DecisionWing`): the real engine and every worker double
meet it, an engine that does not is refused when it loads with what it lacks, and serving never probes an engine for
what it can do, nor reaches into its KV store."""

from __future__ import annotations

import re
import time

import pytest

from semif_lib.decision.seam import DecisionWing, missing_members
from semif_lib.serving.worker import InferenceWorker
from semif_lib.settings import Settings

from support.fake_engines import CrashingEngine, FakeWing, GateEngine, RoundEngine
from support.paths import ROOT


@pytest.mark.model
def test_the_real_engine_meets_the_seam(engine):
    assert isinstance(engine, DecisionWing) and missing_members(engine) == []


def test_every_worker_double_meets_the_seam():
    for double in (FakeWing, GateEngine, CrashingEngine, RoundEngine):
        assert isinstance(double(), DecisionWing), double


def test_an_engine_off_the_seam_is_refused_when_it_loads_naming_what_it_lacks():
    class OnlyScores:
        model_id = "fake"
        closed = False

        def score(self, request):
            raise AssertionError("never asked")

        def close(self) -> None:
            self.closed = True

    made: list[OnlyScores] = []
    failures: list[BaseException] = []
    worker = InferenceWorker(Settings(_env_file=None), lambda _: made.append(OnlyScores()) or made[-1], max_queue=4,
                             on_load_error=failures.append)
    worker.start()
    deadline = time.monotonic() + 10
    while not failures and time.monotonic() < deadline:
        time.sleep(0.01)
    assert failures and isinstance(failures[0], TypeError)
    message = str(failures[0])
    assert "is not a DecisionWing" in message and "score_batch" in message and "admit_session" in message
    assert made[0].closed, "what was loaded is freed"
    assert worker.unavailable() is not None and "the model failed to load" in worker.unavailable().message


def test_serving_asks_the_seam_and_never_probes_or_reaches_into_the_engine():
    probes = re.compile(r"hasattr\(\s*(self\.)?engine|getattr\(\s*(worker\.|self\.)?engine|\.store\b|\.cache\b")
    found = [f"{path.name}:{n}: {line.strip()}" for path in sorted((ROOT / "semif_lib" / "serving").glob("*.py"))
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if probes.search(line)]
    assert found == []
