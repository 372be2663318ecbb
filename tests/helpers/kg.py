"""What the KG tests share: the session event loop, the shared schema, FalkorDB's presence, scripted Cypher models."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from helpers.shared_data import CASES_FILE, SCHEMA_FILE, needs  # the one locator of the shared data
from rags_expert.kg.backends import BackendUnavailable, find_falkordb_binaries
from rags_expert.testing import ScriptedChatModel

__all__ = ["CASES_FILE", "SCHEMA_FILE", "falkordb_missing", "needs_shared", "scripted", "session_loop"]

# Async KG tests run on the session event loop, where the session's FalkorDB connection lives.
session_loop = pytest.mark.asyncio(loop_scope="session")

needs_shared = needs(SCHEMA_FILE, "the BioChatter KG schema")


def falkordb_missing() -> str | None:
    try:
        find_falkordb_binaries()
        import falkordb  # noqa: F401
    except (BackendUnavailable, ImportError) as exc:
        return f"FalkorDB binaries/client not installed ({exc}); install the 'kg' extra"
    return None


def scripted(
    queries: list[str] | Callable[[str], str],
    scores: list[float] | float = 9.0,
    reflections: list[str] | None = None,
) -> ScriptedChatModel:
    """A model that answers DraftQuery/RevisedQuery calls with ``queries`` in order and ScoreGrade calls with ``scores``."""
    queue = list(queries) if isinstance(queries, list) else None
    score_queue = list(scores) if isinstance(scores, list) else None

    def respond(prompt: str, kwargs: dict[str, Any]) -> str:
        tool = (kwargs.get("tools") or ["?"])[0]
        if tool == "ScoreGrade":
            value = score_queue.pop(0) if score_queue is not None else scores
            return json.dumps({"score": value, "reason": f"scripted {value}"})
        if tool in ("DraftQuery", "RevisedQuery"):
            query = queue.pop(0) if queue is not None else queries(prompt)  # type: ignore[operator]
            reflection = (reflections or [f"{tool} critique"])[0]
            return json.dumps({"query": query, "reflection": reflection})
        raise AssertionError(f"unexpected call for tool {tool}")

    return ScriptedChatModel(responder=respond)
