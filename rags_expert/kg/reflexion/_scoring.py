"""Scoring an executed query and learning from a low score.

The outcome is scored 0–10 with the shared scorer (prompt ``kg_score``); an attempt
that did not run (an error, a refused write, no query) scores 0 without a model call.
A score below ``kg.score_threshold`` is reflected on and kept as a lesson (scope
``kg``) when lesson memory is on.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel

from rags_expert.kg.reflexion._prompting import KGPrompter
from rags_expert.lessons import LessonMemory, learn_from_failure
from rags_expert.llm.grading import GradingContext, score

LESSON_SCOPE = "kg"


async def score_attempt(
    model: BaseChatModel, ctx: GradingContext, prompter: KGPrompter, question: str, attempt: dict[str, Any]
) -> None:
    """Set ``score`` and ``score_reason`` of ``attempt`` (0 without a model call when it did not run)."""
    if attempt["error"]:
        attempt.update(score=0.0, score_reason="the query did not run")
        return
    graded = await score(
        model, ctx, prompt_key="kg_score", question=question, query=attempt["query"], result=prompter.describe(attempt)
    )
    attempt.update(score=graded.score, score_reason=graded.reason or ("" if graded.parsed else "unparsed score"))


async def learn_from_attempt(
    lessons: LessonMemory | None,
    model: BaseChatModel,
    ctx: GradingContext,
    prompter: KGPrompter,
    question: str,
    attempt: dict[str, Any],
) -> None:
    """Store a lesson from ``attempt`` when its score is below the threshold (no-op without lesson memory)."""
    if attempt["score"] >= prompter.kg.score_threshold:
        return
    await learn_from_failure(
        lessons,
        model,
        ctx,
        scope=LESSON_SCOPE,
        question=question,
        attempt=prompter.brief(attempt),
        feedback=attempt["score_reason"] or "low score",
        score=float(attempt["score"]),
    )
