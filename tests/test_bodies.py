"""Request bodies and their content codings (`serving.bodies`): zstd and gzip decoded as they stream, the body
limit on what they decode to, and a 415 or 400 naming `content-encoding` for what cannot be decoded. Model-free:
the decoder alone, `read_limited_body` on a fake request, and the app on a fake engine for each wire's error shape.
The same bodies through real clients against a real `semif serve`: tests/test_adapter.py, tests/test_conformance.py."""

from __future__ import annotations

import asyncio
import json
import tracemalloc

import pytest

from semif_lib.errors import InvalidRequestError, PayloadTooLargeError, UnsupportedEncodingError
from semif_lib.serving import bodies
from semif_lib.serving.bodies import MAX_FRAMES, BodyDecoder, decode_body, load_zstd, read_content_coding, read_limited_body

from support.encodings import MIB, compress_body, compress_zeros

CODINGS = ["zstd", "gzip"]
BODY = json.dumps({"state": "The parcel arrived broken. " * 200, "questions": {"q": {"type": "noul", "instructions": "Broken?"}}}).encode()


def feed(decoder: BodyDecoder, data: bytes, step: int) -> bytes:
    out = b"".join(decoder.decode(data[i:i + step]) for i in range(0, len(data), step))
    decoder.finish()
    return out


# ----------------------------------------------------------------- the header
@pytest.mark.parametrize("header, coding", [(None, None), ("", None), ("identity", None), (" ZSTD ", "zstd"), ("gzip", "gzip"),
                                            ("x-gzip", "gzip"), ("identity, gzip", "gzip")])
def test_the_header_names_one_coding_or_none(header, coding):
    assert read_content_coding(header) == coding


@pytest.mark.parametrize("header, named", [("br", "'br'"), ("deflate", "'deflate'"), ("gzip, zstd", "'gzip, zstd'")])
def test_an_unknown_or_stacked_coding_is_a_415_naming_it(header, named):
    with pytest.raises(UnsupportedEncodingError) as info:
        read_content_coding(header)
    assert info.value.status_code == 415 and info.value.field == "content-encoding"
    assert named in info.value.message and info.value.accepted == ("zstd", "gzip")


def test_zstd_without_a_zstd_module_is_a_415_offering_gzip(monkeypatch):
    monkeypatch.setattr(bodies, "load_zstd", lambda: None)
    with pytest.raises(UnsupportedEncodingError) as info:
        read_content_coding("zstd")
    assert "backports.zstd" in info.value.message and info.value.accepted == ("gzip",)
    assert read_content_coding("gzip") == "gzip"


def test_the_zstd_shim_is_the_module_typesafe_sdk_compresses_with():
    from typesafe_sdk._core.compression import COMPRESSORS

    zstd = load_zstd()
    assert zstd is not None and zstd.__name__ in ("compression.zstd", "backports.zstd")
    assert zstd.decompress(COMPRESSORS["zstd"](BODY)) == BODY  # the SDK's zstd extra is installed: it compresses


# ----------------------------------------------------------------- decoding
@pytest.mark.parametrize("coding", CODINGS)
@pytest.mark.parametrize("step", [1, 7, 4096, 1 << 30])
def test_chunks_of_any_size_decode_to_the_body(coding, step):
    data = compress_body(BODY, coding)
    assert len(data) < len(BODY) // 10  # really compressed
    assert feed(BodyDecoder(coding, len(BODY)), data, step) == BODY


@pytest.mark.parametrize("coding", CODINGS)
def test_frames_or_members_one_after_another_decode_to_their_concatenation(coding):
    data = compress_body(BODY[:1000], coding) + compress_body(BODY[1000:], coding)
    assert feed(BodyDecoder(coding, len(BODY)), data, 333) == BODY
    assert decode_body(data, coding, len(BODY)) == BODY


@pytest.mark.parametrize("coding, decoded", [("zstd", 1 << 30), ("gzip", 64 * MIB)])
def test_a_bomb_stops_one_byte_past_the_limit_without_inflating(coding, decoded):
    """1 GiB of zstd in 32 KiB (64 MiB of gzip in 64 KiB): a 413 naming the limit after limit + 1 decoded bytes,
    and the decoded bytes held at any time stay near the limit, not the bomb's size."""
    bomb = compress_zeros(coding, decoded)
    assert len(bomb) < 100_000
    limit = MIB
    decoder = BodyDecoder(coding, limit)
    tracemalloc.start()
    try:
        with pytest.raises(PayloadTooLargeError) as info:
            for start in range(0, len(bomb), 16384):
                decoder.decode(bomb[start:start + 16384])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert decoder.size == limit + 1 and peak < 4 * limit, peak
    assert info.value.status_code == 413 and info.value.field == "body"
    assert info.value.message.startswith(f"the body decodes (Content-Encoding: {coding}) to more than {limit} bytes; "
                                         f"the limit is {limit} bytes (SEMIF_MAX_BODY_BYTES)")


@pytest.mark.parametrize("coding", CODINGS)
def test_a_body_exactly_at_the_limit_decodes(coding):
    assert decode_body(compress_body(BODY, coding), coding, len(BODY)) == BODY
    with pytest.raises(PayloadTooLargeError):
        decode_body(compress_body(BODY, coding), coding, len(BODY) - 1)


@pytest.mark.parametrize("coding", CODINGS)
@pytest.mark.parametrize("cut", [1, 9, 0.5])
def test_a_truncated_frame_is_a_400_naming_content_encoding(coding, cut):
    data = compress_body(BODY, coding)
    end = int(len(data) * cut) if isinstance(cut, float) else len(data) - cut
    with pytest.raises(InvalidRequestError) as info:
        feed(BodyDecoder(coding, len(BODY)), data[:end], 100)
    assert info.value.status_code == 400 and info.value.field == "content-encoding"
    assert f"not valid {coding} data" in info.value.message and "truncated" in info.value.message


@pytest.mark.parametrize("coding, data", [
    ("zstd", b"\x28\xb5\x2f\xfd" + b"\xff" * 40),  # zstd's magic number, then no valid frame header
    ("zstd", b"{\"state\": \"plain JSON, not zstd\"}"),
    ("gzip", b"\x1f\x8b\x08\x00" + b"\x00" * 6 + b"\xff" * 40),  # a gzip header, then no valid deflate block
    ("gzip", b"{\"state\": \"plain JSON, not gzip\"}"),
])
def test_corrupt_data_is_a_400_naming_content_encoding(coding, data):
    with pytest.raises(InvalidRequestError) as info:
        feed(BodyDecoder(coding, MIB), data, 16)
    assert info.value.status_code == 400 and info.value.field == "content-encoding" and coding in info.value.message


@pytest.mark.parametrize("coding", CODINGS)
def test_garbage_after_a_complete_frame_is_a_400(coding):
    with pytest.raises(InvalidRequestError):
        decode_body(compress_body(BODY, coding) + b"trailing garbage!", coding, len(BODY))


def test_a_zstd_window_over_8_mib_is_refused_before_it_is_allocated():
    zstd = load_zstd()
    wide = zstd.ZstdCompressor(options={zstd.CompressionParameter.window_log: 27})
    data = wide.compress(BODY) + wide.flush(zstd.ZstdCompressor.FLUSH_FRAME)  # streamed: no content size to shrink the window to
    assert zstd.decompress(data) == BODY
    with pytest.raises(InvalidRequestError) as info:
        decode_body(data, "zstd", MIB)
    assert "memory" in info.value.message and info.value.field == "content-encoding"


def test_more_frames_than_the_cap_are_a_400():
    empty = compress_body(b"", "zstd")
    assert decode_body(empty * MAX_FRAMES, "zstd", MIB) == b""
    with pytest.raises(InvalidRequestError) as info:
        decode_body(empty * (MAX_FRAMES + 1), "zstd", MIB)
    assert f"more than {MAX_FRAMES} zstd frames" in info.value.message


# ----------------------------------------------------------------- read_limited_body
class FakeRequest:
    def __init__(self, data: bytes, chunk: int = 4096, **headers: str) -> None:
        self.data, self.chunk, self.headers, self.sent = data, chunk, {k.replace("_", "-"): v for k, v in headers.items()}, 0

    async def stream(self):
        for start in range(0, len(self.data), self.chunk):
            self.sent += 1
            yield self.data[start:start + self.chunk]


def read(request: FakeRequest, limit: int) -> bytes:
    return asyncio.run(read_limited_body(request, limit))


@pytest.mark.parametrize("coding", CODINGS)
def test_read_limited_body_decodes_as_it_streams(coding):
    assert read(FakeRequest(compress_body(BODY, coding), 100, content_encoding=coding), len(BODY)) == BODY
    assert read(FakeRequest(BODY, content_encoding="identity"), len(BODY)) == BODY


def test_a_bomb_is_refused_and_the_rest_of_its_body_drained():
    bomb = compress_zeros("zstd", 64 * MIB)
    request = FakeRequest(bomb, 512, content_encoding="zstd", content_length=str(len(bomb)))
    with pytest.raises(PayloadTooLargeError) as info:
        read(request, MIB)
    assert "(SEMIF_MAX_BODY_BYTES)" in info.value.message and "decodes (Content-Encoding: zstd)" in info.value.message
    assert request.sent == -(-len(bomb) // 512)  # every chunk read: the client, still sending, gets the 413


def test_the_compressed_size_is_bounded_too():
    noise = bytes(range(256)) * 64  # barely compressible
    data = compress_body(noise, "gzip")
    with pytest.raises(PayloadTooLargeError) as info:
        read(FakeRequest(data, content_encoding="gzip"), len(data) - 1)
    assert info.value.message.startswith("body is more than")


def test_a_corrupt_body_is_read_to_its_end_before_the_400():
    request = FakeRequest(b"\x28\xb5\x2f\xfd" + b"\xff" * 20_000, 1000, content_encoding="zstd")
    with pytest.raises(InvalidRequestError):
        read(request, MIB)
    assert request.sent == 21


def test_an_unknown_coding_is_refused_before_a_byte_is_read():
    request = FakeRequest(BODY, content_encoding="br")
    with pytest.raises(UnsupportedEncodingError):
        read(request, MIB)
    assert request.sent == 0


# ----------------------------------------------------------------- over HTTP, each wire's shape (fake engine)
@pytest.fixture(scope="module")
def client():
    from fastapi.testclient import TestClient

    from semif_lib.serving.app import create_app
    from semif_lib.settings import Settings

    from support.fake_engines import FakeWing

    class Engine(FakeWing):
        def score(self, request):
            from support.fake_engines import answer

            return answer(request)

        def close(self) -> None:
            pass

    with TestClient(create_app(Settings(max_body_bytes=64 * 1024, accept_jsonlines=True), engine_factory=lambda s: Engine())) as c:
        yield c


OPENAI_BODY = json.dumps({"model": "fake", "input": "Refund me. " * 300, "questions": [{"type": "predicate", "instructions": "Refund?"}]})


@pytest.mark.parametrize("coding", CODINGS)
@pytest.mark.parametrize("path, body", [("/v1/systemone", BODY), ("/invocations", BODY), ("/v1/decisions", OPENAI_BODY.encode())])
def test_each_invoke_route_answers_a_compressed_body(client, coding, path, body):
    r = client.post(path, content=compress_body(body, coding), headers={"Content-Type": "application/json", "Content-Encoding": coding})
    assert r.status_code == 200, r.text
    assert r.json()["answers"]


def test_a_compressed_json_lines_body_answers_each_line(client):
    lines = "\n".join(json.dumps({**json.loads(BODY), "id": f"r{i}"}) for i in range(3)).encode()
    r = client.post("/invocations", content=compress_body(lines, "zstd"),
                    headers={"Content-Type": "application/jsonlines", "Content-Encoding": "zstd"})
    assert r.status_code == 200 and [json.loads(line)["id"] for line in r.text.splitlines()] == ["r0", "r1", "r2"]


def test_refusals_take_each_wires_shape(client):
    bomb = compress_zeros("zstd", 8 * MIB)
    jev = client.post("/v1/systemone", content=bomb, headers={"Content-Type": "application/json", "Content-Encoding": "zstd"})
    assert jev.status_code == 413 and jev.json()["detail"]["field"] == "body" and "65536" in jev.json()["detail"]["message"]
    openai = client.post("/v1/decisions", content=bomb, headers={"Content-Type": "application/json", "Content-Encoding": "zstd"})
    error = openai.json()["error"]
    assert openai.status_code == 413 and error["param"] == "body" and "SEMIF_MAX_BODY_BYTES" in error["message"]
    br = client.post("/v1/decisions", content=OPENAI_BODY, headers={"Content-Type": "application/json", "Content-Encoding": "br"})
    assert br.status_code == 415 and br.json()["error"]["param"] == "content-encoding" and "'br'" in br.json()["error"]["message"]
    assert br.headers["accept-encoding"] == "zstd, gzip"
    corrupt = client.post("/v1/systemone", content=compress_body(BODY, "gzip")[:-20],
                          headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})
    assert corrupt.status_code == 400 and corrupt.json()["detail"]["field"] == "content-encoding"
