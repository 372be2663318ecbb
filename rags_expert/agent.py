"""The host contract (:class:`AgentFlow`) and the corrective-RAG agent (:class:`RagsExpert`).

A host does::

    agent = await RagsExpert().async_init()
    graph = agent.get_compiled_graph()
    out = await graph.ainvoke({"messages": [("user", "When was X built?")]},
                              {"configurable": {"thread_id": "t1"}})

``async_init`` validates prompt overrides and builds whatever the host did not
pass (the chat model from settings, the default retriever). The agent holds only
immutable dependencies; all per-request state lives in the graph state and the
run's config, so one agent serves concurrent threads, and many event loops (a
host may ``asyncio.run`` each request in its own worker thread): the chat model
built here keeps one HTTP connection pool per loop (``llm.build_chat_model``). A
``chat_model`` the host passes must be loop-safe in the same way.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Self

from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph

from rags_expert.grading import GradingContext
from rags_expert.graph import build_graph, max_node_steps
from rags_expert.lessons import LessonMemory
from rags_expert.llm import RetryPolicy, build_chat_model
from rags_expert.nodes import RagDeps
from rags_expert.prompts import PromptStore
from rags_expert.settings import RagsExpertSettings, coerce_settings


class NotInitializedError(RuntimeError):
    """``get_compiled_graph`` was called before ``await agent.async_init()``."""


class RetrieverNotConfiguredError(RuntimeError):
    """No retriever was passed and none can be built from the settings."""


class AgentFlow(ABC):
    """Base of every agent a host can load: metadata, settings, async init and a compiled graph."""

    name: ClassVar[str] = "agent"
    role: ClassVar[str] = ""
    nickname: ClassVar[str] = ""
    description: ClassVar[str] = ""
    icon: ClassVar[str] = "agent"
    categories: ClassVar[tuple[str, ...]] = ()
    tag: ClassVar[str] = ""

    def __init__(self, settings: Any = None) -> None:
        self.settings = settings
        self._graph: StateGraph | None = None
        self._compiled: dict[int, CompiledStateGraph] = {}
        self._default_checkpointer = InMemorySaver()

    @abstractmethod
    async def async_init(self) -> Self:
        """Build models, clients and the graph; return ``self`` so hosts can chain it."""

    @abstractmethod
    def build_graph(self) -> StateGraph:
        """The agent's (uncompiled) StateGraph; called once by the default ``async_init`` flow."""

    def recursion_limit(self) -> int:
        """The recursion limit compiled graphs run with (subclasses raise it above their own bound)."""
        return 25

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

        ``None`` uses the agent's own in-memory checkpointer (threads remember their
        history); pass a saver to persist elsewhere, or ``False`` for none (e.g. when a
        LangGraph server provides persistence).
        """
        if self._graph is None:
            raise NotInitializedError(f"{type(self).__name__}: call 'await agent.async_init()' first")
        saver = self._default_checkpointer if checkpointer is None else (checkpointer or None)
        key = id(saver)
        if key not in self._compiled:
            compiled = self._graph.compile(checkpointer=saver, name=self.name)
            self._compiled[key] = compiled.with_config(recursion_limit=self.recursion_limit())
        return self._compiled[key]


class RagsExpert(AgentFlow):
    """Corrective RAG: retrieve, grade, rephrase or answer with citations, grade the answer, finalize."""

    name = "rags-expert"
    role = "Knowledge-base expert"
    nickname = "Rags"
    description = (
        "Answers questions from a knowledge base with cited, graded answers; rephrases the search when "
        "nothing relevant is found and says honestly when the answer is not there."
    )
    icon = "rags_agent"
    categories = ("rag", "documents", "qa")
    tag = "rag"

    def __init__(
        self,
        settings: RagsExpertSettings | dict[str, Any] | None = None,
        *,
        chat_model: BaseChatModel | None = None,
        retriever: BaseRetriever | None = None,
        lesson_memory: LessonMemory | None = None,
    ) -> None:
        super().__init__(coerce_settings(settings))
        self.settings: RagsExpertSettings
        self.chat_model = chat_model
        self.retriever = retriever
        self.lesson_memory = lesson_memory
        self.prompts: PromptStore | None = None

    async def async_init(self) -> Self:
        """Validate prompt overrides, build the missing model / retriever / lesson memory, build the graph.

        The blocking parts (file reads, model loading, opening the embedded database) run in a
        worker thread, so a host's event loop is never blocked.
        """
        await asyncio.to_thread(self._init_sync)
        return self

    def _init_sync(self) -> None:
        settings = self.settings
        self.prompts = PromptStore(settings.prompts, settings.prompt_dir).validate()
        if self.chat_model is None:
            self.chat_model = build_chat_model(settings.llm, client_timeout=settings.grading.timeout)
        if self.retriever is None:
            self.retriever = _default_retriever(settings)
        if settings.lessons.enabled and self.lesson_memory is None:
            self.lesson_memory = LessonMemory.from_settings(settings)
        self._graph = self.build_graph()
        self._compiled.clear()

    def build_graph(self) -> StateGraph:
        assert self.chat_model is not None and self.retriever is not None and self.prompts is not None
        settings = self.settings
        deps = RagDeps(
            model=self.chat_model,
            retriever=self.retriever,
            settings=settings,
            prompts=self.prompts,
            grading=GradingContext.from_settings(settings, self.prompts),
            answer_retry=RetryPolicy.from_settings(settings.llm, settings.secrets()),
            lessons=self.lesson_memory if settings.lessons.enabled else None,
        )
        return build_graph(deps)

    def recursion_limit(self) -> int:
        return max_node_steps(self.settings.max_rephrases, self.settings.max_generations) + 5

    def llm_call_bound(self, with_history: bool = True) -> int:
        """Maximum LLM requests for one question; see :meth:`RagsExpertSettings.llm_call_bound`."""
        return self.settings.llm_call_bound(with_history)


def _default_retriever(settings: RagsExpertSettings) -> BaseRetriever:
    """The retriever the settings describe (the Qdrant knowledge base by default)."""
    try:
        from rags_expert.retrieval.factory import build_retriever
    except ImportError as exc:
        raise RetrieverNotConfiguredError(
            "no retriever is configured: pass retriever=... to RagsExpert "
            f"(the built-in knowledge base is unavailable: {exc})"
        ) from None
    return build_retriever(settings)
