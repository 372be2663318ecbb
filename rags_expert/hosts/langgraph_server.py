"""Graph factories for LangGraph Server (``langgraph.json``; ``langgraph dev``).

LangGraph Server calls a graph factory for every run and every ``get_state``, so
each agent is built once per process (settings from ``RAGS_EXPERT_*`` variables)
and its compiled graph is reused. The server brings its own persistence, so the
graphs are compiled without a checkpointer.

* ``rags_expert``: the corrective-RAG graph over the configured knowledge base.
* ``kg_query``: the KG-query reflexion graph; needs ``RAGS_EXPERT_KG__SCHEMA_FILE``
  (and ``RAGS_EXPERT_KG__LOAD_SAMPLE=true`` to start on the bundled sample graph).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from rags_expert.rag import RagsExpert

_BUILT: dict[str, Any] = {}
_LOCKS: dict[str, asyncio.Lock] = {}


async def _once(key: str, build: Callable[[], Awaitable[Any]]) -> Any:
    """The process-wide object ``key``, built on first use (concurrent first calls build it once)."""
    if key not in _BUILT:
        async with _LOCKS.setdefault(key, asyncio.Lock()):
            if key not in _BUILT:
                _BUILT[key] = await build()
    return _BUILT[key]


async def _build_rag() -> CompiledStateGraph:
    agent = await RagsExpert().async_init()
    return agent.get_compiled_graph(checkpointer=False)


async def _build_kg() -> CompiledStateGraph:
    from rags_expert.kg.agent import KGQueryExpert

    agent = await KGQueryExpert().async_init()  # schema and database from RAGS_EXPERT_KG__* settings
    return agent.get_compiled_graph(checkpointer=False)


async def rag_graph(config: RunnableConfig) -> CompiledStateGraph:
    """The RagsExpert graph (built once, then reused for every run)."""
    return await _once("rag", _build_rag)


async def kg_graph(config: RunnableConfig) -> CompiledStateGraph:
    """The KG-query reflexion graph (built once, then reused for every run)."""
    return await _once("kg", _build_kg)
