"""`semif eval`'s calls to the model: the raw readout of labeled questions, content-free priors,
option-order rotations, and the JSON-generation baseline on the same model.

Everything here needs a loaded engine (or the chat model, for the baseline). What is done with
the results needs no model and lives in `evaluate` (`evaluate_decisions`). Heavy imports
(numpy, tqdm, llama_cpp) stay inside functions.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from ...decision.prompt import plan_question, rotate_criteria
from ...decision.schema import parse_request
from ..baseline import generate_json_answers, open_chat_model
from .labeled import LabeledItem, label_to_index

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from ...decision.engine import DecisionEngine
    from ...settings import Settings
    from .calibration import Decision

__all__ = [
    "CONTENT_FREE_STATES", "rotate_options", "run_json_baseline", "score_content_free", "score_decisions", "score_permutations",
]

CONTENT_FREE_STATES = ("N/A", "", "[MASK]")


def _question_hash(engine: "DecisionEngine", qid: str, question: Any) -> str:
    """The key a calibration file's priors use for one question, as this engine lays it out."""
    from ...decision.calibrator import hash_question

    plan = plan_question(qid, question, engine.renderer.slot_prefix, engine.letter_slots)
    return hash_question(plan.block, plan.kind)


def score_decisions(engine: "DecisionEngine", items: Sequence[LabeledItem], progress: bool = True) -> list["Decision"]:
    """Raw logits for every labeled question (the engine must have no calibration attached)."""
    import numpy as np
    from tqdm.auto import tqdm

    from .calibration import Decision

    out: list[Decision] = []
    for item in tqdm(items, desc="readout", unit="req", file=sys.stderr, disable=not progress):
        request = parse_request(item.request)
        response = engine.ask(request, include_logits=True)
        for qid, expected in item.labels.items():
            question = request.questions[qid]
            answer = response.answers[qid]
            out.append(Decision(
                id=item.id, group_id=item.group_id, task=item.task, qid=qid, kind=question.type,
                keys=list(answer.probabilities), label=label_to_index(question, expected),
                logits=np.asarray(answer.x_logits, dtype=np.float64), option_mass=float(answer.option_mass),
                question_hash=_question_hash(engine, qid, question),
            ))
    return out


def score_content_free(
    engine: "DecisionEngine", items: Sequence[LabeledItem], states: Sequence[str] = CONTENT_FREE_STATES, progress: bool = True
) -> dict[str, list[float]]:
    """Option prior per distinct question: probabilities averaged over content-free states (Zhao et al. 2021)."""
    from tqdm.auto import tqdm

    todo: dict[str, tuple[str, dict[str, Any]]] = {}
    for item in items:
        request = parse_request(item.request)
        for qid in item.labels:
            todo.setdefault(_question_hash(engine, qid, request.questions[qid]), (qid, item.request["questions"][qid]))
    priors: dict[str, list[float]] = {}
    keys = list(todo)
    chunk = 16  # questions per content-free request: one tiny prefix, many short branches
    bar = tqdm(total=len(keys) * len(states), desc="content-free", unit="q", file=sys.stderr, disable=not progress)
    for start in range(0, len(keys), chunk):
        part = keys[start:start + chunk]
        priors.update(_mean_over_states(engine, {f"q{i}": todo[h][1] for i, h in enumerate(part)}, part, states, bar))
    bar.close()
    return priors


def _mean_over_states(
    engine: "DecisionEngine", questions: dict[str, Any], hashes: Sequence[str], states: Sequence[str], bar: Any
) -> dict[str, list[float]]:
    """One content-free request per state with `questions` (`q0`, `q1`, ... for `hashes`), probabilities averaged."""
    import numpy as np

    sums: dict[str, Any] = {h: None for h in hashes}
    for state in states:
        response = engine.ask({"state": state, "questions": questions})
        for i, h in enumerate(hashes):
            p = np.asarray(list(response.answers[f"q{i}"].probabilities.values()), dtype=np.float64)
            sums[h] = p if sums[h] is None else sums[h] + p
        bar.update(len(hashes))
    return {h: [float(x) for x in sums[h] / len(states)] for h in hashes}


def rotate_options(criteria: dict[str, Any], shift: int) -> dict[str, Any]:
    return rotate_criteria(criteria, shift)


def _choice_qids(item: LabeledItem) -> list[str]:
    return [q for q in item.labels if item.request["questions"][q].get("type") == "choice"]


def score_permutations(
    engine: "DecisionEngine", items: Sequence[LabeledItem], rotations: int, progress: bool = True,
    original: dict[tuple[str, str], "np.ndarray"] | None = None,
) -> dict[tuple[str, str], list["np.ndarray"]]:
    """Probabilities (in the original option order) of each choice question under `rotations` option orders.

    Rotation 0 is the original order (taken from `original` when the readout already has it);
    a question with k options gets at most k distinct rotations.
    """
    from tqdm.auto import tqdm

    out: dict[tuple[str, str], list[np.ndarray]] = {}
    choice_items = [it for it in items if _choice_qids(it)]
    for item in tqdm(choice_items, desc=f"permute x{rotations}", unit="req", file=sys.stderr, disable=not progress):
        qids = _choice_qids(item)
        n_opts = min(len(item.request["questions"][q]["criteria"]) for q in qids)
        for shift in range(min(rotations, n_opts)):
            runs = _already_read(item, qids, original) if shift == 0 else None
            if runs is None:
                runs = _score_rotated(engine, item, qids, shift)
            for q in qids:
                out.setdefault((item.id, q), []).append(runs[q])
    return out


def _already_read(
    item: LabeledItem, qids: Sequence[str], original: dict[tuple[str, str], "np.ndarray"] | None
) -> dict[str, "np.ndarray"] | None:
    """The original order's probabilities from the readout, when it has every one of `qids`."""
    if original is None or not all((item.id, q) in original for q in qids):
        return None
    return {q: original[(item.id, q)] for q in qids}


def _score_rotated(engine: "DecisionEngine", item: LabeledItem, qids: Sequence[str], shift: int) -> dict[str, "np.ndarray"]:
    """The item's choice questions asked with their options rotated by `shift`, read back in the original order."""
    import numpy as np

    asked = item.request["questions"]
    questions = {q: {**asked[q], "criteria": rotate_options(asked[q]["criteria"], shift)} for q in qids}
    response = engine.ask({"state": item.request["state"], "questions": questions})
    return {q: np.asarray([response.answers[q].probabilities[n] for n in asked[q]["criteria"]]) for q in qids}


# ------------------------------------------------------------ JSON baseline
_BASELINE_COUNTS = ("requests", "invalid_json", "incomplete", "decisions", "correct", "unparsed", "seconds", "output_tokens")


def run_json_baseline(settings: "Settings", model_path: Path | str, items: Sequence[LabeledItem], progress: bool = True) -> dict[str, Any]:
    """Greedy JSON generation on the same model (cold: `reset()` before each request), scored per task."""
    from tqdm.auto import tqdm

    llm = open_chat_model(settings, model_path)
    per_task: dict[str, dict[str, float]] = {}
    try:
        for item in tqdm(items, desc="json baseline", unit="req", file=sys.stderr, disable=not progress):
            result = generate_json_answers(llm, parse_request(item.request))
            counts = per_task.setdefault(item.task, {k: 0.0 if k == "seconds" else 0 for k in _BASELINE_COUNTS})
            _count_baseline(counts, result, item.labels)
    finally:
        if hasattr(llm, "close"):
            llm.close()
    return {task: _summarise_baseline(t) for task, t in per_task.items()} | {"all": _summarise_baseline(_sum_counts(per_task.values()))}


def _count_baseline(t: dict[str, float], result: Any, labels: dict[str, Any]) -> None:
    """Add one generated request to its task's counts: an answer is right only with the label's value and JSON type."""
    t["requests"] += 1
    t["invalid_json"] += int(not result.valid_json)
    t["incomplete"] += int(not result.complete)
    t["seconds"] += result.seconds
    t["output_tokens"] += result.output_tokens
    for qid, expected in labels.items():
        got = result.answers.get(qid)
        t["decisions"] += 1
        t["unparsed"] += int(got is None)
        t["correct"] += int(got is not None and got == expected and type(got) is type(expected))


def _sum_counts(rows: Any) -> dict[str, float]:
    total: dict[str, float] = {}
    for row in rows:
        for k, v in row.items():
            total[k] = total.get(k, 0) + v
    return total


def _summarise_baseline(t: dict[str, float]) -> dict[str, float]:
    def rate(count: str, per: str) -> float:
        return t[count] / t[per] if t[per] else float("nan")

    return {
        "requests": int(t["requests"]),
        "decisions": int(t["decisions"]),
        "accuracy": rate("correct", "decisions"),
        "invalid_json_rate": rate("invalid_json", "requests"),
        "incomplete_rate": rate("incomplete", "requests"),
        "unparsed_answer_rate": rate("unparsed", "decisions"),
        "seconds_per_request": rate("seconds", "requests"),
        "output_tokens_per_request": rate("output_tokens", "requests"),
    }
