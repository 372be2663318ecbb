"""Custom stream events for hosts (``graph.astream(..., stream_mode="custom")``).

| event | emitted by | data |
|---|---|---|
| ``answer_rejected`` | RAG ``grade_generation`` | ``generation``, ``feedback`` (the streamed draft is discarded) |
| ``lesson_recalled`` / ``lesson_produced`` / ``lesson_stored`` | :mod:`rags_expert.lessons` | see there |
"""

from __future__ import annotations

from typing import Any

from langgraph.config import get_stream_writer


def emit(event: str, **data: Any) -> None:
    """Send a custom event to hosts streaming with ``stream_mode="custom"`` (no-op outside a graph run)."""
    try:
        writer = get_stream_writer()
    except RuntimeError:
        return
    writer({"event": event, **data})
