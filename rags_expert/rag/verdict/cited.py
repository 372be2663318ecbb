"""The checks that need no model and hold in every profile, and the ``compact`` profile's verdict.

* :func:`states_something`: an answer that only restates the question ("The command to show the labels is [1].")
  states no fact, whatever a grader says of it: it is never a success, in any profile.
* :func:`declines`: the answer prompt's "not in the excerpts" reply (``NOT FOUND``), or an answer that says so.
* :func:`cited_support`: how well the chunks an answer cites hold what it adds to the question, from 0 to 1.
* :func:`cited_verdicts`: the ``compact`` profile's grounded / useful (a model of ~0.5-3B writes the answer from
  the top chunks; the evidence checks that the cited text holds it): accepted when it states something and its
  cited support reaches ``evidence.min_cited_support`` (fitted on dev questions for ≤ 5 % wrong answers,
  ``bench/local_designs.py``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.documents import Document

from rags_expert.citations import cited_numbers, source_dict, without_code_blocks
from rags_expert.evidence import strip_citations, terms
from rags_expert.evidence.answer_type import new_numbers
from rags_expert.evidence.code import new_code
from rags_expert.rag._shared.spans import answer_sentences, best_span

META_TERMS = frozenset(
    terms(
        "chunk chunks excerpt excerpts source sources document documents context text passage "
        "stated states mentioned mentions says described specified provided according "
        "time date year day value name number place reason way answer thing yes"
    )
)
"""Words an answer uses about the material, or the kind of answer asked for ("the time when …"), rather than the
subject: they state no fact."""
_EMPTY_COMPLEMENT = re.compile(
    r"\b(?:is|are|was|were|be|being|been|by|to|of|in|at|on|as|for|with|from|the|a|an|called|named)\s*[:,]?\s*"
    r"(?:\[\s*\d+(?:\s*[,;]\s*\d+)*\s*\]\s*)*[.!?]?\s*$",
    re.IGNORECASE,
)
"""A sentence that stops where its fact should begin: "… side by side is [1]." """

_YES_NO_QUESTION = re.compile(
    r"^\s*(?:is|are|was|were|do|does|did|can|could|should|will|would|has|have|had|may|must)\b", re.IGNORECASE
)
_POLARITY = re.compile(r"^\W*(?:yes|no)\b", re.IGNORECASE)
_DECLINE = re.compile(
    r"^\W*not[ _]found\b|(?-i:\bNOT FOUND\b)|\b(?:(?:chunks?|excerpts?|context|documents?|sources?)\s+(?:do(?:es)?\s+not|don't|doesn't)"
    r"\s+(?:say|mention|state|contain|specify|provide|include)|(?:is|are)\s+not\s+(?:mentioned|stated|specified|"
    r"given|provided|found)\s+in\s+the\s+(?:chunks?|excerpts?|context|documents?|sources?))",
    re.IGNORECASE,
)


def added_terms(answer: str, question: str) -> set[str]:
    """The content terms ``answer`` (its ``[n]`` markers dropped) adds to ``question``, words about the material
    ("the chunk says") left out."""
    return terms(strip_citations(answer)) - terms(question) - META_TERMS


def _states(sentence: str, question: str) -> bool:
    """Whether one sentence states a fact beyond the question (see :func:`states_something`)."""
    if _EMPTY_COMPLEMENT.search(sentence):
        return False
    if added_terms(sentence, question):
        return True
    return bool(_YES_NO_QUESTION.match(question) and _POLARITY.match(strip_citations(sentence)))


def states_something(answer: str, question: str) -> bool:
    """Whether some sentence of ``answer`` states a fact beyond the question: it does not stop where its fact
    should begin ("… is [1]."), and it holds a content term the question lacks, or is a plain yes / no to a yes-no
    question. "The most install jobs Poetry will run side by side is [1]." states nothing; "This is stated in [1]."
    after a fact adds nothing, and takes nothing away; nor does "It is [1] and [2] and [3] and [4", a reply that
    ran to the token cap repeating markers (the "4" of the marker it was cut inside is no number it states)."""
    return any(_states(sentence, question) for sentence in answer_sentences(answer))


def declines(answer: str) -> bool:
    """Whether ``answer`` says the chunks do not answer (the compact prompt's ``NOT FOUND``, or in words)."""
    return bool(_DECLINE.search(strip_citations(answer)))


def _cite(sentence: str, n: int) -> str:
    """``sentence`` citing chunk ``n`` instead of what it cited."""
    bare = strip_citations(sentence).rstrip()
    body, end = (bare[:-1], bare[-1]) if bare[-1:] in ".!?" else (bare, "")
    return f"{body} [{n}]{end}"


@dataclass(frozen=True)
class CitedSupport:
    """An answer with each fact-stating sentence citing the chunk that holds it best, and how well it is held."""

    text: str
    support: float
    """The least, over the sentences that state something, of the share of what the sentence adds to the question
    that one span of its chunk holds (0 when no sentence states anything)."""
    recited: int
    """Sentences whose citation was moved to the chunk that holds them (a small model often numbers wrong)."""


def _held(claim: set[str], numbers: set[str], code: set[str], source: dict[str, Any], prose: set[str]) -> float:
    """How much of one sentence ``source`` holds. A sentence that adds code names or numbers states them as its
    facts: the share of those the chunk writes (code names anywhere in it, numbers in its prose, not only in a code
    example), the model's
    own connecting words ("you need to", "package") not counted. Otherwise the share of its added terms one span of
    the chunk holds."""
    if numbers or code:
        text = str(source.get("content") or "").lower()
        written = sum(1 for name in code if name.strip("[]()`'\"") in text)
        return (len(numbers & prose) + written) / (len(numbers) + len(code))
    return best_span(claim, source)[0]


def cited_support(answer: str, question: str, relevant: Sequence[Document]) -> CitedSupport:
    """Each sentence that states something is held against the chunks it cites (every chunk, when it cites
    none); where another chunk of the context holds more of it, the citation moves there. A chunk holds a sentence
    only if its prose, not only a code example, writes every number the sentence adds (``--bind-port 9090`` does
    not say the default port). A restatement scores 0, an answer copied from the cited text 1."""
    sources = [source_dict(doc, i + 1) for i, doc in enumerate(relevant)]
    prose_numbers = [new_numbers(without_code_blocks(doc.page_content), "") for doc in relevant]
    out, worst, seen, recited = [], 1.0, False, 0
    for sentence in answer_sentences(answer):
        claim = added_terms(sentence, question)
        if not claim or not _states(sentence, question) or not sources:
            out.append(sentence)
            continue
        seen = True
        bare = strip_citations(sentence)
        numbers, code = new_numbers(bare, question), new_code(bare, question)
        shares = {
            n: _held(claim, numbers, code, sources[n - 1], prose_numbers[n - 1]) for n in range(1, len(sources) + 1)
        }
        cited = cited_numbers(sentence, len(sources))
        share = max((shares[n] for n in cited), default=0.0)
        best = max(shares, key=lambda n: (shares[n], -n))
        if shares[best] > share:
            sentence, share, recited = _cite(sentence, best), shares[best], recited + 1
        out.append(sentence)
        worst = min(worst, share)
    return CitedSupport(" ".join(out), worst if seen else 0.0, recited)


@dataclass(frozen=True)
class CitedVerdicts:
    """The compact profile's verdicts on one answer (its citations corrected), with the reason of a rejection."""

    answer: str
    grounded: bool
    useful: bool
    support: float
    reason: str = ""


def cited_verdicts(question: str, answer: str, relevant: Sequence[Document], min_support: float) -> CitedVerdicts:
    """Useful: the answer does not decline and states something; grounded: every sentence stating something is
    held, at ``min_support`` or more of what it adds, by one span of the chunk it cites (its citation moved to the
    chunk that holds it best)."""
    if declines(answer):
        return CitedVerdicts(answer, True, False, 0.0, DECLINES)
    if not states_something(answer, question):
        return CitedVerdicts(answer, True, False, 0.0, RESTATES)
    held = cited_support(answer, question, relevant)
    if held.support < min_support:
        reason = f"the cited chunks hold {held.support:.0%} of what the answer adds"
        return CitedVerdicts(held.text, False, False, held.support, reason)
    return CitedVerdicts(held.text, True, True, held.support)


RESTATES = "the answer restates the question and states no fact"
DECLINES = "the model found no answer in the chunks"
