"""Notebook 04's exercise: the OpenAI Decisions body for a Jev / System One request, by hand.

A `noul` becomes a `predicate`, a `choice`'s criteria become `choices` (the description rides in `instructions`), a
`score`'s levels become `levels` with labels. `/invocations` reads either body, so the same `invoke_endpoint` call
sends it; the queue should come out the same on both wires."""

from __future__ import annotations

from typing import Any


def to_decisions_body(request: dict[str, Any]) -> dict[str, Any]:
    """The Decisions body (`input`, `questions`) asking what `request` asks."""
    questions = []
    for name, question in request["questions"].items():
        kind, instructions = question["type"], question.get("instructions", "")
        if kind == "noul":
            questions.append({"type": "predicate", "name": name, "instructions": instructions})
        elif kind == "choice":
            options = question["criteria"]
            described = "; ".join(f"{option}: {text}" for option, text in options.items() if text)
            text = f"{instructions} ({described})" if described else instructions
            questions.append({"type": "choice", "name": name, "instructions": text, "choices": [{"value": option} for option in options]})
        else:
            questions.append({"type": "score", "name": name, "instructions": instructions,
                              "levels": [{"label": str(level)} for level in question["criteria"]]})
    return {"input": request["state"], "questions": questions}
