"""`semif bench sys1bench`: one model's scorecard on sys1bench's labeled generators, three systems side by side.

sys1bench generates each workload from a fixed seed (labels follow a stated policy, so they cannot be memorised);
the same items go to `majority_prior` (fitted on another seed's draw), to `semif serve` through `jev_typesafe`
(`/v1/systemone`, with the calibration file fitted on `data/labeled/` when one is given: both the raw and the
calibrated readout come from the same responses), and to llama-server on the same GGUF through the bridged
`llm_constrained` (`bridge`). The results file holds the command, the machine, the model's sha256, every system's
accuracy with its interval and its gap to `majority_prior`, sys1bench's own scorecard per question, what the bridge
read, and whether the calibration transferred. A letter-reading system that read too little is refused, not scored.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

from ....model.locate import find_model_path, hash_file
from ...machine import describe_machine
from ...options import SYS1BENCH_GENERATORS, SYS1BENCH_ITEMS, SYS1BENCH_SEED
from . import scores

__all__ = ["YardstickRun", "command_yardstick", "format_transfer", "format_yardstick", "run_yardstick"]

SYSTEMS = ("majority_prior", "semif_serve", "semif_serve_calibrated", "llama_server")
FIT_ITEMS = 200  # items of another seed that `majority_prior` learns its label counts from


@dataclass
class YardstickRun:
    """What one run asks: the model, the workload (generators, items each, seed) and where the servers listen."""

    model: Path
    generators: tuple[str, ...] = SYS1BENCH_GENERATORS
    items: int = SYS1BENCH_ITEMS
    seed: int = SYS1BENCH_SEED
    threads: int = 2
    port: int = 18370  # semif serve; llama-server takes the next one
    calibration: Path | None = None
    log_dir: Path = Path("results/tmp")
    llama_server: Path | None = None  # the binary (SEMIF_LLAMA_SERVER, or found: the command reads it once)


def _summarise(rows: list[Any], baseline: list[Any] | None, seed: int) -> dict[str, Any]:
    from sys1bench.report.scorecard import group_rows, scorecard

    out: dict[str, Any] = {"accuracy": scores.accuracy(rows, seed)}
    if baseline is not None:
        out["gap_to_majority_prior"] = scores.paired_gap(rows, baseline, seed)
    out["by_generator"] = {domain: scores.accuracy(rs, seed) for (domain,), rs in sorted(group_rows(rows, "domain").items())}
    cards = {}
    for (domain, key), rs in sorted(group_rows(rows, "domain", "question_key").items()):
        card = scorecard(rs, floor_resamples=100)
        cal = card.get("calibration") or {}
        cards[f"{domain} / {key}"] = {"n": card.get("n_rows"), "accuracy": card.get("accuracy"),
                                     "ece": cal.get("ece"), "ece_noise_floor": cal.get("ece_noise_floor"),
                                     "schema_failure_rate": card.get("schema_failure_rate")}
    out["sys1bench_scorecards"] = cards
    return out


def _generate(run: YardstickRun) -> tuple[list[Any], dict[str, list[Any]]]:
    from sys1bench.generators import get_generator

    items, fit = [], {}
    for name in run.generators:
        items += get_generator(name, n=run.items, seed=run.seed).generate()
        fit[name] = get_generator(name, n=FIT_ITEMS, seed=run.seed + 1).generate()
    return items, fit


def _ask_majority(items: list[Any], fit: dict[str, list[Any]]) -> list[Any]:
    """One `majority_prior` per generator: its priors are keyed by question name, which two generators may share."""
    from .systems import ask, fit_majority

    rows = []
    for name, fit_items in fit.items():
        domain = fit_items[0].domain
        rows += ask(fit_majority(fit_items), [it for it in items if it.domain == domain])
    return rows


def run_yardstick(run: YardstickRun, say: Callable[[str], None] = lambda text: None) -> dict[str, Any]:
    """Every system on the same items; the results document (see the module docstring)."""
    from .systems import RecordingSystemOne, ask, llama_adapter, raw_view, running_llama_server, running_semif_serve

    model_id = run.model.name.removesuffix(".gguf")
    items, fit = _generate(run)
    say(f"{len(items)} items ({', '.join(run.generators)}, {run.items} each, seed {run.seed}) on {model_id}")
    rows: dict[str, list[Any]] = {"majority_prior": _ask_majority(items, fit)}
    seconds: dict[str, float] = {}
    run.log_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with running_semif_serve(run.model, run.port, run.threads, run.log_dir / "yardstick-serve.log", run.calibration) as url:
        adapter = RecordingSystemOne(url, model_id)
        rows["semif_serve_calibrated" if run.calibration else "semif_serve"] = ask(adapter, items)
        if run.calibration:
            rows["semif_serve"] = raw_view(items, adapter)
    seconds["semif_serve"] = round(time.perf_counter() - started, 1)
    rates = _rates(adapter.bodies.values())
    say(f"semif serve: {seconds['semif_serve']} s")
    started = time.perf_counter()
    with running_llama_server(run.model, run.port + 1, run.threads, run.log_dir / "yardstick-llama-server.log",
                              run.llama_server) as (base, server):
        bridged = llama_adapter(base, model_id)
        rows["llama_server"] = ask(bridged, items)
    seconds["llama_server"] = round(time.perf_counter() - started, 1)
    say(f"llama-server: {seconds['llama_server']} s")
    reads = scores.read_summary(bridged.reads)
    systems = {name: _summarise(rows[name], None if name == "majority_prior" else rows["majority_prior"], run.seed)
               for name in SYSTEMS if name in rows}
    refused = scores.refusal(reads)
    systems["llama_server"] |= {"letters_read": reads, "refused": refused}
    if refused:
        systems["llama_server"] = {k: v for k, v in systems["llama_server"].items() if k in ("letters_read", "refused")}
    doc: dict[str, Any] = {"workload": {"generators": {g: _generator_version(g) for g in run.generators}, "items_each": run.items,
                                        "seed": run.seed, "items": len(items), "decisions": systems["majority_prior"]["accuracy"]["n"],
                                        "majority_prior_fitted_on": f"{FIT_ITEMS} items per generator, seed {run.seed + 1}"},
                           "systems": systems, "seconds": seconds, "semif_serve_rates": rates, "llama_server": server}
    if run.calibration:
        document = json.loads(run.calibration.read_text(encoding="utf-8"))
        doc["calibration"] = {"file": str(run.calibration), "source": document.get("source"),
                              "transfer": scores.calibration_transfer(rows["semif_serve"], rows["semif_serve_calibrated"], document)}
    return doc


def _rates(bodies: Any) -> dict[str, Any]:
    """`semif serve`'s own timing over the run (`x_timing`): prefill and branch tokens per second, and per request."""
    timings = [b.get("x_timing") or {} for b in bodies]
    prefix = sum(t.get("prefix_tokens", 0) for t in timings)
    suffix = sum(sum((t.get("suffix_tokens") or {}).values()) for t in timings)
    prefill, branches = sum(t.get("prefill_s", 0.0) for t in timings), sum(t.get("branches_s", 0.0) for t in timings)
    totals = sorted(t.get("total_s", 0.0) for t in timings)
    return {"requests": len(timings), "prefix_tokens": prefix, "prefill_s": round(prefill, 2), "suffix_tokens": suffix,
            "branches_s": round(branches, 2), "prefill_tokens_per_s": round(prefix / prefill, 1) if prefill else None,
            "branch_tokens_per_s": round(suffix / branches, 1) if branches else None,
            "request_s_median": totals[len(totals) // 2] if totals else None, "request_s_max": totals[-1] if totals else None}


def _generator_version(name: str) -> str:
    from sys1bench.generators import GENERATORS

    return GENERATORS[name].version


def _cell(entry: dict[str, Any] | None) -> str:
    if not entry or entry.get("value") is None:
        return "-"
    low, high = entry["ci95"]
    return f"{entry['value']:.2f} [{low:.2f}, {high:.2f}]"


def format_yardstick(doc: dict[str, Any]) -> str:
    """The Markdown rows docs/quality.md quotes: one per system, accuracy, gap to majority_prior, verdict."""
    lines = ["| model | system | decisions | accuracy [95% CI] | minus majority_prior [95% CI] | beats majority_prior |",
             "|---|---|---:|---|---|---|"]
    for name, entry in doc["systems"].items():
        if entry.get("refused"):
            lines.append(f"| {doc['model']['id']} | {name} | - | refused: {entry['refused']} | - | - |")
            continue
        gap = entry.get("gap_to_majority_prior")
        verdict = "-" if gap is None else ("yes" if gap["beats"] else "**no**: cannot beat it here")
        accuracy = entry["accuracy"]
        lines.append(f"| {doc['model']['id']} | {name} | {accuracy['n']} | {_cell(accuracy)} | {_cell(gap)} | {verdict} |")
    return "\n".join(lines)


def format_transfer(doc: dict[str, Any]) -> str:
    """The calibration file's fate on sys1bench, one row per question type (Markdown; empty without a file)."""
    transfer = (doc.get("calibration") or {}).get("transfer") or {}
    lines = ["| model | type | decisions | temperature the file keeps | ECE raw -> calibrated | NLL raw -> calibrated | helps here |",
             "|---|---|---:|---|---|---|---|"]
    for kind, entry in transfer.items():
        if not entry["n"]:
            continue
        kept = f"{entry['temperature']:.2f}" if entry["temperature_kept"] else "none (T = 1)"
        raw, cal = entry["raw"], entry["calibrated"]
        helps = "yes" if entry["helps_here"] else ("no change" if not entry["temperature_kept"] else "**no**")
        lines.append(f"| {doc['model']['id']} | {kind} | {entry['n']} | {kept} | {raw['ece']:.3f} -> {cal['ece']:.3f} | "
                     f"{raw['nll']:.3f} -> {cal['nll']:.3f} | {helps} |")
    return "\n".join(lines) if len(lines) > 2 else ""


def command_yardstick(args: Any) -> int:
    """`semif bench sys1bench`: run, print the table, write the results file (default results/eval/sys1bench-<model>.json)."""
    from ....containers.textserver import find_llama_server
    from ....settings import load_settings

    model = find_model_path(args.model_path)
    run = YardstickRun(model=model, generators=tuple(args.generators), items=args.items, seed=args.seed, threads=args.threads,
                       port=args.port, calibration=args.calibration, log_dir=args.log_dir,
                       llama_server=find_llama_server(load_settings()))  # the command reads the environment once
    doc = {"command": " ".join(["semif", *sys.argv[1:]]) if sys.argv[1:3] == ["bench", "sys1bench"] else "semif bench sys1bench",
           "model": {"id": model.name.removesuffix(".gguf"), "file": model.name, "sha256": hash_file(model), "bytes": model.stat().st_size},
           "machine": describe_machine(SimpleNamespace(threads=run.threads, flash_attn="auto", n_ubatch=None)) | {
               "sys1bench": metadata.version("sys1bench")}}
    doc |= run_yardstick(run, say=lambda text: print(text, file=sys.stderr))
    print(format_yardstick(doc))
    print(format_transfer(doc))
    output = args.output or Path("results/eval") / f"sys1bench-{doc['model']['id']}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {output}", file=sys.stderr)
    refused = [name for name, entry in doc["systems"].items() if entry.get("refused")]
    return 3 if refused else 0
