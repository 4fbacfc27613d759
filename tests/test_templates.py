"""Chat templates whose weights are not here, checked on copies of the embedded GGUF with the template rewritten.

`gguf` (llama.cpp's writer) copies SmolLM2 with a Qwen3-style thinking template, a Gemma-style template
that refuses a system role, a Llama-3-style template, and one that leaves a `<think>` block open. Each
rendered prompt must end where the answer slot is read (the assistant header, no open thinking block)
and its slots verify, or the request is refused with a 400 naming the reason.
"""

from __future__ import annotations

import pytest

from semif_lib.errors import InvalidRequestError
from semif_lib.modelfile import find_embedded_model
from semif_lib.settings import Settings

from support.models import copy_with_metadata

pytestmark = pytest.mark.model

CHATML = ("{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
          "{%- endfor %}")
TEMPLATES = {
    "qwen3-thinking": CHATML + ("{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- if enable_thinking is defined "
                                "and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}{%- endif %}"),
    "gemma-no-system": ("{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
                        "{% endif %}{% for message in messages %}{{ '<start_of_turn>' + ('model' if message['role'] == 'assistant' "
                        "else message['role']) + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}{% endfor %}"
                        "{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}"),
    "llama3": ("{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + "
               "message['content'] | trim + '<|eot_id|>' }}{% endfor %}{% if add_generation_prompt %}"
               "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}"),
    "llama3-on-smollm2": "",
    "think-left-open": CHATML + "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n<think>\\n' }}{%- endif %}",
}
ENDINGS = {"qwen3-thinking": "<|im_start|>assistant\n<think>\n\n</think>\n\n", "gemma-no-system": "<start_of_turn>model\n",
           "llama3": "<|start_header_id|>assistant<|end_header_id|>\n\n"}
REQUEST = {"state": "The customer was charged twice and asks for a refund.", "questions": {
    "billing": {"type": "noul", "instructions": "Is this about a payment?"},
    "queue": {"type": "choice", "instructions": "Which queue?", "criteria": {"billing": None, "technical": None}},
    "urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["low", "medium", "high"]}}}


# The ChatML-family templates go on the Qwen2.5 GGUF (Qwen3's tokenizer is Qwen2's with <think> added); the others on
# SmolLM2. Found writing this test: on SmolLM2's GPT-2-style pre-tokenizer a prompt ending "</think>\n\n" does not verify
# (the "\n\n" token splits when a slot follows), so there every choice is refused: slots are checked, not assumed.
# Llama 3's pre-tokenizer splits newlines as Qwen2's does, so its template goes on Qwen too, and once on SmolLM2 for the refusal.
BASES = {"qwen3-thinking": "qwen", "think-left-open": "qwen", "gemma-no-system": "smollm2", "llama3": "qwen",
         "llama3-on-smollm2": "smollm2"}


@pytest.fixture(scope="module")
def template_copies(tmp_path_factory, qwen_model_path):
    folder = tmp_path_factory.mktemp("templates")
    bases = {"qwen": qwen_model_path, "smollm2": find_embedded_model()}
    return {name: copy_with_metadata(bases[BASES[name]], folder / f"{name}.gguf", chat_template=t or TEMPLATES["llama3"])
            for name, t in TEMPLATES.items()}


def _engine(path):
    from semif_lib.decision.engine import DecisionEngine

    return DecisionEngine(Settings(n_ctx=1024, threads=2, n_seq_max=8, model_dir=path.parent / "none"), model_path=path)


@pytest.mark.parametrize("name", ["qwen3-thinking", "gemma-no-system", "llama3"])
def test_prompt_ends_at_the_answer_and_slots_verify(template_copies, name):
    with _engine(template_copies[name]) as engine:
        prompt = engine.renderer.render(REQUEST["state"], " Is this about a payment?")
        assert prompt.endswith(ENDINGS[name]) and prompt.rfind("<think>") <= prompt.rfind("</think>")
        if name == "gemma-no-system":  # the system text folded into the user turn, not dropped
            assert prompt.count("<start_of_turn>user\n") == 1 and "You answer questions about a state" in prompt
        response = engine.score(REQUEST, mode="parallel")
        assert set(response.answers) == set(REQUEST["questions"])
        assert all(0.0 < a.option_mass <= 1.0 for a in response.answers.values())


def test_a_template_that_leaves_thinking_open_is_refused_with_a_400(template_copies, monkeypatch):
    """Refused when the engine first renders a prompt (finding its letter slots): the model never serves, and the
    weights llama.cpp loaded for it are freed before the error leaves (no engine exists to close them later)."""
    from semif_lib.decision import engine as engine_module

    loaded = []

    class RecordedBackend(engine_module.LlamaBackend):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            loaded.append(self)

    monkeypatch.setattr(engine_module, "LlamaBackend", RecordedBackend)
    with pytest.raises(InvalidRequestError) as info:
        _engine(template_copies["think-left-open"])
    assert info.value.status_code == 400 and info.value.field == "model" and "<think> block open" in info.value.message
    assert len(loaded) == 1 and loaded[0].closed and loaded[0]._model is None  # llama_model_free ran


def test_slots_that_do_not_verify_are_refused_with_a_400_naming_the_question(template_copies):
    with _engine(template_copies["llama3-on-smollm2"]) as engine:
        with pytest.raises(InvalidRequestError) as info:
            engine.score(REQUEST, mode="parallel")
    assert info.value.status_code == 400 and info.value.field.startswith("questions.") and "single-token answer slots" in info.value.message
