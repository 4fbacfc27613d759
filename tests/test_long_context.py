"""Jev 1.14's experimental `TypeSafe-Danger-Zone-Long-Context: true`: honoured within the model's context.

Jev allows 262,144 tokens a request with it (64,000 and 32,000 without). This server has no limit of its own below
its context, so a request that fits `SEMIF_N_CTX` is answered the same with or without the header, and one that does
not is the 413 naming `SEMIF_N_CTX`, whose message with the header says the context is the bound. The official SDK sends
the header through its `extra_headers` (typesafe-sdk 0.7.5 has no switch for it). The session's keyed server runs with
SEMIF_N_CTX=2048 (support/servers.py).
"""

from __future__ import annotations

import pytest

from semif_lib.contract import LONG_CONTEXT_HEADER

from support.answers import MAX_ABS_DIFF
from support.fixtures_model import KEYED_API_KEY

QUESTIONS = {"refund": {"type": "noul", "instructions": "Does the customer ask for money back?"},
             "queue": {"type": "choice", "instructions": "Which queue?", "criteria": {"billing": None, "shipping": None}}}
LONG_STATE = "Customer: the parcel arrived broken and I was charged twice. " * 400  # about 5,000 tokens: over 2,048


def test_the_header_reads_true_or_false_and_the_contexts_refusal_says_the_context_is_the_bound():
    from semif_lib.contract import explain_long_context, read_long_context
    from semif_lib.limits import refuse_limit

    assert read_long_context(None) is False and read_long_context(" FALSE ") is False and read_long_context("True") is True
    with pytest.raises(ValueError, match=f"{LONG_CONTEXT_HEADER} must be true or false, not 'yes'"):
        read_long_context("yes")
    context = refuse_limit("n_ctx", 5000, 2048, field="state").message
    explained = explain_long_context(context)
    assert explained.startswith(context) and "(SEMIF_N_CTX" in explained
    assert f"{LONG_CONTEXT_HEADER} is honoured within this server's context" in explained and "262,144" in explained


def test_a_request_that_fits_is_answered_the_same_with_the_header(keyed_server):
    from typesafe_sdk import TypeSafeClient

    with TypeSafeClient(api_key=KEYED_API_KEY, base_url=keyed_server.url, timeout=120) as client:
        plain = client.system_one("Customer: I was charged twice for one order.", QUESTIONS)
        asked = client.system_one("Customer: I was charged twice for one order.", QUESTIONS,
                                  extra_headers={LONG_CONTEXT_HEADER: "true"})
    # the second request may reuse the first's cached prefix: the same answers within the paths' noise (support.answers)
    assert asked.nouls["refund"].noul == pytest.approx(plain.nouls["refund"].noul, abs=MAX_ABS_DIFF)
    assert asked.choices["queue"].probabilities == pytest.approx(plain.choices["queue"].probabilities, abs=MAX_ABS_DIFF)


def test_a_request_over_the_context_is_refused_naming_the_limit_with_or_without_the_header(keyed_server):
    import httpx

    auth = {"Authorization": f"Bearer {KEYED_API_KEY}"}
    with httpx.Client(base_url=keyed_server.url, headers=auth, timeout=120) as client:
        plain = client.post("/v1/systemone", json={"state": LONG_STATE, "questions": QUESTIONS})
        asked = client.post("/v1/systemone", json={"state": LONG_STATE, "questions": QUESTIONS}, headers={LONG_CONTEXT_HEADER: "true"})
        wrong = client.post("/v1/systemone", json={"state": "short", "questions": QUESTIONS}, headers={LONG_CONTEXT_HEADER: "262144"})
    for response in (plain, asked):
        detail = response.json()["detail"]
        assert response.status_code == 413 and detail["error_type"] == "payload_too_large" and detail["field"] == "state"
        assert "the limit is 2048 tokens of context (SEMIF_N_CTX, at most 131072)" in detail["message"]
    assert LONG_CONTEXT_HEADER not in plain.json()["detail"]["message"]
    assert f"{LONG_CONTEXT_HEADER} is honoured within this server's context" in asked.json()["detail"]["message"]
    assert wrong.status_code == 400 and wrong.json()["detail"]["field"] == LONG_CONTEXT_HEADER
    assert "must be true or false, not '262144'" in wrong.json()["detail"]["message"]
    with httpx.Client(base_url=keyed_server.url, headers=auth, timeout=120) as client:  # a body over SEMIF_MAX_BODY_BYTES: not the
        body = client.post("/v1/systemone", content=b"x" * 6_291_457, headers={LONG_CONTEXT_HEADER: "true",  # context's 413
                                                                               "Content-Type": "application/json"})
    assert body.status_code == 413 and LONG_CONTEXT_HEADER not in body.json()["detail"]["message"]
