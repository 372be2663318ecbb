"""Any LangChain ``BaseDocumentCompressor`` as a reranker (``rerank.kind: compressor``).

A host passes one (``RagsExpert(reranker=CohereRerank(...))``, ``FlashrankRerank``, ``CrossEncoderReranker``, an
``LLMListwiseRerank``), or names it in the settings as ``rerank.compressor: "module:attribute"`` (an instance, or a
class or function that builds one with no arguments). What the compressor returns is kept, in its order, cut to
``top_k``: a compressor that also filters (``EmbeddingsFilter``) may return fewer chunks than it was given. Model
calls a compressor makes are its own: they are not counted in the agent's LLM-call bound.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from langchain_core.documents import BaseDocumentCompressor, Document

from rags_expert.retrieval.rerank.base import RerankError


def load_compressor(path: str) -> BaseDocumentCompressor:
    """The compressor ``module:attribute`` names (called when it is a class or factory). Raises
    :class:`RerankError` with one line saying what is wrong."""
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise RerankError(f"rerank.compressor={path!r} is invalid: expected 'module:attribute'")
    try:
        target = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise RerankError(f"rerank.compressor={path!r} cannot be loaded: {type(exc).__name__}: {exc}") from None
    if not isinstance(target, BaseDocumentCompressor) and callable(target):
        target = target()
    if not isinstance(target, BaseDocumentCompressor):
        raise RerankError(f"rerank.compressor={path!r} is a {type(target).__name__}, not a BaseDocumentCompressor")
    return target


class CompressorReranker:
    """Reranks with a LangChain document compressor (its async entry point)."""

    def __init__(self, compressor: BaseDocumentCompressor) -> None:
        self.compressor = compressor
        self.name = f"compressor:{type(compressor).__name__}"

    async def rerank(self, query: str, docs: Sequence[Document], top_k: int) -> list[Document]:
        """The compressor's documents for ``query``, in its order, at most ``top_k``."""
        kept = await self.compressor.acompress_documents(list(docs), query)
        return list(kept)[:top_k]
