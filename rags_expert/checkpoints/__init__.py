"""Where the agents keep their conversation threads: LangGraph's in-memory saver, or PostgreSQL shared by replicas.

A thread's history (the ``messages`` of every earlier turn, and the state of an unfinished run) lives in a
LangGraph checkpointer keyed by the thread id. The default, :class:`~langgraph.checkpoint.memory.InMemorySaver`,
keeps it in this process: a host that runs two replicas behind a load balancer loses a follow-up that lands on
the other replica. With ``checkpointer.url`` set (``RAGS_EXPERT_CHECKPOINTER__URL``, ``ask --checkpointer-url``)
every replica keeps its threads in one PostgreSQL database through LangGraph's async Postgres checkpointer
(:class:`~rags_expert.checkpoints.postgres.PostgresCheckpointer`, the ``postgres`` extra), so any replica
continues any thread (docs/deploy.md).

* :func:`build_checkpointer`: the saver the settings describe; does no I/O (an agent builds it in ``__init__``).
* :func:`open_checkpointer`: connect once and create the tables (``await agent.async_init()`` calls it), so a
  wrong URL or an unreachable server fails at start, not at the first question.
* :func:`close_checkpointer`: close the connections of the running event loop (``await agent.aclose()``).

A database fault (the server down, a connection cut mid-operation) is raised as :class:`CheckpointerError`,
one redacted line naming the checkpointer; a run it interrupts ends in the agents' honest failure message
(:mod:`rags_expert.checkpoints.guard`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.memory import InMemorySaver

from rags_expert.checkpoints.errors import (
    COMPONENT,
    FAULT_REASON,
    CheckpointerError,
    CheckpointerUnavailableError,
    ManagedCheckpointer,
)

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from rags_expert.settings import CheckpointerSettings


def build_checkpointer(settings: CheckpointerSettings | None) -> BaseCheckpointSaver[Any]:
    """The PostgreSQL checkpointer when ``settings.url`` is set, else a fresh in-memory saver. No I/O."""
    if settings is None or settings.url is None:
        return InMemorySaver()
    try:
        from rags_expert.checkpoints.postgres import PostgresCheckpointer
    except ImportError as exc:
        raise CheckpointerUnavailableError(
            "checkpointer.url needs LangGraph's Postgres checkpointer: pip install 'rags-expert[postgres]' "
            f"({type(exc).__name__}: {exc})"
        ) from None
    return PostgresCheckpointer(settings)


async def open_checkpointer(saver: object) -> None:
    """Connect ``saver`` and prepare its storage, when it has any (nothing for the in-memory saver)."""
    if isinstance(saver, ManagedCheckpointer):
        await saver.open()


async def close_checkpointer(saver: object) -> None:
    """Close ``saver``'s connections of the running event loop, when it has any."""
    if isinstance(saver, ManagedCheckpointer):
        await saver.aclose()


__all__ = [
    "COMPONENT",
    "FAULT_REASON",
    "CheckpointerError",
    "CheckpointerUnavailableError",
    "ManagedCheckpointer",
    "build_checkpointer",
    "close_checkpointer",
    "open_checkpointer",
]
