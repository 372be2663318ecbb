"""The unit of the relevant chunks that a run may quote as its answer, or build a draft on.

It is the evidence's best answer (:meth:`~rags_expert.evidence.EvidenceScorer.best_answer`: the reader's choice in
the ``small`` profile), with one condition after a hop: the unit must come from the latest hop's chunks.

A hop is searched only when the evidence found no answer in the chunks before it
(:mod:`rags_expert.rag.retrieve.hops`). Read again beside the hop's chunks, one of those refused units can come
out on top, because the reader's features are relative to the question's best candidate and the hop's chunks move
that best. Quoting it would contradict the reading that planned the hop. On bench/real_docs dev this turned a
confident wrong quote into an honest failure ("Does Gunicorn serve HTTP/3?" answered by a sentence of the Nginx
page the reader had refused before the hop), and it changed no other answer there or on HotpotQA dev.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.documents import Document

from rags_expert.citations import hop_of
from rags_expert.evidence import EvidenceScorer, Match


async def answer_unit(question: str, relevant: Sequence[Document], scorer: EvidenceScorer) -> Match | None:
    """The evidence's best answer of ``relevant`` to ``question``, or None; None too when it is a unit of a chunk
    found before the latest hop (the module docstring)."""
    match = await scorer.best_answer(question, relevant)
    if match is None or hop_of(relevant[match.doc]) == max(hop_of(doc) for doc in relevant):
        return match
    return None
