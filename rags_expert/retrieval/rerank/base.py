"""What every reranker shares: the :class:`Reranker` protocol, its error, and reading an index order back.

A reranker takes the query and the retrieved candidates and returns the ``top_k`` it ranks best, best first.
It raises :class:`RerankError` (or anything else) on a fault; the RAG graph's stage
(:mod:`rags_expert.rag.retrieve.reranking`) then keeps the retrieval order, so a reranker never fails a run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

from langchain_core.documents import Document


class RerankError(RuntimeError):
    """A reranker could not rank the candidates (the server refused, timed out or answered nonsense)."""


@runtime_checkable
class Reranker(Protocol):
    """Reorders retrieved chunks against a query."""

    name: str
    """How logs and events name it (``evidence``, ``http:cohere``, ``compressor:CohereRerank``)."""

    async def rerank(self, query: str, docs: Sequence[Document], top_k: int) -> list[Document]:
        """The ``top_k`` best of ``docs`` for ``query``, best first."""
        ...


def by_indices(docs: Sequence[Document], indices: Iterable[Any], top_k: int) -> list[Document]:
    """``docs`` in the order of ``indices`` (a server's ranking), then those it left out in retrieval order,
    cut to ``top_k``. Raises :class:`RerankError` for an index outside ``docs`` or given twice."""
    seen: list[int] = []
    for i in indices:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(docs) or i in seen:
            raise RerankError(f"the ranking names index {i!r}, not one of the {len(docs)} candidates once")
        seen.append(i)
    rest = [i for i in range(len(docs)) if i not in seen]
    return [docs[i] for i in [*seen, *rest][:top_k]]
