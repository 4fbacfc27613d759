"""Three adapters behind a router that routes as a SageMaker endpoint does (semif_lib.measurement.bench.router): a state asked again lands
on a cold instance under random routing, and on its own warm instance in a stateful session, on every request."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from semif_lib.contract import CLOSED_SESSION_HEADER, NEW_SESSION, NEW_SESSION_HEADER, SESSION_HEADER
from semif_lib.measurement.bench.router import EndpointRouter

from support.paths import DATA
from support.servers import running_adapters

pytestmark = [pytest.mark.model, pytest.mark.server]

INSTANCES = 3
ASKS = 6  # the same state, asked this many times in each phase


@pytest.fixture(scope="module")
def adapters():
    """Three `semif serve` processes, one thread each, sessions on, the KV books checked after every request and release."""
    with running_adapters(INSTANCES, SEMIF_THREADS="1", SAGEMAKER_ENABLE_STATEFUL_SESSIONS="true",
                          SEMIF_CHECK_INVARIANTS="true") as urls:
        yield urls


def ask(client: httpx.Client, request: dict, headers: dict | None = None) -> tuple[int, int]:
    response = client.post("/invocations", json=request, headers=headers or {})
    assert response.status_code == 200, response.text
    body = response.json()
    return body["usage"]["x_cached_tokens"], body["x_timing"]["prefix_tokens"]


def state_request(tag: str) -> dict:
    request = json.loads((DATA / "examples.jsonl").read_text().splitlines()[0])
    request["state"] = f"[router test, {tag}] " + request["state"]  # a state no instance has cached yet
    return request


def test_random_routing_misses_the_cache_a_session_hits_it_every_time(adapters):
    with EndpointRouter(adapters, "RANDOM", seed=3) as router, httpx.Client(base_url=router.url, timeout=120) as client:
        request = state_request("random")
        hits = [hit == prefix for hit, prefix in (ask(client, request) for _ in range(ASKS))]  # the whole state cached
        routed = router.routed[-ASKS:]
        warm = [routed[k] in routed[:k] for k in range(ASKS)]  # an instance that has prefilled this state already
        assert hits == warm, (routed, hits)  # the cache is per instance: a hit exactly where the state was seen
        assert len(set(routed)) > 1 and not all(warm[1:]), routed  # random routing sent a repeat to a cold instance

        opened = client.post("/invocations", json={"requestType": NEW_SESSION}, headers={SESSION_HEADER: NEW_SESSION})
        assert opened.status_code == 200, opened.text
        session = opened.headers[NEW_SESSION_HEADER].split(";")[0]
        home = router.sessions[session]
        headers = {SESSION_HEADER: session}
        request = state_request("session")
        cached = [ask(client, request, headers) for _ in range(ASKS)]
        cached.append(ask(client, {"questions": request["questions"]}, headers))  # questions only: the session's state
        assert router.routed[-(ASKS + 1):] == [home] * (ASKS + 1)  # sticky: every request on the session's instance
        assert cached[0][0] < cached[0][1] and all(hit == prefix > 0 for hit, prefix in cached[1:]), cached

        closed = client.post("/invocations", json={"requestType": "CLOSE"}, headers=headers)
        assert closed.status_code == 200 and closed.headers[CLOSED_SESSION_HEADER] == session  # released, books balanced
        assert session not in router.sessions
        gone = httpx.post(adapters[home] + "/invocations", json=request, headers=headers, timeout=60)
        assert gone.status_code == 400 and SESSION_HEADER in gone.text


def test_an_unknown_session_is_a_400_naming_it_and_least_outstanding_spreads_requests(adapters):
    with EndpointRouter(adapters, "LEAST_OUTSTANDING_REQUESTS") as router, httpx.Client(base_url=router.url, timeout=120) as client:
        unknown = client.post("/invocations", json=state_request("unknown"), headers={SESSION_HEADER: "never-opened-1"})
        assert unknown.status_code == 400 and "never-opened-1" in unknown.text
        with ThreadPoolExecutor(INSTANCES) as pool:
            list(pool.map(lambda k: ask(client, state_request(f"lor {k}")), range(INSTANCES)))
        assert sorted(router.routed[-INSTANCES:]) == list(range(INSTANCES))  # three at once: one per instance
