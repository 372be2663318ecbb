"""Knowledge refinement (CRAG's decompose-recompose): relevant chunks cut to their relevant strips.

When refinement is on (``refinement.method``, else the model profile's choice), a run about to ``generate``
goes through ``refine_knowledge`` first while some relevant chunk is not refined yet. The node splits each
such chunk into strips of ``refinement.window`` sentences and keeps:

* ``evidence`` (no model call): the strips whose best sentence matches the question at least
  ``refinement.min_score`` (:meth:`EvidenceScorer.matches`: term coverage blended with the embedding
  similarity), best first up to ``max_strips``; the best strip always;
* ``llm``: the strips that one call per chunk names (prompt ``refine_strips``), all chunks at once (at most
  ``grading.concurrency``).

The kept strips, in the chunk's order (a gap marked ``…``), stand for the chunk in the answer prompt and in
the groundedness check (``strips`` in the state, by chunk id). The chunk itself, its number and its source
do not change, so citations still point to the whole chunk. A chunk of one strip, a chunk the evidence
finds no match in, a reply that names no strip or cannot be read, and a failed call all keep the whole
chunk: refinement only cuts where it has a reason to, and never fails a run. The one exception is the
``compact`` profile's (``ModelProfile.refine_unmatched``): it sends every top chunk to a small writer without a
relevance check, so a chunk holding none of the question's names keeps only its lead (its first strips).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.documents import Document
from langchain_core.runnables import RunnableConfig

from rags_expert.citations import chunk_id
from rags_expert.events import emit
from rags_expert.evidence import EvidenceScorer, split_sentences
from rags_expert.llm import grading
from rags_expert.prompts import neutralise
from rags_expert.rag.profiles import RefinePlan
from rags_expert.rag.state import RagState, value

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

log = logging.getLogger(__name__)

GAP = " … "
"""Between two kept strips that were not neighbours in the chunk."""


def split_strips(text: str, window: int) -> list[list[str]]:
    """``text``'s sentences in consecutive groups of ``window`` (the last one may be shorter)."""
    sentences = split_sentences(text)
    return [sentences[i : i + window] for i in range(0, len(sentences), window)]


def recompose(strips: Sequence[Sequence[str]], keep: Sequence[bool]) -> str:
    """The kept strips in the chunk's order: neighbours joined by a space, a gap between others by ``…``."""
    out, last = "", None
    for i, (strip, kept) in enumerate(zip(strips, keep, strict=True)):
        if not kept:
            continue
        joiner = "" if last is None else (" " if last == i - 1 else GAP)
        out += joiner + " ".join(strip)
        last = i
    return out


def needs_refinement(state: RagState) -> bool:
    """Refinement is on for this question and a relevant chunk is not refined yet."""
    done = value(state, "strips")
    return bool(value(state, "refine")) and any(chunk_id(d) not in done for d in value(state, "relevant"))


def _followed(keep: list[bool], follow: int) -> list[bool]:
    """``keep`` with the ``follow`` strips after each kept one kept too."""
    return [any(keep[max(0, n - follow) : n + 1]) for n in range(len(keep))]


def _lead(strips: int, keep: int) -> list[bool]:
    """The first ``keep`` of a chunk's ``strips``."""
    return [n < keep for n in range(strips)]


@dataclass(frozen=True)
class Refiner:
    """The ``refine_knowledge`` node for one agent (immutable, shared by all its runs)."""

    model: BaseChatModel
    grading: grading.GradingContext
    evidence: EvidenceScorer
    plan: RefinePlan

    async def refine_knowledge(self, state: RagState, config: RunnableConfig) -> dict[str, Any]:
        """Cut each relevant chunk not refined yet to its relevant strips (see the module docstring)."""
        strips = dict(value(state, "strips"))
        todo = [d for d in value(state, "relevant") if chunk_id(d) not in strips]
        split = [split_strips(d.page_content, self.plan.window) for d in todo]
        if self.plan.method == "llm":
            keeps, calls = await self._by_llm(state["question"], todo, split, config)
        else:
            keeps, calls = await self._by_evidence(state["question"], todo, split), 0
        before = after = 0
        for doc, parts, keep in zip(todo, split, keeps, strict=True):
            text = recompose(parts, keep) if keep is not None and any(keep) else doc.page_content
            strips[chunk_id(doc)] = text
            before, after = before + len(doc.page_content), after + len(text)
        emit("knowledge_refined", chunks=len(todo), characters=before, kept=after, method=self.plan.method)
        return {"strips": strips, "llm_calls": calls}

    async def _by_evidence(
        self, question: str, docs: list[Document], split: list[list[list[str]]]
    ) -> list[list[bool] | None]:
        """Per chunk, the strips the evidence keeps (no match in it: its lead with the plan's ``unmatched`` at
        ``lead``, else None, keep it whole)."""
        strip_of: list[dict[str, int]] = [{} for _ in split]
        for where, parts in zip(strip_of, split, strict=True):
            for n, strip in enumerate(parts):
                for sentence in strip:
                    where.setdefault(sentence, n)
        keeps: list[list[bool] | None] = [None] * len(docs)
        for m in await self.evidence.matches(question, docs):  # best first
            if (i := strip_of[m.doc].get(m.sentence, -1)) < 0:
                continue
            keep = keeps[m.doc]
            if keep is None:
                keeps[m.doc] = keep = [False] * len(split[m.doc])
                keep[i] = True  # the best strip, whatever its score
            elif m.score >= self.plan.min_score and sum(keep) < self.plan.max_strips:
                keep[i] = True
        if self.plan.follow:
            keeps = [_followed(k, self.plan.follow) if k is not None else None for k in keeps]
        if self.plan.unmatched == "lead":
            keeps = [
                k if k is not None else _lead(len(parts), self.plan.max_strips)
                for k, parts in zip(keeps, split, strict=True)
            ]
        return keeps

    async def _by_llm(
        self, question: str, docs: list[Document], split: list[list[list[str]]], config: RunnableConfig
    ) -> tuple[list[list[bool] | None], int]:
        """Per chunk, the strips the model names (None: one strip only, or no readable choice), and the calls."""
        limit = asyncio.Semaphore(self.grading.settings.concurrency)

        async def choose(doc: Document, parts: list[list[str]]) -> list[bool] | None:
            framed = "\n".join(f'<strip n="{n}">{neutralise(" ".join(p))}</strip>' for n, p in enumerate(parts, 1))
            title = str(doc.metadata.get("title") or "")
            async with limit:
                try:
                    return await grading.select_strips(
                        self.model, question, title, framed, len(parts), self.grading, config=config
                    )
                except Exception as exc:  # noqa: BLE001 - refinement is optional: the chunk stays whole
                    log.warning("knowledge refinement call failed, the chunk stays whole: %s", type(exc).__name__)
                    return None

        asked = [i for i, parts in enumerate(split) if len(parts) > 1]
        chosen = await asyncio.gather(*(choose(docs[i], split[i]) for i in asked))
        keeps: list[list[bool] | None] = [None] * len(docs)
        for i, keep in zip(asked, chosen, strict=True):
            keeps[i] = keep
        return keeps, len(asked)
