"""The fallback source (CRAG's "incorrect" action): a second retriever consulted once before giving up.

When grading has found nothing relevant after the allowed rephrasings, ``route_after_grading`` sends the run
to ``fallback_retrieve`` (once per question: ``fallback_consulted``) instead of giving up. That node searches
the fallback source with the question, tags its chunks with their origin (``retrieval_origin`` metadata,
``origin`` in the sources) and hands them to ``grade_documents``, which grades them like the others; relevant
ones go to ``generate`` as usual. The source is any LangChain retriever the host passes
(``RagsExpert(fallback_retriever=...)``) or another collection of the knowledge base (``fallback.collection``).
The request's ``top_k`` applies to it; its ``library_tags`` / ``document_uids`` only with
``fallback.request_filters``. A fault of the fallback source ends the run like one of the primary retriever.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig

from rags_expert.events import emit
from rags_expert.failsafe import fails_as
from rags_expert.outcomes import FailureReason
from rags_expert.rag.options import ainvoke_retriever
from rags_expert.rag.state import RagState, value
from rags_expert.retrieval.options import SearchOptions
from rags_expert.settings import RagsExpertSettings

ORIGIN_KEY = "retrieval_origin"
"""Metadata key of a chunk's source: ``"fallback"`` on the fallback's chunks (absent: the primary retriever)."""


def origin(doc: Document) -> str:
    """Which source a chunk came from: ``"primary"`` or ``"fallback"``."""
    return str(doc.metadata.get(ORIGIN_KEY) or "primary")


def fallback_options(search: SearchOptions, request_filters: bool) -> SearchOptions:
    """The options of the fallback search: ``top_k`` always, the request's filters only when ``request_filters``
    is on."""
    return search if request_filters else search.unfiltered()


def wants_fallback(state: RagState) -> bool:
    """CRAG "incorrect": a fallback source is configured, not yet consulted, and nothing is relevant."""
    return (
        bool(value(state, "fallback_source"))
        and not value(state, "fallback_consulted")
        and not value(state, "relevant")
        and not value(state, "error")
        and value(state, "generations") < value(state, "max_generations")
    )


class FallbackSource:
    """The ``fallback_retrieve`` node over ``retriever`` (``redacted_error`` turns a fault into ``error``); without
    a retriever (never routed to then) it finds nothing."""

    def __init__(
        self,
        retriever: BaseRetriever | None,
        settings: RagsExpertSettings,
        redacted_error: Callable[[BaseException], str],
    ) -> None:
        self.retriever = retriever
        self.settings = settings
        self.redacted_error = redacted_error

    @fails_as(
        FailureReason.RETRIEVAL_ERROR,
        charge=lambda state: {"fallback_consulted": True, "queries": [*value(state, "queries"), state["question"]]},
        reset={"documents": []},
        log_as="fallback retrieval failed",
    )
    async def retrieve(self, state: RagState, config: RunnableConfig) -> dict[str, Any]:
        """Search the fallback source once with the question; tag its chunks ``origin: fallback``; a retriever
        fault ends the run honestly."""
        options = fallback_options(SearchOptions.of(state["search"]), self.settings.fallback.request_filters)
        question = state["question"]
        docs = [] if self.retriever is None else await ainvoke_retriever(self.retriever, question, config, options)
        tagged = [
            Document(page_content=d.page_content, metadata={**d.metadata, ORIGIN_KEY: "fallback"}, id=d.id)
            for d in list(docs)[: options.limit]
        ]
        emit("fallback_consulted", chunks=len(tagged))
        return {"documents": tagged}


def build_fallback_retriever(settings: RagsExpertSettings) -> BaseRetriever | None:
    """The fallback source ``fallback.collection`` names (a collection of the same store), or None."""
    collection = settings.fallback.collection
    if collection is None:
        return None
    from rags_expert.retrieval.qdrant import QdrantRetriever

    store = settings.store.model_copy(update={"collection": collection})
    return QdrantRetriever.from_settings(settings.model_copy(update={"store": store}))
