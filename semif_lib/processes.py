"""Processes the workshop starts on this machine: wait until they answer, stop them as SageMaker does.

Shared by the workshop steps (which start `semif serve` and `semif serve-text`) and by cleanup
(which stops what a run recorded), so it sits below both.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

__all__ = ["is_answering", "stop_process", "wait_for_ping"]


def wait_for_ping(url: str, timeout_s: float = 120.0, process: subprocess.Popen | None = None, path: str = "/ping") -> None:
    """Poll `url + path` until it answers 200; fail early if `process` exits."""
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"local server exited with code {process.returncode} before answering {url}{path}")
        try:
            with urllib.request.urlopen(url + path, timeout=2) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, OSError) as exc:
            last = exc
        time.sleep(0.25)
    raise TimeoutError(f"{url}{path} did not answer within {timeout_s:.0f} s ({last})")


def is_answering(url: str) -> bool:
    """Whether a server already answers `/ping` at `url` (a workshop step reuses it instead of starting another)."""
    try:
        wait_for_ping(url, timeout_s=0.5)
        return True
    except (TimeoutError, RuntimeError):
        return False


def stop_process(pid: int, timeout_s: float = 30.0) -> bool:
    """SIGTERM the process group we started (as SageMaker does), SIGKILL after `timeout_s`."""
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
