"""A checkpointer fault ends a run in the agent's honest failure message, as a model fault does.

LangGraph reads a thread's checkpoint before the first node and writes one after each step, outside every
node: a :class:`~rags_expert.checkpoints.CheckpointerError` there escapes ``ainvoke``/``astream``, where the
nodes turn model and retriever faults into a failure message. :class:`GuardedGraph` (what
``AgentFlow.get_compiled_graph`` serves) catches it and runs the same input once more without the
checkpointer, with the fault in the run's config (:data:`FAULT_KEY`): the agent's ``prepare`` node reads it
and ends the run at once in its failure message (``reason``/``exit_reason`` ``checkpointer_error``, the
database's error redacted). So every stream mode and ``ainvoke`` end as after any other fault; nothing of
that second run is stored, and nothing stored is lost. A resumed run (no input) has nothing to answer: its
fault is raised as the ``CheckpointerError`` itself.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from rags_expert.checkpoints.errors import CheckpointerError

log = logging.getLogger(__name__)

FAULT_KEY = "rags_expert_checkpointer_fault"
"""``configurable`` key of the second run: the checkpointer's error, which ``prepare`` answers with."""


def checkpointer_fault(config: RunnableConfig | Mapping[str, Any] | None) -> str:
    """The checkpointer fault this run must report ('' for a normal run)."""
    configurable = (config or {}).get("configurable") or {}
    return str(configurable.get(FAULT_KEY) or "")


class GuardedGraph(CompiledStateGraph):
    """A compiled graph whose runs end in an honest failure when the checkpointer fails (module docstring)."""

    @classmethod
    def of(cls, compiled: CompiledStateGraph) -> GuardedGraph:
        """``compiled`` as a GuardedGraph (same nodes, channels, checkpointer and config)."""
        return cls(**{k: v for k, v in compiled.__dict__.items() if k != "__orig_class__"})

    async def astream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> AsyncIterator[Any]:
        """LangGraph's ``astream`` (``ainvoke`` runs through it); a checkpointer fault ends in the failure run."""
        try:
            async for chunk in super().astream(input, config, **kwargs):
                yield chunk
            return
        except CheckpointerError as exc:
            if not isinstance(input, Mapping) or self.checkpointer in (None, False):
                raise
            fault = exc
        log.error("run failed: %s", fault)
        configurable = {**((config or {}).get("configurable") or {}), FAULT_KEY: fault.error}
        unsaved = self.copy({"checkpointer": False})
        async for chunk in super(GuardedGraph, unsaved).astream(
            input, {**(config or {}), "configurable": configurable}, **kwargs
        ):
            yield chunk
