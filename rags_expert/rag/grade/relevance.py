"""Which of a retrieval's new chunks are relevant: the chat model or the evidence, per the model profile.

* one grading call per chunk, all in one wave (``grading.concurrency`` caps it for single-slot servers);
* or, with ``grading.batch``, one call listing the relevant chunk numbers, falling back to one call per chunk
  when the reply names no readable list;
* or, in the ``compact`` profile, none: the reranked top chunks go to the writer, which may decline;
* or, in the ``small`` profile, the evidence (no call): a chunk whose best sentence matches the question
  well enough (``evidence.min_relevance``), and the two chunks of a linked pair (one names the other's title,
  together they hold ``multihop.pair_coverage`` of the question's terms: :func:`~rags_expert.rag._shared.bridge.
  linked_pairs`), the two documents of a two-hop question found by one search.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from langchain_core.documents import Document
from langchain_core.runnables import RunnableConfig

from rags_expert.citations import format_context
from rags_expert.evidence import EvidenceScorer
from rags_expert.llm import grading
from rags_expert.rag._shared.bridge import linked_pairs
from rags_expert.settings import EvidenceSettings

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel


@dataclass(frozen=True)
class Judged:
    """The verdicts of one grading, in the order of the chunks, and the LLM calls they took (also when the
    grading failed: ``error`` is then the first model failure, an ``LLMCallError`` or what the model raised)."""

    verdicts: list[bool]
    llm_calls: int
    error: BaseException | None = None


@dataclass(frozen=True)
class RelevanceJudge:
    """Grades chunks for one agent (immutable, shared by all its runs)."""

    model: BaseChatModel
    grading: grading.GradingContext
    evidence: EvidenceScorer
    settings: EvidenceSettings
    by_llm: bool
    """The profile's choice: the chat model grades (``standard``) or the evidence does (``small``)."""
    by_rank: bool = False
    """The profile's choice (``compact``): every retrieved chunk, in the retrieval's order, goes to the writer."""
    pair_coverage: float | None = None
    """The evidence's linked pairs are relevant from this coverage (None: off; ``multihop.max_hops`` 1)."""

    async def judge(self, question: str, docs: list[Document], config: RunnableConfig) -> Judged:
        """Verdicts for ``docs``; a model failure is returned in ``error``, never raised."""
        if not docs:
            return Judged([], 0)
        if self.by_rank:  # the compact profile: the writer reads the top chunks and may decline
            return Judged([True] * len(docs), 0)
        if not self.by_llm:
            scores = await self.evidence.relevance(question, docs)
            verdicts = [score >= self.settings.min_relevance for score in scores]
            for pair in linked_pairs(question, docs, self.pair_coverage) if self.pair_coverage is not None else []:
                verdicts[pair.a] = verdicts[pair.b] = True
            return Judged(verdicts, 0)
        calls = 0
        try:
            if self.grading.settings.batch and len(docs) > 1:
                calls += 1
                listed = await grading.grade_relevance_batch(
                    self.model, question, format_context(docs), len(docs), self.grading, config=config
                )
                if listed is not None:
                    return Judged(listed, calls)
            calls += len(docs)
            return Judged(await self.per_chunk(question, docs, config), calls)
        except Exception as exc:  # noqa: BLE001 - LLMCallError, or a model that cannot even be called
            return Judged([], calls, exc)

    async def per_chunk(self, question: str, docs: list[Document], config: RunnableConfig) -> list[bool]:
        """One grading call per chunk, at most ``grading.concurrency`` at once; raises the first failure."""
        texts = [d.page_content for d in docs]
        return [
            bool(v)
            for v in await grading.grade_relevance_each(self.model, question, texts, self.grading, config=config)
        ]
