"""Servers the project starts on this machine: start, wait until they answer, stop them as SageMaker does.

One harness for every caller that runs a server (the workshop's `semif serve` / `semif serve-text`,
the benchmarks, the native llama-server, the tests) and for cleanup (which stops what a run
recorded by pid), so it sits below them all:

    with start_server([sys.executable, "-m", "semif_lib.cli", "serve"], "http://127.0.0.1:8080",
                      env=env, log_path=log) as server:
        ...                      # server.url answers /ping
    server.exit_code             # after SIGTERM (SIGKILL `contract.KILL_AFTER_S` later)

A `ServerProcess` runs in its own process group (a signal reaches everything it started), writes
stdout and stderr to one log file (a temporary one unless `log_path` is given), and on `stop()`
gets SIGTERM, then SIGKILL after a grace period; `output()` is what it wrote.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Mapping, Sequence

from .contract import KILL_AFTER_S

__all__ = [
    "ServerProcess",
    "ServerStartError",
    "ServerStartTimeout",
    "is_answering",
    "start_server",
    "stop_process",
    "wait_for_ping",
]



def wait_for_ping(url: str, timeout_s: float = 120.0, process: subprocess.Popen | None = None, path: str = "/ping") -> None:
    """Poll `url + path` until it answers 200; fail early (`RuntimeError`) if `process` exits, `TimeoutError` if it never answers."""
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while True:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"local server exited with code {process.returncode} before answering {url}{path}")
        try:
            with urllib.request.urlopen(url + path, timeout=2) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, OSError) as exc:
            last = exc
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{url}{path} did not answer within {timeout_s:.1f} s ({last})")
        time.sleep(min(0.25, max(0.0, deadline - time.monotonic())))


def is_answering(url: str, path: str = "/ping") -> bool:
    """Whether a server already answers `path` at `url` (a workshop step reuses it instead of starting another)."""
    try:
        wait_for_ping(url, timeout_s=0.5, path=path)
        return True
    except (TimeoutError, RuntimeError):
        return False


def stop_process(pid: int, timeout_s: float = KILL_AFTER_S) -> bool:
    """SIGTERM the process group `pid` leads (as SageMaker does), SIGKILL after `timeout_s`.

    For a pid known only by number (a state file's record, another kernel's child); a server this
    process started is stopped with `ServerProcess.stop`, which also returns its exit code.
    Returns False when no such process was running.
    """
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    except PermissionError:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            finished, _ = os.waitpid(pid, os.WNOHANG)
            if finished:
                return True
        except ChildProcessError:  # not our child (another notebook kernel started it)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
        time.sleep(0.1)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return True


class ServerStartError(RuntimeError):
    """A server exited before it answered (`exit_code` set), or never answered; `output` is its log."""

    def __init__(self, message: str, exit_code: int | None, output: str, log_path: Path | None) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.output = output
        self.log_path = log_path


class ServerStartTimeout(ServerStartError, TimeoutError):
    """A server still running that did not answer within the startup timeout."""


class ServerProcess:
    """A server command run in its own process group, its output in one log file.

    `env` is the child's whole environment (None: this process's). With no `log_path` the output
    goes to a temporary file, read back into `output()` and removed when the server is stopped.
    A log path that exists is appended to, and `output()` is only what this run wrote.
    """

    def __init__(self, argv: Sequence[str], url: str, *, env: Mapping[str, str] | None = None,
                 log_path: Path | str | None = None, ping_path: str = "/ping", cwd: Path | str | None = None) -> None:
        self.argv = [str(a) for a in argv]
        self.url = url.rstrip("/")
        self.env = dict(env) if env is not None else None
        self.ping_path = ping_path
        self.cwd = cwd
        self._temporary = log_path is None
        self.log_path = Path(log_path) if log_path is not None else None
        self.process: subprocess.Popen | None = None
        self.exit_code: int | None = None
        self._log_start = 0
        self._kept_output: str | None = None

    # --- lifecycle -----------------------------------------------------------------
    def start(self) -> ServerProcess:
        """Start the command (stdin closed, stdout and stderr to the log); does not wait."""
        if self.process is not None:
            raise RuntimeError(f"{self.name} was already started")
        if self.log_path is None:
            handle, name = tempfile.mkstemp(prefix="semif-server-", suffix=".log")
            os.close(handle)
            self.log_path = Path(name)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self._log_start = log.tell()
            self.process = subprocess.Popen(self.argv, env=self.env, cwd=self.cwd, stdin=subprocess.DEVNULL,
                                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def wait_until_ready(self, timeout_s: float = 120.0) -> ServerProcess:
        """Wait until `url + ping_path` answers 200.

        Raises `ServerStartError` (exit code and output in it) if the server exits first, or
        `ServerStartTimeout` (also a `TimeoutError`) if it is still running after `timeout_s`;
        the server is left as it is, so a caller may wait again.
        """
        process = self._started()
        try:
            wait_for_ping(self.url, timeout_s=timeout_s, process=process, path=self.ping_path)
        except TimeoutError:
            raise ServerStartTimeout(f"`{self.name}` did not answer {self.url}{self.ping_path} within {timeout_s:g} s",
                                     None, self.output(), self.log_path) from None
        except RuntimeError:
            raise ServerStartError(f"`{self.name}` exited with code {process.returncode} before answering "
                                   f"{self.url}{self.ping_path}", process.returncode, self.output(), self.log_path) from None
        return self

    def send_signal(self, sig: int) -> None:
        """Send `sig` to the server's process group (nothing if it has exited)."""
        process = self._started()
        if process.poll() is None:
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                pass

    def wait(self, timeout_s: float | None = None) -> int:
        """Wait for the server to exit by itself; its exit code (`subprocess.TimeoutExpired` after `timeout_s`)."""
        self.exit_code = self._started().wait(timeout_s)
        return self.exit_code

    def stop(self, grace_s: float = KILL_AFTER_S) -> int:
        """SIGTERM the process group, SIGKILL after `grace_s`; returns the exit code (negative: killed by that signal)."""
        process = self._started()
        self.send_signal(signal.SIGTERM)
        try:
            self.exit_code = process.wait(grace_s)
        except subprocess.TimeoutExpired:
            self.send_signal(signal.SIGKILL)
            self.exit_code = process.wait(30)
        self._drop_temporary_log()
        return self.exit_code

    # --- what it is and what it said -----------------------------------------------
    @property
    def name(self) -> str:
        return " ".join(Path(self.argv[0]).name if i == 0 else a for i, a in enumerate(self.argv[:4]))

    @property
    def pid(self) -> int:
        return self._started().pid

    def poll(self) -> int | None:
        """The exit code, or None while it runs."""
        code = self._started().poll()
        if code is not None:
            self.exit_code = code
        return code

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def output(self) -> str:
        """Everything the server wrote to stdout and stderr in this run."""
        if self._kept_output is not None:
            return self._kept_output
        if self.log_path is None or not self.log_path.is_file():
            return ""
        with open(self.log_path, "rb") as log:
            log.seek(self._log_start)
            return log.read().decode("utf-8", errors="replace")

    # --- context manager: stopped on exit, whatever happened -------------------------
    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.exit_code is None:
            self.stop()
        self._drop_temporary_log()

    def _started(self) -> subprocess.Popen:
        if self.process is None:
            raise RuntimeError(f"{self.name} has not been started")
        return self.process

    def _drop_temporary_log(self) -> None:
        if self._temporary and self._kept_output is None and self.log_path is not None:
            self._kept_output = self.output()
            self.log_path.unlink(missing_ok=True)


def start_server(argv: Sequence[str], url: str, *, env: Mapping[str, str] | None = None, log_path: Path | str | None = None,
                 ping_path: str = "/ping", startup_timeout_s: float = 120.0, cwd: Path | str | None = None) -> ServerProcess:
    """Start `argv` and wait until `url + ping_path` answers 200; usable as a context manager (stopped on exit).

    If it exits or does not answer in time it is stopped, and `ServerStartError` /
    `ServerStartTimeout` says so with its output.
    """
    server = ServerProcess(argv, url, env=env, log_path=log_path, ping_path=ping_path, cwd=cwd).start()
    try:
        return server.wait_until_ready(startup_timeout_s)
    except BaseException:
        server.stop(grace_s=5)
        raise
