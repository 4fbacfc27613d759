"""Notebook 02's "this is what generation gives you": the text the DLC writes for 00's question, beside 00's distribution.

00 keeps its answer to the example's choice question in the state file (`record_distribution`); 02 sends the text
endpoint the very prompt the decision path reads for that question, as chat messages (`chat_messages_for`, the
rendering `semif bench peer` sends llama-server), lets it generate a few tokens, and tabulates the text against the
distribution (`tabulate_generation`): a sentence to parse, against one probability per option.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..registry import WorkshopState

__all__ = ["DISTRIBUTION_KEY", "chat_messages_for", "record_distribution", "tabulate_generation"]

DISTRIBUTION_KEY = "quickstart_distribution"  # the state file's entry 00 writes and 02 reads


def chat_messages_for(request: Mapping[str, Any], question: str) -> list[dict[str, str]]:
    """The chat messages the decision path renders for `question` of `request` (its state, then the question)."""
    from ..measurement.bench.peer.protocol import plan_peer_questions

    for plan, messages in plan_peer_questions(dict(request)):
        if plan.qid == question:
            return messages
    raise KeyError(f"the request has no question {question!r}; it has {', '.join(request['questions'])}")


def record_distribution(state: WorkshopState, response: Any, question: str) -> dict[str, Any]:
    """00's answer to `question` (the model and its probability per option), kept in the state file for 02."""
    answer = response.answers[question]
    kept = {"model": response.model, "question": question, "probabilities": dict(answer.probabilities)}
    return state.set(DISTRIBUTION_KEY, kept)


def tabulate_generation(text: str, state: WorkshopState) -> "Any":
    """Per option: whether the generated text names it, and 00's probability for it (when 00 ran in this run)."""
    import pandas as pd

    kept = state.get(DISTRIBUTION_KEY)
    if not kept:
        return f"generation wrote {text!r}; run 00_local_quickstart in this run to see its distribution beside it"
    lowered = text.lower()
    rows = [{"option": option, "named in the generated text": option.lower() in lowered, "00's probability": round(p, 3)}
            for option, p in kept["probabilities"].items()]
    return pd.DataFrame(rows).set_index("option")
