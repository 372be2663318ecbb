"""State of the corrective-RAG graph.

The host only sends ``messages`` (:class:`InputState`). Everything else is the
per-question working state, reset by ``prepare`` at the start of every question
and cleared by the finalize nodes, so a thread is always ready for its next
question. The retry caps are copied from settings into the state, so routing is a
pure function of the state.
"""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from langchain_core.documents import Document
from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages


class InputState(TypedDict):
    """What a host sends: the conversation (the last human message is the question)."""

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
    """The latest generated answer."""
    grounded: bool
    useful: bool
    feedback: str
    """Why the latest answer was rejected (fed to regeneration or rephrasing)."""
    partial_answer: str
    """The best grounded (but not useful) answer so far, offered on failure."""
    partial_sources: list[dict[str, Any]]
    """The chunks that partial answer cites, numbered as it cites them."""
    rephrases: int
    generations: int
    max_rephrases: int
    max_generations: int
    lessons: list[str]
    """Lessons recalled for this question (advice from earlier failures), shown to ``generate``."""
    llm_calls: int
    """LLM requests made for this question (transport retries not counted)."""
    error: str
    """``ErrorClass: message`` (redacted) when a model or retriever failed for good."""
    failure_reason: str
