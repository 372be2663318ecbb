"""Graph factories for LangGraph Server (``langgraph.json``; ``langgraph dev``).

LangGraph Server calls a graph factory for every run and every ``get_state``, so
each agent is built once per process (settings from ``RAGS_EXPERT_*`` variables)
and its compiled graph is reused. The server brings its own persistence, so the
graphs are compiled without a checkpointer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from rags_expert.agent import AgentFlow, RagsExpert

_AGENTS: dict[str, AgentFlow] = {}
_LOCKS: dict[str, asyncio.Lock] = {}


async def _agent(key: str, make: Callable[[], Awaitable[AgentFlow]]) -> AgentFlow:
    """The process-wide agent ``key``, built on first use (concurrent first calls build it once)."""
    if key not in _AGENTS:
        lock = _LOCKS.setdefault(key, asyncio.Lock())
        async with lock:
            if key not in _AGENTS:
                _AGENTS[key] = await make()
    return _AGENTS[key]


async def rag_graph(config: RunnableConfig) -> CompiledStateGraph:
    """The RagsExpert graph (built once, then reused for every run)."""
    agent = await _agent("rag", lambda: RagsExpert().async_init())
    return agent.get_compiled_graph(checkpointer=False)
