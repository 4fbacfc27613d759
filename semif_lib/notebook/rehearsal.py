"""An event team's rehearsal: the AWS path walked once on a real account before the event, measured.

`semif workshop rehearse` runs notebooks 00 -> 05 -> 99 with `SEMIF_TARGET=aws` as an attendee would (nbclient, each
notebook's own parameters, a fresh state file), times each notebook, reads what the run created from the state file
before 99 deletes it, and bills the resources that cost by the hour: each endpoint from its creation to the end of 99,
the transform job and the image build at AWS's own start and end times where a describe call gives them. It writes
`results/notebooks/rehearsal.json`; `budget` then states its AWS minutes and the run's cost from that file instead of
its estimates, and says so. On moto (tests/test_rehearsal.py) only the file's shape and that preference are real: moto
starts every endpoint at once and runs no build, so its minutes measure nothing.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from ..paths import repo_root
from . import budget
from .budget import read_rehearsal, stated_aws_minutes

__all__ = ["REHEARSAL_ORDER", "bill_resources", "read_rehearsal", "run_rehearsal", "stated_aws_minutes", "write_rehearsal"]

REHEARSAL_ORDER = ("00", "01", "02", "03", "04", "05", "99")  # what an attendee runs on AWS (06 and 07 need no account)
HOURLY_KINDS = {"sagemaker_endpoint": "endpoint"}  # billed from creation until 99 deletes them
RunNotebook = Callable[[Path, dict[str, str]], Any]


def _hours_between(start: str, end: float) -> float:
    return max(0.0, end - datetime.fromisoformat(start).timestamp()) / 3600


def bill_resources(resources: list[dict[str, Any]], ended: float, timings: dict[str, float | None]) -> dict[str, Any]:
    """Billed hours per priced item (`prices.PRICES` keys): each endpoint from its record to `ended` (the end of 99,
    an upper bound: 99 deletes them during its run), and the transform job and image build from `timings` (AWS's own
    seconds, None where no describe call gave them)."""
    endpoints = [r for r in resources if r["kind"] in HOURLY_KINDS]
    hours = {"endpoint": round(sum(_hours_between(r["created"], ended) for r in endpoints), 3)}
    for item in ("transform", "codebuild"):
        seconds = timings.get(item)
        hours[item] = None if seconds is None else round(seconds / 3600, 3)
    return {"hours": hours, "endpoints": [r["name"] for r in endpoints]}


def _aws_timings(resources: list[dict[str, Any]], settings: Any) -> dict[str, float | None]:
    """The transform job's and the last image build's seconds, as AWS reports them (None where it does not)."""
    from ..aws.clients import make_client

    timings: dict[str, float | None] = {"transform": None, "codebuild": None}
    for r in resources:
        try:
            if r["kind"] == "transform_job":
                job = make_client("sagemaker", settings).describe_transform_job(TransformJobName=r["name"])
                timings["transform"] = (job["TransformEndTime"] - job["TransformStartTime"]).total_seconds()
            elif r["kind"] == "codebuild_project":
                client = make_client("codebuild", settings)
                ids = client.list_builds_for_project(projectName=r["name"])["ids"][:1]
                build = client.batch_get_builds(ids=ids)["builds"][0] if ids else {}
                if build.get("endTime"):
                    timings["codebuild"] = (build["endTime"] - build["startTime"]).total_seconds()
        except Exception:  # noqa: BLE001 - a time AWS does not give is left unmeasured, never guessed
            continue
    return timings


def _run_one(path: Path, env: dict[str, str]) -> None:
    from .clock import _run_one as run

    run(path, env)


def run_rehearsal(settings: Any = None, run: RunNotebook = _run_one, progress: bool = True) -> dict[str, Any]:
    """Walk `REHEARSAL_ORDER` on AWS with the caller's credentials and SEMIF_* settings (an event team's image, region,
    bucket) and a fresh state file; the measured minutes, what was created, and its billed hours."""
    from tqdm.auto import tqdm

    from ..registry import WorkshopState
    from ..settings import load_settings

    settings = settings or load_settings(target="aws")
    folder = repo_root() / "notebooks"
    with tempfile.TemporaryDirectory(prefix="semif-rehearsal-") as tmp:
        state_file = Path(tmp) / "workshop_state.json"
        env = {**os.environ, "SEMIF_TARGET": "aws", "SEMIF_STATE_FILE": str(state_file)}
        minutes: dict[str, float] = {}
        resources: list[dict[str, Any]] = []
        for name in tqdm(REHEARSAL_ORDER, desc="notebooks on AWS", unit="notebook", disable=not progress):
            if name == "99" and state_file.is_file():  # what the run made, before cleanup deletes the record
                resources = list(WorkshopState.load(state_file).resources)
            start = time.monotonic()
            run(next(folder.glob(f"{name}_*.ipynb")), env)
            minutes[name] = round((time.monotonic() - start) / 60, 2)
        ended = time.time()
    return {"command": "semif workshop rehearse", "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "region": settings.aws_region, "minutes": minutes,
            "resources": [{"kind": r["kind"], "name": r["name"], "created": r["created"]} for r in resources],
            "billed": bill_resources(resources, ended, _aws_timings(resources, settings)),
            "note": "measured on a real account; endpoint hours run from creation to the end of 99 (an upper bound)"}


def write_rehearsal(results: dict[str, Any], path: Path | None = None) -> Path:
    path = path or budget.rehearsal_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return path


def command_rehearse(args: Any) -> int:
    """`semif workshop rehearse`: run and write (the CLI then prints what the budget states from the file)."""
    if not args.yes:
        print("this creates two endpoints, a transform job and an image build on the account your credentials name, and "
              "deletes them in 99 (about an hour, about $0.50 at list price): run again with --yes")
        return 2
    print(f"wrote {write_rehearsal(run_rehearsal(progress=not args.quiet), Path(args.output) if args.output else None)}")
    return 0
