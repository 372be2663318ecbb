"""The limits on what a run reads: the question's length, the text an embedding model is given, the model reply.

* :func:`check_question`: the one check of a question's length every entry point makes (both graphs'
  ``prepare``, hence Fred, the LangGraph Server and MCP ``ask``; the CLI before it loads anything; MCP
  ``search``), before any model or embedding call (``max_question_chars``).
* :func:`setting_hint`: how every message over a bound names the setting that raises it (the question's length
  here, the loaders' bounds in :mod:`rags_expert.retrieval.loaders.base`).
* :func:`printable`: a value as text that stays on one line of output (a file name with a newline, a terminal
  escape, a megabyte uid), used by every message and log line that names a file or echoes a value.
* :func:`clip_text`: the beginning of a text, cut by characters (cheap: before any tokenizer sees it);
  the embedding models read at most ``embeddings.max_input_chars`` of a query, and the model's reply is
  read up to ``llm.max_reply_chars`` (:func:`clip_reply`).

No dependency beyond the standard library: the CLI checks a question before importing LangGraph.
"""

from __future__ import annotations

from typing import Any

QUESTION_LIMIT_SETTING = "max_question_chars"
"""The setting that bounds a question's length (``RAGS_EXPERT_MAX_QUESTION_CHARS``)."""


class QuestionTooLongError(ValueError):
    """A question longer than ``max_question_chars``; the message names its length, the limit and the setting."""

    def __init__(self, length: int, limit: int) -> None:
        self.length = length
        self.limit = limit
        super().__init__(
            f"the question has {length:,} characters, more than the limit of {limit:,} "
            f"({setting_hint(QUESTION_LIMIT_SETTING)})"
        )


def setting_hint(setting: str) -> str:
    """How a message over a bound names its setting: ``setting ingestion.max_unzipped_mb,
    RAGS_EXPERT_INGESTION__MAX_UNZIPPED_MB`` (a dotted name is a section's setting, ``__`` in its variable)."""
    return f"setting {setting}, RAGS_EXPERT_{setting.replace('.', '__').upper()}"


def check_question(question: str, limit: int) -> None:
    """Raise :class:`QuestionTooLongError` when ``question`` is longer than ``limit`` characters."""
    if len(question) > limit:
        raise QuestionTooLongError(len(question), limit)


def question_preview(question: str, chars: int = 200) -> str:
    """The beginning of a refused question, for the failure's metadata (a megabyte is not echoed back)."""
    return clip_text(question, chars, "…")


def clip_text(text: str, chars: int, mark: str = "") -> str:
    """``text`` cut to its first ``chars`` characters (``mark`` appended when cut)."""
    return text if len(text) <= chars else text[:chars] + mark


def clip_reply(reply: Any, chars: int) -> Any:
    """A model reply whose text, and the string values of its tool calls, are cut to ``chars`` characters.

    A server that ignores the token cap (or sends garbage) may answer megabytes; what is read of it must stay
    bounded before any parser sees it. A reply within the limit is returned as it is.
    """
    content = getattr(reply, "content", None)
    update: dict[str, Any] = {}
    if isinstance(content, str) and len(content) > chars:
        update["content"] = content[:chars]
    elif isinstance(content, list) and sum(len(_part_text(p)) for p in content) > chars:
        update["content"] = _clip_parts(content, chars)
    calls = getattr(reply, "tool_calls", None) or []
    if any(_long_args(call.get("args"), chars) for call in calls):
        update["tool_calls"] = [{**call, "args": _clip_args(call.get("args"), chars)} for call in calls]
    invalid = getattr(reply, "invalid_tool_calls", None) or []
    if any(isinstance(call.get("args"), str) and len(call["args"]) > chars for call in invalid):
        update["invalid_tool_calls"] = [
            {**call, "args": clip_text(call["args"], chars)} if isinstance(call.get("args"), str) else call
            for call in invalid
        ]
    if not update or not hasattr(reply, "model_copy"):
        return reply
    return reply.model_copy(update=update)


def _part_text(part: Any) -> str:
    """The text of one content part (a string or a ``{"text": ...}`` block)."""
    return part if isinstance(part, str) else str(part.get("text", "")) if isinstance(part, dict) else ""


def _clip_parts(parts: list[Any], chars: int) -> list[Any]:
    """List content whose text parts hold at most ``chars`` characters in all."""
    out: list[Any] = []
    left = chars
    for part in parts:
        text = _part_text(part)
        if left <= 0 and text:
            break
        if isinstance(part, str):
            out.append(part[:left])
        elif isinstance(part, dict) and "text" in part:
            out.append({**part, "text": text[:left]})
        else:
            out.append(part)
        left -= len(text)
    return out


def _long_args(args: Any, chars: int) -> bool:
    """Whether a tool call's arguments hold a string longer than ``chars``."""
    return isinstance(args, dict) and any(isinstance(v, str) and len(v) > chars for v in args.values())


def _clip_args(args: Any, chars: int) -> Any:
    """A tool call's arguments with every string value cut to ``chars`` characters."""
    if not isinstance(args, dict):
        return args
    return {k: clip_text(v, chars) if isinstance(v, str) else v for k, v in args.items()}


def printable(value: object, limit: int | None = 80) -> str:
    """``value`` as text safe on one line of output: each unprintable character (a newline in a file name, a
    terminal escape, a lone surrogate) escaped as ``repr`` writes it (``\\n``, ``\\x1b``); over ``limit``
    characters (None: no limit), the first ``limit`` and ``… (N chars)``."""
    text = str(value)
    cut = limit is not None and len(text) > limit
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in (text[:limit] if cut else text))
    return f"{shown}… ({len(text)} chars)" if cut else shown
