import pytest

from semif_lib.decision.schema import MAX_CHOICE_OPTIONS, parse_request
from semif_lib.decision.validation import parse_json_bytes
from semif_lib.errors import InvalidRequestError, PayloadTooLargeError


def _req(question):
    return {"state": "s", "questions": {"q1": question}}


def test_accepts_all_three_types_and_structured_content():
    req = parse_request({
        "model": "anything",
        "state": {"ticket": [1, 2]},
        "questions": {
            "a": {"type": "noul", "instructions": "ok?"},
            "b": {"type": "choice", "instructions": ["pick"], "criteria": {"x": None, "y": "why"}},
            "c": {"type": "score", "instructions": {"ask": "rate"}, "criteria": ["lo", "hi"]},
        },
        "id": "extra keys are ignored",
    })
    assert list(req.questions) == ["a", "b", "c"]
    assert list(req.questions["b"].criteria) == ["x", "y"]  # insertion order kept


@pytest.mark.parametrize(
    "question, field, words",
    [
        ({"type": "choice", "instructions": "q", "criteria": {"only": None}}, "questions.q1.criteria", "at least 2"),
        ({"type": "score", "instructions": "q", "criteria": ["one"]}, "questions.q1.criteria", "at least 2"),
        ({"type": "score", "instructions": "q", "criteria": [str(i) for i in range(11)]}, "questions.q1.criteria", "at most 10"),
        ({"type": "choice", "instructions": "q", "criteria": {"a": None, " ": None}}, "questions.q1.criteria", "empty"),
        ({"type": "choice", "instructions": "q", "criteria": {"Yes": None, "yes": None}}, "questions.q1.criteria", "duplicate"),
        ({"type": "maybe", "instructions": "q"}, "questions.q1", "unknown question type"),
        ({"instructions": "q"}, "questions.q1", "needs a 'type'"),
        ({"type": "noul", "instructions": "  "}, "questions.q1.instructions", "empty"),
    ],
)
def test_validation_errors_name_field_and_limit(question, field, words):
    with pytest.raises(InvalidRequestError) as info:
        parse_request(_req(question))
    assert info.value.status_code == 422  # Jev's validation status (jevcompat errors.validation-shape)
    assert info.value.field == field
    assert words in info.value.message


def test_more_options_than_the_ceiling_are_a_413_naming_the_limit_not_a_400():
    """A size limit is refused as the engine refuses one (413 naming SEMIF_MAX_OPTIONS; more in test_limits.py)."""
    question = {"type": "choice", "instructions": "q", "criteria": {f"o{i}": None for i in range(MAX_CHOICE_OPTIONS + 1)}}
    with pytest.raises(PayloadTooLargeError) as info:
        parse_request(_req(question))
    assert info.value.status_code == 413 and info.value.field == "questions.q1.criteria"
    assert f"the limit is {MAX_CHOICE_OPTIONS}" in info.value.message and "SEMIF_MAX_OPTIONS" in info.value.message


def test_needs_at_least_one_question():
    with pytest.raises(InvalidRequestError) as info:
        parse_request({"state": "s", "questions": {}})
    assert info.value.field == "questions" and "at least 1" in info.value.message


def test_duplicate_json_keys_are_rejected_not_silently_merged():
    body = b'{"state": "s", "questions": {"q": {"type": "choice", "instructions": "i", "criteria": {"a": null, "a": null}}}}'
    with pytest.raises(InvalidRequestError) as info:
        parse_request(body)
    assert "duplicate" in info.value.message and info.value.field == "a"


def test_non_utf8_and_malformed_json():
    with pytest.raises(InvalidRequestError, match="UTF-8"):
        parse_json_bytes(b'{"state": "\xff"}')
    with pytest.raises(InvalidRequestError, match="malformed JSON"):
        parse_json_bytes(b'{"state": ')
    with pytest.raises(InvalidRequestError, match="JSON object"):
        parse_request(b"[1, 2]")


# ----------------------------------------------------------------- parts that are not text: refused by name, never ignored
NOUL = {"type": "noul", "instructions": "Is the parcel broken?"}


@pytest.mark.parametrize("body, field, words", [
    ({"state": "<image:0f>", "assets": {"photo": {"type": "image", "format": "png", "data_base64": "iVBORw0KGgo="}},
      "questions": {"q": NOUL}}, "assets.photo", "image assets (data_base64)"),
    ({"state": "s", "assets": {"photo": {"type": "image", "url": "https://example.com/a.png"}}, "questions": {"q": NOUL}},
     "assets.photo", "image assets (url)"),
    ({"state": "s", "assets": {"<image:0f>": {"type": "image", "part": "asset-0"}}, "questions": {"q": NOUL}},
     "assets.<image:0f>", "image assets (part)"),
    ({"state": "s", "assets": ["a.png"], "questions": {"q": NOUL}}, "assets", "image assets are"),
    ({"state": "s", "questions": {"q": NOUL, "dog": {"type": "box", "instructions": "The dog"}}}, "questions.dog", "box questions"),
])
def test_image_assets_and_box_questions_are_a_400_naming_the_part(body, field, words):
    """Jev 1.14's images and Box (typesafe-sdk 0.7.5 sends both): refused, not answered from the text around them."""
    with pytest.raises(InvalidRequestError) as info:
        parse_request(body)
    assert info.value.status_code == 400 and info.value.field == field
    assert info.value.message.startswith(f"{field}: ") and words in info.value.message and "reads text only" in info.value.message


def test_empty_assets_carry_nothing_and_are_answered():
    assert parse_request({"state": "s", "assets": {}, "questions": {"q": NOUL}}).questions["q"].type == "noul"
    assert parse_request({"state": "s", "assets": None, "questions": {"q": NOUL}}).questions["q"].type == "noul"


@pytest.mark.parametrize("part", [{"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
                                  {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}])
@pytest.mark.parametrize("where", ["input[0].content[1]", "questions[0].instructions[0]", "input[1].output[0]"])
def test_openai_image_parts_are_a_400_naming_the_part(part, where):
    from semif_lib.decision.openai_schema import parse_decisions_request

    text = {"type": "input_text", "text": "see"}
    question = {"type": "predicate", "instructions": "Broken?"}
    body = {"model": "m", "input": [{"role": "user", "content": [text, part]}], "questions": [question]}
    if where.startswith("questions"):
        body = {"model": "m", "input": "s", "questions": [{**question, "instructions": [part]}]}
    elif where.startswith("input[1]"):
        body["input"] = [{"type": "function_call", "call_id": "c1", "name": "look", "arguments": "{}"},
                         {"type": "function_call_output", "call_id": "c1", "output": [part]}]
    with pytest.raises(InvalidRequestError) as info:
        parse_decisions_request(body)
    assert info.value.status_code == 400 and info.value.field == where
    assert info.value.message.startswith(f"{where}: {part['type']} parts are not supported: this engine reads text only")
