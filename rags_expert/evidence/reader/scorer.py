"""The evidence scorer whose answer is the answer selector's choice (``evidence.reader``).

:class:`ReadingScorer` is the :class:`~rags_expert.evidence.scorer.EvidenceScorer` whose ``best_answer`` is the
model's choice, quoted with the unit of its heading that states the value a question asks for when it states none
itself (:func:`~rags_expert.evidence.reader.quote.value_beside`); everything else it scores as the evidence does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import replace

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from rags_expert.evidence.reader.features import candidates
from rags_expert.evidence.reader.model import ReaderModel
from rags_expert.evidence.reader.quote import as_match, together, value_beside
from rags_expert.evidence.scorer import EvidenceScorer, Match
from rags_expert.evidence.text import TermFrequencies
from rags_expert.settings import EvidenceSettings


class ReadingScorer(EvidenceScorer):
    """The evidence scorer whose answer choice is the reader's (:class:`ReaderModel`): every retrieved unit is a
    candidate, the model quotes the most probable one or none. Relevance and support stay the evidence's."""

    def __init__(
        self,
        settings: EvidenceSettings,
        embeddings: Embeddings | Callable[[], Embeddings | None] | None = None,
        model: ReaderModel | None = None,
        frequencies: Callable[[], TermFrequencies | None] | None = None,
    ) -> None:
        """``model``: the fitted reader (default: the shipped weights); ``frequencies``: the knowledge base's term
        frequencies, read on first use (None: the retrieved chunks' own)."""
        super().__init__(settings, embeddings)
        self.model = model or ReaderModel.shipped()
        self._read = frequencies
        self._known: TermFrequencies | None = None
        if self.model.needs_likelihood:
            raise ValueError("this reader needs the local model's likelihoods, which the agent does not compute")

    def _read_frequencies(self) -> TermFrequencies | None:
        with self._lock:
            if self._read is not None:
                self._known, self._read = self._read(), None
            return self._known

    async def frequencies(self) -> TermFrequencies | None:
        """The knowledge base's term frequencies (read once, on first use, off the event loop), or None without a
        knowledge base."""
        if self._read is None:
            return self._known
        return await asyncio.to_thread(self._read_frequencies)

    async def matches(
        self, question: str, docs: Sequence[Document], topic: frozenset[str] = frozenset()
    ) -> list[Match]:
        """The evidence's matches, the question's names that the knowledge base is about held by every chunk
        (``evidence.topic_share``): relevance and support read the settings page that never repeats the library's
        name as the answer choice does."""
        frequencies = await self.frequencies()
        if frequencies is not None:
            topic = topic | frequencies.topic(question, self.settings.topic_share)
        return await super().matches(question, docs, topic)

    async def best_answer(self, question: str, docs: Sequence[Document]) -> Match | None:
        """The candidate the reader chooses, as a match (its score is the reader's probability), or None."""
        found = await candidates(self, question, docs, await self.frequencies())
        rows = [c.row for c in found]
        chosen = self.model.choose(rows)
        if chosen is None:
            return None
        match = as_match(found[chosen[0]], chosen[1])
        beside = value_beside(found, chosen[0], lambda: self.model.probabilities(rows), question)
        return match if beside is None else replace(match, sentence=together(found, chosen[0], beside))

    async def closest(self, question: str, docs: Sequence[Document], k: int = 3) -> list[Match]:
        """The ``k`` most probable quotes by the reader (factual units, each text once), for a "not found" reply."""
        found = await candidates(self, question, docs, await self.frequencies())
        probs = self.model.probabilities([c.row for c in found])
        order = sorted(range(len(found)), key=lambda i: (-probs[i], i))
        out: list[Match] = []
        for i in order:
            c = found[i]
            if len(out) == k:
                break
            if c.row["factual"] and all(c.text != o.sentence for o in out):
                out.append(as_match(c, probs[i]))
        return out
