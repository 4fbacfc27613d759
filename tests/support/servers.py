"""Server processes under test: a free loopback port, a clean SEMIF_* environment, start and always stop."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from support.paths import ROOT

ADAPTER_COMMAND = [sys.executable, "-m", "semif_lib.serving.app", "serve"]
SEMIF_SERVE = [sys.executable, "-m", "semif_lib.cli", "serve"]  # what the `semif serve` script runs


def free_port() -> int:
    """A loopback port nobody listens on now (the servers under test bind it next)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class ServerProcess:
    proc: subprocess.Popen
    url: str
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def server_env(port: int, **extra: str) -> dict[str, str]:
    """A clean SEMIF_* environment: small context, two threads, the embedded model."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEMIF_", "SM_LLAMA_CPP_"))}
    env.update(SEMIF_HOST="127.0.0.1", SEMIF_PORT=str(port), SEMIF_N_CTX="2048", SEMIF_THREADS="2",
               SEMIF_CACHE_TOKENS="1024", SEMIF_MODEL_DIR=str(ROOT / "does-not-exist"), PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


def stop_process(proc: subprocess.Popen, timeout: float = 30) -> int:
    """SIGTERM, then SIGKILL if it does not exit in time; returns the exit status."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait(10)


@contextmanager
def running_adapters(count: int, **extra: str) -> Iterator[list[str]]:
    """`count` adapters on the embedded model (`server_env` plus `extra`), their URLs; all stopped afterwards (the
    instances of one SageMaker endpoint, for the router in semif_lib/measurement/bench/router.py)."""
    with ExitStack() as stack:
        ports = [free_port() for _ in range(count)]
        yield [stack.enter_context(running_server(ADAPTER_COMMAND, server_env(port, **extra), port)).url for port in ports]


@contextmanager
def running_server(command: list[str], env: dict[str, str], port: int, ready: str = "/ping",
                   timeout: float = 120) -> Iterator[ServerProcess]:
    """Start a server subprocess, wait until `ready` answers 200, and always stop it afterwards."""
    import httpx

    log = tempfile.NamedTemporaryFile("w+b", prefix="semif-server-", suffix=".log", delete=False)
    proc = subprocess.Popen(command, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    server = ServerProcess(proc, f"http://127.0.0.1:{port}", Path(log.name))
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode}:\n{server.log()}")
            try:
                if httpx.get(server.url + ready, timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"server not ready after {timeout} s:\n{server.log()}")
            time.sleep(0.2)
        yield server
    finally:
        stop_process(proc)
        log.close()
