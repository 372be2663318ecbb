"""The reranking stage between retrieval and grading (``rerank.*``; docs/retrieval.md#reranking).

With a reranker, the ``retrieve`` node asks the retriever for ``rerank.candidates`` chunks (at least the request's
``top_k``), the reranker orders them, and the ``top_k`` best go on to grading: the chunks graded per retrieval, and
so the LLM-call bound, are unchanged. A reranker fault (an HTTP 5xx, a timeout, a reply of the wrong shape, a
compressor that raises) keeps the retrieval order, logged without secrets and sent as the ``rerank_failed`` event;
it never fails the run. ``reranked`` tells a host which reranker chose the chunks.

:func:`build_reranker` resolves ``rerank.kind`` (``auto``: the evidence reranker for the ``small`` profile, a
host's ``reranker=`` when given, else none) into one of :mod:`rags_expert.retrieval.rerank`'s rerankers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.documents import BaseDocumentCompressor, Document

from rags_expert.events import emit
from rags_expert.evidence.rerank import EvidenceReranker
from rags_expert.retrieval.options import SearchOptions
from rags_expert.retrieval.rerank.base import Reranker, RerankError
from rags_expert.retrieval.rerank.compressor import CompressorReranker, load_compressor
from rags_expert.secrets import redact
from rags_expert.settings import RagsExpertSettings

log = logging.getLogger(__name__)

HostReranker = BaseDocumentCompressor | Reranker
"""What a host may pass as ``RagsExpert(reranker=...)``."""


def build_reranker(settings: RagsExpertSettings, host: HostReranker | None = None) -> Reranker | None:
    """The reranker ``rerank.kind`` names (None: no reranking). Raises :class:`RerankError` for a kind whose
    settings are missing (``http`` without ``rerank.url``, ``compressor`` without a compressor)."""
    r = settings.rerank
    kind = r.kind
    if kind == "auto":
        kind = "compressor" if host is not None else ("evidence" if settings.evidence.profile == "small" else "none")
    if kind == "none":
        return None
    if kind == "evidence":
        return EvidenceReranker(settings.evidence, r.evidence_weight, r.rank_constant, r.link_bonus)
    if kind == "http":
        from rags_expert.retrieval.rerank.http_api import HttpReranker

        return HttpReranker(r)
    if kind == "knowledge_flow":
        return _knowledge_flow_reranker(settings)
    if host is not None:
        return CompressorReranker(host) if isinstance(host, BaseDocumentCompressor) else host
    if r.compressor is None:
        raise RerankError("rerank.kind=compressor needs rerank.compressor or RagsExpert(reranker=...)")
    return CompressorReranker(load_compressor(r.compressor))


def _knowledge_flow_reranker(settings: RagsExpertSettings) -> Reranker:
    """knowledge-flow's ``/vector/rerank`` on the configured service."""
    from rags_expert.retrieval.knowledge_flow import KnowledgeFlowClient, KnowledgeFlowError
    from rags_expert.retrieval.rerank.knowledge_flow import KnowledgeFlowReranker

    try:
        return KnowledgeFlowReranker(KnowledgeFlowClient(settings.knowledge_flow))
    except KnowledgeFlowError as exc:
        raise RerankError(f"rerank.kind=knowledge_flow: {exc}") from None


@dataclass(frozen=True)
class RerankStage:
    """The stage as the ``retrieve`` node runs it: how many candidates to fetch, and the fault-safe reordering."""

    reranker: Reranker | None = None
    candidates: int = 0
    deadline: float | None = None
    """Seconds the reranker may take in all (retries included) before the retrieval order is kept."""
    secrets: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, settings: RagsExpertSettings, host: HostReranker | None = None) -> RerankStage:
        """The stage ``rerank.*`` describes (``host``: a reranker the host passed)."""
        r = settings.rerank
        deadline = r.timeout * (r.max_retries + 1) + r.retry_base_delay * 2**r.max_retries
        return cls(build_reranker(settings, host), r.candidates, deadline, tuple(settings.secrets()))

    def fetch(self, options: SearchOptions) -> SearchOptions:
        """The search's options with ``top_k`` raised to the candidates when there is a reranker."""
        if self.reranker is None:
            return options
        return options.model_copy(update={"top_k": max(self.candidates, options.limit)})

    async def apply(self, query: str, docs: Sequence[Document], top_k: int) -> list[Document]:
        """The ``top_k`` chunks for grading: the reranker's best, or on its fault the retrieval order."""
        if self.reranker is None or len(docs) < 2:
            return list(docs)[:top_k]
        name = self.reranker.name
        try:
            kept = await asyncio.wait_for(self.reranker.rerank(query, docs, top_k), self.deadline)
        except Exception as exc:  # noqa: BLE001 - any reranker fault keeps the retrieval order
            timed_out = isinstance(exc, TimeoutError)
            reason = f"no ranking within {self.deadline:g}s" if timed_out else f"{type(exc).__name__}: {exc}"
            reason = redact(reason, self.secrets)
            log.warning("reranker %s failed (%s); keeping the retrieval order", name, reason)
            emit("rerank_failed", reranker=name, reason=reason)
            return list(docs)[:top_k]
        emit("reranked", reranker=name, candidates=len(docs), kept=len(kept))
        return kept
