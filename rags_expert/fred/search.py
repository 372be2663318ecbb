"""A LangChain retriever over Fred's per-turn document-search port, and our sources back as Fred hits.

Fred gives every turn a ``ctx.services.document_search`` port bound to the user: it searches the
knowledge-flow service with the user's token and narrows every request to the session's libraries and
documents. :class:`FredDocumentSearch` puts that port behind the retriever interface our graph already
uses, so the RAG graph runs unchanged and Fred's scoping applies to every search (rephrased ones too).

Fred's hits are the knowledge-flow service's hits, so they become Documents exactly as our own
knowledge-flow client makes them (:func:`~rags_expert.retrieval.knowledge_flow.hit_to_document`). The
retriever remembers each hit by the chunk id it gave the Document; :meth:`FredDocumentSearch.cited_hits`
turns the final message's sources (``[n]`` = ``sources[n-1]``) back into those hits, in that order, so Fred's
citation badges open the right passage with all the metadata Fred had (links, tags, preview URLs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from rags_expert.retrieval.knowledge_flow import hit_to_document
from rags_expert.retrieval.options import SearchOptions
from rags_expert.settings import RetrievalSettings


class FredDocumentSearch(BaseRetriever):
    """Searches through a Fred ``DocumentSearchPort`` (async only: the port is async).

    The request's options arrive as ``ainvoke`` keyword arguments like for our other retrievers
    (read as one :class:`~rags_expert.retrieval.options.SearchOptions`):
    ``library_tags`` become the port's ``library_tag_ids`` (Fred narrows them to the session's libraries),
    ``document_uids`` and ``search_policy`` pass through, ``top_k`` defaults to :attr:`top_k`.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    port: Any
    """The turn's ``ctx.services.document_search``."""
    top_k: int = Field(default_factory=lambda: RetrievalSettings().top_k)
    """Hits per search when the request gives no ``top_k``: the agent passes its ``retrieval.top_k``; the
    setting's default otherwise."""
    hits: dict[str, Any] = Field(default_factory=dict)
    """Every hit returned this turn, by the chunk id of its Document."""

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        """Not offered: the port is async. Declares ``**kwargs`` all the same: LangChain reads this signature to
        decide whether ``ainvoke`` passes keyword arguments on, so without it every search option was dropped."""
        raise NotImplementedError("Fred's document search is async: use ainvoke")

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        """One search through the port; the hits become Documents with our metadata contract."""
        options = SearchOptions.of(kwargs)
        result = await self.port.search(
            query,
            top_k=options.top_k or self.top_k,
            library_tag_ids=options.library_tags,
            document_uids=options.document_uids,
            search_policy=options.search_policy,
        )
        docs = []
        for i, hit in enumerate(result.hits):
            doc = hit_to_document(hit.model_dump(mode="json"), i)
            self.hits[doc.metadata["chunk_id"]] = hit
            docs.append(doc)
        return docs

    def cited_hits(self, sources: Sequence[dict[str, Any]]) -> tuple[Any, ...]:
        """The Fred hits of the final message's sources, in citation order, ranked 1..k like ``[n]``."""
        from fred_core.store import VectorSearchHit

        out = []
        for source in sources:
            hit = self.hits.get(source.get("uid", ""))
            if hit is None:  # not from this turn's searches: keep the numbering with what the source says
                hit = VectorSearchHit(
                    content=source.get("content") or "",
                    uid=source.get("uid") or "",
                    title=source.get("title") or "",
                    score=float(source.get("score") or 0.0),
                )
            out.append(hit.model_copy(update={"rank": source.get("n")}))
        return tuple(out)
