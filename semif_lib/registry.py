"""The workshop's run registry: what a run created, in order, and the values notebooks hand on.

Every resource a workshop step creates (an AWS resource, a local server, a container) is recorded,
in creation order, in a small JSON state file (`SEMIF_STATE_FILE`); `workshop.cleanup()` reads it
back newest first and asks the target that owns each kind to remove it (`targets.owner_of`). AWS
resources are named `semif-<purpose>-<run id>` and tagged with the run id (`WorkshopState.tags`).

This is plumbing: it imports only the settings, never a wing. The AWS wing opens it through
`aws.runrecord`, which also records the region its resources live in.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from .settings import Settings

__all__ = ["KeptResource", "TAG_PROJECT", "TAG_RUN_ID", "WorkshopState", "load_state", "new_run_id", "resource_name",
           "run_prefix", "settings_and_state"]

TAG_RUN_ID = "semif-run-id"
TAG_PROJECT = "semif-project"
PROJECT = "semif-workshop"


class KeptResource(Exception):
    """A recorded resource that cleanup leaves in place on purpose (the message says why)."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def new_run_id() -> str:
    """Six lowercase characters: short enough for every AWS name limit, enough to keep attendees apart."""
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(secrets.choice(alphabet) for _ in range(6))


def resource_name(run_id: str, purpose: str) -> str:
    """`semif-<purpose>-<run id>`: valid for S3 keys, IAM, ECR, CodeBuild and SageMaker (<= 63 chars)."""
    name = f"semif-{purpose}-{run_id}"
    if len(name) > 63:
        raise ValueError(f"resource name {name!r} is longer than 63 characters")
    return name


def run_prefix(settings: Settings, run_id: str) -> str:
    """`<SEMIF_S3_PREFIX>/<run id>`: every S3 object a run writes lives under it, so runs that share an
    account's bucket never touch each other's objects, and a run's IAM roles may read only its own."""
    return f"{settings.s3_prefix.strip('/')}/{run_id}"


@dataclass
class WorkshopState:
    """What a workshop run created (in order) and the values notebooks hand to each other.

    `resources` is a list of `{"kind", "name", ...}` records; `values` holds named results
    (`model_data_url`, `text_endpoint`, `image_uri`, ...). Saved after every change.
    """

    path: Path
    run_id: str
    region: str | None = None
    created: str = field(default_factory=_now)
    resources: list[dict[str, Any]] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)

    # ---------------------------------------------------------------- persistence
    @classmethod
    def load(cls, path: Path | str, run_id: str | None = None) -> "WorkshopState":
        path = Path(path)
        if path.is_file():
            data = json.loads(path.read_text(encoding="utf-8"))
            if run_id and data.get("run_id") != run_id:
                raise ValueError(
                    f"{path} belongs to run {data.get('run_id')!r}, not {run_id!r}: run cleanup() for it first, "
                    "or point SEMIF_STATE_FILE elsewhere"
                )
            return cls(path=path, run_id=data["run_id"], region=data.get("region"), created=data.get("created", _now()),
                       resources=list(data.get("resources", [])), values=dict(data.get("values", {})))
        state = cls(path=path, run_id=run_id or new_run_id())
        state.save()
        return state

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"run_id": self.run_id, "region": self.region, "created": self.created,
                "resources": self.resources, "values": self.values}
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(self.path)

    # ---------------------------------------------------------------- resources and values
    def name(self, purpose: str) -> str:
        return resource_name(self.run_id, purpose)

    def record(self, kind: str, name: str, **details: Any) -> dict[str, Any]:
        """Record a created resource (once: a second record of the same kind and name updates it)."""
        for entry in self.resources:
            if entry["kind"] == kind and entry["name"] == name:
                entry.update(details)
                self.save()
                return entry
        entry = {"kind": kind, "name": name, "created": _now(), **details}
        self.resources.append(entry)
        self.save()
        return entry

    def forget(self, kind: str, name: str) -> None:
        self.resources = [e for e in self.resources if not (e["kind"] == kind and e["name"] == name)]
        self.save()

    def find(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.resources if e["kind"] == kind]

    def has(self, kind: str, name: str) -> bool:
        return any(e["kind"] == kind and e["name"] == name for e in self.resources)

    def set(self, key: str, value: Any) -> Any:
        self.values[key] = value
        self.save()
        return value

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def require(self, key: str, step: str) -> Any:
        """A value an earlier step stored; the error names the notebook that makes it."""
        if key not in self.values:
            raise KeyError(f"no {key!r} in {self.path}: run {step} first")
        return self.values[key]

    def tags(self) -> list[dict[str, str]]:
        """`[{"Key", "Value"}]` tags put on every AWS resource of this run (S3, IAM, ECR, SageMaker, CodeBuild)."""
        return [{"Key": TAG_PROJECT, "Value": PROJECT}, {"Key": TAG_RUN_ID, "Value": self.run_id}]

    def prefix(self, settings: Settings) -> str:
        """This run's S3 key prefix (`run_prefix`)."""
        return run_prefix(settings, self.run_id)


def load_state(settings: Settings, region: Callable[[], str | None] | None = None) -> WorkshopState:
    """The state of this workshop run (created, with a fresh run id, on first use).

    `region` is asked while the file records none: the region the run's AWS resources live in
    (the AWS target and the AWS wing give one; the targets on this machine do not).
    """
    state = WorkshopState.load(settings.state_file, settings.run_id)
    if state.region is None and region is not None and (found := region()) is not None:
        state.region = found
        state.save()
    return state


def settings_and_state(settings: Settings, state: WorkshopState | None) -> tuple[Settings, WorkshopState]:
    """The settings a step was handed (the top floor read them) and the state it was given, else this run's (no region recorded)."""
    return settings, state or load_state(settings)
