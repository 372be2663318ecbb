"""How a checkpointer fails, and what one with connections provides: shared by the builder, the PostgreSQL
checkpointer and the guard around a compiled graph (so the PostgreSQL module does not import the package that
imports it)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from rags_expert.outcomes import FailureReason

COMPONENT = "the conversation store (the PostgreSQL checkpointer)"
"""How failure messages name the checkpointer when it fails (``failure_error``'s ``component``)."""
FAULT_REASON = FailureReason.CHECKPOINTER_ERROR.value
"""The ``reason`` (RAG) / ``exit_reason`` (KG) of a run the checkpointer failed."""


class CheckpointerUnavailableError(RuntimeError):
    """``checkpointer.url`` is set but the ``postgres`` extra is not installed."""


class CheckpointerError(RuntimeError):
    """The checkpointer's database failed: unreachable, or a connection lost mid-operation.

    ``error`` is the database's own error, ``"<Class>: <message>"``, on one line with the URL's secrets masked.
    """

    def __init__(self, doing: str, error: str) -> None:
        self.error = error
        super().__init__(f"the PostgreSQL checkpointer failed {doing}: {error}")


@runtime_checkable
class ManagedCheckpointer(Protocol):
    """A checkpointer with connections to open at start and close at shutdown."""

    async def open(self) -> None:
        """Connect (fail fast) and prepare the storage."""

    async def aclose(self) -> None:
        """Close the connections of the running event loop."""
