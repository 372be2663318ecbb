"""BioChatter's ``ReflexionAgent`` extension points, called by ours.

The seed specifies a reflexion agent by its abstract methods. :class:`ReflexionAgent`
has a documented hook for each; the default of every hook (this mixin) calls the
seed-named method when a subclass defines it, so a BioChatter-style subclass runs
unchanged on our graph:

=============================================  ==========================================
seed hook (BioChatter)                         our hook (what the base calls)
=============================================  ==========================================
``_create_initial_responder(prompt)``          ``draft(state)``
``_tool_function(messages)`` → ToolMessage     ``run_tool(state)``
``_create_revise_responder(prompt)``           ``revise(state)``
``_should_continue(messages)`` → END / node    ``done_reason(state)`` (exit reason ``done``)
``_log_step_message(step, node, output)``      ``log_step(step, node, update)``
``_log_final_result(result)``                  ``log_final_result(result)``
``_parse_final_result(output)``                ``parse_final_result(state)``
``execute(question, prompt)``                  ``execute(question, prompt)`` (async)
=============================================  ==========================================

``messages`` is the loop's memory for the question (``state['memory']``: the question
as a HumanMessage, then the actions and tool results), ``prompt`` the one given to
``execute`` (``state['prompt']``), ``output`` the last message of a node's update (for
``_parse_final_result``: the last message in memory). A *responder* is what BioChatter's
``ResponderWithRetries`` is: an object with ``respond(messages)`` returning the next
AIMessage; a Runnable (``ainvoke(messages)``) or a plain callable also works; sync or
async. ``_should_continue`` stops the loop by returning ``END`` (``"__end__"``),
``"finalize"`` or False; the base's step limit and failure handling still apply.

A subclass must implement each of ``draft``, ``run_tool``, ``revise`` and
``parse_final_result`` under one of its two names (checked when it is instantiated);
the other hooks have defaults.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import AnyMessage, BaseMessage
from langgraph.graph import END

from rags_expert.kg.state import state_value

log = logging.getLogger(__name__)

SEED_HOOKS: dict[str, str] = {
    "_create_initial_responder": "draft",
    "_tool_function": "run_tool",
    "_create_revise_responder": "revise",
    "_should_continue": "done_reason",
    "_log_step_message": "log_step",
    "_log_final_result": "log_final_result",
    "_parse_final_result": "parse_final_result",
}
REQUIRED_HOOKS = ("draft", "run_tool", "revise", "parse_final_result")
STOP_ROUTES = (END, "finalize", False)
SEED_EXIT_REASON = "done"


async def call_hook(fn: Callable[..., Any], *args: Any) -> Any:
    """Call a seed hook, sync (in a worker thread, so a blocking model call does not stall the loop) or async."""
    result = await fn(*args) if inspect.iscoroutinefunction(fn) else await asyncio.to_thread(fn, *args)
    return await result if inspect.isawaitable(result) else result


async def respond(responder: Any, messages: list[AnyMessage]) -> BaseMessage:
    """The next message from a seed responder (``respond``), a Runnable (``ainvoke``) or a callable."""
    if hasattr(responder, "respond"):
        return await call_hook(responder.respond, messages)
    if hasattr(responder, "ainvoke"):
        return await responder.ainvoke(messages)
    return await call_hook(responder, messages)


def missing_hooks(cls: type) -> list[str]:
    """The required hooks ``cls`` implements under neither our name nor the seed's."""
    seed_of = {ours: seed for seed, ours in SEED_HOOKS.items()}
    return [
        f"{name}() or {seed_of[name]}()"
        for name in REQUIRED_HOOKS
        if getattr(cls, name) is getattr(SeedHooks, name) and not hasattr(cls, seed_of[name])
    ]


def _memory(state: Mapping[str, Any]) -> list[AnyMessage]:
    """The loop's messages for this question, as the seed's hooks receive them."""
    return list(state_value(state, "memory"))


class SeedHooks:
    """Defaults of our hooks that call the seed-named ones (see the module docstring).

    A hook's ``state`` is the agent's graph state, of its ``state_schema`` (a subclass's own TypedDict).
    """

    async def draft(self, state: Any) -> dict[str, Any]:
        """Draft responder: ``_create_initial_responder(prompt).respond(messages)``."""
        responder = self._create_initial_responder(state_value(state, "prompt") or None)  # type: ignore[attr-defined]
        return {"memory": [await respond(responder, _memory(state))]}

    async def run_tool(self, state: Any) -> dict[str, Any]:
        """Tool function: ``_tool_function(messages)`` → a ToolMessage."""
        return {"memory": [await call_hook(self._tool_function, _memory(state))]}  # type: ignore[attr-defined]

    async def revise(self, state: Any) -> dict[str, Any]:
        """Revise responder: ``_create_revise_responder(prompt).respond(messages)``."""
        responder = self._create_revise_responder(state_value(state, "prompt") or None)  # type: ignore[attr-defined]
        return {"memory": [await respond(responder, _memory(state))]}

    def done_reason(self, state: Any) -> str | None:
        """``done`` when the seed's ``_should_continue(messages)`` routes to the end; None without it."""
        hook = getattr(self, "_should_continue", None)
        if hook is None or not _memory(state):
            return None
        return SEED_EXIT_REASON if hook(_memory(state)) in STOP_ROUTES else None

    def log_step(self, step: int, node: str, update: dict[str, Any]) -> dict[str, Any]:
        """``_log_step_message(step, node, output)``; a dict it returns becomes the log record."""
        hook = getattr(self, "_log_step_message", None)
        output = (update.get("memory") or [None])[-1]
        if hook is None or output is None:
            return {}
        record = hook(step, node, output)
        return record if isinstance(record, dict) else {}

    def parse_final_result(self, state: Any) -> Any:
        """``_parse_final_result(output)`` with the last message in memory (None when there is none)."""
        memory = _memory(state)
        return self._parse_final_result(memory[-1] if memory else None)  # type: ignore[attr-defined]

    def log_final_result(self, result: Any) -> None:
        """``_log_final_result(result)``, else one INFO line."""
        hook = getattr(self, "_log_final_result", None)
        if hook is not None:
            hook(result)
        else:
            log.info("%s finished: %s", type(self).__name__, result)
