"""What our retrievers share: per-request options as ``invoke`` keyword arguments, resolved against settings.

``QdrantRetriever`` and ``KnowledgeFlowRetriever`` only implement :meth:`ScopedRetriever._search`; the sync
and async LangChain entry points live here once, the defaults and the empty-list rule in
:class:`~rags_expert.retrieval.options.SearchOptions`. Nothing
request-specific is stored on an instance, so one retriever serves concurrent requests.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from rags_expert.retrieval.options import SearchOptions
from rags_expert.settings import KnowledgeBaseSettings


class ScopedRetriever(BaseRetriever):
    """A retriever whose per-request options (``top_k``, ``library_tags``, ``document_uids``,
    ``search_policy``) arrive as keyword arguments of ``invoke`` / ``ainvoke``; they reach :meth:`_search` as one
    :class:`~rags_expert.retrieval.options.SearchOptions`, resolved against the settings."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    settings: KnowledgeBaseSettings

    def _search(self, query: str, options: SearchOptions) -> list[Document]:
        """Search with the request's resolved options (blocking; called in a worker thread by ``ainvoke``)."""
        raise NotImplementedError

    def _options(self, kwargs: dict[str, Any]) -> SearchOptions:
        """The search options among ``invoke``'s keyword arguments, with the configured defaults."""
        return SearchOptions.of(kwargs).resolved(self.settings.retrieval)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        """Synchronous search."""
        return self._search(query, self._options(kwargs))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        """Asynchronous search: the blocking work (embedding, Qdrant, HTTP) runs in a worker thread."""
        return await asyncio.to_thread(self._search, query, self._options(kwargs))
