"""`semif model inspect`: what a GGUF is and whether the decision path can use it, before anything is uploaded.

The metadata comes from llama.cpp's own `gguf` reader (memory-mapped, no weights loaded); the two checks
that decide whether a model can work at all use the llama.cpp this package serves with, loading the
vocabulary only (a second or so): whether its build knows the architecture, and whether the answer slots
(Yes/No, the choice letters, the score digits) are single tokens after the model's own assistant header,
checked by the same `RequestPreparer` that refuses a request at serving time. `refuse_unworkable` is what
the packaging step calls, so a model that cannot work fails there with one line, not on the endpoint.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..decision.backend import VocabReader
from ..decision.prompt import PromptRenderer
from ..decision.schema import parse_request
from ..errors import InvalidRequestError, ModelLoadError, SemifError
from ..settings import Settings
from .hub import local_shards
from .locate import find_model_path

__all__ = ["INSTANCE_MEMORY_GIB", "ModelReport", "check_for_packaging", "inspect_model", "refuse_unworkable"]

# SageMaker real-time instances the workshop suggests: (host memory GiB, accelerator memory GiB), from the
# EC2 instance-type specifications (c6i/c7g: 2 GiB per vCPU, m6i: 4, r6i: 8; g5: A10G 24 GB, g6: L4 24 GB).
INSTANCE_MEMORY_GIB: dict[str, tuple[int, int]] = {
    "ml.c6i.large": (4, 0), "ml.c6i.xlarge": (8, 0), "ml.c6i.2xlarge": (16, 0), "ml.c6i.4xlarge": (32, 0),
    "ml.c7g.xlarge": (8, 0), "ml.c7g.2xlarge": (16, 0), "ml.m6i.xlarge": (16, 0), "ml.m6i.2xlarge": (32, 0),
    "ml.r6i.xlarge": (32, 0), "ml.g5.xlarge": (16, 24), "ml.g6.xlarge": (16, 24), "ml.g6.12xlarge": (192, 96),
}
HOST_SHARE = 0.75  # of an instance's memory the model may take: the OS, the container and the adapter need the rest
SUGGESTION = ("pick an instruct GGUF of an architecture llama.cpp knows, with a chat template "
              "(SmolLM2-135M-Instruct, Qwen2.5-0.5B/1.5B-Instruct, Llama-3.2-1B/3B-Instruct: docs/quality.md)")
_PROBE = {"state": "probe", "questions": {
    "yes_no": {"type": "noul", "instructions": "Is this a probe?"},
    "choice": {"type": "choice", "instructions": "Which letter?", "criteria": {f"option {i}": f"option {i}" for i in range(26)}},
    "score": {"type": "score", "instructions": "How much?", "criteria": [f"level {i}" for i in range(10)]},
}}


@dataclass
class ModelReport:
    """The facts `semif model inspect` prints, and the problems that make the model unusable (empty: it can work)."""

    path: str
    name: str | None
    architecture: str | None
    parameters: int
    quantization: str
    file_bytes: int
    shards: int
    context_length: int | None
    chat_template: bool
    thinking_switch: str | None
    tokenizer: str | None
    vocab_size: int | None
    memory_bytes: int
    n_ctx: int
    fits: list[str] = field(default_factory=list)
    architecture_loads: bool | None = None
    letter_slots: int | None = None
    problems: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        gib = 1024 ** 3
        slots = ("not checked" if self.letter_slots is None else
                 f"Yes/No, score digits and {self.letter_slots} choice letters are single tokens" if not self.problems else "see below")
        out = [f"file:            {self.path} ({self.file_bytes / 1e9:.2f} GB in {self.shards} file(s))",
               f"name:            {self.name}",
               f"architecture:    {self.architecture} (llama.cpp here loads it: {_yes(self.architecture_loads)})",
               f"parameters:      {self.parameters / 1e9:.2f} B, quantization {self.quantization}",
               f"context length:  {self.context_length} (trained), the decision path uses n_ctx {self.n_ctx}",
               f"tokenizer:       {self.tokenizer}, vocabulary {self.vocab_size}",
               f"chat template:   {'present' if self.chat_template else 'absent (a plain prompt is used)'}"
               + (f"; thinking switch: {self.thinking_switch}" if self.thinking_switch else ""),
               f"memory need:     {self.memory_bytes / gib:.2f} GiB (weights + f16 KV cache for n_ctx {self.n_ctx} + buffers)",
               f"fits:            {', '.join(self.fits) or 'none of ' + ', '.join(INSTANCE_MEMORY_GIB)}",
               f"answer slots:    {slots}"]
        out += [f"refused:         {problem}" for problem in self.problems]
        return out

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _yes(value: bool | None) -> str:
    return "not checked" if value is None else "yes" if value else "NO"


def _field(reader: Any, key: str) -> Any:
    item = reader.fields.get(key)
    return item.contents() if item is not None else None


def _quantization(file_type: int | None, reader: Any) -> str:
    import gguf

    if file_type is not None:
        try:
            return gguf.LlamaFileType(file_type).name.removeprefix("MOSTLY_")
        except ValueError:
            pass
    counts: dict[str, int] = {}
    for tensor in reader.tensors:
        counts[tensor.tensor_type.name] = counts.get(tensor.tensor_type.name, 0) + int(tensor.n_elements)
    return max(counts, key=counts.__getitem__) if counts else "unknown"


def read_metadata(path: Path, n_ctx: int) -> ModelReport:
    """Everything the GGUF's metadata says, read with the `gguf` package (no weights loaded)."""
    import gguf

    shards = local_shards(path)
    readers = [gguf.GGUFReader(p, "r") for p in shards]
    head = readers[0]
    arch = _field(head, "general.architecture")
    template = _field(head, "tokenizer.chat_template")
    layers = _field(head, f"{arch}.block_count") or 0
    heads = _field(head, f"{arch}.attention.head_count") or 1
    kv_heads = _field(head, f"{arch}.attention.head_count_kv") or heads
    embedding = _field(head, f"{arch}.embedding_length") or 0
    key_len = _field(head, f"{arch}.attention.key_length") or (embedding // heads if heads else 0)
    value_len = _field(head, f"{arch}.attention.value_length") or key_len
    tokens = head.fields.get("tokenizer.ggml.tokens")
    vocab = len(tokens.data) if tokens is not None else None
    file_bytes = sum(p.stat().st_size for p in shards)
    kv_bytes = 2 * layers * n_ctx * kv_heads * (key_len + value_len)  # f16 K and V
    buffers = 4 * 512 * (vocab or 0) + 256 * 1024 ** 2  # logits of one micro-batch, compute scratch
    memory = int(file_bytes + kv_bytes + buffers)
    thinking = None
    if template and "enable_thinking" in template:
        thinking = "enable_thinking (the decision path renders with thinking off)"
    elif template and "<think>" in template:
        thinking = "<think> blocks (no switch: the prompt must close the block before the answer)"
    return ModelReport(
        path=str(path), name=_field(head, "general.name"), architecture=arch,
        parameters=sum(int(t.n_elements) for r in readers for t in r.tensors),
        quantization=_quantization(_field(head, "general.file_type"), head), file_bytes=file_bytes, shards=len(shards),
        context_length=_field(head, f"{arch}.context_length"), chat_template=bool(template), thinking_switch=thinking,
        tokenizer=_field(head, "tokenizer.ggml.model"), vocab_size=vocab, memory_bytes=memory, n_ctx=n_ctx,
        fits=[name for name, (host, gpu) in INSTANCE_MEMORY_GIB.items()
              if (memory <= gpu * 1024 ** 3 * 0.9 if gpu else memory <= host * 1024 ** 3 * HOST_SHARE)],
    )


class VocabTokenizer(VocabReader):
    """The model's tokenizer alone (llama.cpp `vocab_only`): what `RequestPreparer` needs, without the weights."""

    def __init__(self, path: Path) -> None:
        from ..decision.backend import ensure_backend

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
    from ..decision.preparer import RequestPreparer

    try:
        tok = VocabTokenizer(path)
    except ModelLoadError as exc:
        return False, None, exc.message
    try:
        renderer = PromptRenderer(tok.chat_template, tok.bos_text, tok.eos_text)
        preparer = RequestPreparer(tok, renderer, settings, settings.n_ctx)
        try:
            preparer.prepare(parse_request(_PROBE))
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
