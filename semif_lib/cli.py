"""`semif` command line: score decisions, and the subcommands other modules register.

Each subcommand module exposes `register_cli(subparsers)`; heavy imports happen only
inside the command that needs them, so `semif --help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from .errors import SemifError

SUBCOMMAND_MODULES = (
    "semif_lib.bench",
    "semif_lib.adapter",
    "semif_lib.texttwin",
    "semif_lib.evaluation",
    "semif_lib.workshop",
)


def read_jsonl(path: Path | str) -> Iterator[tuple[int, str]]:
    """Non-empty lines of a JSON Lines file (`-` reads stdin), with their 1-based numbers."""
    stream: Iterable[str] = sys.stdin if str(path) == "-" else Path(path).open(encoding="utf-8")
    for number, line in enumerate(stream, start=1):
        if line.strip():
            yield number, line


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags shared by every command that loads a model (each overrides its `SEMIF_*` variable)."""
    parser.add_argument("--model", type=Path, help="GGUF file (default: SEMIF_MODEL_PATH, SEMIF_MODEL_DIR, then the embedded SmolLM2)")
    parser.add_argument("--threads", type=int, help="llama.cpp threads (default: CPUs this process may use)")
    parser.add_argument("--n-ctx", type=int, dest="n_ctx", help="context size in tokens (SEMIF_N_CTX)")


def engine_overrides(args: argparse.Namespace) -> dict[str, Any]:
    return {"model_path": args.model, "threads": args.threads, "n_ctx": args.n_ctx}


def score_lines(engine: Any, lines: Sequence[tuple[int, str]], mode: str, progress: bool = True) -> list[dict[str, Any]]:
    """Score JSON Lines requests; a bad line yields an error record with its id, never a crash."""
    from tqdm import tqdm

    from .schema import parse_json_bytes

    results = []
    for number, line in tqdm(lines, desc=f"scoring ({mode})", unit="req", file=sys.stderr, disable=not progress):
        record_id: Any = f"line-{number}"
        try:
            data = parse_json_bytes(line)
            if isinstance(data, dict):
                record_id = data.get("id", record_id)
            response = engine.score(data, mode=mode)
            results.append({"id": record_id, **response.model_dump(mode="json")})
        except SemifError as exc:
            results.append({"id": record_id, **exc.to_body(), "status": exc.status_code})
    return results


def format_table(results: Sequence[dict[str, Any]]) -> str:
    """One row per answer: the decision, its confidence and the option mass."""
    import pandas as pd

    rows = []
    for res in results:
        if "error" in res:
            rows.append({"id": res["id"], "question": "-", "type": "error", "answer": res["error"]["message"][:60]})
            continue
        for qid, ans in res["answers"].items():
            if ans["type"] == "noul":
                answer, conf = f"P(yes)={ans['noul']:.3f}", max(ans["noul"], 1 - ans["noul"])
            elif ans["type"] == "choice":
                answer, conf = ans["choice"], ans["confidence"]
            else:
                answer, conf = f"{ans['score']:.2f} / {len(ans['legend']) - 1}", ans["confidence"]
            rows.append({"id": res["id"], "question": qid, "type": ans["type"], "answer": answer,
                         "top_p": round(conf, 3), "option_mass": round(ans["option_mass"], 3),
                         "ms": round(1000 * res["timing"]["total_s"])})
    return pd.DataFrame(rows).to_string(index=False)


def command_score(args: argparse.Namespace) -> int:
    from .engine import open_engine

    lines = list(read_jsonl(args.input))
    with open_engine(**engine_overrides(args)) as engine:
        results = score_lines(engine, lines, args.mode)
        print(f"model {engine.model_id}, mode {args.mode}, {engine.settings.threads} threads", file=sys.stderr)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        with args.output.open("w", encoding="utf-8") as fh:
            for res in results:
                fh.write(json.dumps(res, ensure_ascii=False) + "\n")
        print(f"wrote {len(results)} responses to {args.output}", file=sys.stderr)
    else:
        print(format_table(results))
    return 1 if any("error" in r for r in results) else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="semif", description="Decisions as probabilities over declared options, read from one llama.cpp forward pass.")
    sub = parser.add_subparsers(dest="command", required=True)
    score = sub.add_parser("score", help="score JSON Lines decision requests")
    score.add_argument("input", help="JSON Lines file, one request with an \"id\" per line ('-' for stdin)")
    score.add_argument("--mode", choices=("fresh", "serial", "parallel"), default="parallel")
    score.add_argument("--output", type=Path, help="write responses as JSON Lines instead of printing a table")
    add_engine_arguments(score)
    score.set_defaults(func=command_score)
    for name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register_cli(sub)
    return parser


def run_command(args: argparse.Namespace, prog: str = "semif") -> int:
    """Run a parsed subcommand; a `SemifError` becomes one clear line on stderr and exit code 2."""
    try:
        return int(args.func(args) or 0)
    except SemifError as exc:
        print(f"{prog}: error: {exc.message}", file=sys.stderr)
        return 2


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(build_parser().parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
