"""The `model` names a request may send (serving.modelnames), without a model: the rule and its error on each wire.

The same rule on a live server, through the openai SDK and JSON Lines, is in test_openai_decisions.py
and test_conformance.py (where jevcompat's `errors.shape` is exercised by it).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from semif_lib.serving.modelnames import UnknownModelError, model_names
from semif_lib.serving.wire import OPENAI, SYSTEMONE, error_body
from semif_lib.settings import Settings

ENGINE = SimpleNamespace(model_id="SmolLM2-135M-Instruct.Q4_1", model_path=Path("/opt/ml/model/SmolLM2-135M-Instruct.Q4_1.gguf"))


def test_the_loaded_model_by_id_file_name_or_jev_latest_and_no_name_are_accepted():
    names = model_names(ENGINE, Settings())
    for name in (None, "SmolLM2-135M-Instruct.Q4_1", "SmolLM2-135M-Instruct.Q4_1.gguf", "jev-latest"):
        assert names.refusal(name) is None, name
    for name in ("gpt-4o", "smollm2-135m-instruct.q4_1", "", "jev-1.13.0", "SmolLM2-135M-Instruct.Q4_1 "):
        assert isinstance(names.refusal(name), UnknownModelError), name


def test_a_refusal_is_a_404_naming_the_field_and_every_accepted_name_on_both_wires():
    error = model_names(ENGINE, Settings()).refusal("gpt-4o")
    assert error.status_code == 404 and error.field == "model"
    assert all(repr(n) in error.message for n in ("SmolLM2-135M-Instruct.Q4_1", "SmolLM2-135M-Instruct.Q4_1.gguf", "jev-latest"))
    assert "'gpt-4o'" in error.message and "SEMIF_MODEL_ALIASES" in error.message
    status, body = error_body(error, SYSTEMONE)  # jevcompat errors.shape: detail.error_type and detail.message
    assert status == 404 and body["detail"]["error_type"] == "not_found" and body["detail"]["field"] == "model"
    status, body = error_body(error, OPENAI)  # OpenAI's own answer to an unknown model
    assert status == 404 and body["error"] == {"message": error.message, "type": "invalid_request_error", "param": "model",
                                               "code": "model_not_found"}


def test_a_hub_model_is_also_named_by_its_reference_with_or_without_revision_and_by_its_repository():
    names = model_names(ENGINE, Settings(model_path="hf://org/Model-GGUF/model-q4_k_m.gguf@v1"))
    for name in ("hf://org/Model-GGUF/model-q4_k_m.gguf@v1", "hf://org/Model-GGUF/model-q4_k_m.gguf", "org/Model-GGUF",
                 "SmolLM2-135M-Instruct.Q4_1"):
        assert names.refusal(name) is None, name
    assert names.refusal("org/Other-GGUF") is not None
    local = model_names(ENGINE, Settings(model_path="/models/x.gguf"))  # a local path is no hub reference
    assert local.names == ("SmolLM2-135M-Instruct.Q4_1", "SmolLM2-135M-Instruct.Q4_1.gguf", "jev-latest")


@pytest.mark.parametrize("aliases, accepted, refused", [
    ("my-decider, gpt-4o-mini", ["my-decider", "gpt-4o-mini", "jev-latest"], ["gpt-4o"]),
    ("*", ["gpt-4o", "anything at all", "jev-latest"], []),
])
def test_semif_model_aliases_adds_names_and_star_accepts_any(monkeypatch, aliases, accepted, refused):
    from semif_lib.settings import load_settings

    monkeypatch.setenv("SEMIF_MODEL_ALIASES", aliases)
    names = model_names(SimpleNamespace(model_id="fake", model_path=None), load_settings())  # no file: model_path None
    assert all(names.refusal(n) is None for n in accepted)
    assert all(names.refusal(n) is not None for n in refused)


def test_the_openapi_document_says_the_rule_on_every_invoke_route():
    from semif_lib.decision.schema import MODEL_FIELD_DOC
    from semif_lib.serving.app import create_app

    doc = create_app(Settings(), engine_factory=lambda settings: None).openapi()  # the document only: no worker starts
    for path in ("/invocations", "/v1/systemone", "/v1/decisions"):
        described = doc["paths"][path]["post"]["responses"]["404"]["description"]
        assert "jev-latest" in described and "SEMIF_MODEL_ALIASES" in described, path
    assert "model_not_found" in doc["paths"]["/v1/decisions"]["post"]["responses"]["404"]["description"]
    for schema in ("DecisionRequest", "OpenAIRequest"):
        assert doc["components"]["schemas"][schema]["properties"]["model"]["description"] == MODEL_FIELD_DOC
