"""The host contract: what every agent a host loads provides (:class:`AgentFlow`).

An agent carries metadata a host shows (name, role, description, ...), builds its models and
clients in ``await agent.async_init()`` and serves one compiled LangGraph graph per checkpointer
(``get_compiled_graph``): by default the one its settings describe (``checkpointer.url``: PostgreSQL shared
by replicas, else in memory; :mod:`rags_expert.checkpoints`); ``await agent.aclose()`` releases its
connections. Hosts load agents from a YAML list or discover them through the ``agentflow.agents``
entry-point group (:mod:`rags_expert.hosts.loading`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Self

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph

from rags_expert.checkpoints import build_checkpointer, close_checkpointer, open_checkpointer
from rags_expert.checkpoints.guard import GuardedGraph


class NotInitializedError(RuntimeError):
    """``get_compiled_graph`` was called before ``await agent.async_init()``."""


class AgentFlow(ABC):
    """Base of every agent a host can load: metadata, settings, async init and a compiled graph."""

    name: str = "agent"  # a host may name an instance (hosts.load_agents)
    role: ClassVar[str] = ""
    nickname: ClassVar[str] = ""
    description: ClassVar[str] = ""
    icon: ClassVar[str] = "agent"
    categories: ClassVar[tuple[str, ...]] = ()
    tag: ClassVar[str] = ""

    def __init__(self, settings: Any = None) -> None:
        self.settings = settings
        self._graph: StateGraph | None = None
        self._compiled: dict[int | str, CompiledStateGraph] = {}
        self._default_checkpointer = build_checkpointer(getattr(settings, "checkpointer", None))

    @abstractmethod
    async def async_init(self) -> Self:
        """Build models, clients and the graph; return ``self`` so hosts can chain it."""

    @abstractmethod
    def build_graph(self) -> StateGraph:
        """The agent's (uncompiled) StateGraph; called once by the default ``async_init`` flow."""

    def recursion_limit(self) -> int:
        """The recursion limit compiled graphs run with (subclasses raise it above their own bound)."""
        return 25

    async def open_checkpointer(self) -> None:
        """Connect the agent's own checkpointer and create its tables (PostgreSQL), so that a wrong
        ``checkpointer.url`` fails at start; nothing for the in-memory one. ``async_init`` calls it."""
        await open_checkpointer(self._default_checkpointer)

    async def aclose(self) -> None:
        """Close the connections of the agent's own checkpointer opened on the running event loop."""
        await close_checkpointer(self._default_checkpointer)

    @property
    def metadata(self) -> dict[str, Any]:
        """What a host shows about the agent."""
        return {
            "name": self.name,
            "role": self.role,
            "nickname": self.nickname,
            "description": self.description,
            "icon": self.icon,
            "categories": list(self.categories),
            "tag": self.tag,
        }

    def get_compiled_graph(self, checkpointer: BaseCheckpointSaver | None | bool = None) -> CompiledStateGraph:
        """The compiled graph, compiled once per checkpointer.

        ``None`` uses the agent's own checkpointer (threads remember their history): the
        PostgreSQL one of ``checkpointer.url``, else in memory; pass a saver to persist
        elsewhere, or ``False`` for none (e.g. when a LangGraph server provides persistence). With a
        checkpointer, a database fault ends a run in the agent's failure message
        (:mod:`rags_expert.checkpoints.guard`).
        """
        if self._graph is None:
            raise NotInitializedError(f"{type(self).__name__}: call 'await agent.async_init()' first")
        saver = self._default_checkpointer if checkpointer is None else (checkpointer or None)
        key = id(saver)
        if key not in self._compiled:
            compiled = self._graph.compile(checkpointer=saver, name=self.name)
            if saver is not None:  # a checkpointer fault ends a run in the agent's failure message
                compiled = GuardedGraph.of(compiled)
            self._compiled[key] = compiled.with_config(recursion_limit=self.recursion_limit())
        return self._compiled[key]

    def get_standalone_graph(self) -> CompiledStateGraph:
        """The graph compiled with ``checkpointer=False``, for running inside another graph's node.

        A graph compiled without a checkpointer (``None``) that runs inside a node of an outer LangGraph
        graph becomes its subgraph and writes its working state into the outer graph's checkpointer (Fred v2
        persists every node's state in SQL). ``False`` keeps it out: the host owns the conversation, this
        run is one stateless call (history comes in the input messages).
        """
        if self._graph is None:
            raise NotInitializedError(f"{type(self).__name__}: call 'await agent.async_init()' first")
        if "standalone" not in self._compiled:
            compiled = self._graph.compile(checkpointer=False, name=self.name)
            self._compiled["standalone"] = compiled.with_config(recursion_limit=self.recursion_limit())
        return self._compiled["standalone"]
