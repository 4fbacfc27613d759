"""The workshop's clock and bill, in one place: each notebook's minutes with the local and the aws target, what bills
while it runs, the list prices, and what a full AWS run costs at them.

Each notebook opens with `format_clock(name)`, the README's workshop table carries the same minutes and docs/aws.md
the same prices (tests/test_notebooks.py and tests/test_notebooks_helpers.py check all three against this module).

* **local target**: the notebook run top to bottom with its default parameters on a 2-core machine, every notebook in order
  (embedded SmolLM2-135M; `semif workshop clock` measures them into results/notebooks/clock.json, `notebook.clock`),
  rounded up to whole minutes. Reading time is extra.
* **aws target**: the same, plus AWS's waits as docs/aws.md gives them (an endpoint 5-8 minutes to InService, a CodeBuild
  build 10-15 minutes, a transform job's instance a few minutes to start): estimates, until an event team's rehearsal
  (`semif workshop rehearse`, `rehearsal`) measures them on a real account; its file then wins, minutes and bill alike.
* **prices**: `semif_lib.prices` (AWS's list prices, their source and date), shared with the cost per million decisions.

The AWS order is 00 -> 05 -> 99, then 06 and 07 locally (or in the Studio space after 99): 06 and 07 need no endpoint,
so run before 99 they would keep both endpoints billing.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..contract import REALTIME_INVOCATION_S
from ..model.defaults import AWS_MODEL, TargetModel
from ..model.metadata import INSTANCE_MEMORY_GIB
from ..paths import repo_root
from ..prices import PRICES, PRICES_AS_OF

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = ["CLOCKS", "Clock", "aws_minutes", "aws_run_minutes", "count_prose_words", "estimate_model_budget", "estimate_run_cost",
           "format_autoscaling", "format_clock", "format_model_budget", "read_rehearsal", "reading_minutes", "rehearsal_path",
           "stated_aws_minutes"]

@dataclass(frozen=True)
class Clock:
    """One notebook: minutes with the local target and with the aws target, and what bills while it runs on AWS."""

    here_min: int
    aws_min: int
    bills: str


CLOCKS = {
    "00": Clock(1, 1, "the Studio space only (the model runs in its kernel)"),
    "01": Clock(1, 2, "the Studio space; S3 storage for the package (cents a month)"),
    "02": Clock(1, 10, "the Studio space, and from here the text endpoint (1 ml.c6i.xlarge) until 99 deletes it"),
    "03": Clock(1, 15, "the Studio space, the text endpoint, and CodeBuild minutes (BUILD_GENERAL1_MEDIUM) while the image builds"),
    "04": Clock(1, 20, "the Studio space, both endpoints (autoscaling may add a second decision instance), and a transform "
                       "instance while the job runs"),
    "05": Clock(1, 3, "the Studio space and both endpoints: on AWS open 99 next"),
    "06": Clock(1, 1, "the Studio space only: on AWS run it after 99, when no endpoint is left"),
    "07": Clock(1, 3, "the Studio space only: on AWS run it after 99, when no endpoint is left"),
    "99": Clock(1, 3, "the Studio space, until you stop it (the last cell says how); the endpoints stop as 99 deletes them"),
}

AWS_ORDER = ("00", "01", "02", "03", "04", "05", "99")  # then 06 and 07, after 99
TRANSFORM_MIN = 8  # the transform instance: start, 3 requests, stop (inside 04's minutes)
BUILD_MIN = 12  # a CodeBuild build of the adapter image (inside 03's minutes)
SESSION_HOURS = 2.0  # the Studio space for a sitting of the whole workshop (its idle shutdown default is 120 minutes)


WORDS_PER_MINUTE = 200  # reading prose; the code cells' reading is what the rounding up to five minutes leaves for


def count_prose_words(folder: Path | None = None) -> int:
    """Words in the notebooks' markdown cells: what an attendee reads besides the code (the README's plan of the hour)."""
    import json
    import re

    from ..paths import repo_root

    words = 0
    for path in sorted((folder or repo_root() / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        words += sum(len(re.findall(r"\S+", "".join(c["source"]))) for c in cells if c["cell_type"] == "markdown")
    return words


def reading_minutes(words: int) -> int:
    """Minutes to read `words` of prose and the code beside it: the prose at `WORDS_PER_MINUTE`, rounded up to five."""
    return 5 * math.ceil(words / WORDS_PER_MINUTE / 5)


def aws_run_minutes() -> int:
    """Minutes of an AWS run along 00 -> 05 -> 99 (the notebooks' AWS minutes summed; estimates, see the module doc)."""
    return _minutes_from(AWS_ORDER[0])


def format_clock(notebook: str) -> str:
    """The line a notebook opens with, from its two-digit prefix (`"05"` or `"05_score_..."`)."""
    clock = CLOCKS[notebook[:2]]
    minutes, measured = aws_minutes(notebook)
    aws = f"{minutes} min with the aws target{' (rehearsed)' if measured else ''}"
    return f"*About {clock.here_min} min with the local target (2 cores), {aws}; what bills while it runs on AWS: {clock.bills}.*"


def rehearsal_path() -> Path:
    from ..paths import repo_root

    return repo_root() / "results" / "notebooks" / "rehearsal.json"


def read_rehearsal(path: Path | None = None) -> dict:
    """An event team's committed rehearsal (`rehearsal`, `semif workshop rehearse`), or {} where none was run."""
    import json

    path = path or rehearsal_path()
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def stated_aws_minutes(results: dict, notebook: str) -> int | None:
    """A notebook's AWS minutes as the rehearsal measured them, rounded up (None: not rehearsed)."""
    measured = results.get("minutes", {}).get(notebook[:2])
    return None if measured is None else max(1, math.ceil(measured))


def aws_minutes(notebook: str) -> tuple[int, bool]:
    """A notebook's minutes with the aws target, and whether they were measured: an event team's rehearsal
    (`results/notebooks/rehearsal.json`, `semif workshop rehearse`) wins over the estimate in `CLOCKS`."""
    measured = stated_aws_minutes(read_rehearsal(), notebook)
    return (CLOCKS[notebook[:2]].aws_min, False) if measured is None else (measured, True)


def _minutes_from(first: str) -> int:
    """Minutes from the start of notebook `first` to the end of 99, along the AWS order."""
    return sum(aws_minutes(n)[0] for n in AWS_ORDER[AWS_ORDER.index(first):])


def estimate_run_cost() -> dict[str, object]:
    """What one attendee's AWS run (00 -> 05 -> 99) costs at `PRICES`: the rows (what, quantity, unit, US dollars),
    their total, and what a day costs when 99 is forgotten (both endpoints left up)."""
    usage = [("endpoint", _minutes_from("02") / 60, "text endpoint, 02 to 99"),
             ("endpoint", _minutes_from("04") / 60, "decision endpoint, 04 to 99"),
             ("transform", TRANSFORM_MIN / 60, "transform job, 04"),
             ("codebuild", BUILD_MIN, "image build, 03"),
             ("studio", SESSION_HOURS, "Studio space, the sitting")]
    measured = _rehearsed_usage()
    if measured:
        usage = measured + usage[-1:]
    rows = [{"what": what, "quantity": round(amount, 2), "unit": PRICES[key].unit, "usd": round(amount * PRICES[key].usd, 2)}
            for key, amount, what in usage]
    total = math.fsum(row["usd"] for row in rows)
    return {"rows": rows, "total_usd": round(total, 2), "forgotten_day_usd": round(2 * 24 * PRICES["endpoint"].usd, 2),
            "prices_as_of": PRICES_AS_OF, "measured": bool(measured)}


def _rehearsed_usage() -> list[tuple[str, float, str]]:
    """The rehearsal's billed hours as usage rows (items it could not time keep their estimate); [] without one."""
    hours = read_rehearsal().get("billed", {}).get("hours")
    if not hours:
        return []
    transform = hours.get("transform")
    build = hours.get("codebuild")
    return [("endpoint", hours["endpoint"], "both endpoints, rehearsed"),
            ("transform", TRANSFORM_MIN / 60 if transform is None else transform,
             "transform job, 04" + ("" if transform is None else ", rehearsed")),
            ("codebuild", BUILD_MIN if build is None else build * 60, "image build, 03" + ("" if build is None else ", rehearsed"))]


def format_autoscaling(autoscale: tuple[int, int, float] | None, settings: "Settings") -> str:
    """What notebook 04's optional autoscaling step costs and needs: the extra instances at list price, and the endpoint
    quota a run then holds at its peak (`aws.quotas`, which notebook 01 checks)."""
    from ..aws.quotas import endpoint_instance_type, quota_needs

    if not autoscale:
        return "autoscaling skipped (AUTOSCALE = None): the decision endpoint stays at one instance"
    _, most, per_minute = autoscale
    need = quota_needs(settings, most)[0]
    extra = most - 1
    return (f"optional: target tracking at {per_minute:g} invocations per instance per minute adds up to {extra} more "
            f"{endpoint_instance_type(settings)} while the load lasts, at ${PRICES['endpoint'].usd:.3f} an hour each (list price, "
            f"{PRICES_AS_OF}); it needs the quota '{need.name}' of at least {need.peak} (notebook 01 checks it). "
            "Set AUTOSCALE = None to skip it.")


# ---------------------------------------------------------------- the AWS default model's share of the clock and the bill
TRANSFER_MB_S = 50  # assumed, not measured: Studio's download from the hub, its upload to S3, each endpoint's copy from S3
# Notebook 05's state 0 on the model, two threads, alone: `semif bench modes --states 1 --paths fresh,serial,parallel,cached
# --fresh-questions 8 --model <its GGUF> --threads 2` (the command is in the file)
REQUEST_FILES = {"Qwen2.5-Coder-1.5B-Instruct": "results/bench/modes-qwen2.5-coder-1.5b-state0.json"}
NOTEBOOK_05_QUESTIONS = (8, 21)  # notebook 05's default QUESTIONS, and all of a state's criteria


def estimate_model_budget(model: TargetModel = AWS_MODEL, root: Path | None = None) -> dict[str, Any]:
    """What the target's default model adds to a run: the same instance (so the same dollars), the minutes its file
    takes to move, and notebook 05's calls as measured on two quiet cores, against SageMaker's 60 s per invocation.

    Measured: a cold fork of all 21 questions, one fresh question (05 sends fresh one question per call) and the 21
    from the cache. Computed at that run's own rates: the cold fork of 05's default 8."""
    root = root or repo_root()
    run = json.loads((root / REQUEST_FILES[model.measured_as]).read_text(encoding="utf-8"))
    (state,) = run["per_state"]
    workload, rates = run["workload"], run["fork_ceiling"]
    measured = {"cold fork, 21 questions": round(state["seconds"]["parallel"], 1),
                "one fresh question": round(state["seconds"]["fresh"] / workload["fresh_questions_per_state"], 1),
                "cached, 21 questions": round(state["seconds"]["cached"], 1)}
    computed = {q: round(workload["prefix_tokens_mean"] / rates["prefill_tokens_per_s"]
                         + q * workload["suffix_tokens_mean"] / rates["branch_tokens_per_s"], 1) for q in NOTEBOOK_05_QUESTIONS}
    moves = 1 + 1 + 2  # into the Studio space, up to S3, down to each of the two endpoints
    return {"instance": model.instance, "instance_gib": INSTANCE_MEMORY_GIB[model.instance][0],
            "usd_per_hour": PRICES["endpoint"].usd, "run_usd": estimate_run_cost()["total_usd"],
            "transfer_min": round(moves * model.size / 1e6 / TRANSFER_MB_S / 60, 1),
            "prefill_tokens_per_s": rates["prefill_tokens_per_s"], "branch_tokens_per_s": rates["branch_tokens_per_s"],
            "prefix_tokens": workload["prefix_tokens_mean"], "threads": run["machine"]["threads"], "cpu": run["machine"]["cpu"],
            "measured_s": measured, "request_s": computed, "limit_s": REALTIME_INVOCATION_S, "rates_command": run["command"],
            "date": run["machine"]["date"][:10]}


def format_model_budget(budget: dict[str, Any], model: TargetModel = AWS_MODEL) -> str:
    """The paragraph docs/quality.md quotes (tests/test_model_defaults.py holds the two together)."""
    def against(s: float) -> str:
        return f"{s} s ({'inside' if s < budget['limit_s'] else 'over'} {budget['limit_s']:.0f} s)"

    measured = ", ".join(f"{name} {against(s)}" for name, s in budget["measured_s"].items())
    return (f"{model.measured_as} on `{budget['instance']}` ({budget['instance_gib']} GiB): the instance the workshop already "
            f"uses, ${budget['usd_per_hour']:.3f} an hour per endpoint, so a run still costs about ${budget['run_usd']:.2f}; "
            f"its {model.size / 1e9:.2f} GB moves four times (into the Studio space, to S3, to each endpoint), about "
            f"{budget['transfer_min']} min at an assumed {TRANSFER_MB_S} MB/s. Notebook 05's state 0 ({budget['prefix_tokens']} "
            f"prefix tokens) on {budget['threads']} threads of an {budget['cpu']}, alone ({budget['date']}, `{budget['rates_command']}`): "
            f"{measured}; its default 8 questions, cold, at that run's {budget['prefill_tokens_per_s']} prefill and "
            f"{budget['branch_tokens_per_s']} branch tokens/s: {against(budget['request_s'][8])}.")
