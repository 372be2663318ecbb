"""The two stages both graphs run around an attempt: recall lessons before it (:func:`recall_lessons`, with the
request's authorization: :func:`readable_lessons`) and learn one after a failed one (:func:`learn_from_failure`),
with their stream events."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from langchain_core.runnables import RunnableConfig

from rags_expert.events import emit
from rags_expert.lessons.memory import Lesson, LessonMemory
from rags_expert.llm.chat import LLMCallError, redact
from rags_expert.llm.grading import GradingContext, reflect
from rags_expert.prompts import neutralise

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

log = logging.getLogger(__name__)

Readable = Callable[[list[str]], Awaitable[set[str]]]
"""The request's authorization: the uids among those given that the asking user may read."""


async def readable_lessons(lessons: list[Lesson], readable: Readable | None) -> list[Lesson]:
    """``lessons`` whose recorded chunks ``readable`` allows, all of them (one call); a lesson without recorded
    chunks is left out. Without ``readable`` (authorization off), all; a fault of ``readable`` raises."""
    if readable is None or not lessons:
        return lessons
    allowed = await readable([uid for lesson in lessons for uid in lesson.uids or ()])
    return [x for x in lessons if x.uids is not None and set(x.uids) <= allowed]


async def recall_lessons(
    memory: LessonMemory | None,
    question: str,
    scope: str,
    readable: Readable | None = None,
) -> list[str]:
    """Lessons for ``question`` in ``scope`` (emits ``lesson_recalled``); [] when memory is off or fails.

    With ``readable`` (the request's authorization), only :func:`readable_lessons` are recalled (none when
    the check fails).
    The texts are neutralised: they cannot open or close a prompt's data frames."""
    if memory is None:
        return []
    try:
        lessons: list[Lesson] | BaseException = await readable_lessons(await memory.recall(question, scope), readable)
    except Exception as exc:  # noqa: BLE001 - memory is an aid; its failure must not fail the attempt
        lessons = exc
    return recalled_texts(lessons, question, scope)


def recalled_texts(lessons: list[Lesson] | BaseException, question: str, scope: str) -> list[str]:
    """The neutralised texts of recalled lessons (emits ``lesson_recalled``); [] after a failed recall
    (logged, redacted)."""
    if isinstance(lessons, BaseException):
        log.warning("lesson recall failed: %s: %s", type(lessons).__name__, redact(str(lessons))[:300])
        return []
    texts = [neutralise(lesson.text) for lesson in lessons]
    emit(
        "lesson_recalled",
        scope=scope,
        question=question,
        lessons=texts,
        similarities=[round(lesson.similarity, 3) for lesson in lessons],
    )
    return texts


async def learn_from_failure(
    memory: LessonMemory | None,
    model: BaseChatModel,
    ctx: GradingContext,
    *,
    scope: str,
    question: str,
    attempt: str,
    feedback: str,
    score: float,
    config: RunnableConfig | None = None,
    uids: Sequence[str] = (),
) -> str | None:
    """Reflect on a failed attempt (one LLM call) and store the lesson with the chunk ``uids`` the attempt
    read (emits ``lesson_produced`` and ``lesson_stored``). Returns the lesson, or None; never raises."""
    if memory is None:
        return None
    try:
        lesson = await reflect(model, ctx, task=question, attempt=attempt, feedback=feedback, config=config)
    except Exception as exc:  # noqa: BLE001 - a failed reflection loses a lesson, not the attempt
        log.warning("reflection failed: %s", exc if isinstance(exc, LLMCallError) else type(exc).__name__)
        return None
    if not lesson:
        return None
    emit("lesson_produced", scope=scope, question=question, lesson=lesson, score=score)
    try:
        point_id, merged = await memory.store(lesson, question, score, scope, uids)
    except Exception as exc:  # noqa: BLE001
        log.warning("storing a lesson failed: %s: %s", type(exc).__name__, redact(str(exc))[:300])
        return lesson
    emit("lesson_stored", scope=scope, lesson=lesson, id=point_id, merged=merged)
    return lesson
