"""Waiting on AWS: retries while IAM propagates a new role, and status polls with a progress bar."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # pragma: no cover
    pass

from .errors import AwsSetupError, ResourceFailedError, error_message

__all__ = [
    "ROLE_PROPAGATION_MESSAGES",
    "poll_status",
    "retry_while_role_propagates",
    "sleep_with_bar",
    "status_bar",
]


ROLE_PROPAGATION_MESSAGES = ("not authorized to perform sts:assumerole", "not authorized to perform: sts:assumerole",
                             "could not assume role")


def retry_while_role_propagates(call: Callable[[], Any], label: str, *, timeout_s: float = 120.0, first_delay_s: float = 2.0,
                                sleep: Callable[[float], None] | None = None, log: Callable[[str], None] | None = print) -> Any:
    """Run `call`, retrying with doubling delays (at most `timeout_s` in all) while a new IAM role is not
    yet assumable: CodeBuild's "not authorized to perform sts:AssumeRole", SageMaker's "could not assume role"."""
    start, delay = time.monotonic(), first_delay_s
    while True:
        try:
            return call()
        except Exception as exc:  # only the propagation messages are retried
            if not any(m in error_message(exc).lower() for m in ROLE_PROPAGATION_MESSAGES):
                raise
            waited = time.monotonic() - start
            if waited + delay > timeout_s:
                raise AwsSetupError(f"{label}: the IAM role is still not assumable after {waited:.0f} s "
                                    f"({error_message(exc)}); check its trust policy, then run the cell again") from None
            if log:
                log(f"{label}: IAM role not assumable yet (IAM is eventually consistent); retrying in {delay:.0f} s")
            (sleep or time.sleep)(delay)
            delay = min(delay * 2, 30.0)


# ====================================================================== waits with progress
def status_bar(label: str, enabled: bool = True, total: int | None = None) -> Any:
    """A `tqdm.auto` bar (a widget in Jupyter) that shows a wait's status and elapsed time."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=label, disable=not enabled, leave=True, dynamic_ncols=True,
                bar_format="{desc} [{elapsed}]" if total is None else "{desc} {bar} {n_fmt}/{total_fmt} [{elapsed}]")


def sleep_with_bar(bar: Any, seconds: float) -> None:
    """Sleep, refreshing the bar about once a second so its elapsed time keeps moving."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        time.sleep(min(1.0, left))
        bar.refresh()


def poll_status(describe: "Callable[[], dict[str, Any]]", status_key: str, done: str, failed: tuple[str, ...], label: str,
                timeout_s: float, poll_s: float, log: "Callable[[str], None] | None" = print, progress: bool = True) -> dict[str, Any]:
    """Call `describe` until `desc[status_key]` is `done` (returns it) or in `failed` (raises with the reason).

    A `tqdm.auto` bar shows the status and the elapsed time; each status change is also logged
    with the elapsed time, so a long SageMaker wait shows progress.
    """
    start, last = time.monotonic(), None
    bar = status_bar(label, enabled=progress)
    try:
        while True:
            desc = describe()
            status = desc[status_key]
            if status != last:
                bar.set_description_str(f"{label}: {status}")
                if log:
                    log(f"[{time.monotonic() - start:6.0f} s] {label}: {status}")
                last = status
            if status == done:
                return desc
            if status in failed:
                raise ResourceFailedError(f"{label} is {status}: {desc.get('FailureReason') or 'no reason given'}")
            if time.monotonic() - start > timeout_s:
                raise TimeoutError(f"{label} still {status} after {timeout_s:.0f} s")
            sleep_with_bar(bar, poll_s)
    finally:
        bar.close()
