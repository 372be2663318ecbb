"""The speculative answer: a draft written over the retrieved chunks while they are graded.

Grading, generating and checking are three round trips in sequence. On a question's first retrieval
(``speculative_draft``, the ``standard`` profile), ``grade_documents`` also writes an answer over all the
retrieved chunks, concurrently with their grading. When grading is done the draft is **kept** if it cites at
least one chunk and every chunk it cites was graded relevant: its citations are renumbered to the relevant
chunks' context (the numbering ``generate`` would have used) and the run goes straight to the answer check,
one round trip sooner. Otherwise it is **discarded** and ``generate`` answers from the relevant chunks as
without speculation. Either way the answer check decides as always; a kept draft counts as the first
generation.

A draft is never the answer until the check accepts it: its tokens stream (``messages`` mode) from the
``grade_documents`` node, tagged :data:`DRAFT_TAG`, not from ``generate``; the custom events ``draft_kept``
and ``draft_discarded`` say what became of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document

from rags_expert.citations import chunk_id, cited_numbers, rewrite_citations
from rags_expert.events import emit
from rags_expert.outcomes import DraftFate

DRAFT_TAG = "rags_expert:speculative_draft"
"""The tag of the speculative draft's model call (its streamed tokens carry it)."""


def kept_draft(draft: str, draft_docs: Sequence[Document], relevant: Sequence[Document]) -> str | None:
    """The draft with its citations renumbered to ``relevant``, if every chunk it cites is there; else None.

    ``draft_docs`` are the chunks the draft was written over (its ``[n]`` = ``draft_docs[n-1]``); ``relevant``
    is the context ``generate`` would use (chunk n = ``relevant[n-1]``). A draft citing nothing is not kept:
    it could not be checked against a cited chunk.
    """
    cited = cited_numbers(draft, len(draft_docs))
    if not draft.strip() or not cited:
        return None
    position = {chunk_id(doc): n for n, doc in enumerate(relevant, start=1)}
    new = {}
    for n in cited:
        target = position.get(chunk_id(draft_docs[n - 1]))
        if target is None:
            return None
        new[n] = target
    return rewrite_citations(
        draft,
        len(draft_docs),
        lambda c: "[" + ", ".join(str(m) for m in sorted({new[x] for x in c.numbers})) + "]",
    )


def discard_reason(draft: str, draft_docs: Sequence[Document], relevant: Sequence[Document]) -> str:
    """Why a draft was not kept, in words (for the ``draft_discarded`` event)."""
    if not draft.strip():
        return "the draft was empty"
    cited = cited_numbers(draft, len(draft_docs))
    if not cited:
        return "the draft cites no chunk"
    keep = {chunk_id(doc) for doc in relevant}
    irrelevant = [n for n in cited if chunk_id(draft_docs[n - 1]) not in keep]
    return "it cites chunk(s) graded irrelevant: " + ", ".join(f"[{n}]" for n in irrelevant)


def settle_draft(
    draft: str | BaseException, context: Sequence[Document], relevant: Sequence[Document], generations: int
) -> dict[str, Any]:
    """grade_documents' state update for its draft: kept (the renumbered answer, the first generation) or
    discarded, announced as the ``draft_kept`` / ``draft_discarded`` custom event."""
    if isinstance(draft, BaseException):
        emit("draft_discarded", reason=f"the draft call failed ({type(draft).__name__})")
        return {"speculative": DraftFate.DISCARDED.value}
    kept = kept_draft(draft, context, relevant)
    if kept is None:
        emit("draft_discarded", reason=discard_reason(draft, context, relevant))
        return {"speculative": DraftFate.DISCARDED.value}
    emit("draft_kept", answer=kept)
    return {"speculative": DraftFate.KEPT.value, "answer": kept, "generations": generations + 1}
