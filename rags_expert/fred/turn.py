"""One Fred turn through one of our compiled graphs: both Fred agents run their graph through here.

* the conversation Fred keeps (``conversation_history``: prior turns) becomes the input messages, so the
  graph condenses a follow-up exactly as on a LangGraph thread;
* the graph runs standalone (compiled with ``checkpointer=False``): Fred persists the conversation, our
  working state stays out of its checkpoints. It runs with ``durability="exit"``: inside Fred's node it
  inherits Fred's ``"async"`` durability, and LangGraph 1.2's loop then waits on a checkpoint write that a
  graph without a checkpointer never starts (``AttributeError: ... '_put_checkpoint_fut'``; measured with
  fred-runtime 4.5.5). LangGraph warns that durability has no effect without a checkpointer: that warning
  is silenced, since having no effect is the point;
* every node start, and every node end with news, becomes a Fred status event (:mod:`rags_expert.hosts.progress`);
* the final message's text is sent as the assistant delta once the graph has produced it, so a draft the
  checks rejected never reaches the user;
* a fault the graph did not turn into an honest answer is caught here and answered honestly too: a Fred node
  that raises leaves the session stuck until it is restarted.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import AsyncIterator, Sequence
from typing import Any, cast

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph.state import CompiledStateGraph

from rags_expert.hosts.progress import Progress
from rags_expert.secrets import redact

log = logging.getLogger(__name__)
# the one warning durability="exit" causes (see the module docstring); nothing else is filtered
warnings.filterwarnings("ignore", message="`durability` has no effect when no checkpointer", category=UserWarning)


def conversation(turns: Sequence[Any], message: str, cited: Sequence[Sequence[str]] = ()) -> list[AnyMessage]:
    """Fred's prior turns (``user_message`` / ``agent_response``) and the new question, as messages.

    ``cited``: the uids each of the last ``len(cited)`` turns cited (the state's ``history_uids``); an answer
    carries them as its ``sources`` so answer-time authorization can leave out one citing a revoked chunk
    (:func:`rags_expert.rag.wrappers.guard.permitted_history`); an older answer's sources are unknown."""
    messages: list[AnyMessage] = []
    known = dict(zip(range(len(turns) - len(cited), len(turns)), cited, strict=False))
    for i, turn in enumerate(turns):
        messages.append(HumanMessage(turn.user_message))
        if turn.agent_response:
            meta = {"sources": [{"uid": uid} for uid in known[i]]} if i in known else {}
            messages.append(AIMessage(turn.agent_response, response_metadata=meta))
    messages.append(HumanMessage(message))
    return messages


async def run_graph(
    graph: CompiledStateGraph[Any, Any, Any, Any],
    messages: list[AnyMessage],
    ctx: Any,
    progress: Progress,
    context: dict[str, Any] | None = None,
) -> AIMessage | None:
    """Run ``graph`` on ``messages``, report progress through ``ctx.emit_status``; the final message (or None).

    The final message is the last ``AIMessage`` a node appended (our finalize nodes append exactly one).
    """
    final: AIMessage | None = None
    stream = graph.astream({"messages": messages}, context=context, stream_mode="tasks", durability="exit")
    async for event in cast("AsyncIterator[dict[str, Any]]", stream):
        if line := progress.line(event):
            ctx.emit_status(event.get("name", ""), line)
        if "result" in event:
            added = dict(event.get("result") or []).get("messages") or []
            if added and isinstance(added[-1], AIMessage):
                final = added[-1]
    return final


def fault_text(exc: BaseException, secrets: Sequence[str] = ()) -> str:
    """The honest answer to a turn that failed outside the graph's own handling (one line, redacted)."""
    detail = redact(str(exc).splitlines()[0] if str(exc) else "", list(secrets))[:300]
    return f"I could not answer: the agent failed ({type(exc).__name__}{': ' + detail if detail else ''})."
