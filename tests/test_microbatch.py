"""The micro-batch rule (`decision.backend.split_rows`, `SEMIF_UBATCH_SLACK`): rows are decoded `n_ubatch` at a time, and a
remainder of at most the slack joins the micro-batch before it instead of costing a pass of its own. What it buys is
measured by `semif bench ubatch` (docs/benchmarks.md), not here."""

from __future__ import annotations

import numpy as np
import pytest

from semif_lib.decision.backend import split_rows

from support.paths import DATA


@pytest.mark.parametrize("n, slack, expected", [
    (533, 64, [(0, 533)]),                     # a branch tree of 533 tokens: one micro-batch, not 512 + 21
    (533, 0, [(0, 512), (512, 533)]),          # no slack: as llama.cpp splits a batch
    (576, 64, [(0, 576)]), (577, 64, [(0, 512), (512, 577)]),  # the remainder's limit is inclusive
    (1040, 64, [(0, 512), (512, 1040)]),       # a prefill's last micro-batch takes its remainder too
    (1340, 64, [(0, 512), (512, 1024), (1024, 1340)]),
    (512, 64, [(0, 512)]), (100, 64, [(0, 100)]), (0, 64, []),
])
def test_a_small_remainder_joins_the_micro_batch_before_it(n, slack, expected):
    bounds = split_rows(n, 512, slack)
    assert bounds == expected
    assert all(b > a for a, b in bounds) and (not bounds or (bounds[0][0], bounds[-1][1]) == (0, n))
    assert all(b == c for (_, b), (c, _) in zip(bounds, bounds[1:], strict=False))  # every row once, in order


def test_the_slack_is_a_bounded_setting(monkeypatch):
    from pydantic import ValidationError

    from semif_lib.settings import Settings

    assert Settings().ubatch_slack == 0  # off by default: it slowed fresh prompts (docs/benchmarks.md)
    monkeypatch.setenv("SEMIF_UBATCH_SLACK", "64")
    assert Settings().ubatch_slack == 64
    monkeypatch.setenv("SEMIF_UBATCH_SLACK", "-1")
    with pytest.raises(ValidationError, match="SEMIF_UBATCH_SLACK"):
        Settings()


@pytest.mark.model
def test_a_533_row_tree_is_one_llama_decode_with_the_slack_and_two_without():
    """The context holds room for the larger micro-batch, so llama.cpp never splits the call again; the next-token
    distributions agree (a micro-batch of another shape rounds differently, as any batch does: not bit for bit)."""
    from semif_lib.decision.backend import LlamaBackend
    from semif_lib.model.locate import find_embedded_model
    from semif_lib.settings import Settings

    path = find_embedded_model()
    rows = {}
    for slack in (64, 0):
        backend = LlamaBackend(Settings(n_ctx=2048, n_seq_max=2, threads=2, ubatch_slack=slack), path)
        try:
            assert (backend.ubatch, backend.ubatch_slack) == (512, slack)
            tokens = (backend.tokenize(" ".join(f"line {i}: the refund went to billing." for i in range(120))) * 2)[:533]
            calls = backend.decode_calls
            rows[slack] = backend.decode(tokens, range(533), [(0,)] * 533, [i == 532 for i in range(533)])[0]
            assert backend.decode_calls - calls == (1 if slack else 2)
        finally:
            backend.close()
    p, q = (np.exp(r - r.max()) / np.exp(r - r.max()).sum() for r in (rows[64], rows[0]))
    assert np.argmax(p) == np.argmax(q) and 0.5 * np.abs(p - q).sum() < 0.05  # other kernels' rounding, the same answer


def test_the_benchmark_pairs_the_arms_and_reports_each_ratio_with_its_interval():
    """`semif bench ubatch`'s figures from per-state seconds (the run itself: docs/benchmarks.md's command)."""
    from semif_lib.measurement.bench import ubatch

    states = [{"tree_merges": merges, "seconds": {"slack": {"cold": 9.0, "cached": 2.0 * f}, "no-slack": {"cold": 9.5, "cached": 2.2}}}
              for merges, f in ((True, 1.0), (True, 0.95), (True, 1.05), (False, 1.1))]
    merging = [s for s in states if s["tree_merges"]]
    cached = ubatch.ratio_of(merging, "cached")
    assert cached["ratio"] == round(6.6 / 6.0, 3) and cached["interval"]["states"] == 3  # the no-slack arm's seconds over the slack's
    assert cached["interval"]["verdict"] in ("met", "spans the target") and ubatch.ratio_of([], "cold") is None
    doc = {"n_ubatch": 512, "ubatch_slack": 64, "workload": {"states": 4, "merging_states": 3},
           "ratios": {"cached_on_merging_states": cached, "cold_on_merging_states": None}}
    text = ubatch.format_ubatch(doc)
    assert text.startswith("3 of 4 states have a branch tree of 513-576 tokens") and "| cold on merging states | - | - |" in text
    assert f"| cached on merging states | {cached['ratio']}x | [" in text


@pytest.mark.model
def test_the_benchmark_times_fresh_prompts_on_both_arms_only_when_asked(settings):
    """`--fresh-questions N`: each arm also answers the state's first N questions fresh, from an empty cache, and the
    file gains their seconds and a fresh ratio; without it the file has neither."""
    from semif_lib.jsonlines import read_records
    from semif_lib.measurement.bench import ubatch

    row = read_records(DATA / "workload_37x21.jsonl")[0]
    row = {**row, "state": "\n".join(row["state"].splitlines()[:6]), "questions": dict(list(row["questions"].items())[:3])}
    asked = ubatch.run_ubatch(settings, [row], repeats=1, progress=False, fresh_questions=2)
    (state,) = asked["per_state"]
    assert all(state["seconds"][arm]["fresh"] > 0 for arm in ubatch.ARMS) and asked["workload"]["fresh_questions"] == 2
    assert asked["ratios"]["fresh_on_all_states"]["ratio"] > 0
    plain = ubatch.run_ubatch(settings, [row], repeats=1, progress=False)
    assert "fresh" not in plain["per_state"][0]["seconds"]["slack"] and "fresh_on_all_states" not in plain["ratios"]


@pytest.mark.parametrize("name", ["ubatch.json", "ubatch-37.json", "ubatch-fresh.json"])
def test_docs_quote_the_ubatch_run_verbatim_with_its_command_and_conditions(name):
    import json

    from semif_lib.measurement.bench.ubatch import format_ubatch
    from semif_lib.measurement.options import RESULTS_DIR

    doc = json.loads((RESULTS_DIR / "bench" / name).read_text(encoding="utf-8"))
    benchmarks = (RESULTS_DIR.parent / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert format_ubatch(doc) in benchmarks and f"`{doc['command']}`" in benchmarks
    conditions = doc["conditions"]
    assert conditions["machine"]["cpu"] and conditions["start"]["loadavg"] and conditions["baseline"]["prefill_tokens_per_s"] > 0
    assert all(r["interval"]["bounds"] for r in doc["ratios"].values())
