"""The corrective-RAG graph: routers (pure functions of the state) and the builder.

```
START → prepare ─┬─ empty / error ───────────────────────────────→ finalize_failure
                 └→ retrieve → grade_documents ─┬─ new relevant ─→ [refine_knowledge →] generate → grade_generation
                                                ├─ speculative draft kept ──────→ grade_generation
                                                ├─ a hop planned ───────────────→ hop_retrieve ─┬─ (model's) → grade_documents
                                                │   ┌──────────────────────────────────────────────┘
                                                │   └─ (evidence's) → answer_hop ─┬─ quote → finalize_success
                                                │                                  └─ none → [refine →] generate
                      ↑                         ├─ none, R left ─→ rephrase_query ─┐
                      └─────────────────────────┼──────────────────────────────────┘
                                                ├─ none, no R, fallback source not yet consulted
                                                │      → fallback_retrieve → grade_documents (once)
                                                └─ none, no R ───→ finalize_failure
grade_generation ─┬─ grounded and useful ─────────→ finalize_success
                  └─ rejected ────────────────────→ reflect (lesson memory) ─┐
reflect ─┬─ not grounded, G left ─────────────────→ [refine_knowledge →] generate ←┘
         ├─ not useful, R and G left ─────────────→ rephrase_query
         ├─ otherwise, with the extractive fallback → extract_answer ─┬─ a sentence to quote → finalize_success
         └─ otherwise ────────────────────────────→ finalize_failure  └─ none ─────────────→ finalize_failure
any router, once a budget is used up, instead of a node that may call the model → budget_exceeded → (as "otherwise")
```

Every loop spends a rephrase (cap R) or a generation (cap G), so every run ends
in a finalize node after at most ``max_node_steps`` node executions, whatever
the model says; the recursion limit is set above that and never decides. A
per-question budget (``budget.max_calls`` / ``budget.max_tokens``, :mod:`rags_expert.rag.wrappers._budget`)
stops a run early: a budgeted run is an unbudgeted run cut short. The
extractive fallback (on in the ``small`` model profile) quotes the best matching
sentence of the relevant chunks where the run would otherwise give up. An optional
fallback source (:mod:`rags_expert.rag.retrieve.fallback_source`, CRAG's "incorrect" action) is
searched once when nothing relevant was found, before giving up. With knowledge refinement on
(:mod:`rags_expert.rag.grade.refinement`, CRAG's decompose-recompose), ``[refine_knowledge →]`` cuts the relevant
chunks not yet refined to their relevant strips on the way to ``generate``. Multi-hop (:mod:`rags_expert.rag.retrieve.hops`):
while hops are left, grading new relevant chunks plans a follow-up search for the bridge entity, at most
``max_hops - 1`` times a question; a planned one is ``hop_retrieve``; after it, the answer reads the chunks of every hop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeVar

from langgraph.graph import END, START, StateGraph

from rags_expert.llm.usage import metered
from rags_expert.rag.grade.refinement import REFINE_NODE, RefinePlan, Refiner, needs_refinement
from rags_expert.rag.nodes import RagDeps, RagNodes
from rags_expert.rag.options import RequestContext
from rags_expert.rag.retrieve.fallback_source import FALLBACK_NODE, FallbackSource, wants_fallback
from rags_expert.rag.retrieve.hops import HOP_ANSWER_NODE, HOP_NODE, Hops, after_hop
from rags_expert.rag.state import InputState, OutputState, RagState, value
from rags_expert.rag.wrappers._budget import BUDGET_NODE, budget_exceeded, budgeted
from rags_expert.rag.wrappers._timings import timed
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


def route_after_prepare(state: RagState) -> Literal["retrieve", "finalize_failure"]:
    """An empty question or a failed condense step ends the run without retrieval."""
    if value(state, "error") or not value(state, "question"):
        return "finalize_failure"
    return "retrieve"


def route_after_retrieve(state: RagState) -> Literal["grade_documents", "finalize_failure"]:
    """A retriever fault ends the run; otherwise grade what came back."""
    return "finalize_failure" if value(state, "error") else "grade_documents"


def _give_up(state: RagState) -> Literal["extract_answer", "finalize_failure"]:
    """Where a run without an accepted answer goes: the extractive fallback when it is on and there is
    something relevant to quote, else the honest failure."""
    if value(state, "fallback") and value(state, "relevant") and not value(state, "error"):
        return "extract_answer"
    return "finalize_failure"


def _to_generate(state: RagState) -> Literal["refine_knowledge", "generate"]:
    """``generate``, through ``refine_knowledge`` while a relevant chunk is not refined yet (refinement on)."""
    return "refine_knowledge" if needs_refinement(state) else "generate"


def route_after_grading(
    state: RagState,
) -> Literal[
    "grade_generation",
    "hop_retrieve",
    "answer_hop",
    "refine_knowledge",
    "generate",
    "rephrase_query",
    "fallback_retrieve",
    "extract_answer",
    "finalize_failure",
]:
    """Check a kept speculative draft; plan a hop while hops are left; after one, quote its answer (small
    profile) or answer from the chunks of every hop; else generate from new relevant chunks; with none,
    rephrase while rephrases remain, then search the fallback source once (when there is one) before giving up."""
    if value(state, "error"):
        return "finalize_failure"
    if value(state, "speculative") == "kept":
        return "grade_generation"
    if value(state, "hop_plan"):
        return "hop_retrieve"
    if after_hop(state) and value(state, "relevant") and _generations_left(state):
        return _to_generate(state)  # the hop found nothing new: answer from what was found
    if value(state, "new_relevant") > 0 and _generations_left(state):
        return _to_generate(state)
    if _rephrases_left(state) and _generations_left(state):
        return "rephrase_query"
    if wants_fallback(state):
        return "fallback_retrieve"
    return _give_up(state)


def route_after_hop(state: RagState) -> Literal["grade_documents", "answer_hop", "finalize_failure"]:
    """Grade the hop's chunks (an evidence hop graded them itself: quote its answer), unless the search failed."""
    if value(state, "error"):
        return "finalize_failure"
    return "answer_hop" if value(state, "hops")[-1].get("bridge") else "grade_documents"


def route_after_hop_answer(
    state: RagState,
) -> Literal["finalize_success", "refine_knowledge", "generate", "extract_answer", "finalize_failure"]:
    """A quoted hop answer ends the run; without one, write an answer from the chunks of every hop."""
    if value(state, "answer_kind") == "extractive" and not value(state, "error"):
        return "finalize_success"
    return _to_generate(state) if _generations_left(state) else _give_up(state)


def route_after_rephrase(state: RagState) -> Literal["retrieve", "finalize_failure"]:
    """Retrieve again with the new query, unless the rephrasing call failed."""
    return "finalize_failure" if value(state, "error") else "retrieve"


def route_after_generate(state: RagState) -> Literal["grade_generation", "finalize_failure"]:
    """Grade the answer, unless generation failed."""
    return "finalize_failure" if value(state, "error") else "grade_generation"


def route_after_generation_grading(state: RagState) -> Literal["finalize_success", "reflect", "finalize_failure"]:
    """Accept a grounded, useful answer; learn from a rejected one first."""
    if value(state, "error"):
        return "finalize_failure"
    if value(state, "grounded") and value(state, "useful"):
        return "finalize_success"
    return "reflect"


def route_after_refine(state: RagState) -> Literal["generate"]:
    """Refined chunks are answered from."""
    return "generate"


def route_after_reflect(
    state: RagState,
) -> Literal["refine_knowledge", "generate", "rephrase_query", "extract_answer", "finalize_failure"]:
    """Regenerate an ungrounded answer; look further for a grounded but useless one; else give up."""
    if not value(state, "grounded") and _generations_left(state):
        return _to_generate(state)
    if value(state, "grounded") and _rephrases_left(state) and _generations_left(state):
        return "rephrase_query"
    return _give_up(state)


def route_after_extract(state: RagState) -> Literal["finalize_success", "finalize_failure"]:
    """A quoted sentence is an answer; without one the run ends in the honest failure."""
    if value(state, "answer_kind") == "extractive" and not value(state, "error"):
        return "finalize_success"
    return "finalize_failure"


def max_node_steps(max_rephrases: int, max_generations: int, max_hops: int = 1) -> int:
    """Upper bound on node executions of one run: prepare, R+1 retrieve/grade rounds, R rephrases, the
    fallback source's retrieve/grade round, G refine/generate/grade/reflect rounds (knowledge refinement
    only ever leads to a generation), the budget stop, the extractive fallback, one finalize; and per hop
    after the first its hop_retrieve, grade_documents and answer_hop."""
    return 1 + 2 * (max_rephrases + 1) + max_rephrases + 2 + 4 * max_generations + 1 + 1 + 1 + 3 * (max_hops - 1)


def build_graph(deps: RagDeps) -> StateGraph[RagState, RequestContext, InputState, OutputState]:
    """Wire the nodes and routers into an (uncompiled) StateGraph.

    Every node is :func:`~rags_expert.llm.usage.metered` (the calls and tokens of those that call the model go to
    the state's ``usage``) and :func:`~rags_expert.rag.wrappers._timings.timed` (its wall and CPU seconds go to ``timings``), and every router that may lead to one checks the budget (:func:`~rags_expert.rag.wrappers._budget.budgeted`).

    Hosts send and get back the conversation (``InputState`` / ``OutputState``); per-request options
    come as the run's context (``RequestContext``) or in ``configurable``.
    """
    nodes = RagNodes(deps)
    builder = StateGraph(RagState, context_schema=RequestContext, input_schema=InputState, output_schema=OutputState)

    # prepare takes (state, config, runtime): langgraph runs that, its add_node overloads omit it
    builder.add_node("prepare", _node("prepare", nodes.prepare))  # type: ignore[call-overload,arg-type]  # langgraph stub gap
    auth = deps.authorizer  # the host's permission check (rags_expert.rag.wrappers.guard); None: off
    builder.add_node("retrieve", _node("retrieve", guard_documents(nodes.retrieve, auth)))
    hops = Hops(
        deps.model, deps.retriever, deps.grading, deps.evidence, deps.settings, deps.profile, nodes.redacted_error
    )
    grade_documents = hops.planning(
        guard_relevant(nodes.grade_documents, auth)
    )  # plans the next hop while one is wanted
    builder.add_node("grade_documents", _node("grade_documents", grade_documents))
    builder.add_node("rephrase_query", _node("rephrase_query", nodes.rephrase_query))
    fallback = guard_documents(
        FallbackSource(deps.fallback_retriever, deps.settings, nodes.redacted_error).retrieve, auth
    )
    builder.add_node(FALLBACK_NODE, _node(FALLBACK_NODE, fallback))  # routed to only with a fallback source
    refiner = Refiner(deps.model, deps.grading, deps.evidence, RefinePlan.of(deps.settings))
    builder.add_node(REFINE_NODE, _node(REFINE_NODE, refiner.refine_knowledge))  # routed to only with refinement on
    builder.add_node(
        HOP_NODE, _node(HOP_NODE, guard_documents(hops.hop_retrieve, auth))
    )  # routed to only with multihop.max_hops > 1
    builder.add_node(HOP_ANSWER_NODE, _node(HOP_ANSWER_NODE, hops.answer_hop))  # after an evidence hop
    builder.add_node("generate", _node("generate", guard_context(nodes.generate, auth)))
    builder.add_node("grade_generation", _node("grade_generation", nodes.grade_generation))
    builder.add_node("reflect", _node("reflect", nodes.reflect))
    builder.add_node("extract_answer", _node("extract_answer", nodes.extract_answer))
    builder.add_node(BUDGET_NODE, timed(BUDGET_NODE, budget_exceeded))
    success = guard_answer(nodes.finalize_success, nodes.finalize_failure, auth)
    builder.add_node("finalize_success", _node("finalize_success", success))
    builder.add_node("finalize_failure", _node("finalize_failure", guard_partial(nodes.finalize_failure, auth)))

    builder.add_edge(START, "prepare")
    builder.add_conditional_edges("prepare", *budgeted(route_after_prepare))
    builder.add_conditional_edges("retrieve", *budgeted(route_after_retrieve))
    builder.add_conditional_edges("grade_documents", *budgeted(route_after_grading))
    builder.add_conditional_edges("rephrase_query", *budgeted(route_after_rephrase))
    builder.add_conditional_edges(FALLBACK_NODE, *budgeted(route_after_retrieve))
    builder.add_conditional_edges(REFINE_NODE, *budgeted(route_after_refine))
    builder.add_conditional_edges(HOP_NODE, *budgeted(route_after_hop))
    builder.add_conditional_edges(HOP_ANSWER_NODE, *budgeted(route_after_hop_answer))
    builder.add_conditional_edges("generate", *budgeted(route_after_generate))
    builder.add_conditional_edges("grade_generation", *budgeted(route_after_generation_grading))
    builder.add_conditional_edges("reflect", *budgeted(route_after_reflect))
    builder.add_conditional_edges("extract_answer", route_after_extract)
    builder.add_conditional_edges(BUDGET_NODE, _give_up)
    builder.add_edge("finalize_success", END)
    builder.add_edge("finalize_failure", END)
    return builder
