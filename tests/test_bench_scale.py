"""`semif bench scale`'s arithmetic and its results: a repeat counts as a hit only when the whole state came from the cache,
the cost per million decisions follows the list price and the vCPUs, and the committed run shows what sessions are for.
(The router itself, with three real adapters behind it, is tests/test_sessions_router.py.)"""

from __future__ import annotations

import json

import pytest

from support.paths import ROOT


def records(*pairs):
    """A state's two asks per (first cached, second cached) pair, 100-token states with 3 questions each."""
    out = []
    for k, (first, second) in enumerate(pairs):
        out += [{"state": f"s{k}", "ask": 1, "seconds": 2.0, "decisions": 3, "cached": first, "prefix": 100},
                {"state": f"s{k}", "ask": 2, "seconds": 0.5, "decisions": 3, "cached": second, "prefix": 100}]
    return out


def test_a_repeat_hits_only_when_the_whole_state_was_cached():
    from semif_lib.measurement.bench.scale import summarize_arm

    summary = summarize_arm(4.0, records((0, 100), (0, 51), (30, 100), (0, 0)), routed=[0, 1, 0, 1])
    assert summary["repeat_hit_rate"] == 0.5  # 51 of 100 (the chat template's opening) is a miss
    assert summary["first_hit_rate"] == 0.0 and summary["decisions"] == 24 and summary["decisions_per_s"] == 6.0
    assert summary["instances_used"] == 2 and summary["p50_s"] in (0.5, 2.0) and summary["p95_s"] == 2.0


def test_the_cost_per_million_decisions_is_the_list_price_over_the_scaled_rate():
    from semif_lib.measurement.bench.scale import cost_per_million
    from semif_lib.prices import INSTANCE_VCPUS, PRICES

    # 2 decisions/s on 2 threads -> 4 on the 4 vCPUs of ml.c6i.xlarge -> 14,400 an hour at $0.204
    assert INSTANCE_VCPUS["ml.c6i.xlarge"] == 4 and PRICES["endpoint"].usd == 0.204
    assert cost_per_million(2.0, 2) == pytest.approx(0.204 / 14_400 * 1e6)
    assert cost_per_million(4.0, 2) == pytest.approx(cost_per_million(2.0, 2) / 2)


def test_bad_scale_arguments_are_refused_before_any_server_starts():
    from semif_lib.errors import InvalidRequestError
    from semif_lib.measurement.bench.scale import run_scale

    with pytest.raises(InvalidRequestError, match="instances"):
        run_scale(instances=[0, 2])


def test_the_committed_scale_run_shows_sessions_keep_one_instances_hit_rate():
    """The committed results (semif bench scale, run alone) and the docs that quote them."""
    from semif_lib.measurement.bench.scale import format_scale

    doc = json.loads((ROOT / "results" / "bench" / "scale.json").read_text())
    runs = doc["runs"]
    assert {(r["instances"], r["arm"]) for r in runs.values()} == {(n, a) for n in (1, 2, 4) for a in ("random", "sessions")}
    assert all(r["repeat_hit_rate"] == 1.0 for r in runs.values() if r["arm"] == "sessions"), "a session's repeat always hits"
    assert runs["4/random"]["repeat_hit_rate"] < runs["2/random"]["repeat_hit_rate"] < runs["1/random"]["repeat_hit_rate"]
    assert runs["4/random"]["oversubscribed"] and not runs["2/random"]["oversubscribed"]
    docs = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert doc["command"] in docs and format_scale(doc).splitlines()[2] in docs
    for run in runs.values():
        assert f"| {run['repeat_hit_rate']:.0%} | {run['decisions_per_s']:.2f} |" in docs, run
