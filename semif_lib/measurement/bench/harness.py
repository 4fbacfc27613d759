"""What the benchmarks that drive servers share: `semif serve` on loopback, timed calls, percentiles.

`robustness` (`semif bench robustness`) and `peer` (`semif bench peer`) start `semif serve` as a
separate process with `running_serve` (over the project's one server harness,
`processes.start_server`) and its `server_env`, and time each call with
`post_json`; `paths` (`semif bench modes`, in process) times engine calls with `time_call`.
Every benchmark refuses an unknown `--paths` name with `refuse_unknown` before anything starts,
rounds its figures with `rounded`, and stops with `BenchmarkError` when a premise of the
measurement fails.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from ...errors import InvalidRequestError, SemifError
from ...invocation import transform_env
from ...processes import start_server

__all__ = ["BenchmarkError", "percentile", "post_json", "refuse_unknown", "rounded", "running_serve", "server_env", "time_call"]

T = TypeVar("T")
SERVE_STARTUP_S = 180.0  # loading the model and warming up on 2 busy cores


class BenchmarkError(SemifError):
    """A premise of the measurement failed (a request that must hit the prefix cache missed it), so its figures would lie."""


@contextmanager
def running_serve(port: int, env: dict[str, str], log_path: Path, module: str = "semif_lib.cli") -> Iterator[str]:
    """`semif serve` on loopback with `env` (no other `SEMIF_*` inherited), through `processes.start_server`; its URL.

    Stopped with SIGTERM on the way out, and an exit code other than 0 or SIGTERM's fails the run.
    `module` is what `python -m` runs with `serve`: the CLI, or `semif_lib.serving.llamabinding`
    to serve on another libllama (`LLAMA_CPP_LIB_PATH` and `PYTHONPATH` in `env`), as the adapter image does.
    The log holds this run only.
    """
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("SEMIF_")} | env
    url = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", module, "serve", "--host", "127.0.0.1", "--port", str(port)]
    log_path.unlink(missing_ok=True)
    with start_server(argv, url, env=full_env, log_path=log_path, startup_timeout_s=SERVE_STARTUP_S) as server:
        yield server.url
        code = server.stop()
    if code not in (0, -signal.SIGTERM):
        raise RuntimeError(f"semif serve exited with {code}; see {log_path}")


def server_env(threads: int, **extra: str) -> dict[str, str]:
    """`semif serve`'s environment for a benchmark: a small context, invariants checked, a deep queue, JSON Lines read (the
    hostile bodies include some); `extra` on top."""
    return {"SEMIF_N_CTX": "2048", "SEMIF_THREADS": str(threads), "SEMIF_CACHE_TOKENS": "1024",
            "SEMIF_CHECK_INVARIANTS": "1", "SEMIF_QUEUE_SIZE": "256", **transform_env(), **extra}


def time_call(fn: Callable[[], T]) -> tuple[float, T]:
    """(seconds, result) of `fn()`: only the call itself is timed, never the cache clearing around it."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def post_json(http: Any, url: str, body: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    """(seconds, JSON) of one POST; anything but 200 stops the benchmark with the server's answer."""
    seconds, response = time_call(lambda: http.post(url, json=body))
    if response.status_code != 200:
        raise RuntimeError(f"POST {url} answered {response.status_code}: {response.text[:500]}")
    return seconds, response.json()


def percentile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank `q` quantile (0..1) of `values`; None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def rounded(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def refuse_unknown(paths: Sequence[str], valid: Sequence[str]) -> None:
    """Refuse an unknown `--paths` name before any model loads or server starts, naming the valid ones."""
    unknown = [p for p in paths if p not in valid]
    if unknown:
        raise InvalidRequestError(f"unknown path {unknown[0]!r} in --paths; valid paths: {', '.join(valid)}", field="paths")
