"""The evidence's verdicts on an answer, without the model: which chunk supports each sentence, and whether the
answer is grounded and useful (the ``small`` profile's graders).

* :func:`attribute`: give the sentences of an answer the chunks that support them (``evidence.attribution``).
* :func:`evidence_verdicts`: grounded / useful from the evidence, with the reason of a rejection.
* :func:`built_on` / :func:`adds_only_from`: whether an answer rests on one sentence of the chunks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.documents import Document

from rags_expert.citations import cited_numbers
from rags_expert.evidence import EvidenceScorer, holds_answer, split_sentences, strip_citations, terms
from rags_expert.evidence.answer_type import new_numbers
from rags_expert.evidence.code import code_names, new_code
from rags_expert.rag._shared.choice import answer_unit


@dataclass(frozen=True)
class Attribution:
    """An answer with citations added from the evidence; ``unsupported`` lists the sentences no chunk supports."""

    text: str
    unsupported: list[str]

    @property
    def complete(self) -> bool:
        """Every sentence of the answer is supported (and now cited)."""
        return not self.unsupported

    @property
    def reason(self) -> str:
        """Why the answer is not grounded ("" when it is complete): its first sentence no chunk supports."""
        return f"no chunk supports: {self.unsupported[0][:200]}" if self.unsupported else ""


def attribute(
    answer: str, relevant: Sequence[Document], scorer: EvidenceScorer, *, replace: bool, prose_only: bool = False
) -> Attribution:
    """Cite each sentence of ``answer`` with the chunk that supports it.

    With ``replace`` the model's own citations are dropped first (a weak model's ``[n]`` are noise);
    otherwise sentences that already cite a chunk keep their citations and only the others are attributed.
    With ``prose_only`` (the evidence grades the answer) code examples support no sentence.
    """
    sentences = split_sentences(answer)
    out, unsupported = [], []
    claims = [strip_citations(s) for s in sentences]
    for sentence, support in zip(sentences, scorer.support(claims, relevant, prose_only=prose_only), strict=True):
        if not replace and cited_numbers(sentence, len(relevant)):
            out.append(sentence)
            continue
        bare = strip_citations(sentence) if replace else sentence
        if support.doc is None:
            if terms(bare):
                unsupported.append(bare)
            out.append(bare)
            continue
        body, end = (bare[:-1], bare[-1]) if bare[-1:] in ".!?" else (bare, "")
        out.append(f"{body} [{support.doc + 1}]{end}")
    return Attribution(" ".join(out), unsupported)


@dataclass(frozen=True)
class EvidenceVerdicts:
    """The evidence's verdicts on an answer, with the reason of a rejection."""

    grounded: bool
    useful: bool
    reason: str = ""


async def evidence_verdicts(
    question: str, attribution: Attribution, relevant: Sequence[Document], scorer: EvidenceScorer
) -> EvidenceVerdicts:
    """Grounded: every sentence is supported by a chunk (the answer's :func:`attribute`). Useful: the answer
    holds something of the question's answer type, and the unit of the chunks that answers the question best
    (:func:`~rags_expert.rag._shared.choice.answer_unit`) holds it too, with every code name and every number
    the answer adds (a draft that joins a name or a version from one sentence to the question's words from another
    is not what the documentation says; nor is a draft built on a neighbouring unit, `--cache-dir` for a question
    the `--config` sentence answers)."""
    if not attribution.complete:
        return EvidenceVerdicts(False, False, attribution.reason)
    answer = strip_citations(attribution.text)
    if not holds_answer(answer, question):
        return EvidenceVerdicts(True, False, "the answer does not state what the question asks for")
    best = await answer_unit(question, relevant, scorer)
    if best is not None and built_on(answer, question, best.sentence):
        return EvidenceVerdicts(True, True)
    return EvidenceVerdicts(True, False, "the sentence of the chunks that answers the question best does not say this")


def built_on(answer: str, question: str, sentence: str, *, every_term: bool = False) -> bool:
    """Whether ``answer`` rests on ``sentence``: some of the terms it adds to ``question`` are in it (with
    ``every_term``, all of them), and every code name and number it adds (:func:`adds_only_from`)."""
    added = terms(answer) - terms(question)
    held = added <= terms(sentence) if every_term else bool(added & terms(sentence))
    return held and adds_only_from(answer, question, sentence)


def adds_only_from(answer: str, question: str, sentence: str) -> bool:
    """Whether every code name and every number ``answer`` adds to ``question`` is in ``sentence``: a draft joining a
    name or a version from one sentence to the words of another is not what the documentation says."""
    return new_code(answer, question) <= code_names(sentence) and new_numbers(answer, question) <= new_numbers(
        sentence, ""
    )
