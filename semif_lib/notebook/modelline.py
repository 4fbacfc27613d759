"""The line every notebook prints beside its target: which model it runs and how well that model decides, measured.

`describe_model` is the one place that line is written. The model is the one the notebook's step uses: the model
step 01 packaged (from the workshop state), else `model.defaults.model_for` (what 01 would package: on target aws
the chosen Qwen2.5-Coder-1.5B), or, for a notebook that scores in its own kernel (`local_only`), the setting's model
(the embedded SmolLM2 unless `MODEL` or `SEMIF_MODEL_PATH` names another). Its quality is read from the committed
results (`measurement.quality.comparison.describe_measured_quality`), never typed into a notebook.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from ..model.defaults import model_for, target_model
from ..model.hub import is_hub_reference
from ..model.locate import EMBEDDED_FILE
from ..registry import WorkshopState
from ..settings import Settings

__all__ = ["describe_model", "show_model"]

EMBEDDED_ID = PurePosixPath(EMBEDDED_FILE).stem


def _from_state(state: WorkshopState | None) -> tuple[str, str] | None:
    """(model id, where it came from) of the package step 01 recorded, if any."""
    package = state.get("model_package") if state is not None else None
    if not package:
        return None
    default = target_model("aws")
    if default is not None and package.get("sha256") == default.sha256:
        return default.measured_as, f"packaged by 01 from {package.get('source') or package.get('gguf_name')}"
    return Path(str(package.get("gguf_name"))).stem, f"packaged by 01 ({package.get('gguf_name')})"


def _from_choice(choice: Path | str | None, target: str) -> tuple[str, str]:
    if choice is None:
        return EMBEDDED_ID, "embedded, offline"
    default = target_model(target)
    if default is not None and str(choice) == default.reference:
        return default.measured_as, f"{default.reference}, the {target} default, sha256 {default.sha256[:12]}..."
    text = str(choice)
    name = text.split("@")[0].rsplit("/", 1)[-1] if is_hub_reference(text) else Path(text).name
    return name.removesuffix(".gguf"), text


def describe_model(settings: Settings, state: WorkshopState | None = None, local_only: bool = False) -> str:
    """`model <id> (<where from>) | <id>: readout accuracy ... [95% CI] ... ; sys1bench ...`, in one line."""
    from ..measurement.quality.comparison import describe_measured_quality

    if local_only:
        model_id, origin = _from_choice(settings.model_path, settings.target)
        where = "in this kernel"
    else:
        model_id, origin = _from_state(state) or _from_choice(model_for(settings), settings.target)
        where = f"on target {settings.target}"
    return f"model {where}: {model_id} ({origin}) | {describe_measured_quality(model_id)}"


def show_model(settings: Settings, state: WorkshopState | None = None, local_only: bool = False) -> None:
    """Print `describe_model(...)`: every notebook's second line, under `show_target`'s."""
    print(describe_model(settings, state, local_only))
