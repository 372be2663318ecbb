"""Custom stream events for hosts (``graph.astream(..., stream_mode="custom")``).

| event | emitted by | data |
|---|---|---|
| ``answer_rejected`` | RAG ``grade_generation`` | ``generation``, ``feedback`` (the streamed draft is discarded) |
| ``hop_searched`` | RAG ``hop_retrieve`` (:mod:`rags_expert.rag.retrieve.hops`) | ``hop``, ``query``, ``bridge``, ``chunks`` |
| ``lesson_recalled`` / ``lesson_produced`` / ``lesson_stored`` | :mod:`rags_expert.lessons` | see there |

The words an event gives a host to show (``feedback``, ``reason``) may quote a model's output, which may echo
its prompt: they are sent through :func:`display_text` (no ``<chunk ...>`` markup, one line, cut with an
ellipsis), which the CLI's and Fred's progress lines use too.
"""

from __future__ import annotations

import re
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
        "expected",
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


DISPLAY_FIELDS = ("feedback", "reason")
"""Event fields that are words for a user to read (cleaned of prompt markup before they are sent)."""


def emit(event: str, **data: Any) -> None:
    """Send a custom event to hosts streaming with ``stream_mode="custom"`` (no-op outside a graph run)."""
    from langgraph.config import get_stream_writer  # here: the CLI's progress lines import this module, not LangGraph

    try:
        writer = get_stream_writer()
    except RuntimeError:
        return
    shown = {key: display_text(data[key]) for key in DISPLAY_FIELDS if isinstance(data.get(key), str)}
    writer({"event": event, **data, **shown})
