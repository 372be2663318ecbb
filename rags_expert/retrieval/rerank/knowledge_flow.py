"""knowledge-flow's own reranker (``rerank.kind: knowledge_flow``, with ``retrieval.backend: knowledge_flow``).

The service reranks with its cross-encoder at ``POST {base_url}/vector/rerank {"question", "documents": [hit],
"top_r"}`` and answers the hits best first (fred's ``knowledge_flow_backend``, ``RerankRequest``). The hits sent are
the ones the search returned (our Documents carry their fields in the metadata); each hit that comes back is
matched to its candidate by document uid and content. Same client, token, timeout and retries as the search.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document

from rags_expert.retrieval.knowledge_flow import KnowledgeFlowClient
from rags_expert.retrieval.rerank.base import RerankError, by_indices
from rags_expert.threads import in_daemon_thread

OURS = ("source", "chunk_id", "tags")
"""Metadata keys our mapping adds to a hit (``hit_to_document``); not sent back."""


def as_hit(doc: Document) -> dict[str, Any]:
    """The knowledge-flow hit a Document came from (the fields the service requires filled)."""
    meta = {k: v for k, v in (doc.metadata or {}).items() if k not in OURS and v is not None}
    return meta | {
        "content": doc.page_content,
        "uid": str(meta.get("uid") or ""),
        "title": str(meta.get("title") or ""),
        "score": float(meta.get("score") or 0.0),
    }


def _key(hit: Any) -> tuple[str, str]:
    if not isinstance(hit, dict) or not isinstance(hit.get("content"), str):
        raise RerankError("knowledge-flow's rerank reply holds an item that is not a hit")
    return str(hit.get("uid") or ""), hit["content"]


class KnowledgeFlowReranker:
    """Reranks through the knowledge-flow service's ``/vector/rerank``."""

    name = "knowledge_flow"

    def __init__(self, client: KnowledgeFlowClient) -> None:
        self.client = client

    def rank_sync(self, query: str, docs: Sequence[Document], top_k: int) -> list[int]:
        """The service's ranking of ``docs`` (indices, best first); blocking."""
        hits = [as_hit(d) for d in docs]
        resp, _ = self.client._post({"question": query, "documents": hits, "top_r": top_k}, "/vector/rerank")
        where = self.client._where().removesuffix("/search") + "/rerank"
        if resp.status_code >= 400:
            raise RerankError(f"knowledge-flow {where} answered HTTP {resp.status_code}")
        try:
            reply = resp.json()
        except ValueError:
            raise RerankError(f"knowledge-flow {where} answered a body that is not JSON") from None
        if not isinstance(reply, list):
            raise RerankError(f"knowledge-flow {where} answered a JSON {type(reply).__name__}, expected a list")
        positions: dict[tuple[str, str], list[int]] = {}
        for i, hit in enumerate(hits):
            positions.setdefault(_key(hit), []).append(i)
        try:  # two equal hits: each answered one takes the next of their positions
            return [positions[_key(h)].pop(0) for h in reply]
        except (KeyError, IndexError):
            raise RerankError(f"knowledge-flow {where} answered a hit that was not sent") from None

    async def rerank(self, query: str, docs: Sequence[Document], top_k: int) -> list[Document]:
        """The ``top_k`` best of ``docs`` by the service's cross-encoder (on a daemon thread of its own, as the HTTP
        rerankers: a reply that never ends holds that thread only, never the loop's executor)."""
        return by_indices(docs, await in_daemon_thread(self.rank_sync, query, docs, top_k), top_k)
