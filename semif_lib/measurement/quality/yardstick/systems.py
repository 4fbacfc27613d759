"""The yardstick's three systems on one GGUF: `semif serve` through `jev_typesafe`, llama-server through the bridged
`llm_constrained`, and `majority_prior`; each started, asked and stopped here.

`semif serve` runs with the calibration file fitted on `data/labeled/` when one is given: its answers carry the
calibrated `probabilities` (what `jev_typesafe` reads) and the raw ones in `x_raw_probabilities`, so one pass gives
both views. `raw_view` rebuilds the raw answers with `jev_typesafe`'s own parser. A temperature never moves the
argmax and the file's content-free priors are keyed by question text (none of sys1bench's questions is in it), so
both views share every answer's argmax; they differ in confidence only.

llama-server is the binary `find_llama_server` finds (`SEMIF_LLAMA_SERVER`, `container/build_libllama.sh`'s build, or
PATH), with the flags the DLC entrypoint derives from its `SM_LLAMA_CPP_*` settings: the text DLC's server, natively.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any, Iterator

from sys1bench.adapters.jev_typesafe import JevTypeSafeAdapter, parse_answer
from sys1bench.adapters.majority_prior import MajorityPriorAdapter
from sys1bench.runners.benchmark_runner import flatten, run_items
from sys1bench.schemas import DecisionRequest, DecisionResponse, PredictionRow, TaskItem

from ....containers.textserver import start_native_text_server
from ....llama_flags import build_sm_env
from ....processes import start_server
from .bridge import LlamaCppConstrainedAdapter

__all__ = ["RecordingSystemOne", "ask", "fit_majority", "raw_view", "running_llama_server", "running_semif_serve"]

TIMEOUT_S = 900.0  # a client's wait for one answer: a 1.5B on 2 busy cores can take minutes for a long request
SUITE = "yardstick"


class RecordingSystemOne(JevTypeSafeAdapter):
    """`jev_typesafe` pointed at `semif serve`, keeping each response's body (by row id) for the raw view."""

    def __init__(self, url: str, model_id: str) -> None:
        super().__init__(model_id=model_id, url=url, api_key="local", timeout_s=TIMEOUT_S, max_retries=2, deployment="local")
        self.bodies: dict[str, dict[str, Any]] = {}

    def decide(self, request: DecisionRequest) -> DecisionResponse:
        response = super().decide(request)
        if request.meta is not None and response.raw:
            self.bodies[request.meta.row_id] = response.raw
        return response


def _raw_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """An answer body with `x_raw_probabilities` in the fields `jev_typesafe` reads (the body itself when uncalibrated)."""
    raw = payload.get("x_raw_probabilities")
    if not isinstance(raw, dict):
        return payload
    if payload.get("type") == "noul":
        return {**payload, "noul": raw.get("true")}
    return {**payload, "probabilities": raw}


def raw_view(items: list[TaskItem], adapter: RecordingSystemOne) -> list[PredictionRow]:
    """The rows `jev_typesafe` would have scored from the uncalibrated probabilities of the same responses."""
    rows: list[PredictionRow] = []
    for item in items:
        body = adapter.bodies.get(item.row_id())
        if body is None:
            continue
        answers = body.get("answers") or {}
        parsed = {k: parse_answer(q, _raw_payload(answers[k])) for k, q in item.questions.items() if isinstance(answers.get(k), dict)}
        response = DecisionResponse(answers=parsed, latency={"client_ms": float("nan")},
                                    provider={"adapter_id": adapter.adapter_id, "model_id_requested": adapter.model_id})
        rows += flatten(item, response, adapter, SUITE, "main")
    return rows


def ask(adapter: Any, items: list[TaskItem]) -> list[PredictionRow]:
    """Every item through sys1bench's own loop (no response cache: each run asks the server)."""
    return run_items(items, adapter, cache=None, suite=SUITE, arm="main")


def fit_majority(fit_items: list[TaskItem]) -> MajorityPriorAdapter:
    """`majority_prior` fitted on a separate draw of the generator (another seed), never on the items it answers."""
    adapter = MajorityPriorAdapter()
    adapter.fit(fit_items)
    return adapter


@contextlib.contextmanager
def running_semif_serve(model: Path, port: int, threads: int, log_path: Path, calibration: Path | None) -> Iterator[str]:
    """`semif serve` on loopback with this model (and calibration file); the `/v1/systemone` URL."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMIF_")}
    env |= {"SEMIF_MODEL_PATH": str(model), "SEMIF_THREADS": str(threads), "SEMIF_N_CTX": "4096",
            "SEMIF_REQUEST_TIMEOUT_S": str(int(TIMEOUT_S))}
    if calibration is not None:
        env["SEMIF_CALIBRATION"] = str(calibration)
    url = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "semif_lib.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    with start_server(argv, url, env=env, log_path=log_path, startup_timeout_s=300) as server:
        yield f"{server.url}/v1/systemone"


@contextlib.contextmanager
def running_llama_server(model: Path, port: int, threads: int, log_path: Path,
                         binary: Path | None) -> Iterator[tuple[str, dict[str, Any]]]:
    """llama-server natively with the DLC's flags for one slot; its `/v1` base URL and what ran (binary, build, command)."""
    sm_env = build_sm_env({"ctx_size": 4096, "threads": threads, "threads_batch": threads, "parallel": 1, "n_gpu_layers": 0})
    process, server = start_native_text_server(model, sm_env, port, log_path, binary, startup_timeout_s=300)
    with process:
        yield f"{server.base_url}/v1", {"binary": str(binary), "llama_cpp_build": server.build,
                                        "command": server.command[1:], "sm_env": sm_env}


def llama_adapter(base_url: str, model_id: str) -> LlamaCppConstrainedAdapter:
    """The bridged `llm_constrained` with upstream's defaults (top 20 log-probabilities), a long client timeout."""
    return LlamaCppConstrainedAdapter(model_id=model_id, base_url=base_url, timeout_s=TIMEOUT_S)
