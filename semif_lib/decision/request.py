"""The internal request: what the engine answers, with every server default resolved once.

Both wires parse into their own models (`schema.DecisionRequest` is the Jev / System One wire; `openai_schema`
maps an OpenAI Decisions body onto it and adds a conversation and a cache partition); `resolve_request` then turns
either into one `InternalRequest`, here and nowhere else: the execution mode, batch invariance, the preamble readout,
each choice question's debias and rotations, the cache partition and the conversation. The preparer, the engine and
conditioning take only this type, so a request field is one field here, one line per wire and one line in
`resolve_request`.

It also carries what its preparation cost (`prepared_by`): a request counted against a budget or admitted to a
session is rendered and tokenized once, and scored from that same preparation.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping, TypeVar, get_args

from ..errors import InvalidRequestError
from ..settings import MODES, Debias, Settings
from .schema import ChoiceQuestion, Content, DecisionRequest

__all__ = ["EngineMode", "InternalRequest", "ServerDefaults", "resolve_request"]

EngineMode = Literal["fresh", "serial", "parallel", "oneshot"]  # oneshot: benchmarks only
ENGINE_MODES: tuple[str, ...] = get_args(EngineMode)
Prepared = TypeVar("Prepared")  # the preparer's result (`preparer.PreparedRequest`)


@dataclass(frozen=True)
class ServerDefaults:
    """What a request may leave unset, as this server sets it (the `Settings` fields of the same meaning)."""

    mode: str
    batch_invariant: bool
    preamble: bool
    debias: Debias
    rotations: int

    @classmethod
    def of(cls, settings: Settings) -> "ServerDefaults":
        return cls(mode=settings.mode, batch_invariant=settings.batch_invariant, preamble=settings.preamble_readout,
                   debias=settings.default_debias, rotations=settings.default_rotations)


@dataclass(frozen=True, eq=False)
class InternalRequest:
    """One request as the engine answers it: the wire's questions about one state, nothing left to the server."""

    state: Content
    questions: Mapping[str, Any]  # qid -> NoulQuestion | ChoiceQuestion | ScoreQuestion; a choice's debias and rotations set
    mode: str
    batch_invariant: bool
    preamble: bool
    model: str | None = None  # the name the client asked for (serving checks it; the engine answers with its own)
    conversation: tuple[dict[str, str], ...] | None = None  # chat turns that are the state (OpenAI's `input` as messages)
    cache_key: str | None = None  # the prefix-cache partition (OpenAI's `prompt_cache_key`); None: the default one
    prior_asked: tuple[str, ...] = ()  # questions whose own x_debias is "prior" (a 400 without the file's prior; a default falls back)
    _prepared: list[Any] = field(default_factory=list, repr=False)  # [(preparer, PreparedRequest)]: one preparation, reused

    def with_questions(self, questions: Mapping[str, Any]) -> "InternalRequest":
        """The same request asking `questions` instead (a stage of a conditioned request): prepared anew."""
        return dataclasses.replace(self, questions=questions, _prepared=[])

    def with_mode(self, mode: str) -> "InternalRequest":
        """The same request in another execution mode (the preparation does not depend on it, so it is kept)."""
        return dataclasses.replace(self, mode=check_mode(mode))

    def prepared_by(self, preparer: Any, prepare: Callable[["InternalRequest"], Prepared]) -> Prepared:
        """`prepare(self)` once per preparer: counting a budget, admitting a session and scoring share one tokenization."""
        for owner, prep in self._prepared:
            if owner is preparer:
                return prep
        prep = prepare(self)
        self._prepared.append((preparer, prep))
        return prep


def check_mode(mode: str) -> str:
    if mode not in ENGINE_MODES:
        raise InvalidRequestError(f"mode must be one of {', '.join(MODES)}; got {mode!r}", field="mode")
    return mode


def resolve_request(request: DecisionRequest, defaults: ServerDefaults, mode: str | None = None) -> InternalRequest:
    """`request` (either wire's, parsed) with every default it leaves unset taken from the server: the one resolver.

    `mode` is the transport's (a query parameter or SageMaker's CustomAttributes); unset, the server's SEMIF_MODE.
    """
    questions = {qid: _with_defaults(q, defaults) for qid, q in request.questions.items()}
    return InternalRequest(
        state=request.state,
        questions=questions,
        mode=check_mode(mode or defaults.mode),
        batch_invariant=defaults.batch_invariant if request.batch_invariant is None else request.batch_invariant,
        preamble=defaults.preamble if request.preamble is None else request.preamble,
        model=request.model,
        conversation=request.conversation,
        cache_key=request.cache_key,
        prior_asked=tuple(qid for qid, q in request.questions.items() if getattr(q, "debias", None) == "prior"),
    )


def _with_defaults(question: Any, defaults: ServerDefaults) -> Any:
    """A choice question's unset x_debias / x_rotations from SEMIF_DEFAULT_DEBIAS / SEMIF_DEFAULT_ROTATIONS."""
    if isinstance(question, ChoiceQuestion):
        return question.with_server_defaults(defaults.debias, defaults.rotations)
    return question
