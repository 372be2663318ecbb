"""Token and call usage of a question, per graph node.

* :func:`record` is called by :func:`rags_expert.llm.chat.call_model` after every request that got a reply. It adds
  the reply's input/output tokens to the accumulator of the node that runs (a :class:`contextvars.ContextVar`,
  inherited by the tasks a node starts with ``asyncio.gather``, so concurrent calls all count). The tokens are
  the provider's usage fields (``AIMessage.usage_metadata``); a reply without them is estimated at
  :data:`CHARS_PER_TOKEN` characters a token over the prompt and reply text, and marked ``estimated``. Outside
  a metered node (another graph, a script) it records nothing. Figures a provider cannot mean (negative, not
  an integer, above :data:`MAX_REPORTED_TOKENS`) are not trusted: the reply is estimated instead, so a broken
  or hostile endpoint reporting ``-1300000`` tokens cannot undo the tokens already counted and slip past
  ``budget.max_tokens`` (counting them as 0 would let the run go on unmetered).
* :func:`metered` wraps a node function: it gives the node a fresh accumulator and adds the node's usage to its
  state update as ``{"usage": {node: {calls, input_tokens, output_tokens, estimated}}}``, which the
  :func:`add_usage` reducer sums per node. ``calls`` is the node's own ``llm_calls`` count (the one the
  LLM-call bound is proved on: a structured-output request refused by the endpoint and asked again as plain
  text is one call, like a transport retry). A node that writes a new ``llm_calls`` count (``prepare``: an
  ``Overwrite``) starts a new usage record too (an ``Overwrite`` of ``usage``).
* :func:`summary` is what the final message reports as ``response_metadata["usage"]``.

Requests that fail for good carry no usage fields: their tokens are not counted (their calls are).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, BaseMessage
from langgraph.types import Overwrite

CHARS_PER_TOKEN = 4
"""Characters per token of the estimate used when a reply carries no usage fields (English text, BPE tokenizers)."""

RESET = "__new_question__"
"""Key of a ``usage`` write that starts a new record: how versions before ``Overwrite`` restarted it, still
honoured so such writes in a checkpoint's pending writes add up as they did."""

FIELDS = ("calls", "input_tokens", "output_tokens")

MAX_REPORTED_TOKENS = 10**8
"""The most tokens one reply's usage field may report and be believed (no model takes or writes that many in
one request); a larger, negative or non-integer figure is replaced by the estimate."""


@dataclass
class Usage:
    """The tokens of one node's replies (mutable; shared by the concurrent calls of the node)."""

    replies: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = False

    def add(self, input_tokens: int, output_tokens: int, estimated: bool) -> None:
        """Count one reply."""
        self.replies += 1
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.estimated = self.estimated or estimated


_CURRENT: ContextVar[Usage | None] = ContextVar("rags_expert_usage", default=None)


def estimate_tokens(text: str) -> int:
    """Tokens of ``text`` by the character estimate (at least 1 for non-empty text)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _text(item: Any) -> str:
    """The text of a message, a prompt value or a string (tool-call arguments included)."""
    if isinstance(item, str):
        return item
    if isinstance(item, BaseMessage):
        content = item.content
        text = content if isinstance(content, str) else json.dumps(content, default=str)
        calls = getattr(item, "tool_calls", None) or []
        return text + "".join(json.dumps(c.get("args"), default=str) for c in calls)
    if hasattr(item, "to_messages"):  # a PromptValue
        return "".join(_text(m) for m in item.to_messages())
    return str(item)


def reply_message(reply: Any) -> AIMessage | None:
    """The ``AIMessage`` of a reply: the reply itself, or the ``raw`` message of a structured-output dict."""
    if isinstance(reply, AIMessage):
        return reply
    if isinstance(reply, Mapping) and isinstance(reply.get("raw"), AIMessage):
        return reply["raw"]
    return None


def reply_tokens(reply: Any, messages: Sequence[Any] | Any) -> tuple[int, int, bool]:
    """``(input_tokens, output_tokens, estimated)`` of one reply to ``messages``: the provider's figures, else
    the estimate."""
    message = reply_message(reply)
    usage = getattr(message, "usage_metadata", None)
    if usage and (usage.get("input_tokens") or usage.get("output_tokens")):
        figures = (_believable(usage.get("input_tokens")), _believable(usage.get("output_tokens")))
        if figures[0] is not None and figures[1] is not None:
            return figures[0], figures[1], False
    items = messages if isinstance(messages, Sequence) and not isinstance(messages, str) else [messages]
    prompt = "".join(_text(m) for m in items)
    answer = _text(message) if message is not None else (_text(reply) if isinstance(reply, str) else "")
    return estimate_tokens(prompt), estimate_tokens(answer), True


def _believable(value: Any) -> int | None:
    """A provider's token figure when it can be true (0 for a missing one), else None."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_REPORTED_TOKENS:
        return None
    return value


def record(reply: Any, messages: Sequence[Any] | Any) -> None:
    """Add one reply's tokens to the running node's usage (nothing outside a metered node)."""
    current = _CURRENT.get()
    if current is not None:
        current.add(*reply_tokens(reply, messages))


def _node_calls(update: Mapping[str, Any]) -> tuple[int, bool]:
    """The calls a node update reports, and whether it starts a new count (an ``Overwrite``: ``rag.state.new_count``)."""
    calls = update.get("llm_calls", 0)
    return (calls.value, True) if isinstance(calls, Overwrite) else (calls, False)


N = TypeVar("N", bound=Callable[..., Awaitable[Any]])


def metered(name: str, node: N) -> N:
    """``node`` with its usage added to its update under ``usage[name]`` (the signature is kept, so LangGraph
    still passes ``config`` / ``runtime`` by parameter name)."""

    @functools.wraps(node)
    async def run(*args: Any, **kwargs: Any) -> Any:
        usage = Usage()
        token = _CURRENT.set(usage)
        try:
            update = await node(*args, **kwargs)
        finally:
            _CURRENT.reset(token)
        if not isinstance(update, dict):
            return update
        calls, new = _node_calls(update)
        entry: dict[str, Any] = {}
        if calls or usage.replies:
            entry[name] = node_usage(calls, usage)
        if new:  # a new question: its record restarts with this node's entry
            return update | {"usage": Overwrite(add_usage(None, entry))}
        return update | {"usage": entry} if entry else update

    return run  # type: ignore[return-value]


def node_usage(calls: int, usage: Usage) -> dict[str, Any]:
    """One node's usage record: calls, input/output tokens, whether any figure is estimated."""
    return {
        "calls": calls,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "estimated": usage.estimated,
    }


def add_usage(total: dict[str, dict[str, Any]] | None, update: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Reducer of the state's ``usage``: add a node's figures to its entry; a :data:`RESET` write starts anew."""
    update = dict(update or {})
    out = {} if update.pop(RESET, False) else {k: dict(v) for k, v in (total or {}).items()}
    for node, figures in update.items():
        entry = out.setdefault(node, {"calls": 0, "input_tokens": 0, "output_tokens": 0, "estimated": False})
        for key in FIELDS:
            entry[key] += int(figures.get(key, 0))
        entry["estimated"] = bool(entry["estimated"] or figures.get("estimated"))
    return out


def total_tokens(by_node: Mapping[str, Mapping[str, Any]] | None) -> int:
    """Input plus output tokens of a question so far."""
    return sum(int(u.get("input_tokens", 0)) + int(u.get("output_tokens", 0)) for u in (by_node or {}).values())


def summary(by_node: Mapping[str, Mapping[str, Any]] | None, calls: int) -> dict[str, Any]:
    """``response_metadata["usage"]``: totals (``calls`` is the question's ``llm_calls``) and the figures per node."""
    nodes = {k: dict(v) for k, v in (by_node or {}).items()}
    return {
        "calls": calls,
        "input_tokens": sum(u["input_tokens"] for u in nodes.values()),
        "output_tokens": sum(u["output_tokens"] for u in nodes.values()),
        "estimated": any(u["estimated"] for u in nodes.values()),
        "by_node": nodes,
    }


__all__ = [
    "CHARS_PER_TOKEN",
    "MAX_REPORTED_TOKENS",
    "Usage",
    "add_usage",
    "estimate_tokens",
    "metered",
    "record",
    "reply_message",
    "reply_tokens",
    "summary",
    "total_tokens",
]
