"""The corrective-RAG graph: routers (pure functions of the state) and the builder.

The graph itself is drawn in docs/graphs.md, generated from the compiled graph (``python -m rags_expert.diagrams``),
and docs/architecture.md follows a question through it stage by stage. In short: ``prepare`` → ``retrieve`` →
``grade_documents``, then a hop, a rephrasing, the fallback source or an answer (``generate``, through
``refine_knowledge`` with refinement on); ``grade_generation`` accepts it (``confirm_answer`` asks the model to confirm it, in the ``compact`` profile) or
``reflect`` learns from its rejection before another try; every run ends in ``finalize_success`` or ``finalize_failure``.

Every loop spends a rephrase (cap R) or a generation (cap G), so every run ends
in a finalize node after at most ``max_node_steps`` node executions, whatever
the model says; the recursion limit is set above that and never decides. A
per-question budget (``budget.max_calls`` / ``budget.max_tokens``, :mod:`rags_expert.rag._shared.budget`)
stops a run early: a budgeted run is an unbudgeted run cut short. The
extractive fallback (on in the ``small`` model profile) quotes the best matching
sentence of the relevant chunks where the run would otherwise give up. An optional
fallback source (:mod:`rags_expert.rag.retrieve.fallback_source`, CRAG's "incorrect" action) is
searched once when nothing relevant was found, before giving up. With knowledge refinement on
(:mod:`rags_expert.rag.grade.refinement`, CRAG's decompose-recompose), ``refine_knowledge`` cuts the relevant
chunks not yet refined to their relevant strips on the way to ``generate``. Multi-hop (:mod:`rags_expert.rag.retrieve.hops`):
while hops are left, grading new relevant chunks plans a follow-up search for the bridge entity, at most
``max_hops - 1`` times a question; a planned one is ``hop_retrieve``; after it, the answer reads the chunks of every hop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeVar

from langgraph.graph import END, START, StateGraph

from rags_expert.llm.usage import metered
from rags_expert.outcomes import AnswerKind, DraftFate, FailureReason
from rags_expert.rag._shared.budget import Routes, budget_exceeded, budgeted, routes
from rags_expert.rag._shared.timings import timed
from rags_expert.rag.grade.refinement import RefinePlan, Refiner, needs_refinement
from rags_expert.rag.names import Node
from rags_expert.rag.nodes import RagDeps, RagNodes
from rags_expert.rag.options import RequestContext
from rags_expert.rag.retrieve.fallback_source import FallbackSource, wants_fallback
from rags_expert.rag.retrieve.hops import Hops, after_hop
from rags_expert.rag.state import InputState, OutputState, RagState, value
from rags_expert.rag.wrappers.guard import guard_answer, guard_context, guard_documents, guard_partial, guard_relevant

N = TypeVar("N", bound=Callable[..., Awaitable[Any]])


def _node(name: str, fn: N) -> N:
    """A node as the graph runs it: its calls and tokens metered (``usage``), its wall and CPU seconds timed
    (``timings``)."""
    return metered(name, timed(name, fn))


def _generations_left(state: RagState) -> bool:
    return value(state, "generations") < value(state, "max_generations")


def _rephrases_left(state: RagState) -> bool:
    return value(state, "rephrases") < value(state, "max_rephrases")


def route_after_prepare(state: RagState) -> Literal[Node.RETRIEVE, Node.FINALIZE_FAILURE]:
    """An empty question or a failed condense step ends the run without retrieval."""
    if value(state, "error") or not value(state, "question"):
        return Node.FINALIZE_FAILURE
    return Node.RETRIEVE


def route_after_retrieve(state: RagState) -> Literal[Node.GRADE_DOCUMENTS, Node.FINALIZE_FAILURE]:
    """A retriever fault ends the run; otherwise grade what came back."""
    return Node.FINALIZE_FAILURE if value(state, "error") else Node.GRADE_DOCUMENTS


def _give_up(state: RagState) -> Literal[Node.EXTRACT_ANSWER, Node.FINALIZE_FAILURE]:
    """Where a run without an accepted answer goes: the extractive fallback when it is on and there is
    something relevant to quote (and, with ``confirm`` on, budget left to confirm the quote), else the honest
    failure."""
    unconfirmable = value(state, "confirm") and value(state, "failure_reason") == FailureReason.BUDGET_EXCEEDED
    if value(state, "fallback") and value(state, "relevant") and not value(state, "error") and not unconfirmable:
        return Node.EXTRACT_ANSWER
    return Node.FINALIZE_FAILURE


def _give(state: RagState) -> Literal[Node.CONFIRM_ANSWER, Node.FINALIZE_SUCCESS]:
    """An accepted answer or quote is given, after the model confirms it when ``confirm`` is on."""
    return Node.CONFIRM_ANSWER if value(state, "confirm") else Node.FINALIZE_SUCCESS


def _to_answer(state: RagState) -> Literal[Node.REFINE_KNOWLEDGE, Node.GENERATE, Node.EXTRACT_ANSWER]:
    """``generate``, through ``refine_knowledge`` while a relevant chunk is not refined yet (refinement on); with
    drafts off (``evidence.draft``, the ``small`` profile) the answer selector's quote (``extract_answer``)."""
    if not value(state, "draft"):
        return Node.EXTRACT_ANSWER
    return Node.REFINE_KNOWLEDGE if needs_refinement(state) else Node.GENERATE


def route_after_grading(
    state: RagState,
) -> Literal[
    Node.GRADE_GENERATION,
    Node.HOP_RETRIEVE,
    Node.ANSWER_HOP,
    Node.REFINE_KNOWLEDGE,
    Node.GENERATE,
    Node.REPHRASE_QUERY,
    Node.FALLBACK_RETRIEVE,
    Node.EXTRACT_ANSWER,
    Node.FINALIZE_FAILURE,
]:
    """Check a kept speculative draft; plan a hop while hops are left; after one, quote its answer (small
    profile) or answer from the chunks of every hop; else answer from new relevant chunks (a draft, or
    the answer selector's quote with drafts off); with none,
    rephrase while rephrases remain, then search the fallback source once (when there is one) before giving up."""
    if value(state, "error"):
        return Node.FINALIZE_FAILURE
    if value(state, "speculative") == DraftFate.KEPT:
        return Node.GRADE_GENERATION
    if value(state, "hop_plan"):
        return Node.HOP_RETRIEVE
    if after_hop(state) and value(state, "relevant") and _generations_left(state):
        return _to_answer(state)  # the hop found nothing new: answer from what was found
    if value(state, "new_relevant") > 0 and _generations_left(state):
        return _to_answer(state)
    if _rephrases_left(state) and _generations_left(state):
        return Node.REPHRASE_QUERY
    if wants_fallback(state):
        return Node.FALLBACK_RETRIEVE
    return _give_up(state)


def route_after_hop(state: RagState) -> Literal[Node.GRADE_DOCUMENTS, Node.ANSWER_HOP, Node.FINALIZE_FAILURE]:
    """Grade the hop's chunks (an evidence hop graded them itself: quote its answer), unless the search failed."""
    if value(state, "error"):
        return Node.FINALIZE_FAILURE
    return Node.ANSWER_HOP if value(state, "hops")[-1].get("bridge") else Node.GRADE_DOCUMENTS


def route_after_hop_answer(
    state: RagState,
) -> Literal[
    Node.CONFIRM_ANSWER,
    Node.FINALIZE_SUCCESS,
    Node.REFINE_KNOWLEDGE,
    Node.GENERATE,
    Node.EXTRACT_ANSWER,
    Node.FINALIZE_FAILURE,
]:
    """A quoted hop answer ends the run (confirmed first with ``confirm`` on); without one, write an answer from
    the chunks of every hop."""
    if value(state, "answer_kind") == AnswerKind.EXTRACTIVE and not value(state, "error"):
        return _give(state)
    return _to_answer(state) if _generations_left(state) else _give_up(state)


def route_after_rephrase(state: RagState) -> Literal[Node.RETRIEVE, Node.FINALIZE_FAILURE]:
    """Retrieve again with the new query, unless the rephrasing call failed."""
    return Node.FINALIZE_FAILURE if value(state, "error") else Node.RETRIEVE


def route_after_generate(state: RagState) -> Literal[Node.GRADE_GENERATION, Node.FINALIZE_FAILURE]:
    """Grade the answer, unless generation failed."""
    return Node.FINALIZE_FAILURE if value(state, "error") else Node.GRADE_GENERATION


def route_after_generation_grading(
    state: RagState,
) -> Literal[Node.CONFIRM_ANSWER, Node.FINALIZE_SUCCESS, Node.REFLECT, Node.FINALIZE_FAILURE]:
    """Give a grounded, useful answer (confirmed first with ``confirm`` on); learn from a rejected one first."""
    if value(state, "error"):
        return Node.FINALIZE_FAILURE
    if value(state, "grounded") and value(state, "useful"):
        return _give(state)
    return Node.REFLECT


def route_after_refine(state: RagState) -> Literal[Node.GENERATE]:
    """Refined chunks are answered from."""
    return Node.GENERATE


def route_after_reflect(
    state: RagState,
) -> Literal[Node.REFINE_KNOWLEDGE, Node.GENERATE, Node.REPHRASE_QUERY, Node.EXTRACT_ANSWER, Node.FINALIZE_FAILURE]:
    """Regenerate an ungrounded answer; look further for a grounded but useless one; else give up."""
    if not value(state, "grounded") and _generations_left(state):
        return _to_answer(state)
    if value(state, "grounded") and _rephrases_left(state) and _generations_left(state):
        return Node.REPHRASE_QUERY
    return _give_up(state)


def route_after_extract(state: RagState) -> Literal[Node.CONFIRM_ANSWER, Node.FINALIZE_SUCCESS, Node.FINALIZE_FAILURE]:
    """A quoted sentence is an answer (confirmed first with ``confirm`` on); without one the run ends in the
    honest failure."""
    if value(state, "answer_kind") == AnswerKind.EXTRACTIVE and not value(state, "error"):
        return _give(state)
    return Node.FINALIZE_FAILURE


def route_after_confirm(state: RagState) -> Literal[Node.FINALIZE_SUCCESS, Node.FINALIZE_FAILURE]:
    """A confirmed answer is given; one the model does not confirm (or a failed call) ends in the honest failure."""
    if value(state, "error") or value(state, "failure_reason"):
        return Node.FINALIZE_FAILURE
    return Node.FINALIZE_SUCCESS


def max_node_steps(max_rephrases: int, max_generations: int, max_hops: int = 1) -> int:
    """Upper bound on node executions of one run: prepare, R+1 retrieve/grade rounds, R rephrases, the
    fallback source's retrieve/grade round, G refine/generate/grade/reflect rounds (knowledge refinement
    only ever leads to a generation), the budget stop, the extractive fallback, one finalize; and per hop
    after the first its hop_retrieve, grade_documents and answer_hop; the confirmation of the answer given."""
    return 1 + 2 * (max_rephrases + 1) + max_rephrases + 2 + 4 * max_generations + 1 + 1 + 1 + 1 + 3 * (max_hops - 1)


def build_graph(deps: RagDeps) -> StateGraph[RagState, RequestContext, InputState, OutputState]:
    """The (uncompiled) graph: one row per node, with its guard (the host's permission check, where a node reads or
    cites chunks) and its router; :func:`_node` meters and times every node, :func:`budgeted` checks the budget.
    Hosts send and get back the conversation; per-request options come as the run's context (``RequestContext``)."""
    nodes, auth, settings = RagNodes(deps), deps.authorizer, deps.settings
    hops = Hops(deps.model, deps.retriever, deps.grading, deps.evidence, settings, deps.profile, nodes.redacted_error)
    fallback = FallbackSource(deps.fallback_retriever, settings, nodes.redacted_error)
    refiner = Refiner(deps.model, deps.grading, deps.evidence, RefinePlan.of(settings))
    grade = hops.planning(guard_relevant(nodes.grade_documents, auth))  # plans the next hop while one is wanted
    rows: list[tuple[Node, Callable[..., Awaitable[Any]], Routes | None]] = [
        (Node.PREPARE, nodes.prepare, budgeted(route_after_prepare)),
        (Node.RETRIEVE, guard_documents(nodes.retrieve, auth), budgeted(route_after_retrieve)),
        (Node.GRADE_DOCUMENTS, grade, budgeted(route_after_grading)),
        (Node.REPHRASE_QUERY, nodes.rephrase_query, budgeted(route_after_rephrase)),
        (Node.FALLBACK_RETRIEVE, guard_documents(fallback.retrieve, auth), budgeted(route_after_retrieve)),
        (Node.REFINE_KNOWLEDGE, refiner.refine_knowledge, budgeted(route_after_refine)),
        (Node.HOP_RETRIEVE, guard_documents(hops.hop_retrieve, auth), budgeted(route_after_hop)),
        (Node.ANSWER_HOP, hops.answer_hop, budgeted(route_after_hop_answer)),
        (Node.GENERATE, guard_context(nodes.generate, auth), budgeted(route_after_generate)),
        (Node.GRADE_GENERATION, nodes.grade_generation, budgeted(route_after_generation_grading)),
        (Node.REFLECT, nodes.reflect, budgeted(route_after_reflect)),
        (Node.EXTRACT_ANSWER, nodes.extract_answer, budgeted(route_after_extract)),  # confirming a quote calls it
        (Node.CONFIRM_ANSWER, nodes.confirm_answer, routes(route_after_confirm)),
        (Node.BUDGET_EXCEEDED, budget_exceeded, routes(_give_up)),
        (Node.FINALIZE_SUCCESS, guard_answer(nodes.finalize_success, nodes.finalize_failure, auth), None),
        (Node.FINALIZE_FAILURE, guard_partial(nodes.finalize_failure, auth), None),
    ]
    builder = StateGraph(RagState, context_schema=RequestContext, input_schema=InputState, output_schema=OutputState)
    builder.add_edge(START, Node.PREPARE.value)
    for node, function, router in rows:  # LangGraph, the usage and the timings get the names as plain strings
        builder.add_node(node.value, _node(node.value, function))
        if router is None:
            builder.add_edge(node.value, END)
        else:
            builder.add_conditional_edges(node.value, *router)
    return builder
