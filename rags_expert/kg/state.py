"""The reflexion loop's state: its keys, what each reads as before it is set, and the one way to read it.

Every node and hook reads a state key through :func:`state_value`, which falls back to the key's entry in a
defaults table (:data:`STATE_DEFAULTS` here; a subclass's state extends it, e.g.
:data:`rags_expert.kg.execution.result.KG_STATE_DEFAULTS`). A key missing from the table is a ``KeyError``:
a typo fails loudly instead of reading as an empty value.

``steps`` defaults to **0**: it counts the tool executions so far. ``prepare`` resets it to 0 and
``execute_tool`` adds one *before* the tool runs, so the tool and everything after it see 1 or more; only a
state no ``execute_tool`` has touched (a hook called by hand, a failed draft) reads 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages


class ReflexionState(TypedDict, total=False):
    """Graph state: the conversation, the loop's per-question memory, and bookkeeping the exit rules need."""

    messages: Annotated[list[AnyMessage], add_messages]  # the conversation: questions and final answers
    memory: Annotated[list[AnyMessage], add_messages]  # this question's loop: actions, tool results, notes
    question: str  # the standalone question being answered
    steps: int  # tool executions so far
    log: list[dict[str, Any]]  # one record per node run, oldest first
    error: str  # set when a model call failed for good; ends the loop
    exit_reason: str  # set by prepare (empty_question, question_too_long) and by finalize
    prompt: str  # the caller's prompt for the responders (the seed's ``execute(question, prompt)``), an input


STATE_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {
        "messages": [],
        "memory": [],
        "question": "",
        "steps": 0,
        "log": [],
        "error": "",
        "exit_reason": "",
        "prompt": "",
    }
)
"""What each key of :class:`ReflexionState` reads as before a node has set it (see the module docstring)."""


def state_value(state: Mapping[str, Any], key: str, defaults: Mapping[str, Any] = STATE_DEFAULTS) -> Any:
    """``state[key]``, or its default from ``defaults`` when missing or None (a list default is a fresh list).

    Raises ``KeyError`` for a key ``defaults`` does not know.
    """
    if key not in defaults:
        raise KeyError(f"unknown state key {key!r}; known: {', '.join(sorted(defaults))}")
    value = state.get(key)
    if value is None:
        default = defaults[key]
        return list(default) if isinstance(default, list) else default
    return value


def question_of(state: Mapping[str, Any]) -> str:
    """The question being answered (set by ``prepare`` from the last human message)."""
    return str(state_value(state, "question"))
