"""In-memory documents and a real (keyword-ranking) retriever over them, for graph tests."""

from __future__ import annotations

import re
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever


class KeywordRetriever(BaseRetriever):
    """Ranks in-memory chunks by word overlap with the query (a real retriever for graph tests)."""

    docs: list[Document]
    calls: list[dict[str, Any]] = []

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        top_k: int | None = None,
        library_tags: list[str] | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        self.calls.append({"query": query, "top_k": top_k, "library_tags": library_tags, **kwargs})
        words = set(re.findall(r"\w+", query.lower()))
        pool = [d for d in self.docs if not library_tags or set(d.metadata.get("tags", [])) & set(library_tags)]
        scored = sorted(pool, key=lambda d: -len(words & set(re.findall(r"\w+", d.page_content.lower()))))
        return [
            Document(d.page_content, metadata={**d.metadata, "score": float(i)})
            for i, d in enumerate(scored[: top_k or 4])
        ]


def make_docs(texts: dict[str, str], tags: list[str] | None = None) -> list[Document]:
    return [
        Document(
            text,
            metadata={"title": title, "source": f"kb/{title}.md", "page": None, "chunk_id": title, "tags": tags or []},
        )
        for title, text in texts.items()
    ]
