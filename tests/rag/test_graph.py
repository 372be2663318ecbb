"""The compiled RAG graph's shape: every node and edge, written out once here so a change to the builder that
changes the graph (a row dropped, a router budgeted that was not) fails here, not only in the drawing."""

from __future__ import annotations

from rags_expert.diagrams import build_rags_expert
from rags_expert.rag.names import Node

DIRECT = {("__start__", "prepare"), ("finalize_success", "__end__"), ("finalize_failure", "__end__")}
CONDITIONAL = {
    "answer_hop": {
        "budget_exceeded",
        "confirm_answer",
        "extract_answer",
        "finalize_failure",
        "finalize_success",
        "generate",
        "refine_knowledge",
    },
    "budget_exceeded": {"extract_answer", "finalize_failure"},
    "confirm_answer": {"finalize_failure", "finalize_success"},
    "extract_answer": {"budget_exceeded", "confirm_answer", "finalize_failure", "finalize_success"},
    "fallback_retrieve": {"budget_exceeded", "finalize_failure", "grade_documents"},
    "generate": {"budget_exceeded", "finalize_failure", "grade_generation"},
    "grade_documents": {
        "answer_hop",
        "budget_exceeded",
        "extract_answer",
        "fallback_retrieve",
        "finalize_failure",
        "generate",
        "grade_generation",
        "hop_retrieve",
        "refine_knowledge",
        "rephrase_query",
    },
    "grade_generation": {"budget_exceeded", "confirm_answer", "finalize_failure", "finalize_success", "reflect"},
    "hop_retrieve": {"answer_hop", "budget_exceeded", "finalize_failure", "grade_documents"},
    "prepare": {"budget_exceeded", "finalize_failure", "retrieve"},
    "refine_knowledge": {"budget_exceeded", "generate"},
    "reflect": {
        "budget_exceeded",
        "extract_answer",
        "finalize_failure",
        "generate",
        "refine_knowledge",
        "rephrase_query",
    },
    "rephrase_query": {"budget_exceeded", "finalize_failure", "retrieve"},
    "retrieve": {"budget_exceeded", "finalize_failure", "grade_documents"},
}


async def test_the_compiled_graph_has_exactly_these_nodes_and_edges():
    graph = (await build_rags_expert()).get_compiled_graph(checkpointer=False).get_graph()
    assert set(graph.nodes) == {"__start__", "__end__", *Node}
    assert {(e.source, e.target) for e in graph.edges if not e.conditional} == DIRECT
    conditional: dict[str, set[str]] = {}
    for e in graph.edges:
        if e.conditional:
            conditional.setdefault(e.source, set()).add(e.target)
    assert conditional == CONDITIONAL
    assert all(type(name) is str for name in graph.nodes)  # plain strings, not the enum, reach LangGraph
