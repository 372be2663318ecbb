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

from langchain_core.documents import Document

from rags_expert.evidence import strip_citations, terms
from rags_expert.rag.answer.citations import cited_numbers, source_dict
from rags_expert.rag.answer.spans import answer_sentences, best_span

META_TERMS = frozenset(
    terms(
        "chunk chunks excerpt excerpts source sources document documents context text passage "
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
    r"^\W*not[ _]found\b|\b(?:(?:chunks?|excerpts?|context|documents?|sources?)\s+(?:do(?:es)?\s+not|don't|doesn't)"
    r"\s+(?:say|mention|state|contain|specify|provide|include)|(?:is|are)\s+not\s+(?:mentioned|stated|specified|"
    r"given|provided|found)\s+in\s+the\s+(?:chunks?|excerpts?|context|documents?|sources?))",
    re.IGNORECASE,
)


def added_terms(answer: str, question: str) -> set[str]:
    """The content terms ``answer`` (its ``[n]`` markers dropped) adds to ``question``, words about the material
    ("the chunk says") left out."""
    return terms(strip_citations(answer)) - terms(question) - META_TERMS


def states_something(answer: str, question: str) -> bool:
    """Whether ``answer`` states a fact beyond the question: no sentence stops where its fact should begin ("… is
    [1]."), and it holds a content term the question lacks, or is a plain yes / no to a yes-no question. "The most
    install jobs Poetry will run side by side is [1]." states nothing."""
    sentences = answer_sentences(answer)
    if any(_EMPTY_COMPLEMENT.search(s) for s in sentences):
        return False
    if added_terms(answer, question):
        return True
    return bool(_YES_NO_QUESTION.match(question) and _POLARITY.match(strip_citations(answer)))


def declines(answer: str) -> bool:
    """Whether ``answer`` says the chunks do not answer (the compact prompt's ``NOT FOUND``, or in words)."""
    return bool(_DECLINE.search(strip_citations(answer)))


def cited_support(answer: str, question: str, relevant: Sequence[Document]) -> float:
    """The least, over the answer's sentences that add something to the question, of the share of what the
    sentence adds that one span of a chunk it cites holds (a sentence citing nothing is read against every chunk);
    0 when no sentence adds anything. A restatement scores 0, an answer copied from the cited text 1."""
    sources = [source_dict(doc, i + 1) for i, doc in enumerate(relevant)]
    worst, seen = 1.0, False
    for sentence in answer_sentences(answer):
        claim = added_terms(sentence, question)
        if not claim:
            continue
        seen = True
        numbers = cited_numbers(sentence, len(relevant)) or list(range(1, len(relevant) + 1))
        share = max((best_span(claim, sources[n - 1])[0] for n in numbers), default=0.0)
        worst = min(worst, share)
    return worst if seen else 0.0


@dataclass(frozen=True)
class CitedVerdicts:
    """The compact profile's verdicts on one answer, with the reason of a rejection."""

    grounded: bool
    useful: bool
    support: float
    reason: str = ""


def cited_verdicts(
    question: str, answer: str, relevant: Sequence[Document], min_support: float, *, require_citations: bool
) -> CitedVerdicts:
    """Useful: the answer does not decline and states something; grounded: it cites a chunk (when citations are
    required) and its :func:`cited_support` reaches ``min_support``."""
    if declines(answer):
        return CitedVerdicts(True, False, 0.0, "the model found no answer in the chunks")
    if not states_something(answer, question):
        return CitedVerdicts(True, False, 0.0, RESTATES)
    if require_citations and not cited_numbers(answer, len(relevant)):
        return CitedVerdicts(False, False, 0.0, "the answer cites no chunk")
    support = cited_support(answer, question, relevant)
    if support < min_support:
        return CitedVerdicts(False, False, support, f"the cited chunks hold {support:.0%} of what the answer adds")
    return CitedVerdicts(True, True, support)


RESTATES = "the answer restates the question and states no fact"
