"""The second model family through the user-facing doors: `semif score` and the adapter on Qwen2.5-Coder-0.5B.

The engine-level checks run on both families in test_engine.py (`family_engine`); these two check that a
model other than the embedded one reaches the command line and the endpoint intact.
"""

from __future__ import annotations

import json
import statistics

import httpx
import pytest

from semif_lib.cli import main

from support.paths import DATA
from support.servers import ADAPTER_COMMAND, free_port, running_server, server_env

pytestmark = pytest.mark.model

REQUEST = {
    "state": "Customer: I was charged twice for order #48213. Please refund the duplicate payment of $89.90.",
    "questions": {
        "billing": {"type": "noul", "instructions": "Is this request about a payment, charge or refund?"},
        "queue": {"type": "choice", "instructions": "Which queue?", "criteria": {"billing": None, "technical": None, "shipping": None}},
    },
}


def test_semif_score_answers_with_qwen(qwen_model_path, tmp_path, capsys):
    out = tmp_path / "out.jsonl"
    assert main(["score", str(DATA / "examples.jsonl"), "--model", str(qwen_model_path), "--output", str(out), "--n-ctx", "2048"]) == 0
    assert f"model {qwen_model_path.stem}," in capsys.readouterr().err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 5 and all("answers" in r for r in records)
    masses = [a["x_option_mass"] for r in records for a in r["answers"].values()]  # the wire name (decision/responses.py)
    assert statistics.median(masses) > 0.5, masses  # the issue measured 0.85-0.99 on most (SmolLM2: 0.17-0.75)


@pytest.mark.server
def test_adapter_serves_qwen(qwen_model_path):
    port = free_port()
    with running_server(ADAPTER_COMMAND, server_env(port, SEMIF_MODEL_PATH=str(qwen_model_path)), port) as srv:
        response = httpx.post(srv.url + "/invocations", json=REQUEST, timeout=120)
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body["answers"]) == {"billing", "queue"} and "Qwen" in json.dumps(body)
