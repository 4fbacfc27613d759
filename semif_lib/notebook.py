"""What the workshop notebooks call besides `workshop`: settings for a notebook's `TARGET`, the
repository's data files, answer tables, stopping local servers, a build-context check and the
ipywidgets form of notebook 00.

`load_notebook_settings` also makes the kernel show a `SemifError` as its one-line message (what to
do) instead of a traceback through the library (`show_errors_briefly`); the cell still fails.

Notebooks run with their own folder as the working directory, so every relative path here is
resolved against the repository root (`find_repo_root`), never against `Path.cwd()`: the state
file a notebook writes is the one `semif workshop status` reads from the repository root.
pandas and ipywidgets are imported inside the functions that need them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from .jsonlines import read_records
from .settings import Settings, load_settings

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from .aws.state import WorkshopState

__all__ = [
    "DecisionForm",
    "compare_answers",
    "describe_target",
    "find_repo_root",
    "inspect_build_context",
    "load_notebook_settings",
    "load_workload_request",
    "read_examples",
    "show_errors_briefly",
    "show_target",
    "stop_local_servers",
    "tabulate_answers",
    "tabulate_permissions",
    "tabulate_records",
]

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
PROJECT_NAME = "semif-workshop"


def _is_repo_root(path: Path) -> bool:
    pyproject = path / "pyproject.toml"
    return pyproject.is_file() and f'name = "{PROJECT_NAME}"' in pyproject.read_text(encoding="utf-8", errors="replace")


def find_repo_root(start: Path | str | None = None) -> Path:
    """The checkout this package came from (editable install), else the first parent of `start`
    (default: the working directory) holding our `pyproject.toml`, else `start` itself."""
    if _is_repo_root(PACKAGE_ROOT):
        return PACKAGE_ROOT
    start = Path(start or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if _is_repo_root(folder):
            return folder
    return start


def _anchor(path: Path, root: Path) -> Path:
    return path if path.is_absolute() else root / path


def _brief_traceback(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: int | None = None) -> list[str]:
    import sys

    sys.last_type, sys.last_value, sys.last_traceback = etype, value, tb  # what %tb reads
    stb = [f"\x1b[0;31m{etype.__name__}\x1b[0m: {value}", "(%tb shows the full traceback)"]
    shell._showtraceback(etype, value, stb)  # ipykernel: an error output, and the cell's reply says error
    return stb


def show_errors_briefly() -> bool:
    """In an IPython kernel, show a `SemifError` as `ErrorName: message` (the message says what to do),
    not a traceback through the library. The cell still fails (Run All stops, nbclient raises) and
    `%tb` prints the whole traceback. Returns whether there was a kernel to configure."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None:
        return False
    from .errors import SemifError

    shell.set_custom_exc((SemifError,), _brief_traceback)
    return True


def load_notebook_settings(target: str | None = None, **overrides: Any) -> Settings:
    """`SEMIF_*` settings with the notebook's `TARGET` (and any overrides) applied, and the state
    file, results folder and calibration file anchored at the repository root.

    `TARGET = None` (the notebooks' default) means `SEMIF_TARGET`, else `local`: `export
    SEMIF_TARGET=aws` runs every notebook against AWS without editing one. In a notebook it also
    turns on `show_errors_briefly`."""
    show_errors_briefly()
    settings = load_settings(target=target, **overrides)
    root = find_repo_root()
    update: dict[str, Any] = {"state_file": _anchor(Path(settings.state_file), root),
                              "results_dir": _anchor(Path(settings.results_dir), root)}
    if settings.calibration is not None:
        update["calibration"] = _anchor(Path(settings.calibration), root)
    return settings.model_copy(update=update)


def describe_target(settings: Settings, state: "WorkshopState | None" = None, target: str | None = None,
                    local_only: bool = False) -> str:
    """The line every notebook prints first: where it runs, why, and (for workshop steps) the run.

    `target` is the notebook's `TARGET` parameter (None: taken from `SEMIF_TARGET`, else local).
    `local_only` notebooks run on this machine whatever the target says.
    """
    import os

    source = "TARGET parameter" if target else ("SEMIF_TARGET" if os.environ.get("SEMIF_TARGET") else "default")
    if local_only:
        return (f"target=local | this notebook always runs on this machine "
                f"(the workshop target is {settings.target}, from {source})")
    parts = [f"target={settings.target}"]
    if state is not None:
        parts.append(f"run {state.run_id}")
    if settings.target == "aws":
        parts.append(f"region {(state.region if state is not None else None) or settings.aws_region or 'from the AWS session'}")
    if state is not None:
        parts.append(f"state file {state.path}")
    return " | ".join(parts) + f" (target from {source})"


def show_target(settings: Settings, state: "WorkshopState | None" = None, target: str | None = None,
                local_only: bool = False) -> None:
    """Print `describe_target(...)` (the first output of every notebook)."""
    print(describe_target(settings, state, target, local_only))


def tabulate_permissions(check: Any) -> "pd.DataFrame | None":
    """Notebook 01's permission check (`aws.preflight.PermissionCheck`) as one table: step, action,
    resource, allowed (yes / NO / ?), and how it was checked. None in local mode."""
    if check is None:
        return None
    import pandas as pd

    mark = {True: "yes", False: "NO", None: "?"}
    rows = [{**row, "allowed": mark[row["allowed"]]} for row in check.rows]
    return pd.DataFrame(rows, columns=["step", "action", "allowed", "how", "resource"])


def data_path(name: str) -> Path:
    """A file under the repository's `data/` folder."""
    path = find_repo_root() / "data" / name
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: run the notebooks from a checkout of the repository")
    return path


def read_examples(name: str = "examples.jsonl") -> list[dict[str, Any]]:
    """The example requests (one Jev / System One request per line, each with an `id`)."""
    return read_records(data_path(name))


def load_workload_request(index: int = 0, questions: int | None = None, name: str = "workload_37x21.jsonl") -> dict[str, Any]:
    """One long state of the benchmark workload with its criteria (the first `questions` of 21)."""
    rows = read_examples(name)
    row = dict(rows[index % len(rows)])
    if questions is not None:
        row["questions"] = dict(list(row["questions"].items())[:questions])
    return row


# ====================================================================== answers
def _answers(response: Any) -> dict[str, Any]:
    from .measurement.plots import response_dict

    return response_dict(response).get("answers", {})


def tabulate_answers(response: Any) -> "pd.DataFrame":
    """One row per question: the decision, its confidence, option mass and every P(option)."""
    import pandas as pd

    rows = []
    for qid, answer in _answers(response).items():
        decision = _decision(answer)
        probs = answer.get("probabilities", {})
        rows.append({"question": qid, "type": answer.get("type"), "answer": decision,
                     "confidence": answer.get("confidence", max(probs.values(), default=None)),
                     "option_mass": answer.get("option_mass"),
                     "probabilities": ", ".join(f"{k}={v:.3f}" for k, v in probs.items())})
    return pd.DataFrame(rows).set_index("question") if rows else pd.DataFrame(rows)


def _decision(answer: Mapping[str, Any]) -> Any:
    return {"noul": answer.get("noul"), "choice": answer.get("choice"), "score": answer.get("score")}.get(answer.get("type"))


def tabulate_records(records: Any) -> "pd.DataFrame | str":
    """Responses of a JSON Lines run as one row per request id and one column per question
    (the decision); an S3 URI (what Batch Transform returns) is passed through."""
    import pandas as pd

    if isinstance(records, str):
        return records
    rows = {}
    for record in records:
        if "error" in record:
            rows[record.get("id")] = {"error": record["error"].get("message", record["error"])}
        else:
            rows[record.get("id")] = {qid: _decision(a) for qid, a in record.get("answers", {}).items()}
    return pd.DataFrame.from_dict(rows, orient="index")


def compare_answers(reference: Any, other: Any) -> "pd.DataFrame":
    """Per question: both argmaxes, whether they agree, and max |Δp| between the two responses."""
    import pandas as pd

    ref, oth = _answers(reference), _answers(other)
    rows = []
    for qid, a in ref.items():
        b = oth.get(qid, {})
        pa, pb = a.get("probabilities", {}), b.get("probabilities", {})
        top_a = max(pa, key=pa.get) if pa else None
        top_b = max(pb, key=pb.get) if pb else None
        dp = max((abs(pa[k] - pb.get(k, 0.0)) for k in pa), default=float("nan"))
        rows.append({"question": qid, "reference": top_a, "other": top_b, "same_argmax": top_a == top_b, "max_abs_dp": round(dp, 4)})
    return pd.DataFrame(rows).set_index("question") if rows else pd.DataFrame(rows)


# ====================================================================== local servers
def stop_local_servers(settings: Settings | None = None, state: "WorkshopState | None" = None) -> list[str]:
    """Stop every local server (`semif serve`, `semif serve-text`, or their containers) the state file records; keep the
    rest of the state (model package, names) for the next notebook. AWS resources are untouched."""
    from .aws.state import load_state
    from .aws.teardown import delete_resource

    settings = settings or load_settings()
    state = state or load_state(settings)
    stopped = []
    from .workshop import LOCAL_KINDS

    entries = [e for e in reversed(state.resources) if e["kind"] in LOCAL_KINDS]
    for entry in entries:
        if delete_resource(entry, settings):
            stopped.append(f"{entry['name']} (pid {entry['pid']})" if "pid" in entry else f"{entry['name']} (container)")
        state.forget(entry["kind"], entry["name"])
    return stopped


# ====================================================================== build context (notebook 03)
def inspect_build_context(root: Path | None = None) -> dict[str, Any]:
    """Check `container/` statically, as CodeBuild will use it, without Docker.

    Returns the zip's size and sha256 (which names the image tag), the Dockerfile's base-image
    ARG, FROM, ENTRYPOINT and llama.cpp library path, the buildspec's login/build/push commands,
    and `problems`, a list that is empty when everything the build needs is there.
    """
    from .aws.imagebuild import build_source_zip

    root = root or find_repo_root()
    container = root / "container"
    problems: list[str] = []
    dockerfile = container / "Dockerfile"
    buildspec = container / "buildspec.yml"
    docker_lines = dockerfile.read_text(encoding="utf-8").splitlines() if dockerfile.is_file() else []
    spec_lines = buildspec.read_text(encoding="utf-8").splitlines() if buildspec.is_file() else []

    def lines(source: list[str], *starts: str) -> list[str]:
        return [ln.strip() for ln in source if ln.strip().upper().startswith(tuple(s.upper() for s in starts))]

    base_args = [ln for ln in lines(docker_lines, "ARG ") if "BASE" in ln.upper()]
    froms = lines(docker_lines, "FROM ")
    entry = lines(docker_lines, "ENTRYPOINT", "CMD")
    lib_env = [ln for ln in docker_lines if "LLAMA_CPP_LIB" in ln]
    commands = [ln.strip().lstrip("- ").strip() for ln in spec_lines if "docker" in ln or "get-login-password" in ln]
    checks = {
        "Dockerfile": bool(docker_lines),
        "base image ARG": bool(base_args),
        "FROM uses the ARG": any("$" in ln for ln in froms),
        "ENTRYPOINT": bool(entry),
        "LLAMA_CPP_LIB_PATH": bool(lib_env),
        "buildspec.yml": bool(spec_lines),
        "registry login": any("get-login-password" in c for c in commands),
        "docker build": any("docker build" in c for c in commands),
        "docker push": any("docker push" in c for c in commands),
    }
    data, sha = build_source_zip(root)
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        names = zf.namelist()
    copied = [src for ln in lines(docker_lines, "COPY ") if "--from" not in ln for src in ln.split()[1:-1]]
    missing = [src for src in copied if not any(n == src or n.startswith(src.rstrip("/") + "/") for n in names)]
    checks["every COPY source in the zip"] = not missing
    problems = [name for name, ok in checks.items() if not ok] + [f"not in the zip: {src}" for src in missing]
    return {"zip_bytes": len(data), "zip_sha256": sha, "files": len(names),
            "container_files": [n for n in names if n.startswith("container/")],
            "base_args": base_args, "from": froms, "entrypoint": entry, "llama_cpp_lib": lib_env,
            "buildspec_commands": commands, "checks": checks, "problems": problems}


# ====================================================================== the form (notebook 00)
def _criteria_to_text(question: Mapping[str, Any]) -> str:
    criteria = question.get("criteria")
    if not criteria:
        return ""
    if isinstance(criteria, list):
        return "\n".join(str(level) for level in criteria)
    return "\n".join(f"{name}: {desc}" if desc else str(name) for name, desc in criteria.items())


def _text_to_criteria(qtype: str, text: str, qid: str) -> Any:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if qtype == "score":
        return lines
    pairs: dict[str, str | None] = {}
    for ln in lines:
        name, _, desc = ln.partition(":")
        pairs[name.strip()] = desc.strip() or None
    if qtype == "noul":
        unknown = set(pairs) - {"true", "false"}
        if unknown:
            raise ValueError(f"questions.{qid}.criteria: a yes/no question takes only 'true: ...' and 'false: ...' lines, not {sorted(unknown)}")
        return pairs or None
    return pairs


def _figure_png(make_figure: Callable[[], Any]) -> Any:
    """Build a chart out of pyplot's reach and return it as a PNG image.

    A widget callback runs while ipykernel handles other comm messages on subshell threads, and each
    of those fires IPython's post_execute hooks, which draw every open pyplot figure. A figure drawn by
    two threads at once comes out garbled (seen in the browser test), and one left open would be drawn
    again under the next cell that runs. So the figure is built with interactive mode off, taken out
    of pyplot at once, and drawn here only.
    """
    import io

    import matplotlib.pyplot as plt
    from IPython.display import Image

    with plt.ioff():
        figure = make_figure()
        plt.close(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight")
    return Image(data=buffer.getvalue(), format="png")


class DecisionForm:
    """An ipywidgets form over one request: the state, and each question's instructions and criteria.

    Criteria are edited as text, one option per line: `name: description` (or just `name`) for a
    choice, one level per line (low to high) for a score, optional `true: ...` / `false: ...` for a
    yes/no. `to_request()` builds the request from whatever the widgets hold now, so a notebook can
    score the form's values in a plain cell (and run non-interactively); the Score button calls
    `score(request)` and draws the answer below the form.
    """

    def __init__(self, request: Mapping[str, Any], score: Callable[[dict[str, Any]], Any] | None = None) -> None:
        import ipywidgets as w

        self._base = json.loads(json.dumps(dict(request)))
        self._score = score
        layout = w.Layout(width="98%")
        self.state = w.Textarea(value=str(self._base["state"]), description="state", layout=w.Layout(width="98%", height="7em"))
        self.questions: dict[str, tuple[Any, Any]] = {}
        rows = [self.state]
        for qid, question in self._base["questions"].items():
            instructions = w.Text(value=str(question.get("instructions", "")), description=qid, layout=layout)
            criteria = w.Textarea(value=_criteria_to_text(question), description=question.get("type", "noul"),
                                  placeholder="one option per line", layout=w.Layout(width="98%", height="6em"))
            self.questions[qid] = (instructions, criteria)
            rows += [instructions, criteria]
        self.button = w.Button(description="Score", button_style="primary", icon="play")
        self.output = w.Output()
        self.button.on_click(lambda _: self._on_click())
        self.widget = w.VBox(rows + [self.button, self.output])

    def to_request(self) -> dict[str, Any]:
        """The request the form holds now (unchanged fields of the original request are kept)."""
        request = json.loads(json.dumps(self._base))
        request["state"] = self.state.value
        for qid, (instructions, criteria) in self.questions.items():
            question = request["questions"][qid]
            question["instructions"] = instructions.value
            parsed = _text_to_criteria(question.get("type", "noul"), criteria.value, qid)
            if parsed is None:
                question.pop("criteria", None)
            else:
                question["criteria"] = parsed
        return request

    def _on_click(self) -> None:
        from IPython.display import display

        from .measurement.plots import plot_probabilities

        self.output.clear_output()
        with self.output:
            if self._score is None:
                print("no scoring function given")
                return
            try:
                response = self._score(self.to_request())
            except Exception as exc:  # noqa: BLE001 - show the error in the form, keep the form usable
                print(f"{type(exc).__name__}: {exc}")
                return
            display(tabulate_answers(response))
            display(_figure_png(lambda: plot_probabilities(response)))

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)
