"""Evaluating the agent: on your own question sets (:mod:`~rags_expert.evaluation.runner`, ``rags-expert eval
QUESTIONS.jsonl``) and on HotpotQA, the built-in question set (:mod:`~rags_expert.evaluation.hotpotqa`,
``rags-expert eval hotpotqa``).

One module per concern: :mod:`~rags_expert.evaluation.questions` reads a question set (JSONL, YAML, CSV),
:mod:`~rags_expert.evaluation.scoring` gives each reply its verdict, :mod:`~rags_expert.evaluation.judge` asks a
chat model whether an answer states the expected fact, :mod:`~rags_expert.evaluation.runner` asks the questions,
:mod:`~rags_expert.evaluation.report` sums them up (table, JSON, PNG) and :mod:`~rags_expert.evaluation.compare`
compares two reports.
"""

from rags_expert.evaluation.hotpotqa import (
    EvalReport,
    QuestionResult,
    exact_match,
    f1_score,
    load_questions,
    normalize_answer,
    run_hotpotqa,
    score_question,
    strip_citations,
    write_corpus,
    write_report,
)

__all__ = [
    "EvalReport",
    "QuestionResult",
    "exact_match",
    "f1_score",
    "load_questions",
    "normalize_answer",
    "run_hotpotqa",
    "score_question",
    "strip_citations",
    "write_corpus",
    "write_report",
]
