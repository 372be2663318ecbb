"""State of the corrective-RAG graph.

The host only sends ``messages`` (:class:`InputState`) and only gets the
conversation back (:class:`OutputState`; the final message's ``response_metadata``
carries the outcome, sources and LLM-call count). Everything else is the
per-question working state, reset by ``prepare`` at the start of every question
and cleared by the finalize nodes, so a thread is always ready for its next
question. The retry caps are copied from settings into the state, so routing is a
pure function of the state. ``llm_calls`` has a reducer: each node returns the
calls it made, and ``prepare`` starts a new count with :func:`new_count` (an ``Overwrite``); ``usage``
(tokens per node, :mod:`rags_expert.llm.usage`) is added up and restarted with it. Every key's default is
in the one table :data:`DEFAULTS`, read through :func:`value`.
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any, TypedDict

from langchain_core.documents import Document
from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from langgraph.types import Overwrite

from rags_expert.llm.usage import add_usage
from rags_expert.rag._shared.timings import add_timings
from rags_expert.rag.profiles import RefinePlan, profile_for
from rags_expert.settings import RagsExpertSettings


def new_count(calls: int = 0) -> Overwrite:
    """The ``llm_calls`` write that starts a question's count at ``calls`` (used by ``prepare``): it bypasses
    the adding reducer (:class:`~langgraph.types.Overwrite`)."""
    return Overwrite(calls)


class InputState(TypedDict):
    """What a host sends: the conversation (the last human message is the question)."""

    messages: Annotated[list[AnyMessage], add_messages]


class OutputState(TypedDict):
    """What a host gets back: the conversation, ending with the answer (outcome and sources in its metadata)."""

    messages: Annotated[list[AnyMessage], add_messages]


class RagState(InputState, total=False):
    """The full working state of one question."""

    question: str
    """The standalone question being answered (used for grading and answering)."""
    query: str
    """The current retrieval query (the question, or its latest rephrasing)."""
    queries: list[str]
    """Every query retrieved with so far, in order."""
    documents: list[Document]
    """Chunks returned by the latest retrieval."""
    relevant: list[Document]
    """Relevant chunks accumulated over the retrieval rounds; chunk n of the context is relevant[n-1]."""
    graded: dict[str, bool]
    """Verdict per chunk id, so no chunk is graded twice for the same question."""
    new_relevant: int
    """How many relevant chunks the latest grading added."""
    answer: str
    """The latest generated answer (or the extractive fallback's quote)."""
    answer_kind: str
    """``"extractive"`` once the extractive fallback found a sentence to quote; else empty (generated)."""
    speculative: str
    """What became of this retrieval's speculative draft: ``"kept"`` (it is ``answer``), ``"discarded"``, or ""."""
    refine: bool
    """Whether relevant chunks are cut to their relevant strips before the answer (:mod:`rags_expert.rag.grade.refinement`)."""
    strips: dict[str, str]
    """The kept strips of each refined relevant chunk, by chunk id (the chunk's text in the answer prompt)."""
    grounded: bool
    useful: bool
    feedback: str
    """Why the latest answer was rejected (fed to regeneration or rephrasing)."""
    partial_answer: str
    """The best grounded (but not useful) answer so far, offered on failure."""
    partial_sources: list[dict[str, Any]]
    """The chunks that partial answer cites, numbered as it cites them."""
    closest: list[dict[str, Any]]
    """When no answer was found, the units closest to one (``quote``, ``n``: the number of its chunk in
    ``relevant``), offered on failure as "closest passages", never as an answer (``evidence.closest_passages``)."""
    rephrases: int
    generations: int
    max_rephrases: int
    max_generations: int
    draft: bool
    """Whether the chat model writes a draft answer (the profile's choice); without one the answer selector's quote is
    the answer, or nothing is (``extract_answer``)."""
    fallback: bool
    """Whether the extractive fallback may answer when no generated answer passes (the profile's choice)."""
    confirm: bool
    """Whether the model confirms the answer before it is given (the profile's choice, :mod:`rags_expert.rag.verdict.confirmed`)."""
    confirmation: dict[str, float]
    """Once the model was asked (``confirm``): its yes-probability (``yes``) and the calibrated probability that the
    answer is right (``confidence``); empty before."""
    fallback_source: bool
    """Whether a fallback source is configured (:mod:`rags_expert.rag.retrieve.fallback_source`), set by ``prepare``."""
    fallback_consulted: bool
    """Whether this question searched the fallback source (at most once)."""
    max_hops: int
    """Searches the question may chain (``multihop.max_hops``; 1: no hop, :mod:`rags_expert.rag.retrieve.hops`)."""
    hops_planned: int
    """Times a follow-up search was planned (at most ``max_hops - 1``)."""
    hop_plan: dict[str, Any]
    """The next hop's search, planned after grading (``query``, ``bridge``, ``sentence``, ``chunk``; empty: none)."""
    hop_round: int
    """The number of the latest hop's retrieval in ``queries`` (0: no hop yet)."""
    hops: list[dict[str, Any]]
    """The hops after the first: ``hop`` (2, 3, …), ``query``, ``bridge`` and the ``sentence`` and chunk it came from."""
    search: dict[str, Any]
    """The validated per-request retriever options (see :mod:`rags_expert.rag.options`), read once by ``prepare``."""
    user: str | None
    """Who asks (the request's ``user_id``), set by ``prepare``: what the authorization hook is asked about."""
    lesson_scope: str
    """The lesson-memory scope of this request ("" when the lesson memory is off)."""
    lessons: list[str]
    """Lessons recalled for this question (advice from earlier failures), shown to the answer prompt."""
    lesson_recall: str
    """The key of this question's lesson recall while it runs beside the graph (:mod:`rags_expert.rag.retrieve._recall`);
    "" once ``lessons`` holds its result, or with no recall."""
    llm_calls: Annotated[int, operator.add]
    """LLM requests made for this question (transport retries not counted)."""
    error: str
    """``ErrorClass: message`` (redacted) when a model or retriever failed for good."""
    failure_reason: str
    usage: Annotated[dict[str, dict[str, Any]], add_usage]
    """Calls and tokens per node for this question (see :mod:`rags_expert.llm.usage`); restarted with ``llm_calls``."""
    timings: Annotated[dict[str, dict[str, Any]], add_timings]
    """Wall and CPU seconds per node for this question (see :mod:`rags_expert.rag._shared.timings`); restarted with
    ``llm_calls``."""
    max_calls: int | None
    """The question's LLM-call budget (``budget.max_calls``; None: none)."""
    max_tokens: int | None
    """The question's token budget (``budget.max_tokens``; None: none)."""


DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {
        "messages": [],
        "question": "",
        "query": "",
        "queries": [],
        "documents": [],
        "relevant": [],
        "graded": {},
        "new_relevant": 0,
        "answer": "",
        "answer_kind": "",
        "speculative": "",
        "refine": False,
        "strips": {},
        "grounded": False,
        "useful": False,
        "feedback": "",
        "partial_answer": "",
        "partial_sources": [],
        "closest": [],
        "rephrases": 0,
        "generations": 0,
        "max_rephrases": 0,
        "max_generations": 0,
        "draft": True,
        "fallback": False,
        "confirm": False,
        "confirmation": {},
        "fallback_source": False,
        "fallback_consulted": False,
        "max_calls": None,
        "max_tokens": None,
        "error": "",
        "failure_reason": "",
        "max_hops": 1,
        "hops_planned": 0,
        "hop_plan": {},
        "hop_round": 0,
        "hops": [],
        "search": {},
        "user": None,
        "lesson_scope": "",
        "lessons": [],
        "lesson_recall": "",
        "llm_calls": 0,
        "usage": {},
        "timings": {},
    }
)
"""The one table of working-state defaults: the value of every :class:`RagState` key a state lacks (read
with :func:`value`) and, but for the settings' loop caps, budget and refinement, a fresh question's state."""

PER_RUN = ("messages", "llm_calls", "usage", "timings")
"""Keys :func:`fresh_question` leaves alone: the conversation, and the counts ``prepare`` restarts."""


def value(state: Mapping[str, Any], key: str) -> Any:
    """``state[key]``, or the key's default (:data:`DEFAULTS`; a copy, so a caller may change it)."""
    if key in state:
        return state[key]
    return copy.copy(DEFAULTS[key])


def fresh_question(settings: RagsExpertSettings) -> dict[str, Any]:
    """The working state of a question not yet started (``llm_calls`` and ``usage`` are reset by ``prepare``
    alone); the loop caps are those of the settings, as far as the model profile uses the loops, and so is
    the budget."""
    profile = profile_for(settings.evidence)
    fresh = {key: copy.copy(default) for key, default in DEFAULTS.items() if key not in PER_RUN}
    return fresh | {
        "refine": RefinePlan.of(settings).method != "off",
        "max_rephrases": settings.max_rephrases if profile.rephrase else 0,
        "max_generations": settings.max_generations if profile.regenerate else 1,
        "draft": profile.draft,
        "fallback": profile.extractive_fallback,
        "confirm": profile.confirm,
        "max_calls": settings.budget.max_calls,
        "max_tokens": settings.budget.max_tokens,
        "max_hops": settings.multihop.max_hops,
    }
