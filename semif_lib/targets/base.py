"""The `Target` protocol: what a workshop step needs from the place it runs.

A step (`workshop.package_model`, `deploy_text_model`, ...) does the part every target shares
(building `model.tar.gz`, encoding the request bytes once, reading and writing the state file) and
asks its target for the rest. `select_target(settings)` picks the target a step runs on;
`owner_of(kind, settings)` the one that removes a recorded resource of that kind (what created it,
whatever the target is now).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, ClassVar, Iterator, Mapping, Protocol

from ..registry import WorkshopState
from ..settings import Settings

__all__ = ["Target"]


class Target(Protocol):
    """One place the workshop runs: `local` (processes), `container` (images, as SageMaker runs them) or `aws`.

    Endpoints are what the deploy methods return and the state file keeps (`text_endpoint`,
    `decision_endpoint`): a URL on this machine, an endpoint name on AWS.
    """

    name: ClassVar[str]
    settings: Settings

    def region(self) -> str | None:
        """The region its resources live in (recorded in the state file once), or None on this machine."""

    def check_permissions(self, state: WorkshopState, log: Callable[[str], None]) -> Any:
        """The caller's permissions for the workshop (`aws.preflight.PermissionCheck`), or None when none are needed."""

    def publish_model(self, package: Any, state: WorkshopState, progress: bool) -> dict[str, Any]:
        """Make `model.tar.gz` (a `model.package.ModelPackage`) reachable where the endpoints read it:
        the `model_data_url` and `uploaded` to record, or nothing to change."""

    def deploy_text_model(self, state: WorkshopState, llama_settings: Mapping[str, Any] | None, wait: bool) -> str:
        """Serve the packaged GGUF with llama.cpp's chat API; its endpoint."""

    def build_adapter_image(self, state: WorkshopState, wait: bool, log: Callable[[str], None]) -> str:
        """The decision adapter's image (built if needed); its URI or tag."""

    def deploy_decision_model(self, state: WorkshopState, wait: bool) -> str:
        """Serve the decision adapter on the packaged model; its endpoint."""

    def invoke_decision(self, endpoint: str, body: bytes, mode: str | None, session: str | None = None) -> dict[str, Any]:
        """One decision request (`body`, already encoded) answered by `endpoint`, in stateful session `session` if given."""

    def open_session(self, endpoint: str) -> tuple[str, str]:
        """A new stateful session on `endpoint`: its id and expiry (UTC)."""

    def close_session(self, endpoint: str, session: str) -> str:
        """Close stateful session `session`; the id the endpoint closed."""

    def deploy_async_decision_model(self, state: WorkshopState, wait: bool) -> str:
        """Serve the decision adapter behind a queue for work past a real-time invocation's 60 s; its endpoint."""

    def invoke_decision_async(self, state: WorkshopState, endpoint: str, body: bytes, wait: bool) -> dict[str, Any]:
        """One decision request queued on the async endpoint: its answer, or (without `wait`) where it will be."""

    def enable_async_autoscaling(self, state: WorkshopState, endpoint: str, max_instances: int) -> dict[str, Any] | None:
        """Scale-to-zero autoscaling on async endpoint `endpoint`, or None where there is nothing to scale."""

    def chat(self, endpoint: str, body: bytes) -> dict[str, Any]:
        """One chat completion (`body`, already encoded) from the text endpoint."""

    def stream_chat(self, endpoint: str, body: bytes) -> Iterator[str]:
        """The text deltas of a streamed chat completion."""

    def score_jsonlines(self, state: WorkshopState, path: Path, body: bytes, wait: bool) -> list[dict[str, Any]] | str:
        """A JSON Lines file of requests (`body` is its bytes): the response records, or where they will be."""

    def enable_autoscaling(self, state: WorkshopState, min_instances: int, max_instances: int,
                           invocations_per_instance: float) -> dict[str, Any] | None:
        """Autoscaling on the decision endpoint, or None where there is nothing to scale."""

    def still_billing(self, entry: dict[str, Any]) -> str | None:
        """After cleanup, what of a recorded resource of a kind it owns is left and bills (from a describe call), or None."""

    def delete_resource(self, entry: dict[str, Any]) -> bool:
        """Remove one recorded resource of a kind it owns (`owner_of`): True if removed, False if it was already gone.

        Raises `registry.KeptResource` when it stays on purpose, anything else when it failed."""
