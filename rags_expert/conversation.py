"""The conversation of a thread, as both graphs read it: the new question and the history before it."""

from __future__ import annotations

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage

from rags_expert.llm import message_text


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
