"""Evidence signals for weak graders: lexical coverage, embedding similarity, answer types, support.

See :mod:`rags_expert.evidence.scorer` for the signals and :mod:`rags_expert.rag.profiles` for which
checks of the RAG graph use them.
"""

from rags_expert.evidence.answer_type import AnswerType, expected_type, holds_answer
from rags_expert.evidence.scorer import EvidenceScorer, Match, Support
from rags_expert.evidence.text import name_phrases, question_terms, split_sentences, strip_citations, terms

__all__ = [
    "AnswerType",
    "EvidenceScorer",
    "Match",
    "Support",
    "expected_type",
    "holds_answer",
    "name_phrases",
    "question_terms",
    "split_sentences",
    "strip_citations",
    "terms",
]
