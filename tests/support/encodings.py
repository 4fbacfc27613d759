"""Compressed request bodies for the content-coding tests: what clients send, and bombs that decode far past a limit."""

from __future__ import annotations

import zlib

from semif_lib.serving.bodies import load_zstd

MIB = 1 << 20


def compress_body(data: bytes, coding: str) -> bytes:
    """`data` as `coding` ("zstd" or "gzip") encodes it, one frame or member."""
    if coding == "gzip":
        return zlib.compress(data, wbits=zlib.MAX_WBITS | 16)
    return load_zstd().compress(data)


def compress_zeros(coding: str, decoded_bytes: int) -> bytes:
    """A bomb: `decoded_bytes` of zero bytes, compressed a MiB at a time (never held whole); zstd's is ~32 bytes a MiB."""
    if coding == "gzip":
        packer = zlib.compressobj(9, wbits=zlib.MAX_WBITS | 16)
        pack, end = packer.compress, packer.flush
    else:
        zstd = load_zstd()
        packer = zstd.ZstdCompressor(level=3)
        pack, end = packer.compress, lambda: packer.flush(zstd.ZstdCompressor.FLUSH_FRAME)
    zeros = bytes(MIB)
    parts = [pack(zeros[: min(MIB, decoded_bytes - done)]) for done in range(0, decoded_bytes, MIB)]
    return b"".join(parts) + end()
