"""What one forward pass reads for each question (notebook 00): the end of its rendered prompt, the answer-slot
tokens, their raw logits, and the softmax over them that becomes the answer.

`read_slots` uses only what the engine exposes: `prepare` (each question's plan and its slot token ids),
`renderer.render` (the prompt text the GGUF's chat template makes), `token_text`, and
`score(..., include_logits=True)` (each answer's raw option logits, `x_logits`). `SlotReading.softmax` recomputes
the softmax in plain Python from the logits it prints, so the notebook's check that it equals the answer's
probabilities is not the engine checking itself. A calibrated answer (`SEMIF_CALIBRATION`) is compared through its
`x_raw_probabilities`, the softmax before calibration. Only slot readouts have one token per option, so a question
read as a sequence (multi-token options) is left out; a rotated choice (`x_debias`) shows its request-order tokens.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from ..measurement.answers import read_probabilities, read_response

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["SlotReading", "read_slots", "tabulate_slots"]


@dataclass
class SlotReading:
    """One question's answer slots: the prompt's last characters, one token per option, and what the answer says."""

    question: str
    kind: str
    prompt_tail: str
    keys: list[str]  # the answer's option keys, in order ("true"/"false", option names, level indices)
    token_ids: list[int]
    token_texts: list[str]
    logits: list[float]
    probabilities: dict[str, float]  # the answer's (before calibration, where it was calibrated)
    option_mass: float | None
    prompt: str = ""  # the whole rendered prompt: notebook 00 evaluates it again with llama-cpp-python alone

    @property
    def softmax(self) -> list[float]:
        """exp(logit - max) / sum, over this question's slots only."""
        top = max(self.logits)
        weights = [math.exp(value - top) for value in self.logits]
        total = sum(weights)
        return [w / total for w in weights]


def read_slots(engine: Any, request: Mapping[str, Any], tail_chars: int = 320) -> list[SlotReading]:
    """Score `request` once with its logits and read every slot-readout question's slots (see the module doc)."""
    from ..decision.schema import render_content

    resolved = engine.resolve(dict(request))
    prep = engine.prepare(resolved)  # scoring below reuses this preparation
    state_text = resolved.conversation or render_content(resolved.state)
    answers = read_response(engine.score(resolved, include_logits=True))["answers"]
    readings = []
    for index, plan in enumerate(prep.plans):
        if plan.readout != "slot" or plan.rotation:
            continue
        answer = answers[plan.qid]
        tokens = list(prep.slot_tokens[index])
        prompt = engine.renderer.render(state_text, plan.block)
        readings.append(SlotReading(
            question=plan.qid, kind=plan.kind, prompt_tail=_cut_tail(prompt, tail_chars), keys=list(plan.keys), token_ids=tokens,
            token_texts=[engine.token_text(token) for token in tokens], logits=[float(x) for x in answer["x_logits"]],
            probabilities=dict(answer.get("x_raw_probabilities") or read_probabilities(answer)),
            option_mass=answer.get("x_option_mass"), prompt=prompt))
    return readings


def _cut_tail(prompt: str, chars: int) -> str:
    """The prompt's last `chars` characters, from the first line that starts within them ("..." marks the cut)."""
    if len(prompt) <= chars:
        return prompt
    tail = prompt[-chars:]
    return "...\n" + tail[tail.find("\n") + 1:] if "\n" in tail else "..." + tail


def tabulate_slots(readings: list[SlotReading]) -> "pd.DataFrame":
    """One row per (question, option): the slot token the model would write next, its raw logit, the softmax of the
    question's logits, the answer's probability, and the question's `x_option_mass`."""
    import pandas as pd

    rows = [{"question": r.question, "option": key, "token": repr(text), "token_id": token, "logit": logit,
             "softmax": soft, "probability": r.probabilities[key], "x_option_mass": r.option_mass}
            for r in readings
            for key, token, text, logit, soft in zip(r.keys, r.token_ids, r.token_texts, r.logits, r.softmax, strict=True)]
    return pd.DataFrame(rows).set_index(["question", "option"])
