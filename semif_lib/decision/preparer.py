"""Request preparation: limits, rendering, guarded tokenization, answer-slot verification.

A request leaves here as a `PreparedRequest`: the token prefix its questions share and one `Branch` per
question (per option, for a sequence readout), every answer slot verified to be one token after the prompt.
Under `x_preamble` a slot branch also carries what to read after its first row (`Branch.follow`): the most
likely lead-in token, with the option slots verified to be one token each after it.
Work beyond a configured limit is refused here with a 413 naming the limit, before anything is decoded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

import numpy as np

from ..errors import InvalidRequestError
from ..limits import check_limit, check_question_counts, refuse_limit
from ..settings import Settings
from .planner import Demand
from .prefix_cache import CanonicalPartition, Partition, count_common_prefix
from .prompt import PromptRenderer, PromptState, QuestionPlan, generate_letter_slots, plan_rotations, state_texts
from .request import InternalRequest
from .schema import render_content

__all__ = ["Branch", "PreparedRequest", "RequestPreparer", "Tokenizer", "check_request_limits"]

Pieces = list[tuple[str, bool]]  # (text, parse_special) pieces of a guarded prompt


class Tokenizer(Protocol):
    def tokenize(self, text: str, add_special: bool = False, parse_special: bool = True) -> list[int]: ...

    def is_control(self, token: int) -> bool: ...

    def token_text(self, token: int) -> str: ...


Preamble = tuple[int, list[int], str]  # a lead-in token, the option slots' tokens after it, its text
PREAMBLE_CANDIDATES = 64  # the first non-option token is among the row's top few unless the options hold nearly all of it


def pick_preamble_token(row: np.ndarray, slot_tokens: Sequence[int], is_control: Callable[[int], bool]) -> int | None:
    """The most likely first token that is neither an option nor a control token (an end of turn leads to no answer)."""
    options = set(slot_tokens)
    top = np.argpartition(row, -PREAMBLE_CANDIDATES)[-PREAMBLE_CANDIDATES:]
    for token in top[np.argsort(row[top])[::-1]]:
        if int(token) not in options and not is_control(int(token)):
            return int(token)
    return None


@dataclass
class Branch:
    """One branch: the tokens a question decodes after the shared prefix, and the rows whose logits are read.

    A slot readout reads one row (the last). A sequence readout reads the rows that predict
    each option token; `targets` holds those tokens.
    """

    plan_index: int
    tokens: list[int]
    read_offsets: list[int]
    targets: list[int] = field(default_factory=list)
    rows: list[np.ndarray] = field(default_factory=list)
    # x_preamble: given the first row, the token to read the options after (with their tokens there, and its text)
    follow: Callable[[np.ndarray], Preamble | None] | None = None
    preamble: Preamble | None = None  # what the mode decoded after the branch; its row is rows[1]


@dataclass
class PreparedRequest:
    """A request tokenized and split: the shared prefix and the branches decoded after it."""

    plans: list[QuestionPlan]
    prefix: list[int]
    branches: list[Branch]
    slot_tokens: dict[int, list[int]]
    suffix_lengths: dict[str, int]
    partition: Partition = None  # the prefix-cache partition (OpenAI's `prompt_cache_key`); None: the shared one
    invariant: bool = False  # batch-invariant: decoded alone at the canonical placement (`DecisionEngine._run_mode`)
    preamble: bool = False  # x_preamble: each slot branch may read the options after one lead-in token too

    @property
    def input_tokens(self) -> int:
        seen: dict[int, int] = {}
        for branch in self.branches:  # a sequence readout's options share one suffix: count it once
            seen[branch.plan_index] = max(seen.get(branch.plan_index, 0), len(branch.tokens) - len(branch.targets))
        return len(self.prefix) + sum(seen.values()) + sum(len(j.targets) for j in self.branches)

    @property
    def demand(self) -> Demand:
        return Demand(tuple(self.prefix), max(len(j.tokens) for j in self.branches), sum(len(j.tokens) for j in self.branches),
                      self.partition)


def check_request_limits(request: InternalRequest, settings: Settings) -> None:
    """Questions and options beyond the configured limits: a 413 naming the limit and the value (`limits`)."""
    check_question_counts(request.questions, max_questions=settings.max_questions, max_options=settings.max_options)


class RequestPreparer:
    """Turns requests into prepared ones for one model's tokenizer and chat template."""

    def __init__(self, tokenizer: Tokenizer, renderer: PromptRenderer, settings: Settings, n_ctx: int) -> None:
        self.tokenizer, self.renderer, self.settings, self.n_ctx = tokenizer, renderer, settings, n_ctx
        self._tail_slots: dict[tuple[str, str], int | None] = {}
        self.letter_slots = self._find_letter_slots()

    def tokenize(self, text: str, add_special: bool = False, parse_special: bool = True) -> list[int]:
        return self.tokenizer.tokenize(text, add_special, parse_special)

    def contains_special_text(self, text: str) -> bool:
        """Whether `text` spells a special token (say ``<|im_end|>``) that parsing would turn into a control token."""
        return self.tokenize(text, parse_special=True) != self.tokenize(text, parse_special=False)

    def tokenize_pieces(self, pieces: Sequence[tuple[str, bool]]) -> list[int]:
        """Tokenize (text, parse_special) pieces one by one (see `PromptRenderer.render_pieces`)."""
        tokens: list[int] = []
        for i, (text, special) in enumerate(pieces):
            tokens += self.tokenize(text, self.renderer.add_bos and i == 0, special)
        return tokens

    # ------------------------------------------------------------------ prepare
    def prepare(self, request: InternalRequest) -> PreparedRequest:
        """Render, tokenize and split every question; verify each answer slot is one token.

        Work beyond the configured limits (questions, options, branch tokens, context) is a 413
        naming the limit and the value, before anything is decoded.
        """
        check_request_limits(request, self.settings)
        state_text: PromptState = request.conversation or render_content(request.state)  # chat turns, or the state's text
        plans = [plan for qid, q in request.questions.items()
                 for plan in plan_rotations(qid, q, self.renderer.slot_prefix, self.letter_slots)]
        # User text that spells a control token is tokenized apart, as text; otherwise the whole
        # prompt is tokenized in one piece, exactly as the text path (llama-server) does.
        guarded = any(self.contains_special_text(t) for t in [*state_texts(state_text), *(p.block for p in plans)])
        if guarded:
            prefix = self.tokenize_pieces(self.renderer.render_prefix_pieces(state_text))
        else:
            prefix = self.tokenize(self.renderer.render_prefix(state_text), self.renderer.add_bos)
        prompts = [self._tokenize_prompt(state_text, plan, guarded) for plan in plans]
        shared = min([len(prefix), *(count_common_prefix(prefix, tokens) for _, tokens, _ in prompts)])
        partition = CanonicalPartition(request.cache_key) if request.batch_invariant else request.cache_key
        prep = PreparedRequest(plans, prefix[:shared], [], {}, {}, partition=partition, invariant=request.batch_invariant,
                               preamble=request.preamble)
        for i, (plan, prompt) in enumerate(zip(plans, prompts, strict=True)):
            self._add_branches(prep, i, plan, prompt)
        self._check_size(prep)
        return prep

    def _tokenize_prompt(self, state_text: PromptState, plan: QuestionPlan, guarded: bool) -> tuple[str, list[int], Pieces | None]:
        text = self.renderer.render(state_text, plan.block)
        pieces = self.renderer.render_pieces(state_text, plan.block) if guarded else None
        tokens = self.tokenize_pieces(pieces) if pieces else self.tokenize(text, self.renderer.add_bos)
        return text, tokens, pieces

    def _add_branches(self, prep: PreparedRequest, i: int, plan: QuestionPlan, prompt: tuple[str, list[int], Pieces | None]) -> None:
        text, tokens, pieces = prompt
        suffix = tokens[len(prep.prefix):]
        prep.suffix_lengths[plan.qid if not plan.rotation else f"{plan.qid}@{plan.rotation}"] = len(suffix)
        if plan.readout == "slot":
            prep.slot_tokens[i] = self._verify_slots(plan, text, tokens, pieces)
            follow = self._preamble_reader(plan, text, tokens, pieces, prep.slot_tokens[i]) if prep.preamble else None
            prep.branches.append(Branch(i, suffix, [len(suffix) - 1], follow=follow))
            return
        for option in plan.slots:
            extra = self._option_tokens(plan, text, tokens, option, pieces)
            prep.branches.append(Branch(i, suffix + extra, list(range(len(suffix) - 1, len(suffix) - 1 + len(extra))), extra))

    def _check_size(self, prep: PreparedRequest) -> None:
        shared = len(prep.prefix)
        check_limit("max_branch_tokens", prep.input_tokens - shared, self.settings.max_branch_tokens, field="questions")
        longest = max(len(j.tokens) for j in prep.branches)
        if shared + longest > self.n_ctx:
            raise refuse_limit("n_ctx", shared + longest, self.n_ctx, field="state",
                               detail=f"the prompt needs {shared} prefix tokens + {longest} question tokens = {shared + longest}")

    # ------------------------------------------------------------------ answer slots
    def _find_letter_slots(self) -> list[str]:
        """Choice labels (A-Z, then AA-ZZ) that this tokenizer reads as one token after the assistant header."""
        text = self.renderer.render("state", " question")
        tokens = self.tokenize(text, self.renderer.add_bos)
        tail = self._answer_tail(text, tokens, " question")
        return [s for s in generate_letter_slots() if self._slot_token(text, tokens, tail, self.renderer.slot_prefix + s) is not None]

    def _answer_tail(self, text: str, tokens: list[int], block: str) -> str | None:
        """The template text after the question, if it starts with a control token.

        llama.cpp splits text at special tokens before BPE, so a slot appended to the prompt
        tokenizes the same after the full prompt as after this tail; checking the tail is exact
        and much cheaper than re-tokenizing a 2,000-token prompt per option.
        """
        cut = text.rfind(block)
        if cut < 0:
            return None
        tail = text[cut + len(block):]
        tail_tokens = self.tokenize(tail)
        if not tail_tokens or tokens[-len(tail_tokens):] != tail_tokens:
            return None
        return tail if self.tokenizer.is_control(tail_tokens[0]) else None

    def _extend_prompt(self, text: str, pieces: Pieces | None, extra: str, special: bool) -> list[int]:
        """Tokens of the prompt followed by `extra`, tokenized the way the prompt itself was."""
        if pieces is None:
            return self.tokenize(text + extra, self.renderer.add_bos)
        if special:  # our own answer slot: it joins the template tail, as in one-piece tokenization
            return self.tokenize_pieces(pieces[:-1] + [(pieces[-1][0] + extra, pieces[-1][1])])
        return self.tokenize_pieces(pieces + [(extra, False)])

    def _slot_token(self, text: str, tokens: list[int], tail: str | None, slot: str, pieces: Pieces | None = None) -> int | None:
        """The token id if `tokenize(prompt + slot) == tokenize(prompt) + [id]`, else None."""
        if tail is not None:
            key = (tail, slot)
            if key not in self._tail_slots:
                base = self.tokenize(tail)
                with_slot = self.tokenize(tail + slot)
                ok = len(with_slot) == len(base) + 1 and with_slot[:-1] == base
                self._tail_slots[key] = with_slot[-1] if ok else None
            return self._tail_slots[key]
        with_slot = self._extend_prompt(text, pieces, slot, special=True)
        ok = len(with_slot) == len(tokens) + 1 and with_slot[:-1] == tokens
        return with_slot[-1] if ok else None

    def _verify_slots(self, plan: QuestionPlan, text: str, tokens: list[int], pieces: Pieces | None = None) -> list[int]:
        """`tokenize(prompt + slot) == tokenize(prompt) + [slot_token]` for every slot, all distinct."""
        tail = self._answer_tail(text, tokens, plan.block)
        ids = []
        for slot in plan.slots:
            token = self._slot_token(text, tokens, tail, slot, pieces)
            if token is None:
                raise InvalidRequestError(
                    f"questions.{plan.qid}: answer slot {slot!r} is not a single token after this model's "
                    f"assistant prefix, so its logit cannot be read in one pass; use \"readout\": \"sequence\"",
                    field=f"questions.{plan.qid}.criteria",
                )
            ids.append(token)
        if len(set(ids)) != len(ids):
            raise InvalidRequestError(
                f"questions.{plan.qid}: {len(ids)} options cannot be given distinct single-token answer slots "
                f"with this model's tokenizer",
                field=f"questions.{plan.qid}.criteria",
            )
        return ids

    def _preamble_reader(self, plan: QuestionPlan, text: str, tokens: list[int], pieces: Pieces | None,
                         slots: list[int]) -> Callable[[np.ndarray], Preamble | None]:
        """What a slot branch reads after its first row: the most likely lead-in token, if the options tokenize after it."""
        tail = self._answer_tail(text, tokens, plan.block)

        def follow(row: np.ndarray) -> Preamble | None:
            token = pick_preamble_token(row, slots, self.tokenizer.is_control)
            if token is None:
                return None
            lead = self.tokenizer.token_text(token)
            if self._slot_token(text, tokens, tail, lead, pieces) != token:
                return None  # the lead-in would merge with the prompt's end: not a token the model reads there
            joined = pieces[:-1] + [(pieces[-1][0] + lead, pieces[-1][1])] if pieces else None
            after = [self._slot_token(text + lead, tokens + [token], None if tail is None else tail + lead, slot, joined)
                     for slot in plan.slots]
            if None in after or len(set(after)) != len(after):
                return None  # an option would merge with the lead-in ("**Yes" as one token): no reading after it
            return token, after, lead  # type: ignore[return-value]

        return follow

    def _option_tokens(self, plan: QuestionPlan, text: str, tokens: list[int], option: str, pieces: Pieces | None = None) -> list[int]:
        full = self._extend_prompt(text, pieces, option, special=False)
        if full[: len(tokens)] != tokens or len(full) == len(tokens):
            raise InvalidRequestError(
                f"questions.{plan.qid}: option {option!r} does not tokenize cleanly after the prompt",
                field=f"questions.{plan.qid}.criteria",
            )
        return full[len(tokens):]
