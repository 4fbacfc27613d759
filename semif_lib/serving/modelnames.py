"""Which `model` names a request may send: the one rule `/v1/systemone`, `/v1/decisions` and `/invocations` apply.

A server that answers any name hides a client's mistake (a client pointed at the wrong endpoint, or
pinned to a model this one is not, gets an answer from another model); one that accepts only its
file name breaks every client that sends its SDK's default. So a request may name:

- nothing (the field is absent or null): the loaded model;
- the loaded model by its id (the file name without `.gguf`, what `GET /v1/models` and every
  answer's `model` say) or its file name;
- the hub reference it was loaded from (`SEMIF_MODEL_PATH=hf://org/repo/file.gguf[@revision]`), with
  or without the revision, or its repository (`org/repo`, the name vLLM serves a hub model under);
- `jev-latest`, the Jev SDKs' default (jevcompat `request.model-alias`: a MUST);
- any name in `SEMIF_MODEL_ALIASES` (comma-separated); `*` there accepts every name.

Any other name is a 404 (`UnknownModelError`) naming the field and the names accepted: Jev's
`{"detail": {"error_type": "not_found", ...}}`, or on the OpenAI wire OpenAI's own
`{"error": {"type": "invalid_request_error", "code": "model_not_found", "param": "model"}}`, which the
`openai` SDK raises as `NotFoundError`. Names are compared exactly (case included), as OpenAI does.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import SemifError
from ..model.hub import is_hub_reference, parse_hub_reference
from ..settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    from ..decision.seam import DecisionWing

__all__ = ["ANY_MODEL", "JEV_DEFAULT_MODEL", "ModelNames", "UnknownModelError", "model_names"]

JEV_DEFAULT_MODEL = "jev-latest"  # what typesafe-sdk and jevcompat send unless told otherwise
ANY_MODEL = "*"  # in SEMIF_MODEL_ALIASES: accept every name


class UnknownModelError(SemifError):
    """A request named a model this server does not serve (404, field `model`)."""

    status_code = 404
    error_type = "not_found"
    openai_type = "invalid_request_error"  # OpenAI's own answer to an unknown model: 404, this type and code
    openai_code = "model_not_found"


@dataclass(frozen=True)
class ModelNames:
    """The names a request's `model` may take; `any_name`: `SEMIF_MODEL_ALIASES` holds `*`."""

    names: tuple[str, ...]
    any_name: bool = False

    def accepts(self, name: str | None) -> bool:
        return name is None or self.any_name or name in self.names

    def refusal(self, name: str | None) -> UnknownModelError | None:
        """The 404 for `name`, or None when it is accepted."""
        if self.accepts(name):
            return None
        listed = ", ".join(repr(n) for n in self.names)
        return UnknownModelError(
            f"model: {name!r} is not served here; send one of {listed}, or leave model out (GET /v1/models lists the "
            f"model; SEMIF_MODEL_ALIASES adds names, '{ANY_MODEL}' accepts any)", field="model")


def _hub_names(source: str) -> tuple[str, ...]:
    """A hub reference in the spellings a client may copy: as set, canonical with and without revision, the repository."""
    ref = parse_hub_reference(source)
    bare = f"hf://{ref.repo_id}/{ref.filename}"
    source = "hf://" + source[len("hf:/"):] if source.startswith("hf:/") and not source.startswith("hf://") else source
    return (source, str(ref), bare, ref.repo_id)


@lru_cache(maxsize=8)
def _names(model_id: str, file_name: str | None, source: str | None, aliases: str) -> ModelNames:
    listed = [model_id, *([file_name] if file_name else []), *(_hub_names(source) if source else ()), JEV_DEFAULT_MODEL]
    extra = [a.strip() for a in aliases.split(",") if a.strip()]
    listed += [a for a in extra if a != ANY_MODEL]
    return ModelNames(tuple(dict.fromkeys(listed)), any_name=ANY_MODEL in extra)


def model_names(engine: DecisionWing, settings: Settings) -> ModelNames:
    """The names accepted for the loaded `engine` (its `model_id`, and `model_path` when it has one) under `settings`."""
    path = engine.model_path
    source = str(settings.model_path) if settings.model_path and is_hub_reference(settings.model_path) else None
    return _names(str(engine.model_id), Path(path).name if path else None, source, settings.model_aliases)
