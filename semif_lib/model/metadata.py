"""What a GGUF is, from its metadata alone: llama.cpp's own `gguf` reader (memory-mapped, no weights loaded).

Its size, architecture, quantization, tokenizer and chat template, the memory it needs at a given n_ctx and the
instances that hold it. Whether the decision path can use it (the answer slots) is the decision wing's question
(`decision.inspection`), which fills in the rest of the report.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .hub import local_shards

__all__ = ["INSTANCE_MEMORY_GIB", "ModelReport", "read_metadata"]

# SageMaker real-time instances the workshop suggests: (host memory GiB, accelerator memory GiB), from the
# EC2 instance-type specifications (c6i/c7g: 2 GiB per vCPU, m6i: 4, r6i: 8; g5: A10G 24 GB, g6: L4 24 GB).
INSTANCE_MEMORY_GIB: dict[str, tuple[int, int]] = {
    "ml.c6i.large": (4, 0), "ml.c6i.xlarge": (8, 0), "ml.c6i.2xlarge": (16, 0), "ml.c6i.4xlarge": (32, 0),
    "ml.c7g.xlarge": (8, 0), "ml.c7g.2xlarge": (16, 0), "ml.m6i.xlarge": (16, 0), "ml.m6i.2xlarge": (32, 0),
    "ml.r6i.xlarge": (32, 0), "ml.g5.xlarge": (16, 24), "ml.g6.xlarge": (16, 24), "ml.g6.12xlarge": (192, 96),
}
HOST_SHARE = 0.75  # of an instance's memory the model may take: the OS, the container and the adapter need the rest


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
    vocab = _count_vocabulary(head)
    file_bytes = sum(p.stat().st_size for p in shards)
    buffers = 4 * 512 * (vocab or 0) + 256 * 1024 ** 2  # logits of one micro-batch, compute scratch
    memory = int(file_bytes + _count_kv_bytes(head, arch, n_ctx) + buffers)
    return ModelReport(
        path=str(path), name=_field(head, "general.name"), architecture=arch,
        parameters=sum(int(t.n_elements) for r in readers for t in r.tensors),
        quantization=_quantization(_field(head, "general.file_type"), head), file_bytes=file_bytes, shards=len(shards),
        context_length=_field(head, f"{arch}.context_length"), chat_template=bool(template),
        thinking_switch=_read_thinking_switch(template), tokenizer=_field(head, "tokenizer.ggml.model"), vocab_size=vocab,
        memory_bytes=memory, n_ctx=n_ctx, fits=_find_fits(memory),
    )


def _count_kv_bytes(head: Any, arch: str | None, n_ctx: int) -> int:
    """The f16 K and V cache of n_ctx cells, from the architecture's shape (layers, KV heads, key and value lengths)."""
    layers = _field(head, f"{arch}.block_count") or 0
    heads = _field(head, f"{arch}.attention.head_count") or 1
    kv_heads = _field(head, f"{arch}.attention.head_count_kv") or heads
    embedding = _field(head, f"{arch}.embedding_length") or 0
    key_len = _field(head, f"{arch}.attention.key_length") or (embedding // heads if heads else 0)
    value_len = _field(head, f"{arch}.attention.value_length") or key_len
    return 2 * layers * n_ctx * kv_heads * (key_len + value_len)


def _count_vocabulary(head: Any) -> int | None:
    """The tokenizer's vocabulary size (None: the file has no token list)."""
    tokens = head.fields.get("tokenizer.ggml.tokens")
    return len(tokens.data) if tokens is not None else None


def _read_thinking_switch(template: str | None) -> str | None:
    """How the chat template turns thinking on or off, as the decision path must render it (None: no thinking)."""
    if template and "enable_thinking" in template:
        return "enable_thinking (the decision path renders with thinking off)"
    if template and "<think>" in template:
        return "<think> blocks (no switch: the prompt must close the block before the answer)"
    return None


def _find_fits(memory: int) -> list[str]:
    """The suggested instances that hold `memory`: in 90% of the accelerator's, or in the host's share without one."""
    return [name for name, (host, gpu) in INSTANCE_MEMORY_GIB.items()
            if (memory <= gpu * 1024 ** 3 * 0.9 if gpu else memory <= host * 1024 ** 3 * HOST_SHARE)]
