"""Custom stream events for hosts (``graph.astream(..., stream_mode="custom")``).

| event | emitted by | data |
|---|---|---|
| ``answer_rejected`` | RAG ``grade_generation`` | ``generation``, ``feedback`` (the streamed draft is discarded) |
| ``hop_searched`` | RAG ``hop_retrieve`` (:mod:`rags_expert.rag.hops`) | ``hop``, ``query``, ``bridge``, ``chunks`` |
| ``lesson_recalled`` / ``lesson_produced`` / ``lesson_stored`` | :mod:`rags_expert.lessons` | see there |

The words an event gives a host to show (``feedback``, ``reason``) may quote a model's output, which may echo
its prompt: they are sent through :func:`rags_expert.progress.display_text` (no ``<chunk ...>`` markup, one
line, cut with an ellipsis).
"""

from __future__ import annotations

from typing import Any

from langgraph.config import get_stream_writer

from rags_expert.progress import display_text

DISPLAY_FIELDS = ("feedback", "reason")
"""Event fields that are words for a user to read (cleaned of prompt markup before they are sent)."""


def emit(event: str, **data: Any) -> None:
    """Send a custom event to hosts streaming with ``stream_mode="custom"`` (no-op outside a graph run)."""
    try:
        writer = get_stream_writer()
    except RuntimeError:
        return
    shown = {key: display_text(data[key]) for key in DISPLAY_FIELDS if isinstance(data.get(key), str)}
    writer({"event": event, **data, **shown})
