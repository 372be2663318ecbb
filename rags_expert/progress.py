"""What to tell a user while a graph runs: a line when a node starts, and one when it ends with news.

Every host that shows progress reads it from here: ``rags-expert ask`` prints the lines on stderr, the
Fred v2 agents (:mod:`rags_expert.fred`) send them as status events. The mapping is from node names (the
LangGraph ``tasks`` stream: one event when a node starts, one with its update when it ends) to plain words;
nothing here imports LangGraph, so the CLI stays fast to start.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

RAG_STARTS = {
    "retrieve": "searching the knowledge base",
    "grade_documents": "grading the chunks",
    "fallback_retrieve": "nothing relevant found: searching the fallback source",
    "rephrase_query": "rephrasing the search",
    "refine_knowledge": "keeping the relevant parts of the chunks",
    "generate": "writing a draft",
    "grade_generation": "checking the draft",
    "extract_answer": "quoting the best matching sentence of the sources",
    "budget_exceeded": "the question's budget is used up",
}
"""The RAG graph's line when a node starts."""

KG_STARTS = {
    "draft": "writing a Cypher query",
    "execute_tool": "running the query read-only",
    "revise": "scoring the result",
}
"""The KG-query graph's line when a node starts."""


def rag_end_line(node: str, update: Mapping[str, Any]) -> str | None:
    """What to tell the user when a RAG node has ended with ``update`` (None: nothing worth a line)."""
    if node == "grade_documents" and "graded" in update:
        return f"{update.get('new_relevant', 0)} new relevant chunk(s)"
    if node == "refine_knowledge" and "strips" in update:
        return f"{len(update['strips'])} chunk(s) cut to their relevant parts"
    if node == "rephrase_query" and update.get("query"):
        return f"new search: {update['query']}"
    if node == "grade_generation" and "grounded" in update:
        feedback = update.get("feedback")
        return f"draft rejected: {feedback}" if feedback else "draft accepted"
    return None


def kg_end_line(node: str, update: Mapping[str, Any]) -> str | None:
    """What to tell the user when a KG-query node has ended: the last attempt's rows or error."""
    if node != "execute_tool" or not update.get("attempts"):
        return None
    attempt = update["attempts"][-1]
    if attempt.get("error"):
        return f"the query failed: {str(attempt['error']).splitlines()[0][:160]}"
    return f"{len(attempt.get('rows') or [])} row(s)"


@dataclass(frozen=True)
class Progress:
    """One graph's progress words: the line per starting node, and the function for ended nodes."""

    starts: Mapping[str, str]
    end_line: Callable[[str, Mapping[str, Any]], str | None]

    def line(self, event: Mapping[str, Any]) -> str | None:
        """The line for one ``tasks`` stream event (a node starting, or ending with ``result``)."""
        node = event.get("name", "")
        if "result" not in event:
            return self.starts.get(node)
        return self.end_line(node, dict(event.get("result") or []))


RAG_PROGRESS = Progress(RAG_STARTS, rag_end_line)
KG_PROGRESS = Progress(KG_STARTS, kg_end_line)
