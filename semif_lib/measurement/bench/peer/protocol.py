"""What `semif bench peer` sends each server and how it reads the answers: the protocol and the clients.

The decision path is one `/invocations` request per state (`ask_decision`); llama-server gets one
chat completion per question with `max_tokens: 1` and `top_logprobs: 20` over the decision path's
rendered prompt (`ask_server_logprobs`, sequential or concurrent), or one request that writes every
answer as JSON (`ask_server_json`). Each call returns a `Pass`: wall seconds, the answers, and what
the server says it computed. Cold passes mark the state with a line no server has seen (`mark_state`).
"""

from __future__ import annotations

import math
import statistics
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ....decision.prompt import QuestionPlan, build_messages, generate_letter_slots, plan_question
from ....decision.schema import parse_request, render_content
from ....errors import InvalidRequestError
from ...answers import read_probabilities, top_option
from ...baseline import build_json_messages, parse_generation
from ..harness import percentile, post_json, rounded
from ..workload import first_questions
from .config import CLIENT_TIMEOUT_S
from .results import ClientPhase

__all__ = [
    "TOP_LOGPROBS",
    "Generation",
    "Pass",
    "argmax_answers",
    "ask_decision",
    "ask_server_json",
    "ask_server_logprobs",
    "decision_request",
    "logprob_body",
    "mark_state",
    "plan_peer_questions",
    "read_slot_probabilities",
    "run_clients",
    "warm_up",
]

TOP_LOGPROBS = 20  # the most OpenAI's API (and llama-server's default) returns


# ---------------------------------------------------------------- requests and answers
def mark_state(state: Any, tag: str) -> str:
    """The state text with a first line no server has seen, so the pass reading it is cold on both sides."""
    return f"Case reference: {tag}\n{render_content(state)}"


def plan_peer_questions(request: dict[str, Any]) -> list[tuple[QuestionPlan, list[dict[str, str]]]]:
    """Per question: its plan (option keys and slot tokens) and the chat messages the decision path renders.

    `build_messages` is what the engine renders with the GGUF's chat template, and llama-server
    applies the same template to the same messages, so both read the same prompt; the answer slot
    (`Yes`, `A`, `0`, ...) is the first token after the assistant header on both sides.
    """
    parsed = parse_request(request)
    state_text = render_content(parsed.state)
    letters = generate_letter_slots()
    plans = [plan_question(qid, q, "", letters) for qid, q in parsed.questions.items()]
    if any(plan.readout != "slot" for plan in plans):
        raise InvalidRequestError("bench peer compares slot readouts; a question asks for readout 'sequence'", field="questions")
    return [(plan, build_messages(state_text, plan.block)) for plan in plans]


def logprob_body(messages: list[dict[str, str]], top_logprobs: int = TOP_LOGPROBS) -> dict[str, Any]:
    """One chat completion for one question: one token, greedy, its top log-probabilities, prompt cache on."""
    return {"messages": messages, "max_tokens": 1, "temperature": 0.0, "logprobs": True, "top_logprobs": top_logprobs,
            "seed": 0, "cache_prompt": True}


def read_slot_probabilities(response: dict[str, Any], plan: QuestionPlan) -> tuple[dict[str, float], int]:
    """(P(option) renormalised over the options, options missing from the top log-probs) of one completion.

    A missing option gets probability 0 before renormalising; with every option missing the
    answer is uniform. llama-server's log-probs come from the raw logits (not post-sampling), so
    with every option present this is the softmax over the slot logits, as the decision path reads it.
    """
    top = response["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    found: dict[str, float] = {}
    for item in top:
        found.setdefault(item["token"], item["logprob"])
    weights = [math.exp(found[slot]) if slot in found else 0.0 for slot in plan.slots]
    total = sum(weights)
    probs = [w / total for w in weights] if total > 0 else [1.0 / len(weights)] * len(weights)
    return dict(zip(plan.keys, probs, strict=True)), sum(slot not in found for slot in plan.slots)


def decision_request(row: dict[str, Any], tag: str, questions: int | None = None) -> dict[str, Any]:
    """The workload line as a decision request, its state marked with `tag` (first `questions` only)."""
    kept = first_questions(row, questions)["questions"]
    return {"id": row.get("id"), "state": mark_state(row["state"], tag), "questions": kept}


def argmax_answers(probs: dict[str, dict[str, float]], request: dict[str, Any]) -> dict[str, Any]:
    """The decision path's answers in the JSON baseline's terms: True/False, an option name, a level number."""
    out: dict[str, Any] = {}
    for qid, p in probs.items():
        best = top_option(p)
        kind = request["questions"][qid]["type"]
        out[qid] = (best == "true") if kind == "noul" else int(best) if kind == "score" else best
    return out


# ---------------------------------------------------------------- one pass of one path on one state
@dataclass(frozen=True)
class Generation:
    """What server-json wrote: whether it parsed, whether it answered every question, the answers, its first characters."""

    valid_json: bool
    complete: bool
    answers: dict[str, Any]
    text_head: str


@dataclass
class Pass:
    """One path on one state: wall seconds, answers, and what the server says it computed."""

    seconds: float
    decisions: int = 0
    probs: dict[str, dict[str, float]] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)  # options absent from the top log-probs, per question
    requests: int = 0
    output_tokens: int = 0
    evaluated_tokens: int = 0  # tokens the server ran through the model (its own counters; cached ones excluded)
    compute_s: float = 0.0  # the server's own compute time for them
    prefill: tuple[int, float] | None = None  # (tokens, seconds) of this pass's long prefill, if it had one
    generation: Generation | None = None  # server-json only
    latencies: list[float] = field(default_factory=list)


def add_server_timings(result: Pass, response: dict[str, Any]) -> None:
    """Fold one llama-server response's `timings` (prompt_n / prompt_ms / predicted_*) into the pass."""
    t = response.get("timings") or {}
    prompt_n, prompt_ms = int(t.get("prompt_n", 0)), float(t.get("prompt_ms", 0.0))
    result.evaluated_tokens += prompt_n
    result.compute_s += (prompt_ms + float(t.get("predicted_ms", 0.0))) / 1000
    result.output_tokens += int(response.get("usage", {}).get("completion_tokens", 0))
    if prompt_n > 0 and prompt_ms > 0 and (result.prefill is None or prompt_n > result.prefill[0]):
        result.prefill = (prompt_n, prompt_ms / 1000)


def ask_server_logprobs(http: Any, url: str, planned: Sequence[tuple[QuestionPlan, list[dict[str, str]]]],
                        concurrent: int = 1) -> Pass:
    """Every question as its own chat completion: one after another, or `concurrent` in flight at once."""
    def ask(item: tuple[QuestionPlan, list[dict[str, str]]]) -> tuple[float, dict[str, Any]]:
        return post_json(http, url, logprob_body(item[1]))

    t0 = time.perf_counter()
    if concurrent > 1:
        with ThreadPoolExecutor(max_workers=concurrent) as pool:
            answers = list(pool.map(ask, planned))
    else:
        answers = [ask(item) for item in planned]
    result = Pass(time.perf_counter() - t0, decisions=len(planned), requests=len(planned))
    for (plan, _), (seconds, response) in zip(planned, answers, strict=True):
        result.probs[plan.qid], result.missing[plan.qid] = read_slot_probabilities(response, plan)
        result.latencies.append(seconds)
        add_server_timings(result, response)
    if concurrent > 1:  # overlapping requests each report the batches they shared: the server computed for at most the wall time
        result.compute_s = min(result.compute_s, result.seconds)
    return result


def ask_server_json(http: Any, url: str, request: dict[str, Any]) -> Pass:
    """The state's questions answered by generation: one compact JSON array, greedy (`baseline.JSON_SYSTEM_PROMPT`)."""
    parsed = parse_request(request)
    body = {"messages": build_json_messages(parsed), "max_tokens": 16 + 12 * len(parsed.questions), "temperature": 0.0, "seed": 0}
    seconds, response = post_json(http, url, body)
    result = Pass(seconds, decisions=len(parsed.questions), requests=1)
    add_server_timings(result, response)
    text = response["choices"][0]["message"]["content"] or ""
    valid, complete, answers = parse_generation(parsed, text)
    result.generation = Generation(valid_json=valid, complete=complete, answers=answers, text_head=text[:120])
    return result


def ask_decision(http: Any, url: str, request: dict[str, Any]) -> Pass:
    """One `/invocations` request with every question; its `x_timing` and `usage` are the server's own counters."""
    seconds, response = post_json(http, url + "/invocations", request)
    timing, usage = response["x_timing"], response["usage"]
    prefilled = timing["prefix_tokens"] - usage["x_cached_tokens"]
    result = Pass(seconds, decisions=len(request["questions"]), requests=1, output_tokens=usage["output_tokens"],
                  evaluated_tokens=prefilled + timing["branch_tokens"], compute_s=timing["prefill_s"] + timing["branches_s"],
                  prefill=(prefilled, timing["prefill_s"]) if prefilled > 0 and timing["prefill_s"] > 0 else None)
    result.probs = {qid: read_probabilities(answer) for qid, answer in response["answers"].items()}
    result.missing = {qid: int(not well_formed(p, request["questions"][qid])) for qid, p in result.probs.items()}
    return result


def well_formed(probs: dict[str, float], question: dict[str, Any]) -> bool:
    """Every option of the question has a probability, and they sum to 1."""
    criteria = question.get("criteria")
    expected = 2 if question["type"] == "noul" else len(criteria or [])
    return len(probs) == expected and abs(sum(probs.values()) - 1.0) < 1e-3


def run_clients(clients: int, requests: Sequence[dict[str, Any]], ask_state: Callable[[Any, dict[str, Any]], Pass]) -> ClientPhase:
    """`clients` threads, each with its own states (request i goes to client i % clients), sent back to back.

    A state that fails (an error status, a timeout) is counted in `failed_states` with its first
    error, and its decisions are not counted as answered: one slow answer must not cost the run.
    """
    import httpx

    failures: list[str] = []

    def client(chunk: Sequence[dict[str, Any]]) -> list[Pass]:
        answered = []
        with httpx.Client(timeout=CLIENT_TIMEOUT_S) as http:
            for request in chunk:
                try:
                    answered.append(ask_state(http, request))
                except (RuntimeError, httpx.HTTPError) as exc:
                    failures.append(f"{type(exc).__name__}: {str(exc)[:300]}")
        return answered

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        passes = [p for chunk in pool.map(client, [requests[c::clients] for c in range(clients)]) for p in chunk]
    wall = time.perf_counter() - t0
    states = [p.seconds for p in passes]
    calls = [s for p in passes for s in (p.latencies or [p.seconds])]
    decisions = sum(p.decisions for p in passes)
    return ClientPhase(clients=clients, states=len(requests), decisions=decisions, requests=sum(p.requests for p in passes),
                       failed_states=len(failures), first_failure=failures[0] if failures else None,
                       seconds=round(wall, 3), decisions_per_s=round(decisions / wall, 3),
                       state_latency_p50_s=rounded(statistics.median(states) if states else None),
                       state_latency_p95_s=rounded(percentile(states, 0.95)),
                       request_latency_p50_s=rounded(statistics.median(calls) if calls else None),
                       request_latency_p95_s=rounded(percentile(calls, 0.95)))


def warm_up(http: Any, decision_url: str, chat_url: str) -> None:
    """One small request to each server before anything is timed (first-request costs belong to neither path)."""
    request = {"state": f"Warm-up {uuid.uuid4().hex[:6]}.", "questions": {"q": {"type": "noul", "instructions": "Is this a test?"}}}
    post_json(http, decision_url + "/invocations", request)
    post_json(http, chat_url, logprob_body(plan_peer_questions(request)[0][1]))
