"""The answer's side of the graph, apart from the model call: its prompt, its citations, its evidence checks.

* :func:`answer_messages`: the answer prompt for the profile.
* :func:`answer_prefix`: its fixed beginning, which a local server can evaluate ahead (``RagsExpert.warm_up``).
* :func:`attribute`: give the sentences of an answer the chunks that support them (``evidence.attribution``).
* :func:`evidence_verdicts`: grounded / useful from the evidence (the ``small`` profile's graders).
* :func:`verdict_update`: the state update of the two verdicts, whoever gave them.
* :func:`extractive_answer`: the best matching sentence, quoted and cited (the extractive fallback).
* :func:`quoted_answer`: that, or a linked pair's two sentences (:func:`~rags_expert.rag.retrieve.bridge.pair_quote`).
* :func:`two_quotes`: the answer of two quoted sentences (a hop's or a pair's).
"""

from __future__ import annotations

import datetime as dt
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from rags_expert.events import emit
from rags_expert.evidence import EvidenceScorer, Match, holds_answer, split_sentences, strip_citations, terms
from rags_expert.evidence.answer_type import new_numbers
from rags_expert.evidence.code import code_names, new_code
from rags_expert.language import language_name
from rags_expert.lessons import lessons_block
from rags_expert.llm.grading import Verdict
from rags_expert.prompts import PromptStore
from rags_expert.rag.answer.citations import cited_numbers, cited_sources, format_context
from rags_expert.rag.profiles import ModelProfile
from rags_expert.rag.retrieve.bridge import pair_quote
from rags_expert.rag.state import RagState, value


def answer_messages(
    prompts: PromptStore,
    profile: ModelProfile,
    *,
    question: str,
    relevant: Sequence[Document],
    feedback: str = "",
    lessons: list[str] | None = None,
) -> list[BaseMessage]:
    """The system and user messages of the answer call (chunks numbered as in ``relevant``, each as given:
    whole, or its kept strips after knowledge refinement).

    ``{language}`` is the language detected in ``question`` (:func:`rags_expert.language.language_name`),
    so the answer comes back in the user's language whatever the chunks are written in.
    """
    return [
        _system_message(prompts),
        HumanMessage(
            prompts.render(
                profile.answer_prompt,
                context=format_context(relevant),
                question=question,
                feedback=prompts.render("regenerate_feedback", feedback=feedback) if feedback else "",
                lessons=lessons_block(prompts, lessons),
                language=language_name(question),
            )
        ),
    ]


def answer_prefix(prompts: PromptStore, profile: ModelProfile) -> list[BaseMessage]:
    """The answer call's messages up to the answer prompt's first field: the part every question shares."""
    literal = []
    for text, field, _, _ in string.Formatter().parse(prompts.get(profile.answer_prompt)):
        literal.append(text)  # already unescaped ({{ → {)
        if field is not None:
            break
    return [_system_message(prompts), HumanMessage("".join(literal))]


def _system_message(prompts: PromptStore) -> SystemMessage:
    return SystemMessage(prompts.render("answer_system", date=dt.date.today().isoformat()))


@dataclass(frozen=True)
class Attribution:
    """An answer with citations added from the evidence; ``unsupported`` lists the sentences no chunk supports."""

    text: str
    unsupported: list[str]

    @property
    def complete(self) -> bool:
        """Every sentence of the answer is supported (and now cited)."""
        return not self.unsupported


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
    (:meth:`~rags_expert.evidence.EvidenceScorer.best_answer`) holds it too, with every code name and every number
    the answer adds (a draft that joins a name or a version from one sentence to the question's words from another
    is not what the documentation says; nor is a draft built on a neighbouring unit, `--cache-dir` for a question
    the `--config` sentence answers)."""
    if not attribution.complete:
        return EvidenceVerdicts(False, False, f"no chunk supports: {attribution.unsupported[0][:200]}")
    answer = strip_citations(attribution.text)
    if not holds_answer(answer, question):
        return EvidenceVerdicts(True, False, "the answer does not state what the question asks for")
    best = await scorer.best_answer(question, relevant)
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
    (:func:`extractive_answer`); without one, and with linked pairs on (``pair_coverage``), the sentence of one chunk
    naming another and that one's answer sentence, each cited (prompt ``hop_answer``); else None."""
    match = await scorer.best_answer(question, relevant)
    if match is not None:
        return Quoted(extractive_answer(prompts, match).strip(), match.doc + 1, match.score)
    found = await pair_quote(question, relevant, scorer, pair_coverage) if pair_coverage is not None else None
    if found is None:
        return None
    pair, said, match = found
    return Quoted(two_quotes(prompts, said, pair.a + 1, match.sentence, pair.b + 1), pair.b + 1, match.score)


def verdict_update(state: RagState, answer: str, grounded: Verdict, useful: Verdict) -> dict[str, Any]:
    """``grade_generation``'s state update of the two verdicts: accept, or the feedback (and partial answer) of a
    rejection."""
    update: dict[str, Any] = {"grounded": grounded.value, "useful": useful.value}
    if not (grounded.value and useful.value):
        emit(
            "answer_rejected",
            generation=value(state, "generations"),
            feedback=grounded.reason or useful.reason or ("not grounded" if not grounded.value else "not useful"),
        )
    if not grounded.value:
        detail = grounded.reason or "it makes claims the chunks do not support"
        return update | {"feedback": f"not grounded: {detail}", "failure_reason": "not_grounded"}
    if not useful.value:
        # cited now: later rounds may trim the context and renumber its chunks
        partial, partial_sources = cited_sources(answer, state["relevant"])
        return update | {
            "feedback": f"does not answer the question: {useful.reason or 'information is missing'}",
            "failure_reason": "not_useful",
            "partial_answer": partial,
            "partial_sources": partial_sources,
        }
    return update | {"feedback": "", "failure_reason": ""}
