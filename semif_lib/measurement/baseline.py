"""Baselines on llama-cpp-python's high-level, OpenAI-style API, to compare the readout against.

* `generate_json_answers`: the model *writes* its answers as a compact JSON array (greedy).
* `read_top_logprobs`: what a plain chat-completions user would do for probabilities: one
  `create_chat_completion(max_tokens=1, logprobs=True, top_logprobs=20)` call per question.

Both call `Llama.reset()` first unless told otherwise, because `create_chat_completion` silently
reuses the longest common token prefix of the previous call; a benchmark must say which it measures.
"""

from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..decision.prompt import build_messages, generate_letter_slots, plan_question
from ..decision.schema import (
    ChoiceQuestion,
    DecisionRequest,
    NoulQuestion,
    ScoreQuestion,
    parse_request,
    render_content,
)
from ..model.locate import find_model_path
from ..settings import Settings

if TYPE_CHECKING:  # pragma: no cover
    from llama_cpp import Llama

JSON_SYSTEM_PROMPT = (
    "You answer questions about a state. Reply with only a compact JSON array holding one answer per "
    'question, in the order asked: "yes" or "no" for a yes/no question, the option name for a choice, '
    "the level number for a score. No other text."
)


def open_chat_model(settings: Settings, model_path: Path | str | None = None, logits_all: bool = False) -> "Llama":
    """A high-level `Llama` with every default set explicitly (its own defaults differ from the C ones)."""
    from llama_cpp import Llama

    from ..decision.backend import ensure_backend

    ensure_backend(settings.verbose)
    path = Path(model_path) if model_path else find_model_path(settings.model_path, settings.model_dir)
    return Llama(
        model_path=str(path),
        n_ctx=settings.n_ctx,
        n_batch=settings.n_batch,
        n_ubatch=settings.n_ubatch,
        n_threads=settings.threads,
        n_threads_batch=settings.threads,
        n_gpu_layers=settings.n_gpu_layers,
        flash_attn=settings.flash_attn == "on",
        logits_all=logits_all,
        seed=0,
        verbose=settings.verbose,
    )


def describe_question(question: NoulQuestion | ChoiceQuestion | ScoreQuestion) -> str:
    text = render_content(question.instructions).strip()
    if isinstance(question, NoulQuestion):
        return f"{text} (yes/no)"
    if isinstance(question, ChoiceQuestion):
        return f"{text} (one of: {', '.join(question.criteria)})"
    levels = "; ".join(f"{i} = {level}" for i, level in enumerate(question.criteria))
    return f"{text} (level number: {levels})"


def build_json_messages(request: DecisionRequest) -> list[dict[str, str]]:
    lines = [f"{i}. {describe_question(q)}" for i, q in enumerate(request.questions.values(), start=1)]
    user = f"State:\n{render_content(request.state)}\n\nQuestions:\n" + "\n".join(lines)
    return [{"role": "system", "content": JSON_SYSTEM_PROMPT}, {"role": "user", "content": user}]


@dataclass
class GenerationResult:
    """What the model wrote, how long it took, and the answers we could parse from it."""

    text: str
    prompt_tokens: int
    output_tokens: int
    seconds: float
    valid_json: bool
    complete: bool
    answers: dict[str, Any] = field(default_factory=dict)


def parse_generated_answer(question: Any, value: Any) -> Any:
    """Map one generated value onto the question's answer space, or None if it is not in it."""
    if isinstance(question, NoulQuestion):
        if isinstance(value, bool):
            return value
        word = str(value).strip().lower()
        return True if word in ("yes", "true") else False if word in ("no", "false") else None
    if isinstance(question, ChoiceQuestion):
        names = {n.casefold(): n for n in question.criteria}
        return names.get(str(value).strip().casefold())
    try:
        level = int(value)
    except (TypeError, ValueError):
        return None
    return level if 0 <= level < len(question.criteria) else None


def parse_generation(request: DecisionRequest, text: str) -> tuple[bool, bool, dict[str, Any]]:
    """(valid JSON array?, every answer present and valid?, parsed answers by question id)."""
    match = re.search(r"\[.*\]", text, flags=re.S)
    try:
        values = json.loads(match.group(0) if match else text)
    except json.JSONDecodeError:
        return False, False, {}
    if not isinstance(values, list):
        return False, False, {}
    answers = {
        qid: parse_generated_answer(q, values[i]) if i < len(values) else None
        for i, (qid, q) in enumerate(request.questions.items())
    }
    complete = len(values) == len(request.questions) and all(v is not None for v in answers.values())
    return True, complete, answers


def generate_json_answers(llm: "Llama", request: DecisionRequest | dict, reset: bool = True,
                          max_tokens: int | None = None) -> GenerationResult:
    """Greedy generation of a JSON array of answers: the text path's way to the same decisions."""
    if not isinstance(request, DecisionRequest):
        request = parse_request(request)
    if reset:
        llm.reset()
    budget = max_tokens or 16 + 12 * len(request.questions)
    t0 = time.perf_counter()
    out = llm.create_chat_completion(messages=build_json_messages(request), temperature=0.0, top_k=1, max_tokens=budget, seed=0)
    seconds = time.perf_counter() - t0
    text = out["choices"][0]["message"]["content"] or ""
    valid, complete, answers = parse_generation(request, text)
    return GenerationResult(text, out["usage"]["prompt_tokens"], out["usage"]["completion_tokens"], seconds, valid, complete, answers)


def read_top_logprobs(llm: "Llama", request: DecisionRequest | dict, reset: bool = True) -> dict[str, dict[str, float]]:
    """Option probabilities the naive way: one chat completion per question, read from the top-20 logprobs.

    `llm` must be opened with `logits_all=True` (llama-cpp-python refuses logprobs otherwise), so every
    prompt token also pays for the output layer. Options missing from the top 20 get probability 0
    before normalisation; if none is present the distribution is uniform.
    """
    if not isinstance(request, DecisionRequest):
        request = parse_request(request)
    if reset:
        llm.reset()
    state_text = render_content(request.state)
    letters = generate_letter_slots()
    results: dict[str, dict[str, float]] = {}
    for qid, question in request.questions.items():
        plan = plan_question(qid, question, "", letters)
        out = llm.create_chat_completion(
            messages=build_messages(state_text, plan.block), max_tokens=1, temperature=0.0, logprobs=True, top_logprobs=20, seed=0
        )
        top = out["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
        found = {t["token"]: math.exp(t["logprob"]) for t in top}
        probs = [found.get(slot, 0.0) for slot in plan.slots]
        total = sum(probs)
        probs = [p / total for p in probs] if total > 0 else [1.0 / len(probs)] * len(probs)
        results[qid] = dict(zip(plan.keys, probs, strict=True))
    return results
