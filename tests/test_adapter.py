"""The decision adapter as a real process on loopback, driven with httpx (and typesafe-sdk, for what it sends).

One server (started with `python -m semif_lib.serving.app serve`, bearer token set) serves this
module; `test_adapter_lifecycle.py` starts its own for SIGTERM, startup failures and a full queue.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Iterator

import httpx
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from semif_lib.errors import read_error

from support.answers import MAX_ABS_DIFF, assert_error
from support.fixtures_model import KEYED_API_KEY
from support.paths import DATA
from support.servers import ServerProcess

pytestmark = [pytest.mark.model, pytest.mark.server]  # every test here talks to the module's `semif serve` on the real model

API_KEY = KEYED_API_KEY
AUTH = {"Authorization": f"Bearer {API_KEY}"}
MAX_PING_S = 2.0  # SageMaker's limit for /ping


# ----------------------------------------------------------------- the server
@pytest.fixture(scope="module")
def server(keyed_server) -> ServerProcess:
    """The session's keyed `semif serve` (support.fixtures_model.keyed_server)."""
    return keyed_server


@pytest.fixture(scope="module")
def client(server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, headers=AUTH, timeout=120) as c:
        yield c


# ----------------------------------------------------------------- requests
def small_request(i: int) -> dict:
    """Short states: the concurrency and fuzz tests must stay cheap on 2 cores."""
    return {
        "id": f"small-{i}",
        "state": f"Ticket {i}: the customer says the app crashes when uploading photo number {i}.",
        "questions": {
            "bug": {"type": "noul", "instructions": "Is this a bug report?"},
            "area": {"type": "choice", "instructions": "Which area?", "criteria": {"mobile": None, "web": None, "billing": None}},
            "sev": {"type": "score", "instructions": "How severe?", "criteria": ["low", "medium", "high"]},
        },
    }


def probabilities(body: dict) -> dict[tuple[str, str], float]:
    from semif_lib.measurement.answers import read_probabilities

    return {(q, k): p for q, a in body["answers"].items() for k, p in read_probabilities(a).items()}


def assert_close(a: dict, b: dict, tol: float = MAX_ABS_DIFF) -> None:
    pa, pb = probabilities(a), probabilities(b)
    assert pa.keys() == pb.keys()
    worst = max(abs(pa[k] - pb[k]) for k in pa)
    assert worst <= tol, f"max |dp| = {worst:.3f}"


@pytest.fixture(scope="module")
def examples() -> list[dict]:
    with (DATA / "examples.jsonl").open() as fh:
        return [json.loads(line) for line in fh if line.strip()]


# ----------------------------------------------------------------- contract
def test_ping_models_and_execution_parameters(client):
    ping = client.get("/ping", headers={})  # no token needed: SageMaker's health check
    assert ping.status_code == 200 and ping.json()["status"] == "ok"
    listed = client.get("/v1/models").json()
    models = listed["models"]
    assert len(models) == 1 and set(models[0]) == {"name", "description", "release_date"}
    assert models[0]["name"] == "SmolLM2-135M-Instruct.Q4_1"
    assert listed["object"] == "list" and len(listed["data"]) == 1  # the OpenAI list, the same id
    assert listed["data"][0]["id"] == models[0]["name"] and listed["data"][0]["object"] == "model"
    assert datetime.fromtimestamp(listed["data"][0]["created"], tz=timezone.utc).date().isoformat() == models[0]["release_date"]
    params = client.get("/execution-parameters").json()
    assert params == {"MaxConcurrentTransforms": 1, "BatchStrategy": "MULTI_RECORD", "MaxPayloadInMB": 6}


def test_openapi_document_comes_from_the_wire_models(client):
    doc = client.get("/openapi.json").json()
    assert {"/ping", "/invocations", "/execution-parameters", "/v1/systemone", "/v1/models", "/v1/decisions"} <= set(doc["paths"])
    schemas = doc["components"]["schemas"]
    assert {"DecisionRequest", "DecisionResponse", "ErrorBody", "ValidationErrorBody", "OpenAIRequest", "OpenAIErrorBody",
            "ChoiceQuestion", "ScoreQuestion", "NoulQuestion"} <= set(schemas)
    post = doc["paths"]["/invocations"]["post"]
    assert post["requestBody"]["content"]["application/json"]["schema"] == {"anyOf": [  # either wire's body
        {"$ref": "#/components/schemas/DecisionRequest"}, {"$ref": "#/components/schemas/OpenAIRequest"}]}
    assert {"200", "400", "413", "415", "422", "503"} <= set(post["responses"])
    decisions = doc["paths"]["/v1/decisions"]["post"]
    assert decisions["requestBody"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/OpenAIRequest"}
    assert schemas["DecisionRequest"]["properties"]["questions"]["maxProperties"] == 256


def test_invocations_and_systemone_answer_the_same(client, examples):
    request = examples[0]
    first = client.post("/invocations", json=request)
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["id"] == request["id"] and set(body["answers"]) == set(request["questions"])
    assert body["model"] == "SmolLM2-135M-Instruct.Q4_1"
    again = client.post("/v1/systemone", json=request)
    assert again.status_code == 200
    assert again.json()["usage"]["x_cached_tokens"] > 0  # same state: the prefix came from the cache
    assert_close(body, again.json())


def test_mode_query_parameter(client):
    request = small_request(99)
    serial = client.post("/invocations?mode=serial", json=request)
    assert serial.status_code == 200 and serial.json()["x_timing"]["mode"] == "serial"
    assert_error(client.post("/invocations?mode=warp", json=request), 400, "mode")
    # On SageMaker the query string is dropped; the mode rides in CustomAttributes instead.
    header = {"X-Amzn-SageMaker-Custom-Attributes": "trace=1; mode=fresh"}
    fresh = client.post("/invocations", json=request, headers=header)
    assert fresh.status_code == 200 and fresh.json()["x_timing"]["mode"] == "fresh"


def test_jsonlines_one_response_per_line_in_order(client, examples):
    lines = [json.dumps(r) for r in examples]
    lines.insert(2, '{"id": "broken", "state": "x", "questions": {}}')
    lines.insert(4, "")  # blank lines are skipped, as SplitType=Line may leave them
    odd = {**small_request(5), "id": "u2028\u2028\u0085", "state": "first\u2028second\u0085third"}  # not line breaks in JSON Lines
    lines.append(json.dumps(odd, ensure_ascii=False))
    lines.append("not json at all")
    response = client.post("/invocations", content="\n".join(lines) + "\n", headers={"Content-Type": "application/jsonlines"})
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/jsonlines")
    out = [json.loads(line) for line in response.text.split("\n") if line]
    expected_ids = [r["id"] for r in examples]
    expected_ids.insert(2, "broken")
    expected_ids += ["u2028\u2028\u0085", f"line-{len(lines)}"]
    assert [o["id"] for o in out] == expected_ids
    assert out[2]["status"] == 422 and read_error(out[2])["field"] == "questions"  # Jev's validation shape, per line
    assert out[-1]["status"] == 422 and read_error(out[-1])["field"] == "body"
    assert all("answers" in o for i, o in enumerate(out) if i not in (2, len(out) - 1))


def test_bearer_token(server, client):
    request = small_request(1)
    assert_error(httpx.post(server.url + "/invocations", json=request), 401, "authorization")
    wrong = httpx.post(server.url + "/invocations", json=request, headers={"Authorization": "Bearer nope"})
    assert_error(wrong, 401)
    assert wrong.headers["www-authenticate"] == "Bearer"
    assert httpx.get(server.url + "/v1/models").status_code == 401
    assert client.post("/invocations", json=request).status_code == 200


def test_unknown_route_is_a_json_404(client):
    assert_error(client.get("/nope"), 404)
    assert_error(client.get("/invocations"), 405)


# ----------------------------------------------------------------- each bad-input class
def _choice(criteria, **extra) -> dict:
    return {"state": "s", "questions": {"q": {"type": "choice", "instructions": "Which?", "criteria": criteria, **extra}}}


def _one(question: dict) -> bytes:
    """A request body asking `question` as "q"."""
    return json.dumps({"state": "s", "questions": {"q": question}}).encode()


BAD_JSON_BODIES = {
    "malformed_json": (b'{"state": "s", "questions": ', 422, "body"),
    "not_utf8": ('{"state": "caf\xe9", "questions": {}}'.encode("latin-1"), 422, "body"),
    "not_an_object": (b"[1, 2, 3]", 422, "body"),
    "empty_body": (b"", 422, "body"),
    "unknown_question_type": (_one({"type": "maybe", "instructions": "?"}), 422, "questions.q"),
    "no_questions": (json.dumps({"state": "s", "questions": {}}).encode(), 422, "questions"),
    "empty_options": (json.dumps(_choice({})).encode(), 422, "questions.q.criteria"),
    "empty_option_name": (json.dumps(_choice({"a": None, " ": None})).encode(), 422, "questions.q.criteria"),
    "duplicate_options_json_keys": (
        b'{"state": "s", "questions": {"q": {"type": "choice", "instructions": "?", "criteria": {"a": null, "a": null}}}}', 422, "a"),
    "duplicate_options_case": (json.dumps(_choice({"Yes": None, "yes": None})).encode(), 422, "questions.q.criteria"),
    "score_one_level": (_one({"type": "score", "instructions": "?", "criteria": ["only"]}), 422, "questions.q.criteria"),
    "score_eleven_levels": (_one({"type": "score", "instructions": "?", "criteria": [str(i) for i in range(11)]}), 422,
                            "questions.q.criteria"),
    "options_without_clean_answer_tokens": (json.dumps(_choice({"\t\tyes": None, "no": None}, readout="sequence")).encode(), 400,
                                            "questions.q.criteria"),
}


@pytest.mark.parametrize("case", sorted(BAD_JSON_BODIES))
def test_bad_input_is_422_or_400(client, case):
    """A body that fails validation is Jev's 422 with detail[]; one the model cannot serve (answer tokens) a 400."""
    body, status, field = BAD_JSON_BODIES[case]
    assert_error(client.post("/invocations", content=body, headers={"Content-Type": "application/json"}), status, field)


def test_state_longer_than_the_context_is_413_with_token_counts(client):
    request = {"state": "word " * 3000, "questions": {"q": {"type": "noul", "instructions": "Long?"}}}
    error = assert_error(client.post("/invocations", json=request), 413, "state")
    assert "2048" in error["message"] and "tokens" in error["message"]


def test_body_over_six_megabytes_is_413(client):
    body = json.dumps({"state": "x" * 6_300_000, "questions": {"q": {"type": "noul", "instructions": "?"}}}).encode()
    error = assert_error(client.post("/invocations", content=body, headers={"Content-Type": "application/json"}), 413, "body")
    assert "6291456" in error["message"]

    def chunks():  # no Content-Length: the limit is enforced while reading
        for start in range(0, len(body), 1 << 20):
            yield body[start:start + (1 << 20)]

    assert_error(client.post("/invocations", content=chunks(), headers={"Content-Type": "application/json"}), 413, "body")


@pytest.mark.parametrize("ctype", ["text/plain", "application/x-www-form-urlencoded", "application/xml", "multipart/form-data; boundary=x"])
def test_wrong_content_type_is_415(client, ctype):
    assert_error(client.post("/invocations", content=json.dumps(small_request(0)), headers={"Content-Type": ctype}), 415, "content-type")


# ----------------------------------------------------------------- compressed bodies, and parts that are not text
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
LONG_STATE = " ".join(f"Ticket line {i}: the parcel arrived broken and the customer wants a refund today." for i in range(52))


def sdk_questions() -> dict:
    from typesafe_sdk import Choice, Noul, Score

    return {"refund": Noul(instructions="Does the customer want money back?"),
            "team": Choice(instructions="Which team should handle this?", criteria={"Billing": None, "Shipping": None}),
            "anger": Score(instructions="How frustrated is the customer?", criteria=["Calm", "Frustrated", "Very angry"])}


def sdk_client(server, compression=None, spy=None, client_class=None):
    """typesafe-sdk's client on this server, no retries, every request it sends appended to `spy` (an httpx2 event hook)."""
    import httpx2
    from typesafe_sdk import AsyncTypeSafeClient, RetryPolicy, TypeSafeClient

    cls = client_class or TypeSafeClient
    hooks = {"request": [spy]} if spy is not None else {}
    http = (httpx2.AsyncClient if cls is AsyncTypeSafeClient else httpx2.Client)(timeout=120, event_hooks=hooks)
    return cls(api_key=API_KEY, base_url=server.url, http_client=http, retry=RetryPolicy(max_retries=0), compression=compression)


def assert_zstd_request(request) -> None:
    """The SDK really sent the body zstd-compressed, and it decodes to the request with the long state."""
    from semif_lib.serving.bodies import load_zstd

    assert request.headers["content-encoding"] == "zstd" and request.content[:4] == ZSTD_MAGIC
    assert len(request.content) < len(LONG_STATE) // 4
    assert json.loads(load_zstd().decompress(request.content))["state"] == LONG_STATE


def sdk_probabilities(response) -> dict:
    team, anger = response.choices["team"].probabilities, response.scores["anger"].probabilities
    return {("refund", "true"): response.nouls["refund"].noul, **{("team", k): p for k, p in team.items()},
            **{("anger", k): p for k, p in anger.items()}}


def test_typesafe_sdk_with_zstd_compresses_a_long_state_and_gets_the_answers_it_would_get_uncompressed(server):
    """typesafe-sdk 0.7.5 with its zstd extra compresses every body of 1 KiB or more: the server decodes it as it streams."""
    assert len(LONG_STATE.encode()) > 4096
    sent: list = []
    with sdk_client(server, spy=sent.append) as sdk:
        packed = sdk.system_one(state=LONG_STATE, questions=sdk_questions())
    with sdk_client(server, compression=False, spy=sent.append) as sdk:
        plain = sdk.system_one(state=LONG_STATE, questions=sdk_questions())
    compressed, uncompressed = sent
    assert_zstd_request(compressed)
    assert "content-encoding" not in uncompressed.headers and json.loads(uncompressed.content)["state"] == LONG_STATE
    assert packed.choices["team"].choice in {"Billing", "Shipping"} and 0 <= packed.scores["anger"].score <= 2
    a, b = sdk_probabilities(packed), sdk_probabilities(plain)
    assert max(abs(a[k] - b[k]) for k in a) <= MAX_ABS_DIFF  # the same request, however it travelled


def test_the_async_typesafe_client_compresses_with_zstd_too(server):
    import asyncio

    from typesafe_sdk import AsyncTypeSafeClient

    sent: list = []

    async def spy(request) -> None:
        sent.append(request)

    async def ask():
        async with sdk_client(server, spy=spy, client_class=AsyncTypeSafeClient) as sdk:
            return await asyncio.gather(*(sdk.system_one(state=LONG_STATE, questions=sdk_questions()) for _ in range(2)))  # one prefix

    answers = asyncio.run(ask())
    assert len(sent) == 2 and all(r.headers["content-encoding"] == "zstd" and r.content[:4] == ZSTD_MAGIC for r in sent)
    assert all(0 <= a.nouls["refund"].noul <= 1 and a.choices["team"].choice in {"Billing", "Shipping"} for a in answers)


def test_a_gzip_body_is_answered_and_a_gzip_json_lines_body_line_by_line(client):
    from support.encodings import compress_body

    request = small_request(21)
    body = compress_body(json.dumps(request).encode(), "gzip")
    r = client.post("/v1/systemone", content=body, headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})
    assert r.status_code == 200, r.text
    assert set(r.json()["answers"]) == set(request["questions"]) and r.json()["id"] == request["id"]
    box = {**small_request(22), "id": "box", "questions": {"dog": {"type": "box", "instructions": "The dog"}}}
    lines = compress_body("\n".join(json.dumps(x) for x in (small_request(23), box)).encode(), "gzip")
    r = client.post("/invocations", content=lines, headers={"Content-Type": "application/jsonlines", "Content-Encoding": "gzip"})
    good, refused = (json.loads(line) for line in r.text.splitlines())
    assert r.status_code == 200 and "answers" in good and refused["id"] == "box" and refused["status"] == 400
    assert read_error(refused)["field"] == "questions.dog" and "reads text only" in read_error(refused)["message"]


def test_a_20_kib_zstd_body_that_decodes_past_the_limit_is_a_413_and_costs_no_memory(server, client):
    """640 MiB of zeros in 20 KiB: refused one byte past SEMIF_MAX_BODY_BYTES (6 MB), the server's memory unmoved."""
    import psutil

    from support.encodings import MIB, compress_zeros

    bomb = compress_zeros("zstd", 640 * MIB)
    assert 15_000 < len(bomb) < 25_000
    process = psutil.Process(server.proc.pid)
    before = process.memory_info().rss
    r = client.post("/v1/systemone", content=bomb, headers={"Content-Type": "application/json", "Content-Encoding": "zstd"})
    grown = process.memory_info().rss - before
    error = assert_error(r, 413, "body")
    assert error["message"].startswith("the body decodes (Content-Encoding: zstd) to more than 6291456 bytes; the limit is "
                                       "6291456 bytes (SEMIF_MAX_BODY_BYTES)")
    assert grown < 100 * MIB, f"the server grew by {grown / MIB:.0f} MiB"
    assert client.get("/ping").json()["status"] == "ok"


def test_an_unknown_coding_is_a_415_naming_it_and_corrupt_data_a_400(client):
    from support.encodings import compress_body

    body = json.dumps(small_request(24)).encode()
    r = client.post("/invocations", content=body, headers={"Content-Type": "application/json", "Content-Encoding": "br"})
    error = assert_error(r, 415, "content-encoding")
    assert "'br'" in error["message"] and r.headers["accept-encoding"] == "zstd, gzip"
    cut = compress_body(body, "zstd")[:-8]
    r = client.post("/v1/systemone", content=cut, headers={"Content-Type": "application/json", "Content-Encoding": "zstd"})
    error = assert_error(r, 400, "content-encoding")
    assert "not valid zstd data" in error["message"]


def test_typesafe_sdk_box_questions_and_image_assets_are_refused_naming_the_part(server):
    """Jev 1.14's Box and images, as typesafe-sdk sends them: a box question, an inline data_base64 asset, and an
    Image (a multipart/form-data body, zstd-compressed): each a 4xx saying what and why, never answered without it."""
    import base64

    from typesafe_sdk import Box, Image, Noul, TypeSafeAPIError

    png = b"\x89PNG\r\n\x1a\n" + bytes(2048)
    inline = {"photo": {"type": "image", "format": "png", "data_base64": base64.b64encode(png).decode()}}
    sent: list = []
    with sdk_client(server, spy=sent.append) as sdk:
        with pytest.raises(TypeSafeAPIError) as box:
            sdk.system_one(state="A photo of a dog.", questions={"dog": Box(instructions="The dog"), "q": Noul(instructions="A dog?")})
        with pytest.raises(TypeSafeAPIError) as asset:
            sdk.system_one(state="What is in <photo>?", questions={"q": Noul(instructions="A dog?")}, extra_body={"assets": inline})
        with pytest.raises(TypeSafeAPIError) as multipart:
            sdk.system_one(state=Image(png), questions={"q": Noul(instructions="A dog?")})
    for info, status, field in ((box, 400, "questions.dog"), (asset, 400, "assets.photo"), (multipart, 415, "content-type")):
        detail = info.value.body["detail"]
        assert info.value.status == status and detail["field"] == field and "reads text only" in detail["message"], detail
    assert "box questions" in box.value.body["detail"]["message"]
    assert "image assets (data_base64)" in asset.value.body["detail"]["message"]
    assert sent[2].headers["content-type"].startswith("multipart/form-data") and sent[2].headers["content-encoding"] == "zstd"
    assert "multipart/form-data" in multipart.value.body["detail"]["message"]


# ----------------------------------------------------------------- concurrency
def test_concurrent_clients_match_single_client(server, client, examples):
    """20 clients at once (JSON, JSON Lines, two modes, a bad request) while /ping is polled."""
    cases: list[tuple[str, dict | list[dict], str | None]] = []
    for i in range(8):
        cases.append(("json", small_request(i), None))
    for r in examples[:3]:
        cases.append(("json", r, None))
    cases.append(("json", small_request(3), "serial"))
    cases.append(("json", examples[1], "serial"))
    cases.append(("jsonl", [small_request(10), small_request(11), examples[2]], None))
    cases.append(("jsonl", [small_request(12), examples[3]], "serial"))
    cases.append(("bad", _choice({"a": None}), None))
    cases.append(("json", small_request(0), None))  # same state as another client: shares the cached prefix
    cases.append(("json", examples[0], None))
    assert len(cases) >= 16

    def send(case, c: httpx.Client) -> httpx.Response:
        kind, payload, mode = case
        url = "/invocations" + (f"?mode={mode}" if mode else "")
        if kind == "jsonl":
            text = "".join(json.dumps(r) + "\n" for r in payload)
            return c.post(url, content=text, headers={"Content-Type": "application/jsonlines"})
        return c.post(url, json=payload)

    def bodies(case, response: httpx.Response) -> list[dict]:
        if case[0] == "jsonl":
            return [json.loads(line) for line in response.text.split("\n") if line]
        return [response.json()]

    # Single client, one request at a time: the reference.
    reference = [bodies(case, send(case, client)) for case in cases]

    stop = threading.Event()
    ping_times: list[float] = []
    ping_statuses: list[int | str] = []  # checked in the test's own thread: an assert in the poller could not fail it

    def poll_ping() -> None:
        with httpx.Client(base_url=server.url, timeout=10) as c:
            while not stop.is_set():
                t0 = time.perf_counter()
                try:
                    ping_statuses.append(c.get("/ping").status_code)
                except httpx.HTTPError as exc:
                    ping_statuses.append(type(exc).__name__)
                ping_times.append(time.perf_counter() - t0)
                time.sleep(0.05)

    def one_client(case) -> httpx.Response:
        with httpx.Client(base_url=server.url, headers=AUTH, timeout=180) as c:
            return send(case, c)

    pinger = threading.Thread(target=poll_ping)
    pinger.start()
    try:
        with ThreadPoolExecutor(max_workers=len(cases)) as pool:
            responses = list(pool.map(one_client, cases))
    finally:
        stop.set()
        pinger.join()

    for case, response, ref in zip(cases, responses, reference, strict=True):
        if case[0] == "bad":
            assert_error(response, 422)  # one option: Jev's validation error
            continue
        assert response.status_code == 200, response.text
        got = bodies(case, response)
        assert [b.get("id") for b in got] == [b.get("id") for b in ref]
        for g, r in zip(got, ref, strict=True):
            assert_close(g, r)
    assert len(ping_times) >= 3
    assert set(ping_statuses) == {200}, ping_statuses
    assert max(ping_times) < MAX_PING_S, f"slowest /ping {max(ping_times):.3f} s"


# ----------------------------------------------------------------- fuzzing
_text = st.text(max_size=30)
_json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), _text)
_json_values = st.recursive(_json_scalars, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_text, inner, max_size=4)),
                           max_leaves=12)
_question = st.fixed_dictionaries(
    {"type": st.sampled_from(["noul", "choice", "score", "other"]), "instructions": st.one_of(_text, _json_values)},
    optional={
        "criteria": st.one_of(st.dictionaries(_text, st.one_of(st.none(), _text), max_size=5), st.lists(_text, max_size=12), _json_values),
        "readout": st.sampled_from(["slot", "sequence", "bogus"]),
        "length_normalize": st.booleans(),
    },
)
_request = st.fixed_dictionaries(
    {"state": st.one_of(_text, _json_values), "questions": st.dictionaries(_text, st.one_of(_question, _json_values), max_size=3)},
    optional={"id": _json_scalars, "model": _json_values},
)
# Well-formed requests with arbitrary text (unicode, control characters, template tokens) reach the engine.
_words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=24).filter(lambda s: s.strip())
_tricky = st.sampled_from(["<|im_end|>", "<|im_start|>assistant", "\t\tx", "  y", "A", "Yes", "0", "\n\n", "é"])
_names = st.one_of(_words, _tricky)
_valid_question = st.one_of(
    st.fixed_dictionaries({"type": st.just("noul"), "instructions": _names}),
    st.fixed_dictionaries({"type": st.just("choice"), "instructions": _names,
                           "criteria": st.dictionaries(_names, st.one_of(st.none(), _words), min_size=2, max_size=5)},
                          optional={"readout": st.sampled_from(["slot", "sequence"])}),
    st.fixed_dictionaries({"type": st.just("score"), "instructions": _names, "criteria": st.lists(_names, min_size=2, max_size=10)}),
)
_valid_request = st.fixed_dictionaries({"state": st.one_of(_names, _json_values),
                                        "questions": st.dictionaries(_words, _valid_question, min_size=1, max_size=3)})
_bodies = st.one_of(
    _valid_request.map(lambda r: json.dumps(r).encode()),
    _valid_request.map(lambda r: json.dumps(r, ensure_ascii=False).encode()),
    _request.map(lambda r: json.dumps(r).encode()),
    _json_values.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=200),
    _request.map(lambda r: json.dumps(r).encode()[: max(1, len(json.dumps(r)) // 2)]),
)
# Hostile classes: lone surrogates (JSON escapes them), control characters, deep nesting, huge
# integers, NaN/Infinity, and valid JSON in other encodings.
_surrogates = st.text(st.characters(categories=["Cs"]), min_size=1, max_size=3)
_controls = st.text(st.characters(categories=["Cc"]), min_size=1, max_size=5)
_hostile_names = st.one_of(_surrogates, _controls, st.tuples(_words, _surrogates).map("".join))
_hostile_request = st.fixed_dictionaries({
    "state": st.one_of(_names, _hostile_names),
    "questions": st.dictionaries(st.one_of(_words, _hostile_names), st.fixed_dictionaries(
        {"type": st.just("choice"), "instructions": st.one_of(_names, _hostile_names),
         "criteria": st.dictionaries(st.one_of(_names, _hostile_names), st.none(), min_size=2, max_size=3)}), min_size=1, max_size=2),
})
_hostile_bodies = st.one_of(
    _hostile_request.map(lambda r: json.dumps(r).encode()),
    st.integers(65, 5000).map(lambda d: b'{"state": ' + b"[" * d + b"]" * d + b', "questions": {}}'),
    st.integers(4301, 20000).map(lambda n: b'{"state": ' + b"7" * n + b', "questions": {"q": {"type": "noul", "instructions": "x"}}}'),
    st.sampled_from([b"NaN", b"Infinity", b"-Infinity", b"1e999"]).map(
        lambda c: b'{"state": "s", "questions": {"q": {"type": "noul", "instructions": ' + c + b"}}}"),
    st.tuples(_valid_request, st.sampled_from(["utf-16", "utf-32", "latin-1", "cp1252"])).map(
        lambda pair: json.dumps(pair[0], ensure_ascii=False).encode(pair[1], errors="replace")),
)
_content_types = st.sampled_from(["application/json", "application/jsonlines", "application/json; charset=utf-8", "text/plain", ""])


@hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(body=_hostile_bodies, ctype=st.sampled_from(["application/json", "application/jsonlines"]))
def test_fuzz_hostile_bodies_are_4xx_or_answered_never_5xx(client, body, ctype):
    response = client.post("/invocations", content=body, headers={"Content-Type": ctype}, timeout=60)
    assert response.status_code in (200, 400, 413, 422), response.text
    if response.status_code != 200:
        assert read_error(response.json())["message"]
    elif ctype == "application/jsonlines":
        assert all("answers" in r or r["status"] in (400, 413, 422) for r in (json.loads(x) for x in response.text.split("\n") if x))


@hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(body=_bodies, ctype=_content_types)
def test_fuzz_invocations_never_5xx(client, body, ctype):
    headers = {"Content-Type": ctype} if ctype else {}
    response = client.post("/invocations", content=body, headers=headers, timeout=60)  # a hang fails here
    assert response.status_code in (200, 400, 404, 413, 415, 422), response.text  # 404: a `model` this server does not serve
    if response.status_code != 200:
        assert read_error(response.json())["message"]
