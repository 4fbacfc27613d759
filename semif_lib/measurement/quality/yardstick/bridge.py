"""sys1bench's `llm_constrained` protocol, reading the log-probabilities llama-server actually returns.

sys1bench 0.3.2's `llm_constrained` asks `/v1/completions` for one token with `logprobs: 20` and reads
OpenAI's legacy shape, `choices[0].logprobs.top_logprobs[0]` = `{token: logprob}`. llama-server (b10970,
the build the text DLC carries) answers in the chat shape instead: `choices[0].logprobs.content[0]`
= `{token, logprob, top_logprobs: [{token, logprob}, ...]}`. Unbridged, the adapter finds no letter, gives
every option -30 and reports a uniform distribution whose argmax is always "A": a baseline that read nothing.

`LlamaCppConstrainedAdapter` keeps the upstream prompt, request and renormalisation (sys1bench's own
`build_prompt` and `finalize_answer`) and changes only the reading: both shapes are read, and a question whose
top log-probabilities hold none of its option letters is a failed answer (`no_option_letter`), never a uniform
guess. `reads` records how many letters each question found, so a run can refuse a system that read nothing
(`scores.refusal`). Registered for sys1bench's CLI under the entry point `llamacpp_constrained` (pyproject.toml).
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from sys1bench.adapters.base import finalize_answer
from sys1bench.adapters.llm_constrained import LLMConstrainedAdapter, build_prompt
from sys1bench.schemas import Answer, Question

__all__ = ["ENTRY_POINT", "NO_LETTER", "LlamaCppConstrainedAdapter", "count_upstream_letters", "read_top_logprobs"]

ENTRY_POINT = "llamacpp_constrained"  # the name under [project.entry-points."sys1bench.adapters"]
NO_LETTER = "no_option_letter"
FLOOR = -30.0  # upstream's log-probability for a letter outside the top k


def read_top_logprobs(logprobs: Mapping[str, Any] | None) -> dict[str, float]:
    """{token: logprob} for the first generated position, from either shape (the best log-prob per token text)."""
    if not logprobs:
        return {}
    found: dict[str, float] = {}

    def add(token: Any, value: Any) -> None:
        if isinstance(token, str) and isinstance(value, (int, float)) and math.isfinite(value):
            found[token] = max(float(value), found.get(token, -math.inf))

    legacy = logprobs.get("top_logprobs")
    if isinstance(legacy, list) and legacy and isinstance(legacy[0], Mapping):  # OpenAI's legacy completions shape
        for token, value in legacy[0].items():
            add(token, value)
    content = logprobs.get("content")
    if isinstance(content, list) and content and isinstance(content[0], Mapping):  # llama-server's (and chat's) shape
        first = content[0]
        add(first.get("token"), first.get("logprob"))
        for entry in first.get("top_logprobs") or []:
            if isinstance(entry, Mapping):
                add(entry.get("token"), entry.get("logprob"))
    return found


def count_upstream_letters(logprobs: Mapping[str, Any], letters: list[str]) -> int:
    """How many option letters sys1bench 0.3.2's own reading (`(lp.get("top_logprobs") or [{}])[0]`) finds in a body."""
    legacy = (logprobs.get("top_logprobs") or [{}])[0]
    keys = [k.strip() for k in legacy] if isinstance(legacy, Mapping) else []
    return sum(letter in keys for letter in letters)


class LlamaCppConstrainedAdapter(LLMConstrainedAdapter):
    """`llm_constrained` with the reading bridged to llama-server's log-probabilities; nothing else changed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # per question asked: (option letters found in the top k, letters upstream's legacy reading finds there, options)
        self.reads: list[tuple[int, int, int]] = []

    def _one(self, state: str, q: Question) -> tuple[Answer, dict]:
        prompt, letters = build_prompt(state, q)
        body = {"model": self.model_id, "prompt": prompt, "max_tokens": 1, "temperature": 0.0, "logprobs": self.top_logprobs}
        response = self._client.post(f"{self.base_url}/completions", json=body, headers={"Authorization": f"Bearer {self.key}"})
        response.raise_for_status()
        data = response.json()
        logprobs = data["choices"][0].get("logprobs") or {}
        top = read_top_logprobs(logprobs)
        scores = [max((v for k, v in top.items() if k.strip() == letter), default=None) for letter in letters]
        found = sum(s is not None for s in scores)
        self.reads.append((found, count_upstream_letters(logprobs, letters), len(letters)))
        if not found:
            return Answer.failed(q, NO_LETTER), data
        values = [FLOOR if s is None else s for s in scores]
        peak = max(values)
        weights = [math.exp(v - peak) for v in values]
        total = sum(weights)
        return finalize_answer(q, [w / total for w in weights]), data
