"""ReflexionAgent: a LangGraph loop that drafts, acts, scores and revises until good enough.

::

    START → draft → execute_tool → revise → should_continue ─┬→ END
                       ↑                                      │
                       └──────────── (not done) ──────────────┘

The memory is the message list: ``draft`` and ``revise`` add AI messages (the
action, as a tool call, and the reflection), ``execute_tool`` adds the tool
message with the outcome. A subclass supplies the responders, the tool, the exit
rule, step logging and the final result; this class owns the graph, the step
count, the step limit and failure handling: a model fault that survives its
retries (:class:`~rags_expert.llm.LLMCallError`) ends the loop with
``error`` set instead of raising out of :meth:`ReflexionAgent.execute`.
"""

from __future__ import annotations

import abc
import logging
from typing import Annotated, Any, Generic, TypedDict, TypeVar

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from rags_expert.llm import LLMCallError

log = logging.getLogger(__name__)

R = TypeVar("R")


class ReflexionState(TypedDict, total=False):
    """Graph state: the message memory plus bookkeeping the exit rules need."""

    messages: Annotated[list[AnyMessage], add_messages]
    question: str
    steps: int  # tool executions so far
    log: list[dict[str, Any]]  # one record per node run, oldest first
    error: str  # set when a model call failed for good; ends the loop


def question_of(state: ReflexionState) -> str:
    """The question: the ``question`` field, else the first human message (for hosts sending only messages)."""
    if state.get("question"):
        return state["question"]
    for message in state.get("messages", []):
        if isinstance(message, HumanMessage):
            return message.text if hasattr(message, "text") and isinstance(message.text, str) else str(message.content)
    return ""


class ReflexionAgent(abc.ABC, Generic[R]):
    """Base class of reflexion loops; see the module docstring."""

    state_schema: type = ReflexionState

    def __init__(self, max_steps: int) -> None:
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self.max_steps = max_steps
        self._compiled: Any = None

    # --- what a subclass implements ---

    @abc.abstractmethod
    async def draft(self, state: ReflexionState) -> dict[str, Any]:
        """Draft responder: the first action. Returns a state update whose messages end with an AIMessage."""

    @abc.abstractmethod
    async def run_tool(self, state: ReflexionState) -> dict[str, Any]:
        """Tool function: carry out the last AI message's action. Returns an update with a ToolMessage."""

    @abc.abstractmethod
    async def revise(self, state: ReflexionState) -> dict[str, Any]:
        """Revise responder: score the outcome, reflect, propose the next action (an AIMessage)."""

    @abc.abstractmethod
    def done_reason(self, state: ReflexionState) -> str | None:
        """Why the loop may stop now (e.g. a good score), or None to go on. The step limit is the base's."""

    @abc.abstractmethod
    def log_step(self, step: int, node: str, update: dict[str, Any]) -> dict[str, Any]:
        """A log record for one node run (kept in ``state['log']`` and returned with the result)."""

    @abc.abstractmethod
    def parse_final_result(self, state: ReflexionState) -> R:
        """The agent's result from the final state."""

    def log_final_result(self, result: R) -> None:
        """Report the final result (default: one INFO line)."""
        log.info("%s finished: %s", type(self).__name__, result)

    def initial_state(self, question: str, **inputs: Any) -> dict[str, Any]:
        """The graph input for ``question``; subclasses may add fields from ``inputs``."""
        return {"messages": [HumanMessage(question)], "question": question, "steps": 0, "log": []}

    # --- exit rule ---

    def exit_reason(self, state: ReflexionState) -> str | None:
        """``llm_error``, the subclass's reason, ``max_steps``, or None to continue."""
        if state.get("error"):
            return "llm_error"
        if reason := self.done_reason(state):
            return reason
        if state.get("steps", 0) >= self.max_steps:
            return "max_steps"
        return None

    # --- nodes (thin wrappers adding logging and failure handling) ---
    # Their state parameter is typed as a plain dict on purpose: LangGraph reads a node's
    # input schema from that annotation, and a subclass's extra state keys must reach it.

    async def _run(self, node: str, fn: Any, state: ReflexionState) -> dict[str, Any]:
        try:
            update = await fn(state)
        except LLMCallError as exc:
            update = {"error": f"{node}: {exc}", "messages": [AIMessage(f"[{node} failed: {exc}]")]}
            log.error("reflexion %s failed: %s", node, exc)
        step = update.get("steps", state.get("steps", 0))
        record = {"step": step, "node": node, **self.log_step(step, node, update)}
        if update.get("error"):
            record["error"] = update["error"]
        return {**update, "log": [*state.get("log", []), record]}

    async def _draft_node(self, state: dict[str, Any]) -> dict[str, Any]:
        """Draft the first action."""
        return await self._run("draft", self.draft, state)

    async def _execute_tool_node(self, state: dict[str, Any]) -> dict[str, Any]:
        """Carry out the latest action; counts one step."""
        counted = {**state, "steps": state.get("steps", 0) + 1}
        update = await self._run("execute_tool", self.run_tool, counted)
        return {"steps": counted["steps"], **update}

    async def _revise_node(self, state: dict[str, Any]) -> dict[str, Any]:
        """Score the outcome and, unless done, propose a revised action."""
        return await self._run("revise", self.revise, state)

    def _after_draft(self, state: dict[str, Any]) -> str:
        """A failed draft ends the run; otherwise its action is executed."""
        return END if state.get("error") else "execute_tool"

    def should_continue(self, state: dict[str, Any]) -> str:
        """END when an exit rule holds, else back to execute_tool with the revised action."""
        return END if self.exit_reason(state) else "execute_tool"

    # --- graph ---

    def build_graph(self) -> StateGraph:
        """The uncompiled graph (for hosts that add a checkpointer or serve it)."""
        builder = StateGraph(self.state_schema)
        builder.add_node("draft", self._draft_node)
        builder.add_node("execute_tool", self._execute_tool_node)
        builder.add_node("revise", self._revise_node)
        builder.add_edge(START, "draft")
        builder.add_conditional_edges("draft", self._after_draft, ["execute_tool", END])
        builder.add_edge("execute_tool", "revise")
        builder.add_conditional_edges("revise", self.should_continue, ["execute_tool", END])
        return builder

    @property
    def graph(self) -> Any:
        """The compiled graph (built once)."""
        if self._compiled is None:
            self._compiled = self.build_graph().compile()
        return self._compiled

    def recursion_limit(self) -> int:
        """LangGraph super-steps one run may take: draft + 2 per step, with slack."""
        return 2 * self.max_steps + 6

    async def execute(self, question: str, **inputs: Any) -> R:
        """Run the loop for ``question`` and return the parsed final result."""
        state = await self.graph.ainvoke(
            self.initial_state(question, **inputs), config={"recursion_limit": self.recursion_limit()}
        )
        result = self.parse_final_result(state)
        self.log_final_result(result)
        return result
