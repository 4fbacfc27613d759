"""`semif bench readout-vs-generation`: 21 criteria on one state, read out directly against the model writing them as JSON.

Both sides run cold (the cache cleared, the chat model reset) on the same request; the result is
the median of N runs each, the output tokens each side produced and how often the generated
answers agree with the readout's argmax (`run_readout`). `format_readout` is what the command prints
(docs/benchmarks.md quotes its figures in prose), `plot_readout` the notebooks' chart.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from ...decision.schema import parse_request
from ..baseline import generate_json_answers, open_chat_model
from ..options import READOUT_RUNS, SINGLE_STATE
from .workload import describe_bench_run, write_result

__all__ = ["command_readout", "format_readout", "plot_readout", "run_readout"]


def run_readout(settings: Any, request_path: Path = SINGLE_STATE, runs: int = READOUT_RUNS,
                              progress: bool = True) -> dict[str, Any]:
    """Direct readout against greedy JSON generation of the same answers, median of `runs` cold runs."""
    from tqdm.auto import tqdm

    from ...decision.engine import DecisionEngine

    request = parse_request(json.loads(request_path.read_text()))
    engine = DecisionEngine(settings)
    llm = open_chat_model(settings)
    readout_s: list[float] = []
    gen_s: list[float] = []
    gens = []
    response = None
    for _ in tqdm(range(runs), desc="readout vs generation", unit="run", file=sys.stderr, disable=not progress):
        engine.clear_cache()  # cold: both sides read the state from scratch
        t0 = time.perf_counter()
        response = engine.ask(request, mode="parallel")
        readout_s.append(time.perf_counter() - t0)
        result = generate_json_answers(llm, request, reset=True)
        gen_s.append(result.seconds)
        gens.append(result)
    engine.close()
    argmax = {qid: (ans.noul >= 0.5 if ans.type == "noul" else getattr(ans, "choice", None) or round(ans.score))
              for qid, ans in response.answers.items()}
    last = gens[-1]
    agree = sum(last.answers.get(q) == a for q, a in argmax.items())
    readout_med, gen_med = statistics.median(readout_s), statistics.median(gen_s)
    return {
        "questions": len(request.questions),
        "readout": {"median_s": round(readout_med, 3), "runs_s": [round(x, 3) for x in readout_s], "output_tokens": 0,
                    "input_tokens": response.usage.input_tokens, "well_formed": True},
        "generation": {"median_s": round(gen_med, 3), "runs_s": [round(x, 3) for x in gen_s],
                       "output_tokens": last.output_tokens, "prompt_tokens": last.prompt_tokens,
                       "valid_json_runs": sum(g.valid_json for g in gens), "complete_runs": sum(g.complete for g in gens),
                       "runs": len(gens), "text_head": last.text[:200]},
        "speedup_readout_vs_generation": round(gen_med / readout_med, 3),
        "generation_agrees_with_readout_argmax": f"{agree}/{len(argmax)}",
    }


def format_readout(doc: dict[str, Any]) -> str:
    """The results as `semif bench readout-vs-generation` prints them: every figure but the machine, as JSON."""
    return json.dumps({k: v for k, v in doc.items() if k not in ("machine",)}, indent=2)


def plot_readout(doc: dict[str, Any]) -> Any:
    """Wall time of direct readout against generating the same answers as JSON."""
    import matplotlib.pyplot as plt

    labels = ["readout\n(0 output tokens)", f"JSON generation\n({doc['generation']['output_tokens']} output tokens)"]
    values = [doc["readout"]["median_s"], doc["generation"]["median_s"]]
    fig, ax = plt.subplots(figsize=(6, 3))
    bars = ax.barh(labels, values, color=["#3b7dd8", "#bbbbbb"])
    ax.bar_label(bars, fmt="%.2f s")
    ax.set_xlabel(f"median seconds, {doc['questions']} questions on one state")
    fig.tight_layout()
    return fig


def command_readout(args: Any) -> int:
    """`semif bench readout-vs-generation`: the run, its figures printed, results/bench/readout-vs-generation.json written."""
    settings, meta = describe_bench_run(args)
    doc = {**meta, **run_readout(settings, args.request, args.runs)}
    print(format_readout(doc))
    out = write_result(doc, args.output or settings.results_dir / "bench" / "readout-vs-generation.json")
    print(f"wrote {out}", file=sys.stderr)
    return 0
