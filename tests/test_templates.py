"""Chat templates whose weights are not here, checked on copies of the embedded GGUF with the template rewritten.

`gguf` (llama.cpp's writer) copies SmolLM2 with a Qwen3-style thinking template, a Gemma-style template
that refuses a system role, a Llama-3-style template, and one that leaves a `<think>` block open. Each
rendered prompt must end where the answer slot is read (the assistant header, no open thinking block)
and its slots verify, or the request is refused with a 400 naming the reason.
"""

from __future__ import annotations

import pytest

from semif_lib.errors import InvalidRequestError
from semif_lib.model.locate import find_embedded_model
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
        response = engine.ask(REQUEST, mode="parallel")
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
            engine.ask(REQUEST, mode="parallel")
    assert info.value.status_code == 400 and info.value.field.startswith("questions.") and "single-token answer slots" in info.value.message


# ----------------------------------------------------------------- tool outputs (the OpenAI wire's function_call_output)
# Templates without a `tool` role, on SmolLM2 (ChatML, so its slots verify): one raises on any other role and on two turns of
# one role in a row (Mistral's and Gemma 2's rules), one silently leaves other roles out (a tool output would vanish).
CHATML_END = "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
TOOL_TEMPLATES = {
    "no-tool-alternating": ("{%- for message in messages %}{%- if message.role not in ['system', 'user', 'assistant'] %}"
                            "{{- raise_exception('Only system, user and assistant roles are supported') }}{%- endif %}"
                            "{%- if loop.index0 > 0 and message.role == messages[loop.index0 - 1].role %}"
                            "{{- raise_exception('Conversation roles must alternate user/assistant') }}{%- endif %}"
                            "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- endfor %}" + CHATML_END),
    "drops-tool": ("{%- for message in messages %}{%- if message.role in ['system', 'user', 'assistant'] %}"
                   "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- endif %}{%- endfor %}"
                   + CHATML_END),
}
AGENT = {"input": [
    {"role": "developer", "content": "You are a support agent."},
    {"role": "user", "content": "I was charged twice for order 4471. Refund me."},
    {"type": "function_call", "call_id": "c1", "name": "lookup_order", "arguments": '{"order": 4471}'},
    {"type": "function_call", "call_id": "c2", "name": "lookup_payments", "arguments": '{"order": 4471}'},
    {"type": "function_call_output", "call_id": "c1", "output": '{"status": "delivered"}'},
    {"type": "function_call_output", "call_id": "c2", "output": '{"charges": 2, "amount": 40}'},
    {"role": "assistant", "content": "I can see two charges."}],
    "questions": [{"type": "predicate", "instructions": "Was the customer charged twice?"},
                  {"type": "choice", "instructions": "Which team?", "choices": [{"value": "billing"}, {"value": "shipping"}]}]}
# The same conversation as a user would fold it by hand: what the renderer must produce for these templates.
FOLDED = {**AGENT, "input": [
    AGENT["input"][0], AGENT["input"][1],
    {"role": "assistant", "content": 'Called lookup_order (call c1) with arguments {"order": 4471}\n\n'
                                     'Called lookup_payments (call c2) with arguments {"order": 4471}'},
    {"role": "user", "content": 'Output of lookup_order (call c1):\n{"status": "delivered"}\n\n'
                                'Output of lookup_payments (call c2):\n{"charges": 2, "amount": 40}'},
    AGENT["input"][6]]}


@pytest.fixture(scope="module")
def no_tool_copy(tmp_path_factory):
    return copy_with_metadata(find_embedded_model(), tmp_path_factory.mktemp("tool-templates") / "no-tool.gguf",
                              chat_template=TOOL_TEMPLATES["no-tool-alternating"])


def test_a_template_that_refuses_a_tool_role_gets_tool_outputs_as_user_turns(no_tool_copy):
    """Refused, the `tool` role becomes user turns (adjacent turns of one role joined): the prompt and the answers equal
    those of the conversation folded by hand, and no tool output is lost."""
    from semif_lib.decision.openai_schema import parse_decisions_request

    agent, _ = parse_decisions_request(AGENT)
    folded, _ = parse_decisions_request(FOLDED)
    with _engine(no_tool_copy) as engine:
        prompt = engine.renderer.render(agent.conversation, " Was the customer charged twice?")
        assert prompt == engine.renderer.render(folded.conversation, " Was the customer charged twice?")
        assert '<|im_start|>user\nOutput of lookup_order (call c1):\n{"status": "delivered"}\n\nOutput of lookup_payments' in prompt
        assert "<|im_start|>tool" not in prompt and prompt.endswith("<|im_start|>assistant\n")
        got, want = engine.ask(agent, mode="parallel"), engine.ask(folded, mode="parallel")
    for qid, answer in want.answers.items():
        assert got.answers[qid].probabilities == pytest.approx(answer.probabilities, abs=1e-3)


def test_a_template_that_drops_the_tool_role_gets_them_as_user_turns_too():
    """A template that renders without error but leaves tool turns out would lose the outputs: they are folded as well.
    The renderer alone (the engine path is the test above)."""
    from semif_lib.decision.openai_schema import parse_decisions_request
    from semif_lib.decision.prompt import PromptRenderer

    renderer = PromptRenderer(TOOL_TEMPLATES["drops-tool"])
    agent, _ = parse_decisions_request(AGENT)
    folded, _ = parse_decisions_request(FOLDED)
    prompt = renderer.render(agent.conversation, " Q?")
    assert prompt == renderer.render(folded.conversation, " Q?") and '(call c2):\n{"charges": 2, "amount": 40}' in prompt
    pieces = renderer.render_pieces(agent.conversation, " Q?")  # what the engine tokenizes: the same text, contents kept apart
    assert "".join(text for text, _ in pieces) == prompt


def test_a_template_with_a_tool_role_keeps_it(engine):
    """SmolLM2's own template renders any role: the outputs stay `tool` turns, in order, one per output."""
    from semif_lib.decision.openai_schema import parse_decisions_request

    agent, _ = parse_decisions_request(AGENT)
    prompt = engine.renderer.render(agent.conversation, " Was the customer charged twice?")
    assert prompt.count("<|im_start|>tool\nOutput of ") == 2 and prompt.index("(call c1):") < prompt.index("(call c2):")


def test_a_template_that_refuses_every_layout_is_a_400_with_its_own_words():
    """No model needed: the renderer alone. A template that refuses assistant turns cannot render an agent's call."""
    from semif_lib.decision.openai_schema import parse_decisions_request
    from semif_lib.decision.prompt import PromptRenderer

    template = ("{%- for message in messages %}{%- if message.role == 'assistant' %}{{- raise_exception('No assistant turns') }}"
                "{%- endif %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- endfor %}" + CHATML_END)
    renderer = PromptRenderer(template)
    assert renderer.render("a plain state", " Q?").endswith("<|im_start|>assistant\n")  # a text state still renders
    agent, _ = parse_decisions_request(AGENT)
    with pytest.raises(InvalidRequestError) as info:
        renderer.render(agent.conversation, " Q?")
    assert info.value.status_code == 400 and info.value.field == "model"
    assert "tool outputs folded into user turns too" in info.value.message and "No assistant turns" in info.value.message
