"""The house rules: four wings with one-way doors, no import cycles, cheap imports, short functions and modules.

Every import statement counts, wherever it sits (module level, inside a function, under
`TYPE_CHECKING`): a cycle hidden behind a function-level import is still a cycle for a reader.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "semif_lib"
WINGS = ("decision", "serving", "aws", "measurement")
PLUMBING = ("contract", "settings", "errors", "jsonlines", "processes", "arguments", "llama_flags", "llamabuilds",
            "containers", "paths", "limits", "prices", "registry", "invocation", "model")
TOP_FLOOR = ("cli", "workshop", "notebook", "targets")
# Packages whose modules sit on different floors: none (each package is one floor; `model` is plumbing again).
MIXED_PACKAGES: tuple[str, ...] = ()
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 350
LONG_MODULES: set[str] = set()  # over MAX_MODULE_LINES, each being split by its owner; a split one leaves the list
# The measurement wing's rooms, and the modules both rooms share (`semif_lib/measurement/__init__.py`)
MEASUREMENT_ROOMS = ("bench", "quality")
MEASUREMENT_SHARED = ("options", "answers", "agreement", "baseline", "plots", "conditions", "machine")
# What the wings' command lines may load for `semif --help`: their light `cli` modules and the names and
# defaults those show. Nothing else of a wing: a command's module is imported when the command runs.
COMMAND_LINE_MODULES = ("semif_lib.measurement.cli", "semif_lib.measurement.options", "semif_lib.measurement.bench.peer.config",
                        "semif_lib.serving.cli")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def resolve_imports(name: str, path: Path) -> set[str]:
    """Every module `name` imports (project modules by dotted name, others by their top package)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.add(target)
            out.update(f"{target}.{alias.name}" for alias in node.names if f"{target}.{alias.name}" in MODULES)
    return {t if t.startswith("semif_lib") else t.split(".")[0] for t in out if t}


GRAPH = {name: resolve_imports(name, path) for name, path in MODULES.items()}


def project_edges(name: str) -> set[str]:
    """Imports of project modules. Importing `a.b` also runs the package `a`'s `__init__`; the packages whose
    `__init__` imports anything (`targets`, `notebook`) re-export their own submodules, which never import
    the package back (that would be a cycle here)."""
    return {t for t in GRAPH[name] if t in MODULES and t != name}


def find_cycle() -> list[str] | None:
    """One import cycle among the project's modules, as a path that returns to its start, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(project_edges(node)):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for start in sorted(MODULES):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_the_graph_sees_function_level_imports():
    """The checker itself: `cli` imports the wings' command modules from inside the functions that run them."""
    assert "semif_lib.serving.app" in GRAPH["semif_lib.cli"]
    assert "semif_lib.measurement.bench.paths" in GRAPH["semif_lib.measurement.cli"]
    assert "semif_lib.decision.engine" in GRAPH["semif_lib.serving.app"]


def test_no_import_cycles():
    cycle = find_cycle()
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def wing_of(module: str) -> str:
    """The wing, plumbing or top-floor name `module` belongs to (`model.hub` inside a mixed package)."""
    parts = module.split(".")
    if len(parts) > 2 and parts[1] in MIXED_PACKAGES:
        return ".".join(parts[1:3])
    return parts[1] if len(parts) > 1 else ""


def imports_of(prefix: str) -> list[tuple[str, str]]:
    """(module, imported) pairs for every module in the wing or module `prefix`."""
    full = f"semif_lib.{prefix}"
    return [(m, t) for m in MODULES if m == full or m.startswith(full + ".") for t in GRAPH[m]]


def forbidden(prefix: str, targets: tuple[str, ...]) -> list[str]:
    bad = []
    for module, target in imports_of(prefix):
        for t in targets:
            if target == t or target.startswith(t + "."):
                bad.append(f"{module} imports {target}")
    return bad


@pytest.mark.parametrize("wing, targets", [
    ("decision", ("semif_lib.serving", "semif_lib.aws", "semif_lib.measurement")),
    ("aws", ("semif_lib.decision", "llama_cpp")),
    ("decision.schema", ("llama_cpp", "boto3", "botocore")),
    ("serving", ("semif_lib.aws",)),
    ("measurement", ("semif_lib.serving", "semif_lib.aws")),
    ("registry", ("semif_lib.aws", "boto3", "botocore")),  # the run registry left the AWS wing
    ("targets.base", ("semif_lib.aws", "boto3", "botocore")),
    ("targets.local", ("semif_lib.aws", "boto3", "botocore")),
    # the tarball, the request bytes, the chat stream and the text defaults are plumbing (model.package, invocation)
    ("targets.machine", ("semif_lib.aws", "boto3", "botocore")),
    # what a step on AWS would send, printed on this machine: the AWS wing's request builders, never an SDK
    ("targets.plans", ("boto3", "botocore", "sagemaker")),
    ("workshop", ("semif_lib.aws", "boto3", "botocore")),
    ("model.package", ("boto3", "botocore")),
    ("invocation", ("boto3", "botocore")),
    ("notebook.display", ("semif_lib.aws",)),
    ("notebook.tables", ("semif_lib.aws",)),
    ("notebook.form", ("semif_lib.aws",)),
])
def test_doors_go_one_way(wing, targets):
    assert forbidden(wing, targets) == []


@pytest.mark.parametrize("inside, targets", [
    ("measurement.quality", ("semif_lib.measurement.bench", "semif_lib.measurement.cli")),
    ("measurement.bench", ("semif_lib.measurement.cli",)),
    *[(f"measurement.{shared}", tuple(f"semif_lib.measurement.{m}" for m in (*MEASUREMENT_ROOMS, "cli"))) for shared in MEASUREMENT_SHARED],
])
def test_doors_inside_the_measurement_wing(inside, targets):
    """The rooms read the shared modules, never the command line; the shared modules read neither room; quality never reads bench."""
    assert forbidden(inside, targets) == []


def wing_doors(wing: str) -> set[str]:
    """The project names a wing's modules import from outside it: plumbing modules and packages, and other wings."""
    return {target.split(".")[1] for _, target in imports_of(wing)
            if target.startswith("semif_lib.") and not target.startswith(f"semif_lib.{wing}")}


@pytest.mark.parametrize("wing", WINGS)
def test_each_wings_doors_are_the_ones_its_docstring_states(wing):
    """Doors as checks, not names: the wing's `__init__` states its doors in one sentence, and the code's imports are
    exactly those (a new door is a line in the docstring; a door no longer used leaves it)."""
    import re

    doc = ast.get_docstring(ast.parse((PACKAGE / wing / "__init__.py").read_text(encoding="utf-8"))) or ""
    stated = re.search(r"Its doors, exactly \([^)]*\): ((?:`[\w.]+`,?\s*)+)\.", doc)
    assert stated, f"semif_lib/{wing}/__init__.py states no doors (`Its doors, exactly (...): `a`, `b`.`)"
    names = set(re.findall(r"`([\w.]+)`", stated.group(1)))
    assert wing_doors(wing) - names == set(), f"{wing} imports what its docstring does not state"
    assert names - wing_doors(wing) == set(), f"{wing}'s docstring states doors its code no longer uses"


def test_bench_reads_only_the_labeled_sets_of_quality():
    """`bench.rotations` asks the labeled sets' choice questions: the one door from bench into quality."""
    reads = {target for _, target in imports_of("measurement.bench") if target.startswith("semif_lib.measurement.quality")}
    assert reads == {"semif_lib.measurement.quality.labeled"}


def test_every_measurement_module_is_in_a_room_or_shared():
    homes = {f"semif_lib.measurement.{m}" for m in (*MEASUREMENT_SHARED, "cli")}
    rooms = tuple(f"semif_lib.measurement.{room}" for room in MEASUREMENT_ROOMS)
    stray = [m for m in MODULES if m.startswith("semif_lib.measurement.") and m not in homes and not m.startswith(rooms)]
    assert stray == []
    importers = sorted(m for m in MODULES if "semif_lib.measurement.cli" in GRAPH[m])
    assert importers == ["semif_lib.cli"]


@pytest.mark.parametrize("lower", WINGS + PLUMBING)
def test_nothing_below_imports_the_top_floor(lower):
    assert forbidden(lower, tuple(f"semif_lib.{m}" for m in TOP_FLOOR)) == []


@pytest.mark.parametrize("plumbing", PLUMBING)
def test_plumbing_imports_no_wing(plumbing):
    assert forbidden(plumbing, tuple(f"semif_lib.{w}" for w in WINGS)) == []


def test_every_module_lives_in_a_wing_plumbing_or_the_top_floor():
    homes = set(WINGS) | set(PLUMBING) | set(TOP_FLOOR)
    mixed = {f"semif_lib.{p}" for p in MIXED_PACKAGES}
    assert sorted(m for m in MODULES if m != "semif_lib" and m not in mixed and wing_of(m) not in homes) == []
    assert all(GRAPH[m] == {"__future__"} or not GRAPH[m] for m in mixed), "a mixed package's __init__ imports nothing"


def test_importing_is_cheap():
    """`import semif_lib` loads no heavy library, not even numpy or pandas; importing every module loads neither llama_cpp
    nor the AWS SDKs: heavy imports stay inside the functions that need them (a fresh interpreter; the one import check)."""
    code = ("import importlib, sys\n"
            "import semif_lib\n"
            "print(sorted(m for m in ('llama_cpp', 'boto3', 'sagemaker', 'pandas', 'numpy') if m in sys.modules))\n"
            f"for name in {sorted(MODULES)!r}:\n"
            "    importlib.import_module(name)\n"
            "print(sorted(m for m in ('llama_cpp', 'boto3', 'botocore', 'sagemaker', 'huggingface_hub', 'gguf') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip().splitlines() == ["[]", "[]"]


HELP_RUN = """
import contextlib, io, sys

import semif_lib  # its public API (the decision wing's schema) is loaded by any import of the package

before = set(sys.modules)
from semif_lib import cli

with contextlib.redirect_stdout(io.StringIO()):
    try:
        cli.main(["--help"])
    except SystemExit:
        pass
print(sorted(set(sys.modules) - before))
"""


def test_semif_help_imports_no_wing_logic_module():
    """`semif --help` builds every subcommand's flags from the wings' light command-line modules: it loads no
    benchmark, evaluation, server or engine module, and none of the libraries they import."""
    out = subprocess.run([sys.executable, "-c", HELP_RUN], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    loaded = ast.literal_eval(out.stdout.strip())
    packages = {m for m, path in MODULES.items() if path.name == "__init__.py"}
    logic = [m for m in loaded if wing_of(m) in WINGS and m not in packages and m not in COMMAND_LINE_MODULES]
    assert logic == []
    heavy = ("numpy", "pandas", "matplotlib", "tqdm", "httpx", "fastapi", "uvicorn", "llama_cpp", "boto3")
    assert [m for m in heavy if m in loaded] == []


LOCAL_RUN = """
import subprocess, sys, tempfile
from pathlib import Path

from semif_lib import notebook, workshop
from semif_lib.settings import Settings

settings = Settings(target="local", state_file=Path(tempfile.mkdtemp()) / "state.json", run_id="n0aws1")
state = workshop.load_state(settings)
notebook.describe_target(settings, state)
assert workshop.check_permissions(settings=settings, state=state, log=lambda _: None) is None
assert workshop.build_adapter_image(settings=settings, state=state, log=lambda _: None) == "local:semif-adapter"
assert workshop.enable_autoscaling(settings=settings, state=state) is None
server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
state.record("local_process", "text-server", pid=server.pid)
assert notebook.stop_local_servers(settings, state) == [f"text-server (pid {{server.pid}})"]
state.record("local_process", "decision-server", pid=2 ** 22 + 7)  # not running
report = workshop.cleanup(settings=settings, state=state)
assert report.already_gone == ["local_process decision-server"] and not report.failed, report
from semif_lib.model.locate import find_embedded_model  # packaging inspects the GGUF first: a real one, not 64 bytes of header
info = workshop.package_model(find_embedded_model(), settings=settings, state=state, progress=False)
assert info["model_data_url"].startswith("file://") and not info["uploaded"]
assert workshop.select_target(settings).text_env(None)["SM_LLAMA_CPP_CTX_SIZE"] == "4096"
sys.path.insert(0, {tests!r})
from support.stub_adapter import running_stub_adapter

with running_stub_adapter(streams=False) as adapter:  # a server that does not stream: a JSON body to a stream request
    state.set("decision_endpoint", adapter.url)
    state.set("text_endpoint", state.get("decision_endpoint"))
    assert workshop.invoke_decision({{"state": "x", "questions": {{}}}}, settings=settings, state=state) == {{"answers": {{}}}}
    assert workshop.chat("hi", settings=settings, state=state) == {{"answers": {{}}}}
    assert list(workshop.stream_chat("hi", settings=settings, state=state)) == []  # a JSON body, no `data:` line: no delta
print(sorted(m for m in sys.modules if m.split(".")[0] in ("boto3", "botocore", "sagemaker", "s3transfer")))
"""


def test_target_local_loads_no_aws_sdk():
    """A target=local run's state, display, no-op steps, stopping servers, cleanup, packaging, the text server's
    settings, and the invoke and chat steps (answered by the stand-in adapter) load neither boto3, botocore, s3transfer
    nor the SageMaker SDK: the one subprocess check of what a local run loads. The AWS wing's own modules may load (the
    targets import them); they load the SDKs only inside the functions that call AWS."""
    from support.paths import ROOT

    code = LOCAL_RUN.format(tests=str(ROOT / "tests"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "on AWS, enable_autoscaling sends these requests" in out.stdout  # the plan is printed, and loads no SDK
    assert out.stdout.strip().splitlines()[-1] == "[]"


STATUS_RUN = """
import contextlib, io, json, os, sys, tempfile
from pathlib import Path

os.environ["SEMIF_STATE_FILE"] = str(Path(tempfile.mkdtemp()) / "state.json")
from semif_lib import cli
from semif_lib.registry import WorkshopState

WorkshopState.load(os.environ["SEMIF_STATE_FILE"], "st4tus").record("s3_bucket", "semif-sagemaker-bucket", region="us-east-1")
out = io.StringIO()
with contextlib.redirect_stdout(out):
    assert cli.main(["workshop", "status"]) == 0
assert json.loads(out.getvalue())["run_id"] == "st4tus"
print(sorted(m for m in sys.modules if m.startswith("semif_lib.aws") or m.split(".")[0] in ("boto3", "botocore", "sagemaker")))
"""


def test_workshop_status_reads_the_registry_without_the_aws_wing():
    """`semif workshop status` prints the state file through `registry.WorkshopState`, whatever it records."""
    out = subprocess.run([sys.executable, "-c", STATUS_RUN], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_only_the_targets_read_the_target_setting():
    """`select_target` is the one place a step's behaviour depends on `settings.target` (display aside)."""
    readers = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute) and node.left.attr == "target":
                readers.append(f"{name}:{node.lineno}")
    assert readers == ["semif_lib.notebook.display:" + str(_line_of("semif_lib.notebook.display", 'settings.target == "aws"'))]


def _line_of(module: str, text: str) -> int:
    return next(i for i, line in enumerate(MODULES[module].read_text(encoding="utf-8").splitlines(), 1) if text in line)


def test_functions_stay_short():
    """No function body over ~80 lines: a long one is split into named steps (route groups, path runners)."""
    long = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = node.body[0]
                body_start = first.end_lineno + 1 if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) else first.lineno
                if node.end_lineno - body_start + 1 > MAX_FUNCTION_LINES:
                    long.append(f"{name}.{node.name}: {node.end_lineno - body_start + 1} lines")
    assert long == []


def test_modules_stay_short():
    """No module over ~350 lines: a long one is split by what its parts do (a run and its report, metrics and fitting)."""
    long = {name: n for name, path in MODULES.items() if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert sorted(set(long) - LONG_MODULES) == []
    assert sorted(LONG_MODULES - set(long)) == [], "split: take it off LONG_MODULES"


def test_the_sagemaker_contract_is_standard_library_only_and_takes_the_model_dir_from_the_replicas_file():
    """`contract` is read by every side, the replica image too: the image copies `llama_flags.py` from the package and
    runs it alone with the system python3, so that file imports the standard library only and writes the model
    directory, and `contract` takes it from there (its one project import)."""
    from semif_lib import contract, llama_flags

    imports = resolve_imports("semif_lib.contract", MODULES["semif_lib.contract"])
    assert imports <= {"__future__", "semif_lib.llama_flags"}, imports
    standalone = resolve_imports("semif_lib.llama_flags", MODULES["semif_lib.llama_flags"])
    assert standalone <= set(sys.stdlib_module_names) | {"__future__"}, standalone
    dockerfile = (PACKAGE.parent / "container" / "replica" / "Dockerfile").read_text(encoding="utf-8")
    assert "COPY semif_lib/llama_flags.py /usr/local/lib/semif/llama_flags.py" in dockerfile, "the replica runs the package's file"
    assert contract.MODEL_DIR == llama_flags.DLC_MODEL_DIR == "/opt/ml/model"


def test_each_of_the_contracts_numbers_is_written_once():
    """Port 8080, the 6 MB payload and the custom-attributes header are written in `contract`, /opt/ml/model in
    `llama_flags` (the replica runs that file alone; `contract` imports it): each once, in its home alone (docstrings
    may name them; code takes them from there)."""
    import re

    literals = {"8080": re.compile(r"(?<![\w.])8080(?![\w.])"), "/opt/ml/model": re.compile(r"[\"']/opt/ml/model[\"'/]"),
                "6_291_456": re.compile(r"6_?291_?456"), "Custom-Attributes": re.compile(r"[\"']X-Amzn-SageMaker-Custom-Attributes[\"']")}
    homes = {label: "semif_lib.contract" for label in literals} | {"/opt/ml/model": "semif_lib.llama_flags"}
    written = []
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = _docstring_nodes(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, (str, int)) and id(node) not in docstrings:
                text = repr(node.value)
                written += [f"{name}: {label}" for label, pattern in literals.items() if pattern.search(text)]
    assert sorted(written) == sorted(f"{homes[label]}: {label}" for label in literals), written


def _docstring_nodes(tree: ast.AST) -> set[int]:
    """The ids of the constants that are a module's, class's or function's docstring (one walk per tree)."""
    found = set()
    for owner in ast.walk(tree):
        if isinstance(owner, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and owner.body:
            first = owner.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found



def _map_block() -> str:
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    start = text.index("```\nsemif_lib/")
    return text[start:text.index("```", start + 4)]


@pytest.mark.parametrize("name", sorted(m for m, p in MODULES.items() if p.name != "__init__.py"))
def test_every_module_is_on_the_map_and_in_its_packages_docstring(name):
    """The maps are checks: a module added without a line in docs/architecture.md's tree, or without its name in its
    package's docstring (in backticks), fails here."""
    import re

    stem = MODULES[name].stem
    assert re.search(rf"(?<![\w.]){re.escape(stem)}(\.py|/|\b)", _map_block()), f"{name}: not in docs/architecture.md's tree"
    package_doc = ast.get_docstring(ast.parse((MODULES[name].parent / "__init__.py").read_text(encoding="utf-8"))) or ""
    assert f"`{stem}`" in package_doc, f"{name}: not named in {MODULES[name].parent.name}/__init__.py's docstring"


def test_the_package_docstring_quotes_the_one_plumbing_list():
    """`semif_lib/__init__.py` names exactly PLUMBING as the plumbing and TOP_FLOOR as the top floor: one list, quoted."""
    import re

    doc = ast.get_docstring(ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))) or ""
    plumbing = doc[doc.index("on plumbing they all share ("):doc.index("under a top floor")]
    top = doc[doc.index("under a top floor"):doc.index(")", doc.index("under a top floor") + 60)]
    assert sorted(re.findall(r"`([\w.]+)`", plumbing)) == sorted(PLUMBING)
    assert sorted(re.findall(r"`([\w.]+)`", top)) == sorted(TOP_FLOOR)


# ---------------------------------------------------------------- issue 44, item 7
def command_table_imports() -> set[str]:
    """The modules `measurement.cli`'s command table imports when a command runs (`run_measurement`): imports like any
    import statement, so the graph and its one-way doors see them."""
    from semif_lib.measurement.cli import COMMANDS

    return {f"semif_lib.measurement.{command.run.partition(':')[0]}" for command in COMMANDS.values()}


GRAPH["semif_lib.measurement.cli"] |= command_table_imports()


def test_every_command_in_the_table_names_a_function_of_its_module():
    """A row's "module:function" is a string: a typo would fail only when that command runs; this reads each module's source."""
    from semif_lib.measurement.cli import COMMANDS

    missing = []
    for name, command in COMMANDS.items():
        module, _, function = command.run.partition(":")
        path = MODULES.get(f"semif_lib.measurement.{module}")
        defined = {n.name for n in ast.parse(path.read_text(encoding="utf-8")).body if isinstance(n, ast.FunctionDef)} if path else set()
        if function not in defined:
            missing.append(f"{name}: {command.run}")
    assert missing == []


MAX_COMPLEXITY = 15  # radon's cyclomatic complexity
# Over MAX_COMPLEXITY in a file another engineer is editing (issue 44, item 7): split there, it leaves the list.
COMPLEX_FUNCTIONS: set[str] = set()


def _complexities(prefix: str, functions: list, classes: list) -> list[tuple[str, int]]:
    """(dotted name, complexity) of radon's functions and methods, classes inside classes too; a function's closures
    count in its own number."""
    out = [(f"{prefix}{function.name}", function.complexity) for function in functions]
    for cls in classes:
        out += _complexities(f"{prefix}{cls.name}.", cls.methods, cls.inner_classes)
    return out


def test_functions_stay_simple():
    """No function or method over cyclomatic complexity 15 (radon, a dev dependency): one with more branches is split by
    what its parts read or decide (`decision.readout.read_answers`: the plans' readings, one answer, the rotations' votes)."""
    from radon.visitors import ComplexityVisitor

    complex_ = {}
    for name, path in MODULES.items():
        visitor = ComplexityVisitor.from_code(path.read_text(encoding="utf-8"))
        complex_.update({block: n for block, n in _complexities(f"{name}.", visitor.functions, visitor.classes) if n > MAX_COMPLEXITY})
    assert sorted(f"{block}: {n}" for block, n in complex_.items() if block not in COMPLEX_FUNCTIONS) == []
    assert sorted(COMPLEX_FUNCTIONS - set(complex_)) == [], "split: take it off COMPLEX_FUNCTIONS"


def test_the_package_root_holds_at_most_14_modules():
    """Modules directly in semif_lib/ are the floors' shared plumbing and the top floor; more belongs in a package."""
    top = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")
    assert len(top) <= 14, f"{len(top)} modules directly in semif_lib/: {', '.join(top)}"
