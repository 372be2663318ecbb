"""The answer call's messages: the profile's answer prompt over the numbered chunks, in the question's language.

* :func:`answer_messages`: the answer prompt for the profile.
* :func:`answer_prefix`: its fixed beginning, which a local server can evaluate ahead (``RagsExpert.warm_up``).
"""

from __future__ import annotations

import datetime as dt
import string
from collections.abc import Sequence

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from rags_expert.citations import format_context
from rags_expert.language import language_name
from rags_expert.lessons import lessons_block
from rags_expert.prompts import PromptStore
from rags_expert.rag.profiles import ModelProfile


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
                context=format_context(relevant, sources=profile.chunk_sources),
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
