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


def history_text(history: list[AnyMessage], limit: int) -> str:
    """The last ``limit`` user/assistant turns as ``User: …`` / ``Assistant: …`` lines (for condensing)."""
    lines = []
    for msg in history[-limit:] if limit else []:
        if isinstance(msg, (HumanMessage, AIMessage)) and message_text(msg).strip():
            who = "User" if isinstance(msg, HumanMessage) else "Assistant"
            lines.append(f"{who}: {message_text(msg).strip()}")
    return "\n".join(lines)
