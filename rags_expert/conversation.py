"""The conversation of a thread, as both graphs read it: the new question and the history before it.

:func:`open_question` is the start both graphs' ``prepare`` share: take the new question, read a checkpointer
fault, check the question's length; :func:`followup_transcript` is the history a follow-up is condensed against.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from rags_expert.checkpoints import FAULT_REASON
from rags_expert.checkpoints.guard import checkpointer_fault
from rags_expert.limits import QuestionTooLongError, check_question, question_preview
from rags_expert.llm.chat import message_text
from rags_expert.outcomes import FailureReason

if TYPE_CHECKING:
    from rags_expert.settings import AgentSettings


def last_question(messages: list[AnyMessage]) -> tuple[str, list[AnyMessage]]:
    """The new question (the last message, when it is the user's) and the history before it.

    A run whose last message is not a new user message has no question: it must not answer the
    previous question again.
    """
    if messages and isinstance(messages[-1], HumanMessage):
        return message_text(messages[-1]).strip(), list(messages[:-1])
    return "", list(messages)


UNANSWERED = "(this question was never answered)"
"""Follows a user message that no assistant message answered in the history given to the condenser."""


def history_text(history: list[AnyMessage], limit: int) -> str:
    """The last ``limit`` user/assistant messages as ``User: …`` / ``Assistant: …`` lines (for condensing).

    A user message with no assistant message after it (before the next user message) is a turn whose run
    was killed or cancelled: the thread kept its question, never an answer. Its line ends with
    :data:`UNANSWERED`, so the condenser does not read it as an answered question.
    """
    window = history[-limit:] if limit else []
    lines = []
    for i, msg in enumerate(window):
        if not isinstance(msg, (HumanMessage, AIMessage)) or not message_text(msg).strip():
            continue
        line = f"{'User' if isinstance(msg, HumanMessage) else 'Assistant'}: {message_text(msg).strip()}"
        if isinstance(msg, HumanMessage) and not _answered(window[i + 1 :]):
            line += f" {UNANSWERED}"
        lines.append(line)
    return "\n".join(lines)


def _answered(after: list[AnyMessage]) -> bool:
    """Whether an assistant message comes in ``after`` before the next user message."""
    for msg in after:
        if isinstance(msg, AIMessage):
            return True
        if isinstance(msg, HumanMessage):
            return False
    return False


@dataclass(frozen=True)
class Opening:
    """A run's start: its question and the history before it, or why the run stops here.

    ``reason`` is ``""`` (go on), :data:`~rags_expert.checkpoints.FAULT_REASON`, ``"empty_question"`` or
    ``"question_too_long"`` (then ``question`` is a preview); ``error`` says what went wrong, unprefixed.
    """

    question: str
    history: list[AnyMessage]
    reason: str = ""
    error: str = ""


def open_question(messages: list[AnyMessage], config: RunnableConfig, max_chars: int | None) -> Opening:
    """Take the last user question, stop on a checkpointer fault (:mod:`rags_expert.checkpoints.guard`), an
    empty question or one longer than ``max_chars`` (None: no limit)."""
    question, history = last_question(messages)
    if fault := checkpointer_fault(config):
        return Opening(question, history, FAULT_REASON, fault)
    if not question:
        return Opening(question, history, FailureReason.EMPTY_QUESTION.value)
    try:
        if max_chars is not None:
            check_question(question, max_chars)
    except QuestionTooLongError as exc:
        return Opening(
            question_preview(question), history, FailureReason.QUESTION_TOO_LONG.value, f"QuestionTooLong: {exc}"
        )
    return Opening(question, history)


def followup_transcript(history: list[AnyMessage], settings: AgentSettings) -> str:
    """The history a follow-up is condensed against (``history_messages``); ``""``: nothing to condense,
    or ``condense_followups`` is off."""
    return history_text(history, settings.history_messages) if settings.condense_followups else ""
