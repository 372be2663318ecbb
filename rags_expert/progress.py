"""What to tell a user while a graph runs: a line when a node starts, and one when it ends with news.

Every host that shows a graph's progress reads it from here: ``rags-expert ask`` prints the lines on stderr, the
Fred v2 agents (:mod:`rags_expert.fred`) send them as status events. The mapping is from node names (the
LangGraph ``tasks`` stream: one event when a node starts, one with its update when it ends) to plain words;
nothing here imports LangGraph, so the CLI stays fast to start.

Text that comes from a model or a chunk (a rejected draft quoted in the feedback, a rephrased query, an
error) is shown through :func:`display_text`: the prompts' markup (``<chunk n="2" title=...>``, ``</question>``,
chat-template tokens) removed, whitespace collapsed, cut with an ellipsis. A small model echoes its prompt.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

PROMPT_TAGS = frozenset(
    {
        "answer",
        "chunk",
        "chunk_title",
        "chunks",
        "context",
        "conversation",
        "document",
        "documents",
        "failed_attempt",
        "lesson",
        "lessons",
        "query",
        "question",
        "result",
        "schema",
        "strip",
        "strips",
        "system",
        "task",
    }
)
"""Tags that frame data in the prompts (``rags_expert/prompts/*.txt``, ``format_context``): never shown."""
DISPLAY_LIMIT = 200
"""Characters of model or chunk text a progress line quotes."""
LINE_LIMIT = 240
"""Characters of a whole progress line."""

# a prompt tag, opening or closing, with its attributes (quoted values may hold '>'), or cut short at the end;
# also its neutralised form (&lt;chunk ...), which a model may echo from a chunk
_PROMPT_TAG = re.compile(
    r"(?:<|&lt;)\s*/?\s*(?:" + "|".join(sorted(PROMPT_TAGS)) + r")\b"
    r"(?:\"[^\"]*(?:\"|\Z)|'[^']*(?:'|\Z)|[^<>\"'])*(?:/?>|\Z)",
    re.IGNORECASE,
)
_TEMPLATE_TOKEN = re.compile(r"<\|[^<>|]{0,40}\|>")  # chat-template tokens: <|im_start|>, <|endoftext|>


def display_text(text: object, limit: int = DISPLAY_LIMIT) -> str:
    """``text`` fit for a progress line: prompt markup removed, whitespace collapsed, at most ``limit``
    characters (cut at a word where one is near, with an ellipsis).

    A quote that was nothing but markup (``no chunk supports: <chunk n="2" ...>``) ends in ``(prompt markup)``.
    """
    raw = str(text)
    clean = " ".join(_TEMPLATE_TOKEN.sub(" ", _PROMPT_TAG.sub(" ", raw)).split())
    if clean.endswith(":") and not raw.rstrip().endswith(":"):
        clean += " (prompt markup)"
    if len(clean) <= limit:
        return clean
    cut = clean[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit * 3 // 4 else cut).rstrip(" ,;:") + "…"


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
        return f"new search: {display_text(update['query'])}"
    if node == "grade_generation" and "grounded" in update:
        feedback = update.get("feedback")
        return f"draft rejected: {display_text(feedback)}" if feedback else "draft accepted"
    return None


def kg_end_line(node: str, update: Mapping[str, Any]) -> str | None:
    """What to tell the user when a KG-query node has ended: the last attempt's rows or error."""
    if node != "execute_tool" or not update.get("attempts"):
        return None
    attempt = update["attempts"][-1]
    if attempt.get("error"):
        return f"the query failed: {display_text(str(attempt['error']).splitlines()[0], 160)}"
    return f"{len(attempt.get('rows') or [])} row(s)"


@dataclass(frozen=True)
class Progress:
    """One graph's progress words: the line per starting node, and the function for ended nodes."""

    starts: Mapping[str, str]
    end_line: Callable[[str, Mapping[str, Any]], str | None]

    def line(self, event: Mapping[str, Any]) -> str | None:
        """The line for one ``tasks`` stream event (a node starting, or ending with ``result``), markup-free."""
        node = event.get("name", "")
        if "result" not in event:
            line = self.starts.get(node)
        else:
            line = self.end_line(node, dict(event.get("result") or []))
        return display_text(line, LINE_LIMIT) if line else None


RAG_PROGRESS = Progress(RAG_STARTS, rag_end_line)
KG_PROGRESS = Progress(KG_STARTS, kg_end_line)
