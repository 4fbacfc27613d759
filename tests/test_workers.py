"""The suite's two workers (tests/support/workers.py): each on its own CPUs, related tests kept together."""

from __future__ import annotations

import os

import pytest

from support import workers


def test_each_worker_takes_every_nth_cpu_and_a_machine_too_small_pins_nothing(monkeypatch):
    pinned = []
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4})
    monkeypatch.setattr(os, "sched_setaffinity", lambda pid, cpus: pinned.append(list(cpus)))
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    for worker in ("gw0", "gw1"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        workers.pin_worker()
    assert pinned == [[0, 2, 4], [1, 3]]
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "8")
    assert workers.pin_worker() == [0, 1, 2, 3, 4] and len(pinned) == 2


def test_this_worker_runs_on_its_share_alone():
    """Under `-n 2` (the README's command) on 2 or more CPUs this process holds half of them, not all."""
    if not workers.is_worker():
        pytest.skip("not in a pytest-xdist worker: the suite runs in one process")
    count = int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    online = os.cpu_count() or 1
    if count <= online:
        assert len(os.sched_getaffinity(0)) <= -(-online // count)


@pytest.mark.parametrize(("names", "group"), [({"container", "model"}, "container"), ({"browser", "model"}, "notebooks"),
                                              ({"notebook", "aws", "fast"}, "notebooks"), ({"model"}, "test_workers.py")])
def test_tests_sharing_a_built_thing_share_a_group(request, names, group):
    assert workers.group_of(request.node, names) == group
