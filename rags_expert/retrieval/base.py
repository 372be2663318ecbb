"""What our retrievers share: per-request options as ``invoke`` keyword arguments, resolved against settings.

``QdrantRetriever`` and ``KnowledgeFlowRetriever`` only implement :meth:`ScopedRetriever._search`; the sync
and async LangChain entry points, the default ``top_k`` and the default tags live here once. Nothing
request-specific is stored on an instance, so one retriever serves concurrent requests.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from rags_expert.settings import KnowledgeBaseSettings


def nothing_in_scope(library_tags: list[str] | None, document_uids: list[str] | None) -> bool:
    """Whether a request scopes the search to nothing: an empty list (not None) of tags or of documents.

    ``None`` means "no filter"; ``[]`` means "none of them", so the search has no hits at all.
    """
    return (library_tags is not None and not library_tags) or (document_uids is not None and not document_uids)


class ScopedRetriever(BaseRetriever):
    """A retriever whose per-request options (``top_k``, ``library_tags``, ``document_uids``,
    ``search_policy``) arrive as keyword arguments of ``invoke`` / ``ainvoke``."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    settings: KnowledgeBaseSettings

    def resolve_top_k(self, top_k: int | None) -> int:
        """The request's ``top_k``, else ``retrieval.top_k``."""
        return int(top_k or self.settings.retrieval.top_k)

    def resolve_tags(self, library_tags: list[str] | None) -> list[str] | None:
        """The request's tags; ``None`` falls back to ``retrieval.library_tags`` (``[]`` there: no filter)."""
        return library_tags if library_tags is not None else (self.settings.retrieval.library_tags or None)

    def _search(
        self,
        query: str,
        top_k: int | None,
        library_tags: list[str] | None,
        document_uids: list[str] | None,
        search_policy: str | None,
    ) -> list[Document]:
        """Search with the request's options (blocking; called in a worker thread by ``ainvoke``)."""
        raise NotImplementedError

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        top_k: int | None = None,
        library_tags: list[str] | None = None,
        document_uids: list[str] | None = None,
        search_policy: str | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """Synchronous search."""
        return self._search(query, top_k, library_tags, document_uids, search_policy)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        top_k: int | None = None,
        library_tags: list[str] | None = None,
        document_uids: list[str] | None = None,
        search_policy: str | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """Asynchronous search: the blocking work (embedding, Qdrant, HTTP) runs in a worker thread."""
        return await asyncio.to_thread(self._search, query, top_k, library_tags, document_uids, search_policy)
