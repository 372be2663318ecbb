"""The answer call's messages: the profile's answer prompt over the numbered chunks, in the question's language.

* :func:`answer_messages`: the answer prompt for the profile.
* :func:`answer_prefix`: its fixed beginning, which a local server can evaluate ahead (``RagsExpert.warm_up``).
* :func:`confirm_messages`: the same chunks and question with a proposed answer, asking whether the chunks state it
  (``evidence.confirm``); its text up to the question is the answer prompt's, so a server's prompt cache reads only
  the rest.
"""

from __future__ import annotations

import datetime as dt
import re
import string
from collections.abc import Sequence

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from rags_expert.citations import format_context, rewrite_citations
from rags_expert.language import language_name
from rags_expert.lessons import lessons_block
from rags_expert.prompts import PromptStore, neutralise
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


_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+(?=[.,;:!?](?:\s|$))")


def confirm_messages(
    prompts: PromptStore,
    profile: ModelProfile,
    *,
    question: str,
    relevant: Sequence[Document],
    answer: str,
    lessons: list[str] | None = None,
) -> list[BaseMessage]:
    """The confirmation call's messages (prompt ``confirm_answer``): the answer call's system message, chunks and
    question, then ``answer`` as a proposed answer (its ``[n]`` citations left out, on one line) and the yes/no
    question whether the chunks state it."""
    uncited = " ".join(rewrite_citations(answer, len(relevant), lambda _: "").split())
    proposed = neutralise(_SPACE_BEFORE_PUNCTUATION.sub("", uncited))  # "in 1412 [1]." → "in 1412."
    return [
        _system_message(prompts),
        HumanMessage(
            prompts.render(
                "confirm_answer",
                context=format_context(relevant, sources=profile.chunk_sources),
                question=question,
                answer=proposed,
                lessons=lessons_block(prompts, lessons),
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
