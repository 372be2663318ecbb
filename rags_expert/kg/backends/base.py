"""The contract every graph database backend meets, and what its queries return or raise."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import SecretStr

ErrorKind = Literal["syntax", "timeout", "read_only", "connection", "auth", "unavailable", "error"]


class GraphQueryError(RuntimeError):
    """A query or connection failed; ``kind`` classifies it, the text is the database's (redacted) message."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        self.kind = kind
        self.message = message
        super().__init__(f"{kind}: {message}")


class BackendUnavailable(GraphQueryError):
    """The database client or server binary is missing, or the server could not be started."""

    def __init__(self, message: str) -> None:
        super().__init__("unavailable", message)


@dataclass
class QueryResult:
    """Rows of a read query (each a column → value dict) and whether rows were cut at ``max_rows``."""

    columns: list[str]
    rows: list[dict[str, Any]]
    truncated: bool = False
    elapsed: float = 0.0


@runtime_checkable
class GraphBackend(Protocol):
    """What the KG agent needs from a graph database."""

    name: str

    async def start(self) -> None:
        """Connect (and start the server when embedded); idempotent."""

    async def run_read(self, query: str, *, timeout: float, max_rows: int) -> QueryResult:
        """Run ``query`` read-only, enforced by the database; raise :class:`GraphQueryError`."""

    async def execute_write(self, query: str, params: Mapping[str, Any] | None = None) -> None:
        """Run a write (data loading only)."""

    async def close(self) -> None:
        """Disconnect (and stop an embedded server); idempotent."""


def secret_value(value: SecretStr | str | None) -> str | None:
    """The plain text of a password given as a ``SecretStr`` or a string (None stays None)."""
    if value is None:
        return None
    return value.get_secret_value() if isinstance(value, SecretStr) else value


def plain_value(value: Any, graph_value: Callable[[Any], dict[str, Any] | None]) -> Any:
    """A result value as JSON-able data.

    ``graph_value`` turns the driver's own node, edge and path objects into dicts (None for anything else);
    lists and dicts are converted item by item, scalars kept, anything else becomes its string.
    """
    converted = graph_value(value)
    if converted is not None:
        return converted
    if isinstance(value, list):
        return [plain_value(v, graph_value) for v in value]
    if isinstance(value, dict):
        return {str(k): plain_value(v, graph_value) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
