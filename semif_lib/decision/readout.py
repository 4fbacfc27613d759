"""Turn logits into answers: softmax over option slots, option mass, the preamble's marginal, and the three answer shapes.

Pure numpy, so the arithmetic is testable without a model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from .prompt import QuestionPlan
from .responses import ChoiceAnswer, NoulAnswer, ScoreAnswer

if TYPE_CHECKING:
    from .preparer import PreparedRequest


def logsumexp(row: np.ndarray) -> float:
    """Stable log of the softmax normaliser of a full vocabulary row."""
    top = float(np.max(row))
    return top + float(np.log(np.sum(np.exp(row - top, dtype=np.float64))))


def softmax(values: Sequence[float]) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    arr = np.exp(arr - arr.max())
    return arr / arr.sum()


def read_slot_logits(row: np.ndarray, slot_tokens: Sequence[int]) -> tuple[np.ndarray, np.ndarray, float]:
    """Slot readout of one logits row: (option logits, probabilities over the options, option mass)."""
    logits = np.asarray(row[list(slot_tokens)], dtype=np.float64)
    mass = float(np.sum(np.exp(logits - logsumexp(row))))
    return logits, softmax(logits), mass


def read_marginal(row: np.ndarray, slot_tokens: Sequence[int], preamble: int, after: np.ndarray,
                  slots_after: Sequence[int]) -> tuple[np.ndarray, np.ndarray, float, dict[str, Any]]:
    """The options read first and after the preamble token, added: P(o) = P(o) + P(t) P(o | t).

    Used only where the model's own distribution says `t` leads into an answer: the options hold more
    of the distribution after it than at the start. Otherwise the plain slot reading, with why.
    """
    logits, probs, mass = read_slot_logits(row, slot_tokens)
    normaliser = logsumexp(row)
    first = np.exp(logits - normaliser)
    p_preamble = float(np.exp(row[preamble] - normaliser))
    then = np.exp(np.asarray(after[list(slots_after)], dtype=np.float64) - logsumexp(after))
    info = {"preamble_mass": p_preamble, "preamble_used": bool(then.sum() > mass)}
    if not info["preamble_used"]:
        return logits, probs, mass, info
    joint = first + p_preamble * then
    return np.log(joint), joint / joint.sum(), float(joint.sum()), info


def sum_sequence_logprobs(rows: Sequence[np.ndarray], option_tokens: Sequence[int]) -> float:
    """log P(option text | prompt): `rows[j]` predicts `option_tokens[j]`."""
    return float(sum(row[tok] - logsumexp(row) for row, tok in zip(rows, option_tokens, strict=True)))


def read_sequence_scores(logprobs: Sequence[float], lengths: Sequence[int], length_normalize: bool) -> tuple[np.ndarray, np.ndarray, float]:
    """Sequence readout: (scores, probabilities over options, mass of the exact option texts)."""
    raw = np.asarray(logprobs, dtype=np.float64)
    scores = raw / np.asarray(lengths, dtype=np.float64) if length_normalize else raw
    return scores, softmax(scores), float(np.sum(np.exp(raw)))


def choice_confidence(probs: Sequence[float]) -> float:
    """Jev's reference confidence of a choice: the top probability m normalised, (m - 1/n) / (1 - 1/n).

    0 when the options are equally likely, 1 when one has all the mass (jevcompat `confidence.formula`).
    """
    n = len(probs)
    if n <= 1:
        return 1.0
    return float(min(1.0, max(0.0, (max(probs) - 1 / n) / (1 - 1 / n))))


def score_confidence(probs: Sequence[float]) -> float:
    """Jev's reference confidence of a score: max(0, 1 - sum_i p_i |i - k| / D), k the most probable level and
    D = sum_i |i - (n-1)/2| / n, the spread of the uniform distribution around its middle."""
    n = len(probs)
    if n <= 1:
        return 1.0
    k = int(np.argmax(probs))
    spread = sum(p * abs(i - k) for i, p in enumerate(probs))
    uniform = sum(abs(i - (n - 1) / 2) for i in range(n)) / n
    return float(min(1.0, max(0.0, 1 - spread / uniform)))


def build_answer(plan: QuestionPlan, probs: np.ndarray, option_mass: float) -> NoulAnswer | ChoiceAnswer | ScoreAnswer:
    """Shape probabilities over `plan.keys` into the System One answer for the question type."""
    p = [float(x) for x in probs]
    probabilities = dict(zip(plan.keys, p, strict=True))
    top = int(np.argmax(probs))
    if plan.kind == "noul":
        return NoulAnswer(noul=probabilities["true"], probabilities=probabilities, option_mass=option_mass)
    if plan.kind == "choice":
        return ChoiceAnswer(choice=plan.keys[top], confidence=choice_confidence(p), top_probability=p[top],
                            probabilities=probabilities, option_mass=option_mass)
    expected = float(sum(i * pi for i, pi in enumerate(p)))
    return ScoreAnswer(score=expected, confidence=score_confidence(p), top_probability=p[top], legend=plan.legend,
                       probabilities=probabilities, option_mass=option_mass)


Reading = tuple[QuestionPlan, np.ndarray, np.ndarray, float]  # (plan, logits, probabilities, option mass)


def read_slot_branch(branch: Any, slot_tokens: Sequence[int]) -> tuple[np.ndarray, np.ndarray, float, dict[str, Any] | None]:
    """A slot branch's reading: plain, or with its preamble's (`Branch.preamble`, set when the mode decoded one)."""
    if branch.preamble is None:
        return (*read_slot_logits(branch.rows[0], slot_tokens), None)
    token, slots_after, text = branch.preamble
    logits, probs, mass, info = read_marginal(branch.rows[0], slot_tokens, token, branch.rows[1], slots_after)
    return logits, probs, mass, {"preamble_token": text, **info}


def read_answers(prep: "PreparedRequest", calibration: Any = None, include_logits: bool = False) -> dict[str, Any]:
    """Every question's answer from the logits rows its branches read (slot or sequence readout).

    `calibration` (a loaded calibration file) maps logits to calibrated answers;
    `include_logits` adds each answer's raw option logits (`x_logits`), which calibration fitting needs.
    """
    read, preambles = read_plans(prep)
    answers: dict[str, Any] = {}
    for qid, rotations in read.items():
        reading = rotations[0] if len(rotations) == 1 else average_rotations(rotations)
        answer = shape_answer(reading, calibration)
        if len(rotations) > 1:
            note_rotations(answer, rotations)
        for key, value in preambles.get(qid, {}).items():  # the request order's reading (rotations read their own)
            setattr(answer, f"x_{key}", value)
        if include_logits:
            answer.x_logits = [float(x) for x in reading[1]]
        answers[qid] = answer
    return answers


def read_plans(prep: "PreparedRequest") -> tuple[dict[str, list[Reading]], dict[str, dict[str, Any]]]:
    """Each plan's reading from its branches, by question (one per option order asked), and the preamble readings asked for."""
    by_plan: dict[int, list] = {}
    for branch in prep.branches:
        by_plan.setdefault(branch.plan_index, []).append(branch)
    read: dict[str, list[Reading]] = {}
    preambles: dict[str, dict[str, Any]] = {}
    for i, plan in enumerate(prep.plans):
        branches = by_plan[i]
        if plan.readout == "slot":
            logits, probs, mass, preamble = read_slot_branch(branches[0], prep.slot_tokens[i])
            if prep.preamble and plan.rotation == 0:  # asked for: said, even where no token qualified to be read
                preambles[plan.qid] = preamble or {"preamble_token": None, "preamble_used": False}
        else:
            logprobs = [sum_sequence_logprobs(j.rows, j.targets) for j in branches]
            logits, probs, mass = read_sequence_scores(logprobs, [len(j.targets) for j in branches], plan.length_normalize)
        read.setdefault(plan.qid, []).append((plan, logits, probs, mass))
    return read, preambles


def shape_answer(reading: Reading, calibration: Any) -> NoulAnswer | ChoiceAnswer | ScoreAnswer:
    """One reading's answer: calibrated where a file is loaded, its position prior removed where asked and the file has one."""
    plan, logits, probs, mass = reading
    debiased = calibration.remove_position_prior(plan, logits) if plan.debias == "prior" and calibration is not None else None
    if debiased is not None:
        answer = calibration.apply(plan, debiased, probs, mass, position_debiased=True)
        answer.x_debias = "prior"
    elif calibration is not None:
        answer = calibration.apply(plan, logits, probs, mass)
    else:
        answer = build_answer(plan, probs, mass)
    if plan.debias == "prior" and debiased is None:  # the server's default for an option count the file has no prior for
        answer.x_debias = "none"
        answer.x_debias_missing = f"no position prior for {len(plan.keys)} options in the calibration file"
    return answer


def note_rotations(answer: ChoiceAnswer, rotations: Sequence[Reading]) -> None:
    """Mark an answer averaged over option orders: each order's own argmax (request order first) and their agreement."""
    votes = [r[0].keys[int(np.argmax(r[2]))] for r in rotations]
    answer.x_debias = "rotations"
    answer.x_rotation_choices = votes
    answer.x_rotation_agreement = sum(v == answer.choice for v in votes) / len(votes)


def average_rotations(rotations: Sequence[Reading]) -> Reading:
    """One reading from several option orders: each option's probability averaged over the orders (request order kept).

    The averaged probabilities' logs stand in for logits, so a calibration file applies as to any answer.
    """
    plan = next(r[0] for r in rotations if r[0].rotation == 0)
    mean = np.zeros(len(plan.keys))
    for p, _, probs, _ in rotations:
        index = {key: j for j, key in enumerate(p.keys)}
        mean += np.asarray([probs[index[key]] for key in plan.keys], dtype=np.float64)
    mean /= len(rotations)
    return plan, np.log(np.clip(mean, 1e-300, None)), mean, float(np.mean([r[3] for r in rotations]))
