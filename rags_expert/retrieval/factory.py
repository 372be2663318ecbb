"""Build RagsExpert's default retriever from the settings."""

from __future__ import annotations

from langchain_core.retrievers import BaseRetriever

from rags_expert.settings import KnowledgeBaseSettings, RagsExpertSettings


def build_retriever(settings: RagsExpertSettings) -> BaseRetriever:
    """The retriever named by ``settings.retrieval.backend``: the Qdrant knowledge base or knowledge-flow."""
    return retriever_from_settings(settings)


def retriever_from_settings(r: KnowledgeBaseSettings) -> BaseRetriever:
    """The retriever named by ``r.retrieval.backend`` (used by ``ask`` through :func:`build_retriever` and by
    ``search``)."""
    if r.retrieval.backend == "knowledge_flow":
        from rags_expert.retrieval.knowledge_flow import KnowledgeFlowRetriever

        return KnowledgeFlowRetriever.from_settings(r)
    from rags_expert.retrieval.qdrant import QdrantRetriever

    return QdrantRetriever.from_settings(r)
