"""Request bodies as they arrive: the size limit, and the content codings clients compress them with.

`read_limited_body(request, limit)` reads an invoke route's body once, as it streams. A body sent with
`Content-Encoding: zstd` (typesafe-sdk compresses every body of 1 KiB or more whenever zstd is importable)
or `gzip` is decoded chunk by chunk, each step's output capped at what the limit has left, so
`SEMIF_MAX_BODY_BYTES` bounds both the bytes on the wire and what they decode to: a few KiB that would
inflate to gigabytes are refused after at most `limit + 1` decoded bytes, never an out-of-memory.

- over the limit, on the wire or decoded, is the one 413 of `limits.refuse_limit`, naming SEMIF_MAX_BODY_BYTES;
- a coding other than zstd, gzip (`x-gzip`) and identity, or two stacked, is a 415 naming it, with
  `Accept-Encoding: zstd, gzip` (`errors.UnsupportedEncodingError`);
- data that is not what its coding says (corrupt, truncated, a zstd window over 8 MiB, RFC 9659) is a
  400 naming `content-encoding`.

zstd comes from the standard library on Python 3.14 (`compression.zstd`, PEP 784) and from its backport
`backports.zstd` before it, the module typesafe-sdk's `zstd` extra installs; `load_zstd` is the one shim.
"""

from __future__ import annotations

import zlib
from types import ModuleType
from typing import Any

from ..errors import InvalidRequestError, SemifError, UnsupportedEncodingError
from ..limits import refuse_limit

__all__ = ["CODINGS", "DISCARD_LIMIT_BYTES", "BodyDecoder", "decode_body", "load_zstd", "read_content_coding", "read_limited_body"]

CODINGS = ("zstd", "gzip")  # what a body may be encoded with, besides identity; the 415's Accept-Encoding
ALIASES = {"x-gzip": "gzip"}  # RFC 9110 8.4.1.3: a recipient should treat x-gzip as gzip
DISCARD_LIMIT_BYTES = 64 << 20  # past a refusal, read and drop this much so the client sees the answer
ZSTD_WINDOW_LOG_MAX = 23  # RFC 9659: a zstd content coding's window is at most 8 MiB (zstd's own default allows 128 MiB)
MAX_FRAMES = 1024  # zstd frames or gzip members in one body: a client sends one, a streaming one a few


def load_zstd() -> ModuleType | None:
    """The zstd module: the standard library's on Python 3.14+, else `backports.zstd`; None when neither is installed."""
    try:
        from compression import zstd  # type: ignore[import-not-found]
    except ImportError:
        try:
            from backports import zstd  # type: ignore[import-not-found,no-redef]
        except ImportError:
            return None
    return zstd


def read_content_coding(header: str | None) -> str | None:
    """The coding a `Content-Encoding` header names: "zstd" or "gzip", or None for identity (or no header).

    415 `UnsupportedEncodingError` naming an unknown coding, two stacked (`gzip, zstd`), or zstd on a
    server without it.
    """
    codings = [part.strip().lower() for part in (header or "").split(",")]
    codings = [ALIASES.get(c, c) for c in codings if c and c != "identity"]
    if not codings:
        return None
    accepted = ", ".join(CODINGS)
    if len(codings) > 1:
        raise UnsupportedEncodingError(f"content encoding {header.strip()!r} stacks {len(codings)} codings; send one: {accepted} "
                                       "or identity", accepted=CODINGS)
    coding = codings[0]
    if coding not in CODINGS:
        raise UnsupportedEncodingError(f"content encoding {coding!r} is not supported; send {accepted} or identity (uncompressed)",
                                       accepted=CODINGS)
    if coding == "zstd" and load_zstd() is None:
        raise UnsupportedEncodingError("content encoding 'zstd' is not available on this server (Python before 3.14 without "
                                       "backports.zstd); send gzip or identity", accepted=("gzip",))
    return coding


class BodyDecoder:
    """One body's decoder for `coding` ("zstd" or "gzip"): feed it the chunks as they arrive, then `finish()`.

    Each step's output is capped at one byte past what `limit` has left, so at most `limit + 1` decoded
    bytes exist before the 413. Frames (zstd) or members (gzip) may follow one another, up to `MAX_FRAMES`.
    """

    def __init__(self, coding: str, limit: int) -> None:
        if coding not in CODINGS:
            raise ValueError(f"no decoder for {coding!r}")
        self.coding = coding
        self.limit = limit
        self.size = 0  # decoded bytes so far
        self.frames = 0
        self._raw: Any = None  # the current frame's decompressor
        self._errors: tuple[type[Exception], ...] = (zlib.error,)

    def decode(self, chunk: bytes) -> bytes:
        """The decoded bytes `chunk` completes; 413 past the limit, 400 for data that is not `coding`."""
        pieces = []
        data = chunk
        while data:
            if self._raw is None or self._raw.eof:
                self._raw = self._open()
            try:
                piece = self._raw.decompress(data, self.limit - self.size + 1)
            except self._errors as exc:  # the data is not what the header says: our words, never the decoder's
                why = (f"its window needs more memory than the {1 << ZSTD_WINDOW_LOG_MAX >> 20} MiB a zstd content coding may use "
                       "(RFC 9659)" if "memory" in str(exc) else f"it stops decoding after {self.size} decoded bytes")
                raise self._refuse_data(why) from None
            self.size += len(piece)
            if self.size > self.limit:
                detail = f"the body decodes (Content-Encoding: {self.coding}) to more than {self.limit} bytes"
                raise refuse_limit("max_body_bytes", self.size, self.limit, field="body", detail=detail)
            pieces.append(piece)
            data = self._raw.unused_data if self._raw.eof else b""  # another frame or member follows in this chunk
        return b"".join(pieces)

    def finish(self) -> None:
        """400 if the body ended inside a frame (truncated)."""
        if self._raw is not None and not self._raw.eof:
            raise self._refuse_data(f"the body ends inside a {self.coding} frame (truncated after {self.size} decoded bytes)")

    def _open(self) -> Any:
        self.frames += 1
        if self.frames > MAX_FRAMES:
            raise self._refuse_data(f"more than {MAX_FRAMES} {self.coding} frames in one body")
        if self.coding == "gzip":
            return zlib.decompressobj(wbits=zlib.MAX_WBITS | 16)  # gzip header and trailer, a 32 KiB window
        zstd = load_zstd()
        self._errors = (zstd.ZstdError,)
        return zstd.ZstdDecompressor(options={zstd.DecompressionParameter.window_log_max: ZSTD_WINDOW_LOG_MAX})

    def _refuse_data(self, why: str) -> InvalidRequestError:
        return InvalidRequestError(f"the body is not valid {self.coding} data, as its Content-Encoding says: {why}",
                                   field="content-encoding")


def decode_body(data: bytes, coding: str | None, limit: int) -> bytes:
    """A whole body decoded from `coding` (None: identity), with the same limit and refusals as `read_limited_body`."""
    if coding is None:
        if len(data) > limit:
            raise refuse_limit("max_body_bytes", len(data), limit, field="body")
        return data
    decoder = BodyDecoder(coding, limit)
    out = decoder.decode(data)
    decoder.finish()
    return out


def _header(headers: Any, name: str) -> str:
    """Every value of a header, comma-joined (a repeated `Content-Encoding` lists codings too)."""
    getlist = getattr(headers, "getlist", None)
    return ", ".join(getlist(name)) if getlist is not None else (headers.get(name) or "")


async def read_limited_body(request: Any, limit: int) -> bytes:
    """The request body, decoded from its `Content-Encoding`; 413 once it, or what it decodes to, exceeds `limit` bytes.

    The coding is checked (415) before a byte is read. After a refusal the rest of the body is read and
    dropped (up to `DISCARD_LIMIT_BYTES`) so that the client, still sending, receives the answer instead of
    a reset connection.
    """
    coding = read_content_coding(_header(request.headers, "content-encoding"))
    decoder = BodyDecoder(coding, limit) if coding is not None else None
    declared = request.headers.get("content-length", "")
    too_large = declared.isdigit() and int(declared) > limit
    refusal: SemifError | None = None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            too_large = True
        if too_large or refusal is not None:
            if size > DISCARD_LIMIT_BYTES:
                break
            continue
        try:
            chunks.append(chunk if decoder is None else decoder.decode(chunk))
        except SemifError as exc:
            refusal = exc
    if too_large:
        raise refuse_limit("max_body_bytes", declared if declared.isdigit() else f"more than {limit}", limit, field="body")
    if refusal is not None:
        raise refusal
    if decoder is not None:
        decoder.finish()
    return b"".join(chunks)
