"""The extractive answer: a sentence of the chunks quoted and cited instead of a written one (the ``small``
profile's extractive fallback, and a hop's or a linked pair's two quoted sentences).

* :func:`extractive_answer`: the best matching sentence, quoted and cited.
* :func:`quoted_answer`: that, or a linked pair's two sentences (:func:`~rags_expert.rag._shared.bridge.pair_quote`).
* :func:`two_quotes`: the answer of two quoted sentences (a hop's or a pair's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.documents import Document

from rags_expert.evidence import EvidenceScorer, Match
from rags_expert.prompts import PromptStore
from rags_expert.rag._shared.bridge import pair_quote
from rags_expert.rag._shared.choice import answer_unit


def extractive_answer(prompts: PromptStore, match: Match) -> str:
    """The extractive fallback's answer: the sentence, quoted, with its chunk's citation."""
    return prompts.render("extractive_answer", quote=match.sentence, n=match.doc + 1)


def two_quotes(prompts: PromptStore, said: str, said_n: int, quote: str, n: int) -> str:
    """The answer of two quoted sentences, each cited (prompt ``hop_answer``): the one naming the bridge, then the
    one that answers about it."""
    return prompts.render("hop_answer", bridge_quote=said, bridge_n=said_n, quote=quote, n=n).strip()


@dataclass(frozen=True)
class Quoted:
    """An extractive answer: its text, the chunk (number) it quotes last and that sentence's match score."""

    text: str
    chunk: int
    score: float


async def quoted_answer(
    question: str,
    relevant: Sequence[Document],
    scorer: EvidenceScorer,
    prompts: PromptStore,
    pair_coverage: float | None,
) -> Quoted | None:
    """The extractive fallback's answer: the best matching sentence holding an answer of the question's type
    (:func:`~rags_expert.rag._shared.choice.answer_unit`), quoted (:func:`extractive_answer`); without one, and with
    linked pairs on (``pair_coverage``), the sentence of one chunk naming another and that one's answer sentence,
    each cited (prompt ``hop_answer``); else None."""
    match = await answer_unit(question, relevant, scorer)
    if match is not None:
        return Quoted(extractive_answer(prompts, match).strip(), match.doc + 1, match.score)
    found = await pair_quote(question, relevant, scorer, pair_coverage) if pair_coverage is not None else None
    if found is None:
        return None
    pair, said, match = found
    return Quoted(two_quotes(prompts, said, pair.a + 1, match.sentence, pair.b + 1), pair.b + 1, match.score)
