"""What the two targets on this machine share: `local` runs the servers as processes, `container` as
images. Both read the model from `model.tar.gz` unpacked as SageMaker unpacks it into `/opt/ml/model`,
listen where `SEMIF_LOCAL_{DECISION,TEXT}_URL` say, and are answered over HTTP with the same bytes
an endpoint gets. Neither needs an AWS account.
"""

from __future__ import annotations

import errno
import json
import socket
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterator, Mapping
from urllib.parse import urlsplit

from ..contract import CLOSED_SESSION_HEADER, NEW_SESSION_HEADER, SESSION_HEADER
from ..errors import SemifError
from ..invocation import (
    SESSION_BODIES,
    decision_env,
    iter_chat_deltas,
    iter_sse_events,
    read_new_session,
    text_settings,
    transform_env,
)
from ..jsonlines import split_lines
from ..llama_flags import build_sm_env
from ..model.package import extract_model_package
from ..registry import WorkshopState
from ..settings import Settings, env_names

__all__ = ["LocalServerError", "MachineTarget", "check_port_free", "port_of"]


class LocalServerError(SemifError):
    """A local server (`semif serve`, `semif serve-text`) could not start; the message says what to do."""

    status_code = 503
    error_type = "local_server_failed"


def port_of(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or 80


def _bind_error(host: str, port: int) -> OSError | None:
    """Why `host:port` cannot be listened on, or None when it can (as uvicorn binds: a port in TIME_WAIT is free)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            return exc
    return None


def check_port_free(kind: str, url: str, what: str) -> None:
    """Fail before starting anything when another program holds the port (uvicorn would exit with a traceback)."""
    host, port = port_of(url)
    error = _bind_error(host, port)
    if error is None:
        return
    variable = env_names()[f"local_{kind}_url"]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    if error.errno == errno.EADDRINUSE:
        raise LocalServerError(f"port {port} is in use by another program, so {what} cannot listen on {url}: "
                               f"stop that program, or set {variable}=http://127.0.0.1:{free} (a free port; in a notebook "
                               f"`%env {variable}=...`, then rerun the settings cell)", field=f"local_{kind}_url")
    raise LocalServerError(f"{what} cannot listen on {url} ({error.strerror}): "
                           f"set {variable} to a loopback URL such as http://127.0.0.1:{free}", field=f"local_{kind}_url")


def _post(url: str, body: bytes, content_type: str, accept: str = "application/json", timeout: float = 300.0,
          headers: Mapping[str, str] | None = None, answer: dict[str, str] | None = None) -> bytes:
    """POST `body`; `answer`, when given, receives the response's headers, names in lower case."""
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": content_type, "Accept": accept, **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            if answer is not None:
                answer.update((name.lower(), value) for name, value in resp.headers.items())
            return resp.read()
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace")
        raise RuntimeError(f"{url} answered {exc.code}: {detail}") from None


class MachineTarget:
    """The steps `local` and `container` answer alike: HTTP to a server on this machine, nothing to upload,
    scale or check permissions for. Subclasses start the servers (`deploy_*`) and stop them."""

    name: ClassVar[str]
    kinds: ClassVar[frozenset[str]]

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def __repr__(self) -> str:
        return f"{type(self).__name__}(target={self.name!r})"

    def region(self) -> str | None:
        return None

    def check_permissions(self, state: WorkshopState, log: Callable[[str], None]) -> None:
        log(f"target={self.name}: no AWS account or permissions needed")
        return None

    def publish_model(self, package: Any, state: WorkshopState, progress: bool) -> dict[str, Any]:
        if getattr(package, "tarball", "") is None:  # SEMIF_MODEL_DATA=uncompressed: S3ModelDataSource, which only SageMaker reads
            raise LocalServerError(f"SEMIF_MODEL_DATA=uncompressed is for target=aws (an S3 prefix SageMaker copies); "
                                   f"target={self.name} unpacks model.tar.gz as SageMaker does: unset SEMIF_MODEL_DATA")
        return {}  # the tarball's file:// URL stays the model_data_url

    def model_dir(self, state: WorkshopState) -> Path:
        """The packaged model unpacked as `/opt/ml/model` (once per tarball)."""
        info = state.require("model_package", "01_package_gguf_to_s3 (workshop.package_model)")
        dest = Path(self.settings.state_file).parent / "opt-ml-model" / info["sha256"][:12]
        if not any(dest.glob("*.gguf")):
            extract_model_package(info["tarball"], dest)
        return dest

    def decision_env(self) -> dict[str, str]:
        """The decision server's environment, as the endpoint's (`invocation.decision_env`: stateful sessions on), and as
        the transform job's (`transform_env`: JSON Lines read), since `score_jsonlines` sends its file to the same server."""
        return decision_env(self.settings.dlc_variant, self.settings.mode) | transform_env()

    def text_env(self, llama_settings: Mapping[str, Any] | None) -> dict[str, str]:
        """`SM_LLAMA_CPP_*` for the text server: the DLC variant's defaults merged with `llama_settings`."""
        return build_sm_env(text_settings(self.settings.dlc_variant, llama_settings))

    def invoke_decision(self, endpoint: str, body: bytes, mode: str | None, session: str | None = None) -> dict[str, Any]:
        query = f"?mode={mode}" if mode else ""
        headers = {SESSION_HEADER: session} if session else {}
        return json.loads(_post(f"{endpoint}/invocations{query}", body, "application/json", headers=headers))

    def open_session(self, endpoint: str) -> tuple[str, str]:
        """SageMaker's router is not here: the header it would add is what opens and names the session."""
        answer: dict[str, str] = {}
        _post(f"{endpoint}/invocations", SESSION_BODIES["open"], "application/json", answer=answer)
        return read_new_session(answer.get(NEW_SESSION_HEADER.lower()))

    def close_session(self, endpoint: str, session: str) -> str:
        answer: dict[str, str] = {}
        _post(f"{endpoint}/invocations", SESSION_BODIES["close"], "application/json", headers={SESSION_HEADER: session}, answer=answer)
        return answer.get(CLOSED_SESSION_HEADER.lower(), session)

    def chat(self, endpoint: str, body: bytes) -> dict[str, Any]:
        return json.loads(_post(f"{endpoint}/invocations", body, "application/json"))

    def stream_chat(self, endpoint: str, body: bytes) -> Iterator[str]:
        req = urllib.request.Request(f"{endpoint}/invocations", data=body, method="POST",
                                     headers={"Content-Type": "application/json", "Accept": "text/event-stream"})
        with urllib.request.urlopen(req, timeout=300) as resp:
            chunks = iter(lambda: resp.read1(65536), b"")
            yield from iter_chat_deltas(iter_sse_events(chunks))

    def score_jsonlines(self, state: WorkshopState, path: Path, body: bytes, wait: bool) -> list[dict[str, Any]]:
        endpoint = state.require("decision_endpoint", "04_deploy_decision_endpoint (workshop.deploy_decision_model)")
        from .plans import print_transform_plan

        print_transform_plan(self.name, self.settings, state, path)
        out = _post(f"{endpoint}/invocations", body, "application/jsonlines", accept="application/jsonlines")
        return [json.loads(line) for _, line in split_lines(out.decode("utf-8"))]

    def enable_autoscaling(self, state: WorkshopState, min_instances: int, max_instances: int,
                           invocations_per_instance: float) -> None:
        """Nothing to scale here: the requests AWS would get are printed, and None returned."""
        from .plans import print_autoscaling_plan

        print_autoscaling_plan(self.name, state, min_instances, max_instances, invocations_per_instance)
        return None

    def plan_text_model(self, state: WorkshopState, llama_settings: Mapping[str, Any] | None) -> None:
        from .plans import print_text_plan

        print_text_plan(self.name, self.settings, state, llama_settings)

    def plan_decision_model(self, state: WorkshopState) -> None:
        from .plans import print_decision_plan

        print_decision_plan(self.name, self.settings, state)

    def still_billing(self, entry: dict[str, Any]) -> str | None:
        return None  # nothing on this machine bills

    def deploy_async_decision_model(self, state: WorkshopState, wait: bool) -> str:
        """No queue on this machine: the decision server already running answers (its deadline stays a real-time one)."""
        return str(state.require("decision_endpoint", "04_deploy_decision_endpoint (workshop.deploy_decision_model)"))

    def invoke_decision_async(self, state: WorkshopState, endpoint: str, body: bytes, wait: bool) -> dict[str, Any]:
        return self.invoke_decision(endpoint, body, None)

    def enable_async_autoscaling(self, state: WorkshopState, endpoint: str, max_instances: int) -> None:
        return None
