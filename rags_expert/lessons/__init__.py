"""Reflexion lesson memory shared by the RAG and KG graphs: the store (:mod:`~rags_expert.lessons.memory`) and the
two stages both graphs run around an attempt (:mod:`~rags_expert.lessons.stages`)."""

from rags_expert.lessons.memory import Lesson, LessonMemory, format_lessons, lessons_block, scope_key
from rags_expert.lessons.stages import learn_from_failure, readable_lessons, recall_lessons, recalled_texts

__all__ = [
    "Lesson",
    "LessonMemory",
    "format_lessons",
    "lessons_block",
    "learn_from_failure",
    "readable_lessons",
    "recall_lessons",
    "recalled_texts",
    "scope_key",
]
