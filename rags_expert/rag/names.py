"""The names of the RAG graph's nodes, written once: the builder (:mod:`rags_expert.rag.graph`), the routers, the
budget, the progress lines and the usage / timings keys all take them from :class:`Node`."""

from __future__ import annotations

from enum import StrEnum

from rags_expert.outcomes import FailureReason


class Node(StrEnum):
    """A node of the corrective-RAG graph (a ``StrEnum``: LangGraph and the events see its string)."""

    PREPARE = "prepare"
    RETRIEVE = "retrieve"
    GRADE_DOCUMENTS = "grade_documents"
    REPHRASE_QUERY = "rephrase_query"
    FALLBACK_RETRIEVE = "fallback_retrieve"
    """Routed to only with a fallback source (:mod:`rags_expert.rag.retrieve.fallback_source`)."""
    REFINE_KNOWLEDGE = "refine_knowledge"
    """Routed to only with knowledge refinement on (:mod:`rags_expert.rag.grade.refinement`)."""
    HOP_RETRIEVE = "hop_retrieve"
    """Routed to only with ``multihop.max_hops`` > 1 (:mod:`rags_expert.rag.retrieve.hops`)."""
    ANSWER_HOP = "answer_hop"
    """After an evidence hop: quote its answer."""
    GENERATE = "generate"
    GRADE_GENERATION = "grade_generation"
    REFLECT = "reflect"
    EXTRACT_ANSWER = "extract_answer"
    CONFIRM_ANSWER = "confirm_answer"
    """Routed to only with ``evidence.confirm`` on (the ``compact`` profile: :mod:`rags_expert.rag.verdict.confirmed`)."""
    BUDGET_EXCEEDED = FailureReason.BUDGET_EXCEEDED.value
    """Where a budgeted router sends a run once a budget is used up (named after the reason it records)."""
    FINALIZE_SUCCESS = "finalize_success"
    FINALIZE_FAILURE = "finalize_failure"
