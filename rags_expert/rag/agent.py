"""The corrective-RAG agent (:class:`RagsExpert`), an :class:`~rags_expert.agentflow.AgentFlow`.

A host does::

    agent = await RagsExpert().async_init()
    graph = agent.get_compiled_graph()
    out = await graph.ainvoke({"messages": [("user", "When was X built?")]},
                              {"configurable": {"thread_id": "t1"}})

``async_init`` validates prompt overrides and builds whatever the host did not
pass (the chat model from settings, the default retriever). The agent holds only
immutable dependencies; all per-request state lives in the graph state and the
run's context or config (:mod:`rags_expert.rag.options`), so one agent serves concurrent threads, and many event loops (a
host may ``asyncio.run`` each request in its own worker thread): the chat model
built here keeps one HTTP connection pool per loop (``llm.build_chat_model``). A
``chat_model`` the host passes must be loop-safe in the same way.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Self

from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langgraph.graph import StateGraph

from rags_expert.agentflow import AgentFlow
from rags_expert.evidence.text import TermFrequencies
from rags_expert.lessons import LessonMemory
from rags_expert.llm.chat import bind_output_cap, build_chat_model
from rags_expert.llm.grading import GradingContext
from rags_expert.prompts import PromptStore
from rags_expert.rag.answer.prompt import answer_prefix
from rags_expert.rag.authorization import AuthorizeHook, build_authorizer
from rags_expert.rag.graph import build_graph, max_node_steps
from rags_expert.rag.nodes import RagDeps
from rags_expert.rag.profiles import evidence_scorer, profile_for
from rags_expert.rag.retrieve.fallback_source import build_fallback_retriever
from rags_expert.rag.retrieve.reranking import HostReranker, RerankStage
from rags_expert.settings import RagsExpertSettings, coerce_settings

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

log = logging.getLogger(__name__)


class RetrieverNotConfiguredError(RuntimeError):
    """No retriever was passed and none can be built from the settings."""


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
        embeddings: Embeddings | None = None,
        fallback_retriever: BaseRetriever | None = None,
        reranker: HostReranker | None = None,
        authorize: AuthorizeHook | None = None,
    ) -> None:
        """``fallback_retriever``: a second source searched once when nothing relevant is found
        (:mod:`rags_expert.rag.retrieve.fallback_source`); without it, ``fallback.collection`` names one, else there is none.
        ``reranker``: a LangChain ``BaseDocumentCompressor`` (or a :class:`~rags_expert.retrieval.rerank.base.Reranker`)
        reordering the retrieved chunks before grading (:mod:`rags_expert.rag.retrieve.reranking`).
        ``authorize``: the host's permission check ``(user, uids) -> allowed uids``, sync or async
        (:mod:`rags_expert.rag.authorization`); without it, ``authorization.hook`` / ``.url`` name one, else none."""
        super().__init__(coerce_settings(settings))
        self.settings: RagsExpertSettings
        self.chat_model = chat_model
        self.retriever = retriever
        self.lesson_memory = lesson_memory
        self.embeddings = embeddings
        self.fallback_retriever = fallback_retriever
        self.reranker = reranker
        self.rerank: RerankStage | None = None
        self.authorizer = build_authorizer(self.settings.authorization, authorize)
        self.prompts: PromptStore | None = None

    async def async_init(self) -> Self:
        """Validate prompt overrides, build the missing model / retriever / lesson memory, build the graph;
        connect the checkpointer (``checkpointer.url``) meanwhile.

        The blocking parts (file reads, model loading, opening the embedded database) run in a
        worker thread, so a host's event loop is never blocked.
        """
        await asyncio.gather(asyncio.to_thread(self._init_sync), self.open_checkpointer())
        return self

    def _init_sync(self) -> None:
        settings = self.settings
        self.prompts = PromptStore(settings.prompts, settings.prompt_dir).validate()
        if self.chat_model is None:
            self.chat_model = build_chat_model(settings.llm, client_timeout=settings.grading.timeout)
        if self.retriever is None:
            self.retriever = _default_retriever(settings)
        if self.fallback_retriever is None:
            self.fallback_retriever = build_fallback_retriever(settings)
        self.rerank = RerankStage.from_settings(settings, self.reranker)
        if settings.lessons.enabled and self.lesson_memory is None:
            self.lesson_memory = LessonMemory.from_settings(settings)
        self._graph = self.build_graph()
        self._compiled.clear()

    def build_graph(self) -> StateGraph[Any, Any, Any, Any]:
        assert self.chat_model is not None and self.retriever is not None and self.prompts is not None
        settings = self.settings
        deps = RagDeps(
            model=self.chat_model,
            retriever=self.retriever,
            settings=settings,
            grading=GradingContext.from_settings(settings, self.prompts),
            lessons=self.lesson_memory if settings.lessons.enabled else None,
            fallback_retriever=self.fallback_retriever,
            authorizer=self.authorizer,
            evidence=evidence_scorer(
                settings.evidence,
                self.embeddings or _retriever_embeddings(self.retriever, settings.evidence.vector_cache),
                retriever_frequencies(self.retriever, settings.evidence.term_sample),
            ),
            rerank=self.rerank or RerankStage.from_settings(settings, self.reranker),
        )
        return build_graph(deps)

    async def warm_up(self) -> None:
        """Have the model read the fixed beginning of the answer prompt (one output token).

        A server that keeps the last prompt's evaluated tokens (llama.cpp) then starts the first answer
        call from there, and pays its own first-request set-up while the graph retrieves and grades.
        ``ask --local`` runs it beside the question; API models gain nothing from it. A failure is
        logged and ignored: the real call reports its own. A profile without drafts (``evidence.draft``) makes no
        answer call: nothing is read, and the cores stay with the grading.
        """
        assert self.chat_model is not None and self.prompts is not None, "call async_init() first"
        profile = profile_for(self.settings.evidence)
        if not profile.draft:
            return
        messages = answer_prefix(self.prompts, profile)
        try:
            await bind_output_cap(self.chat_model, self.chat_model, 1).ainvoke(messages)
        except Exception as exc:  # noqa: BLE001 - an optimisation; the answer call reports real faults
            log.info("warm-up call failed (%s); the answer call starts cold", type(exc).__name__)

    def recursion_limit(self) -> int:
        settings = self.settings
        return max_node_steps(settings.max_rephrases, settings.max_generations, settings.multihop.max_hops) + 5

    def llm_call_bound(self, with_history: bool = True) -> int:
        """Maximum LLM requests for one question; see :meth:`RagsExpertSettings.llm_call_bound`."""
        fallback = self.fallback_retriever is not None or self.settings.fallback.collection is not None
        return self.settings.llm_call_bound(with_history, fallback=fallback)


def _retriever_embeddings(retriever: BaseRetriever, keep: bool = True) -> Callable[[], Embeddings | None] | None:
    """The embedding model of our own knowledge-base retriever (loaded on first use), for the evidence; with
    ``keep`` (``evidence.vector_cache``), its passage vectors read from and kept in the data folder
    (:mod:`rags_expert.retrieval.vector_cache`)."""
    kb = getattr(retriever, "kb", None)
    if kb is None or not hasattr(type(kb), "embeddings"):
        return None
    if not keep or not hasattr(kb, "settings"):
        return lambda: kb.embeddings

    def kept() -> Embeddings:
        from rags_expert.retrieval.vector_cache import passage_embeddings

        return passage_embeddings(kb.embeddings, kb.settings.store)

    return kept


def retriever_frequencies(retriever: BaseRetriever, sample: int) -> Callable[[], TermFrequencies | None] | None:
    """The term frequencies of our own knowledge base (its first ``sample`` chunks, read on first use), for the
    answer selector; None for another retriever or a ``sample`` of 0 (the retrieved chunks' own then)."""
    kb = getattr(retriever, "kb", None)
    if sample <= 0 or kb is None or not hasattr(type(kb), "scroll_payloads"):
        return None

    def read() -> TermFrequencies | None:
        try:
            payloads = kb.scroll_payloads(["content", "title", "section"], limit=sample)
        except Exception as exc:  # noqa: BLE001 - an aid to the reader: without it, it weighs by the retrieved chunks
            log.info("could not read the knowledge base's term frequencies (%s)", type(exc).__name__)
            return None
        return TermFrequencies.of(
            " ".join(str(p.get(k) or "") for k in ("title", "section", "content")) for _, p in payloads
        )

    return read


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
