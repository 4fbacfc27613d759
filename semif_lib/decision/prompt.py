"""Prompt layout: fixed instructions and the state in a shared prefix, each question in a short suffix.

On a CPU with a small model, prefill dominates, so everything that does not depend on the
question (the answer-format instructions, the state) sits before the question and is
prefilled once. A suffix holds only the question's own words, its options, and the chat
template's end-of-turn plus assistant header, after which the answer slot token follows.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, Union

from ..errors import InvalidRequestError
from .schema import NOUL_WITHOUT_INSTRUCTIONS, ChoiceQuestion, Content, NoulQuestion, ScoreQuestion, render_content, render_inline

PROMPT_VERSION = "semif-prompt-v1"

SYSTEM_PROMPT = (
    "You answer questions about a state. Read the state, then answer the question with a single "
    "token: Yes or No for a yes/no question, otherwise the letter or digit of one listed option."
)

NOUL_SLOTS = ("Yes", "No")  # order of NOUL_KEYS
NOUL_KEYS = ("true", "false")
SCORE_SLOTS = tuple(string.digits)
_MARKER = "\x00SEMIF_QUESTION\x00"

# A plain layout for GGUFs without a chat template (base models): the answer follows "Answer:".
_PLAIN_TEMPLATE = "{system}\n\n{user}\nAnswer:"


def generate_letter_slots() -> list[str]:
    """Candidate single-token slots for choices: A-Z, then AA..ZZ (verified against the tokenizer later)."""
    upper = list(string.ascii_uppercase)
    return upper + [a + b for a in upper for b in upper]


@dataclass
class QuestionPlan:
    """One question laid out for readout: its suffix text and the option slots it is answered with."""

    qid: str
    kind: str
    keys: list[str]  # output keys in order: "true"/"false", option names, or level indices
    slots: list[str]  # the answer text per option (a single token for slot readout)
    block: str  # text that goes after "Question:"
    readout: str = "slot"
    length_normalize: bool = False
    legend: dict[str, str] = field(default_factory=dict)
    rotation: int = 0  # x_debias rotations: how far this plan's options are shifted from the request's order
    debias: str = "none"  # x_debias "prior": the calibration file's position prior is divided out of this plan's logits


def _describe(name: str, desc: Content | None) -> str:
    text = render_inline(desc) if desc is not None else ""
    return f"{name}: {text}" if text else name


def plan_question(
    qid: str,
    question: NoulQuestion | ChoiceQuestion | ScoreQuestion,
    slot_prefix: str = "",
    letters: Sequence[str] | None = None,
) -> QuestionPlan:
    """Build the suffix block and the option slots for one question.

    `letters` are the choice labels, in order; the engine passes the ones its tokenizer
    reads as single tokens after the assistant header.
    """
    text = render_content(question.instructions).strip() if question.instructions is not None else NOUL_WITHOUT_INSTRUCTIONS
    if isinstance(question, NoulQuestion):
        return _plan_noul(qid, question, text, slot_prefix)
    if isinstance(question, ChoiceQuestion):
        return _plan_choice(qid, question, text, slot_prefix, letters)
    return _plan_score(qid, question, text, slot_prefix)


def rotate_criteria(criteria: dict[str, Any], shift: int) -> dict[str, Any]:
    """The options in cyclic order, starting `shift` places in: the one rotation rule (serving and `semif eval --permute`)."""
    names = list(criteria)
    shift %= len(names)
    return {n: criteria[n] for n in names[shift:] + names[:shift]}


def plan_rotations(
    qid: str,
    question: NoulQuestion | ChoiceQuestion | ScoreQuestion,
    slot_prefix: str = "",
    letters: Sequence[str] | None = None,
) -> list[QuestionPlan]:
    """The question's plan, or with `x_debias: rotations` one plan per cyclic shift of its options (same qid); with
    `x_debias: prior` one plan that says so (its position prior is divided out at readout)."""
    if not isinstance(question, ChoiceQuestion) or question.debias != "rotations":
        plan = plan_question(qid, question, slot_prefix, letters)
        if isinstance(question, ChoiceQuestion) and question.debias == "prior":
            plan.debias = "prior"
        return [plan]
    plans = []
    for shift in range(min(question.rotations, len(question.criteria))):
        rotated = question.model_copy(update={"criteria": rotate_criteria(question.criteria, shift)})
        plan = plan_question(qid, rotated, slot_prefix, letters)
        plan.rotation = shift
        plans.append(plan)
    return plans


def _plan_noul(qid: str, question: NoulQuestion, text: str, slot_prefix: str) -> QuestionPlan:
    lines = [f" {text}"]
    crit = question.criteria
    if crit and crit.true is not None:
        lines.append(f"Yes means: {render_inline(crit.true)}")
    if crit and crit.false is not None:
        lines.append(f"No means: {render_inline(crit.false)}")
    slots = [slot_prefix + s for s in NOUL_SLOTS]
    return QuestionPlan(qid, "noul", list(NOUL_KEYS), slots, "\n".join(lines), question.readout, question.length_normalize)


def _plan_choice(qid: str, question: ChoiceQuestion, text: str, slot_prefix: str, letters: Sequence[str] | None) -> QuestionPlan:
    names = list(question.criteria)
    if question.readout == "sequence":
        lines = [f" {text}", "Options:"] + [f"- {_describe(n, question.criteria[n])}" for n in names]
        slots = [slot_prefix + n for n in names]
    else:
        pool = list(letters) if letters is not None else generate_letter_slots()
        if len(pool) < len(names):
            raise InvalidRequestError(
                f"questions.{qid}.criteria: {len(names)} options, but this model's tokenizer has only "
                f"{len(pool)} distinct single-token answer slots",
                field=f"questions.{qid}.criteria",
            )
        labels = pool[: len(names)]
        lines = [f" {text}"] + [f"{label}. {_describe(n, question.criteria[n])}" for label, n in zip(labels, names, strict=True)]
        slots = [slot_prefix + label for label in labels]
    return QuestionPlan(qid, "choice", names, slots, "\n".join(lines), question.readout, question.length_normalize)


def _plan_score(qid: str, question: ScoreQuestion, text: str, slot_prefix: str) -> QuestionPlan:
    levels = [render_inline(level) for level in question.criteria]
    legend = {str(i): level for i, level in enumerate(levels)}
    if question.readout == "sequence":
        lines = [f" {text}", "Levels:"] + [f"- {level}" for level in levels]
        slots = [slot_prefix + level for level in levels]
    else:
        lines = [f" {text}"] + [f"{i}. {level}" for i, level in enumerate(levels)]
        slots = [slot_prefix + SCORE_SLOTS[i] for i in range(len(levels))]
    return QuestionPlan(qid, "score", list(legend), slots, "\n".join(lines), question.readout, question.length_normalize, legend)


PromptState = Union[str, Sequence[dict[str, str]]]  # the state's text, or chat turns that are the state
CONVERSATION_NOTE = " The state is the conversation before the question."


def build_messages(state: PromptState, block: str) -> list[dict[str, str]]:
    """Chat messages for one question; the text path (OpenAI-style baselines) sends exactly these.

    A state given as chat turns (an agent's conversation, from the OpenAI wire) is rendered as those
    turns, then the question as one more user turn; leading system turns join the system prompt, so
    a template that allows one system message at the start still renders it.
    """
    if isinstance(state, str):
        user = f"State:\n{state}\n\nQuestion:{block}"
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]
    turns = [dict(turn) for turn in state]
    system = SYSTEM_PROMPT + CONVERSATION_NOTE
    while turns and turns[0]["role"] == "system":
        system += "\n\n" + turns.pop(0)["content"]
    return [{"role": "system", "content": system}, *turns, {"role": "user", "content": f"Question:{block}"}]


def state_texts(state: PromptState) -> list[str]:
    """The user-supplied texts of a state (checked for text that spells a control token)."""
    return [state] if isinstance(state, str) else [turn["content"] for turn in state]


def fold_system_turn(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """The leading system text joined to the next turn, as Gemma 3's own template does for a model without a system role."""
    if len(messages) < 2 or messages[0]["role"] != "system":
        return messages
    return [{"role": messages[1]["role"], "content": messages[0]["content"] + "\n\n" + messages[1]["content"]}, *messages[2:]]


def fold_tool_turns(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """Tool outputs as user turns, and adjacent turns of one role joined by a blank line.

    What a template without a `tool` role (one that raises on it, or drops it) or with strictly
    alternating user/assistant turns can render. The output keeps its own words ("Output of NAME
    (call ID): ..."), so the model still reads whose output it is; nothing is dropped.
    """
    out: list[dict[str, str]] = []
    for message in messages:
        role = "user" if message["role"] == "tool" else message["role"]
        if out and out[-1]["role"] == role and role != "system":
            out[-1] = {"role": role, "content": out[-1]["content"] + "\n\n" + message["content"]}
        else:
            out.append({"role": role, "content": message["content"]})
    return out


def _layouts(messages: list[dict[str, str]]) -> list[list[dict[str, str]]]:
    """The turns as given, then the fallbacks in order: system folded, tool outputs folded, both."""
    out = [messages, fold_system_turn(messages)]
    if any(m["role"] == "tool" for m in messages):
        out += [fold_tool_turns(messages), fold_system_turn(fold_tool_turns(messages))]
    return [layout for i, layout in enumerate(out) if layout not in out[:i]]


def _render_for_answer(formatter: Any, messages: list[dict[str, str]]) -> str:
    """The template's prompt, ending where the answer slot is read.

    A thinking model's template gets `enable_thinking=False` (Qwen3's switch: it writes an empty, closed
    `<think></think>`). A template that refuses the turns as given (its `raise_exception`) gets them laid
    out again (`_layouts`): a refused system role has its text folded into the first turn, as Gemma 3's
    own template does; a refused or dropped `tool` role (a tool's output missing from the prompt) has each
    output folded into a user turn (`fold_tool_turns`). Only a template that refuses every layout is a
    400, with its own words. A prompt that still ends inside an open `<think>` block cannot have its
    answer read at the next token, and is refused with a 400.
    """
    refused: Exception | None = None
    for layout in _layouts(messages):
        try:
            prompt = formatter(messages=layout, enable_thinking=False).prompt
        except ValueError as exc:  # the template's raise_exception()
            refused = refused or exc
            continue
        if all(m["content"].strip() in prompt for m in layout if m["role"] == "tool"):
            break
        refused = refused or ValueError("the template leaves out the tool role's turns")
    else:
        folded = " (tool outputs folded into user turns too)" if any(m["role"] == "tool" for m in messages) else ""
        raise InvalidRequestError(f"the model's chat template refused the prompt{folded}: {refused}", field="model")
    if prompt.rfind("<think>") > prompt.rfind("</think>"):
        raise InvalidRequestError("the model's chat template leaves a <think> block open where the answer goes, so the next token is "
                                  "reasoning, not an answer slot; use a template with a thinking switch or one that closes the block",
                                  field="model")
    return prompt


class PromptRenderer:
    """Renders the shared prefix and per-question prompts with the GGUF's own chat template."""

    def __init__(self, chat_template: str | None, bos_token: str = "", eos_token: str = "") -> None:
        self.chat_template = chat_template
        self._format: Callable[[list[dict[str, str]]], str]
        if chat_template:
            # The same Jinja renderer llama-cpp-python's chat completion uses, so the text path and
            # the decision path see the same prompt. Such prompts carry their own BOS, if any.
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            formatter = Jinja2ChatFormatter(chat_template, eos_token=eos_token, bos_token=bos_token)
            self._format = lambda messages: _render_for_answer(formatter, messages)
            self.slot_prefix = ""
            self.add_bos = False
        else:
            self._format = lambda messages: _PLAIN_TEMPLATE.format(system=messages[0]["content"], user=messages[1]["content"])
            self.slot_prefix = " "
            self.add_bos = True

    def render(self, state_text: PromptState, block: str) -> str:
        """The whole prompt for one question, ending where the answer token goes."""
        return self._format(build_messages(state_text, block))

    def render_pieces(self, state_text: PromptState, block: str) -> list[tuple[str, bool]]:
        """The prompt as (text, parse_special) pieces: template text, and message contents kept apart.

        Text in a message that spells a control token (``<|im_end|>``) must stay text: tokenized
        apart with special parsing off, it cannot close the turn or open an assistant answer.
        """
        messages = build_messages(state_text, block)
        holes = [f"\x00SEMIF_CONTENT_{i}\x00" for i in range(len(messages))]
        skeleton = self._format([{**m, "content": h} for m, h in zip(messages, holes, strict=True)])
        pieces: list[tuple[str, bool]] = []
        rest = skeleton
        for hole, message in zip(holes, messages, strict=True):
            before, found, rest = rest.partition(hole)
            if not found:
                raise InvalidRequestError("chat template does not keep the message text; cannot keep it apart from control tokens",
                                          field="model")
            pieces += [(before, True), (message["content"], False)]
        pieces.append((rest, True))
        if "".join(text for text, _ in pieces) != self._format(messages):
            raise InvalidRequestError("chat template rewrites the message text; cannot keep it apart from control tokens", field="model")
        return [(text, special) for text, special in pieces if text]

    def render_prefix_pieces(self, state_text: PromptState) -> list[tuple[str, bool]]:
        """`render_prefix` as pieces (see `render_pieces`)."""
        out: list[tuple[str, bool]] = []
        for text, special in self.render_pieces(state_text, _MARKER):
            cut = text.find(_MARKER)
            if cut >= 0:
                return out + ([(text[:cut], special)] if cut else [])
            out.append((text, special))
        raise InvalidRequestError(  # pragma: no cover
            "chat template does not keep the message text; cannot split the prefix", field="model")

    def render_prefix(self, state_text: PromptState) -> str:
        """The text every question's prompt starts with: the template up to "Question:"."""
        full = self.render(state_text, _MARKER)
        cut = full.find(_MARKER)
        if cut < 0:  # pragma: no cover - a template that rewrites content
            raise InvalidRequestError("chat template does not keep the message text; cannot split the prefix", field="model")
        return full[:cut]
