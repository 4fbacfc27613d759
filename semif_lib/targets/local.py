"""target=local: `semif serve` and `semif serve-text` as background processes on this machine.

Each server reads the unpacked `model.tar.gz` the way the container reads `/opt/ml/model`, is
recorded in the state file as a `local_process` (its pid, URL and log), and is stopped with SIGTERM
(SIGKILL after SageMaker's 30 s) by `delete_resource`, by pid: a later kernel stops what an earlier
one started. Servers start through the one harness, `processes.ServerProcess`. Nothing here imports
the AWS wing but the DLC's text defaults and the chat stream parser (`MachineTarget`).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping

from ..processes import ServerProcess, ServerStartError, ServerStartTimeout, is_answering, stop_process
from ..registry import WorkshopState, settings_and_state
from ..settings import Settings, load_settings
from .machine import LocalServerError, MachineTarget, check_port_free, port_of

__all__ = ["LOCAL_SERVERS", "LocalTarget", "delete_local_process", "start_local_server"]

LOCAL_SERVERS = {"decision": "serve", "text": "serve-text"}


def _last_line(path: Path) -> str:
    lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    return lines[-1] if lines else "(nothing logged)"


def _wait_until_serving(kind: str, server: ServerProcess, timeout_s: float) -> None:
    """Wait for `/ping` with a progress bar (a widget in JupyterLab, stderr elsewhere); a failure is one line."""
    from tqdm.auto import tqdm

    command, url = f"semif {LOCAL_SERVERS[kind]}", server.url
    deadline = time.monotonic() + timeout_s
    with tqdm(total=None, desc=f"starting {command} on {url}", bar_format="{desc}: {elapsed}", file=sys.stderr,
              dynamic_ncols=True) as bar:  # dynamic: a full-width widget in JupyterLab, not a 20 px box
        try:
            while True:
                try:
                    server.wait_until_ready(min(1.0, max(0.1, deadline - time.monotonic())))
                    bar.set_description_str(f"{command} answers on {url}", refresh=False)
                    bar.total = 1  # a full bar once it answers (an unknown total draws an empty one)
                    bar.update(1)
                    return
                except ServerStartTimeout:
                    if time.monotonic() >= deadline:
                        raise LocalServerError(f"`{command}` did not answer {url}/ping within {timeout_s:.0f} s: "
                                               f"its log is {server.log_path}") from None
                    bar.refresh()
                except ServerStartError as exc:  # the process exited
                    raise LocalServerError(f"`{command}` stopped before answering on {url} (exit code {exc.exit_code}): "
                                           f"{_last_line(server.log_path)} [log: {server.log_path}]") from None
        except BaseException:
            bar.leave = False  # no finished-looking bar above the error
            raise


def start_local_server(kind: str, model_dir: Path | str | None = None, settings: Settings | None = None,
                       state: WorkshopState | None = None, env: Mapping[str, str] | None = None,
                       timeout_s: float = 180.0) -> str:
    """Start `semif serve` (kind="decision") or `semif serve-text` (kind="text") in the background.

    It listens where `SEMIF_LOCAL_DECISION_URL` / `SEMIF_LOCAL_TEXT_URL` say, reads the model from
    `model_dir` the way the container reads `/opt/ml/model`, and is recorded in the state file so
    that `cleanup()` stops it. A server already answering there is reused. Returns its URL. A
    progress bar shows the wait; a port held by another program, or a server that stops before
    answering, raises `LocalServerError` with one line that says what to do.
    """
    settings, state = settings_and_state(settings or load_settings(), state)
    if kind not in LOCAL_SERVERS:
        raise ValueError(f"kind must be one of {sorted(LOCAL_SERVERS)}")
    url = settings.local_decision_url if kind == "decision" else settings.local_text_url
    if is_answering(url):
        return url
    check_port_free(kind, url, f"`semif {LOCAL_SERVERS[kind]}`")
    host, port = port_of(url)
    child_env = {**os.environ, **(env or {}), "SEMIF_HOST": host, "SEMIF_PORT": str(port)}
    if model_dir is not None:
        child_env["SEMIF_MODEL_DIR"] = str(model_dir)
        child_env.pop("SEMIF_MODEL_PATH", None)
    log_path = Path(settings.state_file).parent / f"{kind}-server.log"
    argv = [sys.executable, "-m", "semif_lib.cli", LOCAL_SERVERS[kind], "--host", host, "--port", str(port)]
    server = ServerProcess(argv, url, env=child_env, log_path=log_path).start()
    state.record("local_process", f"{kind}-server", pid=server.pid, url=url, log=str(log_path))  # before the wait: cleanup finds it
    try:
        _wait_until_serving(kind, server, timeout_s)
    except BaseException:
        server.stop()
        state.forget("local_process", f"{kind}-server")
        raise
    return url


def delete_local_process(entry: dict[str, Any]) -> bool:
    """Stop a server this target started (SIGTERM, SIGKILL after 30 s); False when it had already exited."""
    pid = int(entry["pid"])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return stop_process(pid)


class LocalTarget(MachineTarget):
    """target=local: the servers as processes, `semif serve` run from this checkout (no image)."""

    name: ClassVar[str] = "local"
    kinds: ClassVar[frozenset[str]] = frozenset({"local_process"})

    def deploy_text_model(self, state: WorkshopState, llama_settings: Mapping[str, Any] | None, wait: bool) -> str:
        self.plan_text_model(state, llama_settings)
        env = self.text_env(llama_settings)
        return start_local_server("text", self.model_dir(state), self.settings, state, env=env)

    def build_adapter_image(self, state: WorkshopState, wait: bool, log: Callable[[str], None]) -> str:
        log("target=local: no image to build; `semif serve` runs from this checkout (container/Dockerfile is what CodeBuild builds)")
        return "local:semif-adapter"

    def deploy_decision_model(self, state: WorkshopState, wait: bool) -> str:
        self.plan_decision_model(state)
        return start_local_server("decision", self.model_dir(state), self.settings, state, env=self.decision_env())

    def delete_resource(self, entry: dict[str, Any]) -> bool:
        return delete_local_process(entry)
