"""Neo4j or Memgraph over Bolt as a graph backend, with the official ``neo4j`` driver.

Generated queries run in a session opened in READ access mode, so the server
itself refuses any query that would write.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping
from typing import Any

from pydantic import SecretStr

from rags_expert.kg.backends.base import (
    BackendUnavailable,
    ErrorKind,
    GraphQueryError,
    QueryResult,
    plain_value,
    secret_value,
)
from rags_expert.llm.chat import redact
from rags_expert.settings import KGSettings


def _neo4j_graph_value(value: Any) -> dict[str, Any] | None:
    """A Neo4j node, relationship or path as a dict; None for any other value."""
    from neo4j.graph import Node, Relationship
    from neo4j.graph import Path as NPath

    if isinstance(value, Node):
        return {"labels": sorted(value.labels), "properties": dict(value)}
    if isinstance(value, Relationship):
        return {"type": value.type, "properties": dict(value)}
    if isinstance(value, NPath):
        return {"path": [_neo4j_graph_value(n) for n in value.nodes]}
    return None


def _classify(exc: Exception) -> ErrorKind:
    """The error kind of a driver exception, from its class and Neo4j status code."""
    from neo4j import exceptions as nx

    code = getattr(exc, "code", "") or ""
    if isinstance(exc, nx.AuthError) or "Security" in code:
        return "auth"
    if isinstance(exc, (nx.ServiceUnavailable, nx.SessionExpired, OSError)):
        return "connection"
    if isinstance(exc, nx.CypherSyntaxError) or "Statement.Syntax" in code or "Statement.Semantic" in code:
        return "syntax"
    if (
        "AccessMode" in code
        or "ForbiddenOnReadOnlyDatabase" in code
        or "write" in str(exc).lower()
        and "read" in str(exc).lower()
    ):
        return "read_only"
    if "TransactionTimedOut" in code or "Timeout" in type(exc).__name__ or "timed out" in str(exc).lower():
        return "timeout"
    return "error"


class Neo4jBackend:
    """Neo4j or Memgraph over Bolt with the official ``neo4j`` driver.

    Generated queries run in a session opened with READ access mode through
    ``execute_read``: a Neo4j cluster routes them to a reader and the server
    refuses writes in them. Each query carries a transaction ``timeout``; at most
    ``max_rows + 1`` records are pulled. The credentials go into the driver's
    auth token and are sent in the Bolt HELLO / LOGON message.
    """

    name = "neo4j"

    def __init__(
        self,
        uri: str = "bolt://localhost:7687",
        user: str = "neo4j",
        password: SecretStr | str | None = None,
        database: str | None = None,
        *,
        connection_timeout: float = 10.0,
        max_retry_time: float = 5.0,
    ) -> None:
        self.uri = uri
        self.max_retry_time = max_retry_time
        self.user = user
        self._password = secret_value(password)
        self.database = database
        self.connection_timeout = connection_timeout
        self._driver: Any = None

    @classmethod
    def from_settings(cls, kg: KGSettings) -> Neo4jBackend:
        """The backend ``kg`` describes (``neo4j_uri``, ``neo4j_user``, ``neo4j_password``, ``neo4j_database``)."""
        return cls(kg.neo4j_uri, kg.neo4j_user, kg.neo4j_password, kg.neo4j_database)

    def _redact(self, text: str) -> str:
        return redact(text, [self._password] if self._password else [])

    def _error(self, exc: Exception) -> GraphQueryError:
        message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        return GraphQueryError(_classify(exc), self._redact(f"{type(exc).__name__}: {message}"))

    async def start(self) -> None:
        """Create the driver (it connects on the first query); idempotent."""
        if self._driver is not None:
            return
        try:
            import neo4j
        except ImportError:
            raise BackendUnavailable("the neo4j driver is missing: pip install 'rags-expert[kg]'") from None
        auth = (self.user, self._password) if self._password is not None else None
        try:
            self._driver = neo4j.AsyncGraphDatabase.driver(
                self.uri,
                auth=auth,
                connection_timeout=self.connection_timeout,
                max_transaction_retry_time=self.max_retry_time,
            )
        except Exception as exc:  # a malformed URI, an unsupported scheme
            raise GraphQueryError("connection", self._redact(f"cannot create the Neo4j driver: {exc}")) from None

    async def run_read(self, query: str, *, timeout: float, max_rows: int) -> QueryResult:
        """Run ``query`` in a READ-mode session (the server refuses writes), with a transaction timeout and row cap."""
        import neo4j

        await self.start()
        started = time.monotonic()

        async def work(tx: Any) -> tuple[list[str], list[Any]]:
            result = await tx.run(neo4j.Query(query, timeout=timeout))
            records = await result.fetch(max_rows + 1)
            return list(await result.keys()), records

        try:
            async with self._driver.session(database=self.database, default_access_mode=neo4j.READ_ACCESS) as session:
                columns, records = await asyncio.wait_for(
                    session.execute_read(work), timeout + self.connection_timeout + 5
                )
        except TimeoutError:
            raise GraphQueryError("timeout", f"no answer from Neo4j within {timeout:.0f}s") from None
        except Exception as exc:
            raise self._error(exc) from None
        rows = [{k: plain_value(r.get(k), _neo4j_graph_value) for k in columns} for r in records[:max_rows]]
        return QueryResult(columns, rows, len(records) > max_rows, time.monotonic() - started)

    async def execute_write(self, query: str, params: Mapping[str, Any] | None = None) -> None:
        """Run a write (data loading only)."""
        await self.start()
        try:
            async with self._driver.session(database=self.database) as session:
                await session.run(query, dict(params or {}))
        except Exception as exc:
            raise self._error(exc) from None

    async def close(self) -> None:
        """Close the driver; idempotent."""
        driver, self._driver = self._driver, None
        if driver is not None:
            with contextlib.suppress(Exception):
                await driver.close()

    async def __aenter__(self) -> Neo4jBackend:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
