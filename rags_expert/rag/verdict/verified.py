"""The answer check without the model, where the evidence is sure: an answer that quotes what it cites.

The ``standard`` profile asks the model two questions of every answer (grounded? useful?), one round trip after
the answer. When the evidence can see both for itself, that round trip is wasted: with
``evidence.verify_answers`` on, ``grade_generation`` first asks :func:`evidence_accepts`, and only when it does
not accept do the model's two checks run, exactly as before. The evidence can accept an answer; it never
rejects one, so a model's "no" is never overruled by the evidence saying nothing.

An answer is accepted when

* **every sentence is held by a chunk it cites**: each sentence cites a chunk, and every content term of the
  sentence (:func:`~rags_expert.evidence.terms`) is in one segment of a cited chunk, or two neighbouring ones, or
  the chunk's title and heading (:func:`~rags_expert.rag._shared.spans.best_span`; ``evidence.min_support``, 1.0 by
  default: not one word of its own), and every number it writes is in that segment. This is the span
  citation of the final answer (:mod:`rags_expert.rag._shared.spans`), held to a higher bar;
* **it states what the question asks**: it holds something of the question's answer type the question lacks,
  and every term, number and code name it adds to the question is in the one sentence the evidence would quote
  as the answer (:meth:`~rags_expert.evidence.EvidenceScorer.best_answer`: the best match of the question that
  holds an answer of its type, scoring at least ``evidence.min_answer_score``), and a "how tall / how long"
  answer holds the number that sentence gives the measure ("34" of "34 metres tall"), a "which mountain" answer
  a mountain's name when the sentence names one ("Mount Arden"). Stricter than the
  ``small`` profile's usefulness check (any matching sentence), because here it replaces a capable model's.

``bench/evidence_checks.py`` measures how often this agrees with a judge that knows the gold answer (the stand-in
for the model's checks), and what a disagreement costs (docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.documents import Document

from rags_expert.citations import cited_numbers, source_dict
from rags_expert.evidence import EvidenceScorer, holds_answer, strip_citations, terms
from rags_expert.evidence.answer_type import answer_category, names_category, new_numbers
from rags_expert.evidence.text import measure_hint, stem, words
from rags_expert.rag._shared.choice import answer_unit
from rags_expert.rag._shared.spans import answer_sentences, best_span
from rags_expert.rag.verdict._evidence import built_on


def _held(sentence: str, cited: Sequence[Document], min_support: float) -> bool:
    """Whether one chunk of ``cited`` holds every term (``min_support`` of them) and every number of ``sentence``
    in one segment or two neighbouring ones (with its title and heading)."""
    claim = terms(strip_citations(sentence))
    numbers = new_numbers(strip_citations(sentence), "")
    for doc in cited:
        share, start, end = best_span(claim, source_dict(doc, 0))
        if share >= min_support and numbers <= new_numbers(doc.page_content[start:end], ""):
            return True
    return False


def quotes_its_sources(answer: str, relevant: Sequence[Document], min_support: float) -> bool:
    """Whether every sentence of ``answer`` cites a chunk of ``relevant`` (numbered from 1) that holds it; a
    sentence without content terms ("Yes [1].") needs only its citation."""
    sentences = answer_sentences(answer)
    if not sentences:
        return False
    for sentence in sentences:
        numbers = cited_numbers(sentence, len(relevant))
        if not numbers:
            return False
        if terms(strip_citations(sentence)) and not _held(sentence, [relevant[n - 1] for n in numbers], min_support):
            return False
    return True


async def states_the_answer(question: str, answer: str, relevant: Sequence[Document], scorer: EvidenceScorer) -> bool:
    """Whether ``answer`` holds something of the question's answer type and everything it adds to the question
    (content terms, numbers, code names) is in the one sentence the evidence would quote as the answer
    (:func:`~rags_expert.rag._shared.choice.answer_unit`)."""
    text = strip_citations(answer)
    if not holds_answer(text, question):
        return False
    best = await answer_unit(question, relevant, scorer)
    if best is None:
        return False
    hint = measure_hint(question)
    measured = _measured(best.sentence, hint) if hint else None
    if measured is not None and measured not in new_numbers(text, ""):
        return False  # "How tall?": the answer leaves out the "34" of "34 metres tall"
    category = answer_category(question)
    if category and names_category(best.sentence, category) and not names_category(text, category):
        return False  # "On which mountain?": the sentence says "Mount Arden", the answer names no mountain
    return built_on(text, question, best.sentence, every_term=True)


_MEASURE_REACH = 3
"""How many words before a measure's adjective ("34 metres *tall*") its number may stand."""


def _measured(sentence: str, hint: str) -> str | None:
    """The number ``sentence`` gives the measure ``hint`` asks for ("34" of "34 metres tall", hint ``tall``), or
    None when the sentence does not say the adjective right after a number."""
    tokens = words(sentence)
    for i, word in enumerate(tokens):
        if stem(word.lower()) == hint:
            for token in reversed(tokens[max(0, i - _MEASURE_REACH) : i]):
                if token[0].isdigit():
                    return token.replace(",", "")
    return None


async def evidence_accepts(question: str, answer: str, relevant: Sequence[Document], scorer: EvidenceScorer) -> bool:
    """Whether the evidence alone accepts ``answer`` to ``question`` over the chunks it cites (module docstring)."""
    return quotes_its_sources(answer, relevant, scorer.settings.min_support) and await states_the_answer(
        question, answer, relevant, scorer
    )
