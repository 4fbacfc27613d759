"""`semif model inspect`: whether a GGUF can serve decisions, before anything is uploaded.

The facts come from its metadata (`model.metadata`); the two checks that decide whether a model can work at all
use the llama.cpp this package serves with, loading the vocabulary only (a second or so): whether its build knows
the architecture, and whether the answer slots (Yes/No, the choice letters, the score digits) are single tokens
after the model's own assistant header, checked by the same `RequestPreparer` that refuses a request at serving
time. `refuse_unworkable` is what the packaging step calls, so a model that cannot work fails there with one
line, not on the endpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import InvalidRequestError, ModelLoadError, SemifError
from ..model.locate import find_model_path
from ..model.metadata import ModelReport, read_metadata
from ..settings import Settings
from .backend import VocabReader
from .prompt import PromptRenderer
from .request import ServerDefaults, resolve_request
from .schema import parse_request

__all__ = ["check_for_packaging", "inspect_model", "refuse_unworkable"]

SUGGESTION = ("pick an instruct GGUF of an architecture llama.cpp knows, with a chat template "
              "(SmolLM2-135M-Instruct, Qwen2.5-0.5B/1.5B-Instruct, Llama-3.2-1B/3B-Instruct: docs/quality.md)")
_PROBE = {"state": "probe", "questions": {
    "yes_no": {"type": "noul", "instructions": "Is this a probe?"},
    "choice": {"type": "choice", "instructions": "Which letter?", "criteria": {f"option {i}": f"option {i}" for i in range(26)}},
    "score": {"type": "score", "instructions": "How much?", "criteria": [f"level {i}" for i in range(10)]},
}}


class VocabTokenizer(VocabReader):
    """The model's tokenizer alone (llama.cpp `vocab_only`): what `RequestPreparer` needs, without the weights."""

    def __init__(self, path: Path) -> None:
        from .backend import ensure_backend

        self.lib = lib = ensure_backend(False)
        params = lib.llama_model_default_params()
        params.vocab_only = True
        self._model = lib.llama_model_load_from_file(str(path).encode(), params)
        if not self._model:
            raise ModelLoadError(f"llama.cpp could not load {path}: not a valid GGUF, or an architecture this build lacks",
                                 field="model_path")
        self._vocab = lib.llama_model_get_vocab(self._model)

    def close(self) -> None:
        if self._model:
            self.lib.llama_model_free(self._model)
            self._model = None

    def tokenize(self, text: str, add_special: bool = False, parse_special: bool = True) -> list[int]:
        return list(self._tokenize_uncached(text, add_special, parse_special))


def check_slots(path: Path, settings: Settings) -> tuple[bool, int | None, str | None]:
    """(architecture loads, choice letters available, the refusal a probe request gets or None)."""
    from .preparer import RequestPreparer

    try:
        tok = VocabTokenizer(path)
    except ModelLoadError as exc:
        return False, None, exc.message
    try:
        renderer = PromptRenderer(tok.chat_template, tok.bos_text, tok.eos_text)
        preparer = RequestPreparer(tok, renderer, settings, settings.n_ctx)
        try:
            preparer.prepare(resolve_request(parse_request(_PROBE), ServerDefaults.of(settings)))
        except InvalidRequestError as exc:
            return True, len(preparer.letter_slots), exc.message
        return True, len(preparer.letter_slots), None
    except SemifError as exc:
        return True, None, exc.message
    finally:
        tok.close()


def inspect_model(path: Path | str, settings: Settings | None = None, load_vocab: bool = True) -> ModelReport:
    """The report for one GGUF (a hub reference is downloaded first); `problems` says why it cannot work."""
    settings = settings or Settings()
    local = find_model_path(path or settings.model_path, settings.model_dir)
    report = read_metadata(local, settings.n_ctx)
    if load_vocab:
        loads, letters, problem = check_slots(local, settings)
        report.architecture_loads, report.letter_slots = loads, letters
        if not loads:
            report.problems.append(f"llama.cpp cannot load architecture {report.architecture!r} ({problem}); {SUGGESTION}")
        elif problem:
            report.problems.append(f"the decision path's answer slots do not verify: {problem}; {SUGGESTION}")
    if not report.fits:
        report.problems.append(f"needs {report.memory_bytes / 1024 ** 3:.1f} GiB, more than any suggested instance offers; "
                               "pick a smaller quantization (Q4_K_M) or a smaller model")
    return report


_PASSED: dict[tuple[str, int], dict[str, Any]] = {}  # (model identity, n_ctx) -> the facts: inspected once per process


def check_for_packaging(path: Path, identity: str, settings: Settings) -> dict[str, Any]:
    """`refuse_unworkable` for the packaging step (`model.package.build_model_package(inspect=...)`), remembered by the
    model's identity (its sha256) and n_ctx; returns the facts the package's manifest keeps."""
    key = (identity, settings.n_ctx)
    if key not in _PASSED:
        report = refuse_unworkable(path, settings)
        _PASSED[key] = {"architecture": report.architecture, "quantization": report.quantization,
                        "letter_slots": report.letter_slots, "fits": report.fits}
    return _PASSED[key]


def refuse_unworkable(path: Path | str, settings: Settings | None = None) -> ModelReport:
    """The packaging step's gate: the report, or a `ModelLoadError` with the first problem in one line."""
    report = inspect_model(path, settings)
    if report.problems:
        raise ModelLoadError(f"{Path(report.path).name} cannot serve decisions: {report.problems[0]}", field="model_path")
    return report
