"""The model-free reranker: the evidence scorer's question → sentence match fused with the retrieval rank, and
a link from the best chunk to the documents it names.

Each candidate gets the score of its best-matching unit (:meth:`~rags_expert.evidence.EvidenceScorer.relevance`,
lexical: term coverage with local IDF, title and heading as context, answer types). The two rankings, retrieval's and
the evidence's, are fused by weighted reciprocal rank, ``1/(k + r) + w/(k + e)``: the evidence lifts a chunk that
holds the question's rare terms, while a chunk the evidence cannot judge keeps its retrieval rank's share. Then a
chunk of another document whose title the best chunk names (a word-bounded match, a trailing "(…)" qualifier left
out) gains ``link_bonus``: the second paragraph of a two-hop question names none of the question's entities, but
the first one names it ("… directed by *Kevin Smith*" → the chunk titled "Kevin Smith"). Lexical only: embedding
every sentence of 20 candidates with the bundled model would cost seconds per question on a laptop CPU.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.documents import Document

from rags_expert.evidence.scorer import EvidenceScorer
from rags_expert.settings import EvidenceSettings

MIN_TITLE_CHARS = 4
"""Shorter titles ("Go", "API") are words too common to be a link."""
_QUALIFIER = re.compile(r"\s*\([^()]*\)\s*$")


def fused_scores(scores: Sequence[float], weight: float, k: int) -> list[float]:
    """Per candidate, ``1/(k + retrieval rank) + weight/(k + evidence rank)`` (ranks from 1; equal evidence scores
    share the better rank)."""
    ordered = sorted(set(scores), reverse=True)
    evidence_rank = {s: ordered.index(s) + 1 for s in scores}
    return [1 / (k + i + 1) + weight / (k + evidence_rank[s]) for i, s in enumerate(scores)]


def best_first(fused: Sequence[float]) -> list[int]:
    """Candidate indices by score, best first; ties keep the retrieval order."""
    return sorted(range(len(fused)), key=lambda i: (-fused[i], i))


def fuse(scores: Sequence[float], weight: float, k: int) -> list[int]:
    """Candidate indices, best first, by :func:`fused_scores`."""
    return best_first(fused_scores(scores, weight, k))


def title_of(doc: Document) -> str:
    """The chunk's title without a trailing qualifier ("Clerks (film)" → "Clerks")."""
    return _QUALIFIER.sub("", str((doc.metadata or {}).get("title") or "")).strip()


def names_title(text: str, title: str, *, exact_case: bool = False) -> bool:
    """Whether ``text`` names ``title`` as a whole word or phrase (with ``exact_case``, as the title writes it: a
    name, not a page "Testing" in "… for testing")."""
    flags = 0 if exact_case else re.IGNORECASE
    return re.search(rf"(?<!\w){re.escape(title)}(?!\w)", text, flags) is not None


def linked(docs: Sequence[Document], best: int, *, exact_case: bool = False) -> list[bool]:
    """Per candidate, whether it belongs to another document than ``docs[best]`` whose title that chunk names
    (:func:`names_title`)."""
    text, own = docs[best].page_content, title_of(docs[best]).lower()
    out = []
    for doc in docs:
        title = title_of(doc)
        named = len(title) >= MIN_TITLE_CHARS and title.lower() != own
        out.append(named and names_title(text, title, exact_case=exact_case))
    return out


def rerank_order(
    docs: Sequence[Document], scores: Sequence[float], weight: float, k: int, link_bonus: float
) -> list[int]:
    """Candidate indices, best first: :func:`fused_scores`, plus ``link_bonus`` for the chunks the best one links to.

    The best chunk itself stays first: a bridge document is lifted towards the chunk that names it, never above it
    (with a small ``top_k``, the linking chunk would otherwise make way for the one it links to and the question
    would lose its first hop)."""
    fused = fused_scores(scores, weight, k)
    if not (link_bonus and docs):
        return best_first(fused)
    best = best_first(fused)[0]
    links = linked(docs, best)
    lifted = [f + (link_bonus if link else 0.0) for f, link in zip(fused, links, strict=True)]
    return [best, *(i for i in best_first(lifted) if i != best)]


class EvidenceReranker:
    """Reranks by the evidence match fused with the retrieval rank (no model, no network)."""

    name = "evidence"

    def __init__(self, settings: EvidenceSettings, weight: float, rank_constant: int, link_bonus: float) -> None:
        self.scorer = EvidenceScorer(settings.model_copy(update={"use_embeddings": False}))
        self.weight = weight
        self.rank_constant = rank_constant
        self.link_bonus = link_bonus

    async def rerank(self, query: str, docs: Sequence[Document], top_k: int) -> list[Document]:
        """The ``top_k`` best of ``docs`` for ``query``, best first."""
        scores = await self.scorer.relevance(query, docs)
        order = rerank_order(docs, scores, self.weight, self.rank_constant, self.link_bonus)
        return [docs[i] for i in order[:top_k]]
