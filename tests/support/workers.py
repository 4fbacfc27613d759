"""The suite in pytest-xdist workers (`pytest -n 2`): each worker pinned to its own CPUs, related tests kept together.

A model test runs llama.cpp on every CPU its process may use (`detect_cpu_count`, the affinity mask), and so do
the servers it starts. Unpinned, two workers would each run it on both cores at once. Pinned, each sees its share:
on 2 cores, two 1-CPU runs side by side take the time of the same two runs one after the other on 2 CPUs, while
what a single process leaves idle (Python, HTTP, podman, kernels) goes to the other worker.

Work goes out in groups (`--dist loadgroup`, chosen here when `-n` is given without `--dist`): a module stays on one
worker, so its module fixtures are built once; every container test shares the one worker that builds the images,
and every notebook or browser test the one that runs notebooks. Groups go out heaviest first, so the
run does not end waiting on one long module.
"""

from __future__ import annotations

import os

import pytest

from support.markers import markers_for

SHARED_GROUPS = (("container", "container"), ("browser", "notebooks"), ("notebook", "notebooks"))  # marker -> group
HEAVY = frozenset({"model", "container", "browser", "notebook", "server"})  # a test with one of these weighs this much more
HEAVY_WEIGHT = 20


def is_worker() -> bool:
    return "PYTEST_XDIST_WORKER" in os.environ


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """`-n N` alone distributes by group, in the order given here (xdist's default splits modules test by test)."""
    if getattr(config.option, "numprocesses", None) and getattr(config.option, "dist", "no") == "no":
        config.option.dist = "loadgroup"
        config.option.loadscopereorder = False


@pytest.hookimpl(optionalhook=True)  # an xdist hook: unknown under `-p no:xdist`
def pytest_configure_node(node) -> None:
    """Tell each worker to group (a worker parses the command line again and would not know `loadgroup` was chosen)."""
    node.workerinput["semif_loadgroup"] = node.config.option.dist == "loadgroup"


def pin_worker() -> list[int]:
    """This worker's share of the CPUs the run may use: worker i of n takes every n-th CPU from the i-th."""
    index = int(os.environ["PYTEST_XDIST_WORKER"].removeprefix("gw"))
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    cpus = sorted(os.sched_getaffinity(0))
    if count > len(cpus):
        return cpus
    share = cpus[index % count::count]
    os.sched_setaffinity(0, share)
    return share


def pytest_configure(config: pytest.Config) -> None:
    if is_worker() and hasattr(os, "sched_setaffinity"):
        pin_worker()


def group_of(item: pytest.Item, names: set[str]) -> str:
    for marker, group in SHARED_GROUPS:
        if marker in names:
            return group
    return item.path.name


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reads the groups; tiers from markers_for, whatever ran first
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not is_worker() or not getattr(config, "workerinput", {}).get("semif_loadgroup"):
        return
    config.option.loadgroup = True  # read next by xdist's own hook, which appends each test's group to its id
    weights: dict[str, int] = {}
    groups: dict[pytest.Item, str] = {}
    for item in items:
        names = markers_for(item)
        group = groups[item] = group_of(item, names)
        weights[group] = weights.get(group, 0) + (HEAVY_WEIGHT if names & HEAVY else 1)
        item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: (-weights[groups[item]], groups[item]))  # stable: each group keeps its tests' order
