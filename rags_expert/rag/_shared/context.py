"""The relevant chunks as the answer reads them: which are kept (``max_context_chunks``), and each one's text
once refinement cut it to its strips. Read by grading, multi-hop retrieval, the answer and the verdict."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.documents import Document

from rags_expert.citations import chunk_id


def keep_context(previous: list[Document], new: list[Document], cap: int) -> list[Document]:
    """The relevant chunks kept for answering (``max_context_chunks``): the new ones in retrieval order, best
    first, and as many earlier ones as still fit, the most recent kept; the new ones beyond ``cap`` (the
    lowest ranked) are dropped."""
    new = new[:cap]
    room = cap - len(new)
    return [*(previous[-room:] if room > 0 else []), *new]


def refined_context(relevant: Sequence[Document], strips: dict[str, str]) -> list[Document]:
    """``relevant`` with each refined chunk's text replaced by its kept strips (same metadata and id)."""
    return [
        Document(page_content=strips[cid], metadata=doc.metadata, id=doc.id)
        if (cid := chunk_id(doc)) in strips
        else doc
        for doc in relevant
    ]
