"""ReflexionAgent: a LangGraph loop that drafts, acts, scores and revises until good enough.

::

    START → prepare ─┬→ draft → execute_tool → revise → should_continue ─┬→ finalize → END
                     │             ↑                                      │
                     │             └──────────── (not done) ──────────────┘
                     └→ finalize (no question, or the follow-up could not be condensed)

One run answers one question: the **last** human message of ``messages``. ``prepare``
resets the per-question state (``question``, ``steps``, ``log``, ``error``,
``exit_reason``, ``memory`` and whatever :meth:`ReflexionAgent.reset_state` of a
subclass adds) and, when the thread has earlier conversation, makes a follow-up
standalone (:meth:`ReflexionAgent.standalone_question`). ``messages`` is the
conversation a host shows (user questions and final answers) and persists on a
thread; the loop's own memory is the per-question message list ``memory``:
``draft`` and ``revise`` add AI messages (the action, as a tool call, and the
reflection), ``execute_tool`` adds the tool message with the outcome.
``finalize`` appends one user-facing AIMessage to ``messages``.

A subclass supplies the responders, the tool, the exit rule, step logging, the
final result and its message; this class owns the graph, the step count, the
step limit and failure handling: a model fault that survives its retries
(:class:`~rags_expert.llm.chat.LLMCallError`) ends the loop with ``error`` set instead
of raising out of :meth:`ReflexionAgent.execute`.

The hooks, each also reachable under the name BioChatter's ``ReflexionAgent`` gives
it (the default of our hook calls the seed-named method when a subclass defines it;
see :mod:`rags_expert.kg.reflexion._seed_hooks`):

==========================================  ==============================================
our hook                                    seed name
==========================================  ==============================================
``draft(state)`` (required)                 ``_create_initial_responder(prompt)``
``run_tool(state)`` (required)              ``_tool_function(messages)``
``revise(state)`` (required)                ``_create_revise_responder(prompt)``
``parse_final_result(state)`` (required)    ``_parse_final_result(output)``
``done_reason(state)``                      ``_should_continue(messages)``
``log_step(step, node, update)``            ``_log_step_message(step, node, output)``
``log_final_result(result)``                ``_log_final_result(result)``
``execute(question, prompt=None)``          ``execute(question, prompt)``
==========================================  ==============================================

Our hooks see the whole state (``memory``, ``steps``, ``prompt`` and a subclass's own
fields) and return state updates; the seed's see the memory list and return messages.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Generic, Literal, TypeVar

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from rags_expert.checkpoints import FAULT_REASON
from rags_expert.conversation import open_question
from rags_expert.failsafe import guarded, redacted_error
from rags_expert.kg.reflexion._seed_hooks import SeedHooks, missing_hooks
from rags_expert.kg.state import STATE_DEFAULTS, ReflexionState, question_of, state_value
from rags_expert.llm.chat import LLMCallError
from rags_expert.outcomes import FailureReason
from rags_expert.prompts import PromptError

log = logging.getLogger(__name__)

_FAULTS = {LLMCallError: FailureReason.LLM_ERROR, PromptError: FailureReason.PROMPT_ERROR}
"""The faults a node ends in instead of raising, by the exit reason they give."""

R = TypeVar("R")

AfterPrepare = Literal["draft", "finalize"]
AfterDraft = Literal["execute_tool", "finalize"]
AfterRevise = Literal["execute_tool", "finalize"]

__all__ = ["STATE_DEFAULTS", "ReflexionAgent", "ReflexionState", "question_of", "state_value"]


class ReflexionAgent(SeedHooks, Generic[R]):
    """Base class of reflexion loops; see the module docstring."""

    state_schema: type = ReflexionState
    max_question_chars: int | None = None
    """Longest question accepted (None: no limit); a subclass with settings sets ``max_question_chars``."""

    def __init__(self, max_steps: int) -> None:
        if missing := missing_hooks(type(self)):
            raise TypeError(f"{type(self).__name__} must implement {', '.join(missing)}")
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self.max_steps = max_steps
        self._compiled: Any = None

    # --- what a subclass implements: draft, run_tool, revise, parse_final_result (or their seed names);
    # done_reason, log_step and log_final_result are optional. Their defaults (SeedHooks) call the seed's hooks.
    #
    # draft(state) -> update whose ``memory`` ends with an AIMessage (the first action)
    # run_tool(state) -> update with a ToolMessage (carry out the last AI message's action)
    # revise(state) -> update with an AIMessage (score the outcome, reflect, propose the next action)
    # done_reason(state) -> why the loop may stop now, or None (the step limit is the base's)
    # log_step(step, node, update) -> a log record for one node run (kept in ``state['log']``)
    # parse_final_result(state) -> the agent's result from the final state

    def final_message(self, result: R) -> AIMessage:
        """The user-facing answer appended to the conversation (default: the result as text)."""
        return AIMessage(str(result))

    async def standalone_question(self, question: str, history: list[AnyMessage], config: RunnableConfig) -> str:
        """``question`` made standalone from the earlier conversation ``history`` (default: unchanged).

        May raise :class:`~rags_expert.llm.chat.LLMCallError`; the run then ends with ``llm_error``.
        """
        return question

    def reset_state(self) -> dict[str, Any]:
        """The per-question fields at the start of every run; subclasses add theirs."""
        fresh = {key: state_value({}, key) for key in ("question", "steps", "log", "error", "exit_reason")}
        return fresh | {"memory": [RemoveMessage(id=REMOVE_ALL_MESSAGES)]}

    def initial_state(self, question: str, prompt: str | None = None, **inputs: Any) -> dict[str, Any]:
        """The graph input for ``question`` and the caller's ``prompt``; subclasses may add fields from ``inputs``."""
        return {"messages": [HumanMessage(question)], "prompt": prompt or ""}

    # --- exit rule ---

    def exit_reason(self, state: Mapping[str, Any]) -> str | None:
        """A reason already decided, ``llm_error``, the subclass's reason, ``max_steps``, or None to continue."""
        if reason := state_value(state, "exit_reason"):
            return str(reason)
        if state_value(state, "error"):
            return FailureReason.LLM_ERROR.value
        if reason := self.done_reason(state):
            return reason
        if state_value(state, "steps") >= self.max_steps:
            return FailureReason.MAX_STEPS.value
        return None

    # --- nodes (thin wrappers adding logging and failure handling) ---
    # Their state parameter is typed as a plain dict on purpose: LangGraph reads a node's
    # input schema from that annotation, and a subclass's extra state keys must reach it.

    async def _run(self, node: str, fn: Any, state: dict[str, Any]) -> dict[str, Any]:
        """``fn(state)`` as node ``node``: a model fault, or a host's template that cannot render, ends the run
        honestly (:func:`~rags_expert.failsafe.guarded`, as the RAG nodes' faults), and every run of it
        adds its record to the log."""
        update = await guarded(
            lambda: fn(state),
            _FAULTS,
            lambda exc: f"{node}: {redacted_error(exc, [])}",
            log_as=f"reflexion {node} failed",
            key="exit_reason",
        )
        step = update.get("steps", state_value(state, "steps"))
        record = {"step": step, "node": node, **self.log_step(step, node, update)}
        if update.get("error"):
            record["error"] = update["error"]
        return {**update, "log": [*state_value(state, "log"), record]}

    async def _prepare_node(self, state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        """Start a question: reset the per-question state, take the last human message, condense a follow-up."""
        update = self.reset_state()
        start = open_question(state_value(state, "messages"), config, self.max_question_chars)
        question, history = start.question, start.history
        if start.reason:  # a checkpointer fault, no question, or one too long (conversation.open_question)
            prefix = "checkpointer" if start.reason == FAULT_REASON else "prepare"
            error = f"{prefix}: {start.error}" if start.error else ""
            return update | {"question": question, "error": error, "exit_reason": start.reason}

        async def condensed() -> dict[str, Any]:
            standalone = (await self.standalone_question(question, history, config)).strip() if history else ""
            asked = standalone or question
            return {"question": asked, "memory": [*update["memory"], HumanMessage(asked)]}

        return update | await guarded(  # a model fault while condensing ends the run like any node's (llm_error)
            condensed,
            {LLMCallError: FailureReason.LLM_ERROR},
            lambda exc: f"prepare: {redacted_error(exc, [])}",
            reset={"question": question},
            log_as="reflexion prepare failed",
            key="exit_reason",
        )

    async def _draft_node(self, state: dict[str, Any]) -> dict[str, Any]:
        """Draft the first action."""
        return await self._run("draft", self.draft, state)

    async def _execute_tool_node(self, state: dict[str, Any]) -> dict[str, Any]:
        """Carry out the latest action; counts one step."""
        counted = {**state, "steps": state_value(state, "steps") + 1}
        update = await self._run("execute_tool", self.run_tool, counted)
        return {"steps": counted["steps"], **update}

    async def _revise_node(self, state: dict[str, Any]) -> dict[str, Any]:
        """Score the outcome and, unless done, propose a revised action."""
        return await self._run("revise", self.revise, state)

    async def _finalize_node(self, state: dict[str, Any]) -> dict[str, Any]:
        """Fix the exit reason and append the user-facing answer to the conversation."""
        reason = self.exit_reason(state) or FailureReason.MAX_STEPS.value
        result = self.parse_final_result({**state, "exit_reason": reason})
        self.log_final_result(result)
        return {"exit_reason": reason, "messages": [self.final_message(result)]}

    def _after_prepare(self, state: dict[str, Any]) -> AfterPrepare:
        """No question (or a failed condense step) goes straight to the answer; otherwise draft."""
        return "finalize" if state_value(state, "exit_reason") or state_value(state, "error") else "draft"

    def _after_draft(self, state: dict[str, Any]) -> AfterDraft:
        """A failed draft ends the run; otherwise its action is executed."""
        return "finalize" if state_value(state, "error") else "execute_tool"

    def should_continue(self, state: dict[str, Any]) -> AfterRevise:
        """finalize when an exit rule holds, else back to execute_tool with the revised action."""
        return "finalize" if self.exit_reason(state) else "execute_tool"

    # --- graph ---

    def build_graph(self) -> StateGraph:
        """The uncompiled graph (for hosts that add a checkpointer or serve it)."""
        builder: StateGraph[Any, Any, Any, Any] = StateGraph(self.state_schema)
        builder.add_node("prepare", self._prepare_node)  # type: ignore[type-var]  # StateLike bound excludes dict
        builder.add_node("draft", self._draft_node)
        builder.add_node("execute_tool", self._execute_tool_node)
        builder.add_node("revise", self._revise_node)
        builder.add_node("finalize", self._finalize_node)
        builder.add_edge(START, "prepare")
        builder.add_conditional_edges("prepare", self._after_prepare, ["draft", "finalize"])
        builder.add_conditional_edges("draft", self._after_draft, ["execute_tool", "finalize"])
        builder.add_edge("execute_tool", "revise")
        builder.add_conditional_edges("revise", self.should_continue, ["execute_tool", "finalize"])
        builder.add_edge("finalize", END)
        return builder

    @property
    def graph(self) -> Any:
        """The compiled graph (built once, no checkpointer: every run is a fresh conversation)."""
        if self._compiled is None:
            self._compiled = self.build_graph().compile()
        return self._compiled

    def recursion_limit(self) -> int:
        """LangGraph super-steps one run may take: prepare, draft, 2 per step and finalize, with slack."""
        return 2 * self.max_steps + 6

    async def execute(self, question: str, prompt: str | None = None, **inputs: Any) -> R:
        """Run the loop for ``question`` and return the parsed final result (``finalize`` has logged it).

        ``prompt`` is the seed's ``execute(question, prompt)`` argument: it reaches the hooks as
        ``state['prompt']`` (and the seed's responder factories as their ``prompt``).
        """
        state = await self.graph.ainvoke(
            self.initial_state(question, prompt, **inputs), config={"recursion_limit": self.recursion_limit()}
        )
        return self.parse_final_result(state)
