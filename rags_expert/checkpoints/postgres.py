"""LangGraph's async Postgres checkpointer, usable from any number of event loops and replicas.

:class:`PostgresCheckpointer` is LangGraph's :class:`~langgraph.checkpoint.postgres.aio.AsyncPostgresSaver`
(same tables, same queries, same serialisation) with three changes:

* **connections per event loop**: a psycopg async connection belongs to the loop that opened it, and our
  agents serve many loops (a host may ``asyncio.run`` each request in a worker thread,
  ``tests/test_event_loops.py``), as the chat model does with its HTTP pools (:mod:`rags_expert.llm.chat`). Each
  loop keeps up to ``checkpointer.pool_size`` idle connections, opened on demand in the caller's task. There is
  no background task: psycopg_pool's async pool swallows the cancellation of a worker that is connecting, so
  a loop that ends while the pool grows never finishes closing (measured: ``asyncio.run`` hung in 1 of 4 runs
  of 6 loops x 3 questions). Connections of loops that have closed are closed when the next loop starts.
* **``pool_size`` operations in flight per loop**: AsyncPostgresSaver runs one checkpoint read or write at a
  time per saver, even over a pool; here each operation has a connection of its own.
* **tables created once, under an advisory lock** (:meth:`open`): replicas that start together do not race
  on ``CREATE TABLE``; a role without DDL rights turns ``checkpointer.setup`` off.

A database restart or failover costs no question: an operation that fails on an idle connection the restart
cut (``AdminShutdown``, or the server gone) closes every idle connection of its loop and runs once more on a
new one. Every operation retried so is idempotent: a read, or an upsert of a checkpoint or its writes. Checking
each connection before reuse (psycopg_pool's ``check_connection``) would cost a round trip per operation
(measured: +45% time per question with a scripted model, docs/deploy.md); the retry costs nothing until a
connection is found cut. A connection an operation failed on is closed, not reused. A database fault is raised
as :class:`~rags_expert.checkpoints.CheckpointerError` (one redacted line). Sync use (``graph.invoke``) works like AsyncPostgresSaver's, from a thread other than a
loop that uses the saver; the agents' graphs are meant for ``ainvoke``/``astream``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.serde.base import SerializerProtocol
from psycopg import AsyncConnection, AsyncCursor, Capabilities, OperationalError
from psycopg import Error as DatabaseError
from psycopg.pq import TransactionStatus
from psycopg.rows import DictRow, dict_row

from rags_expert.checkpoints.errors import CheckpointerError
from rags_expert.secrets import redact, url_secrets
from rags_expert.settings import CheckpointerSettings

log = logging.getLogger(__name__)
T = TypeVar("T")

SETUP_LOCK = 0x7261_6773_6370  # "ragscp"
"""Key of the PostgreSQL advisory lock held while the checkpoint tables are created or migrated."""
CONNECTION_KWARGS: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
"""What AsyncPostgresSaver expects of its connections (LangGraph's documented pool settings)."""


@dataclass
class _LoopConnections:
    """One event loop's connections: the idle ones, and the slots of the operations in flight."""

    slots: asyncio.Semaphore
    idle: list[AsyncConnection[DictRow]] = field(default_factory=list)
    opened: int = 0
    """Connections opened on this loop so far."""


class StaleConnectionError(CheckpointerError):
    """An idle connection turned out cut (a database restart or failover): the operation may run again."""


class PostgresCheckpointer(AsyncPostgresSaver):
    """AsyncPostgresSaver with connections per event loop (see the module docstring)."""

    def __init__(self, settings: CheckpointerSettings, *, serde: SerializerProtocol | None = None) -> None:
        # AsyncPostgresSaver.__init__ binds the saver to the running loop and one connection: not called
        BaseCheckpointSaver.__init__(self, serde=serde)
        if settings.url is None:
            raise ValueError("PostgresCheckpointer needs checkpointer.url")
        self.settings = settings
        self._conninfo = settings.url.get_secret_value()
        self.pipe = None
        self.supports_pipeline = Capabilities().has_pipeline()
        self._per_loop: dict[asyncio.AbstractEventLoop, _LoopConnections] = {}
        self._guard = threading.Lock()
        self._set_up = False

    @property
    def loop(self) -> asyncio.AbstractEventLoop:  # type: ignore[override]  # an attribute in AsyncPostgresSaver
        """A running loop that uses this saver, for the sync methods (they submit their work to it)."""
        with self._guard:
            live = [lp for lp in self._per_loop if lp.is_running()]
        if not live:
            raise RuntimeError(
                "the PostgreSQL checkpointer is async: run the graph with ainvoke/astream "
                "(sync calls need an event loop that already uses it, running in another thread)"
            )
        return live[0]

    def _connections(self) -> _LoopConnections:
        """The running loop's connections (made on first use; those of closed loops are closed then)."""
        loop = asyncio.get_running_loop()
        with self._guard:
            entry = self._per_loop.get(loop)
            if entry is None:
                for closed in [lp for lp in self._per_loop if lp.is_closed()]:
                    for conn in self._per_loop.pop(closed).idle:
                        conn.pgconn.finish()  # its loop is gone: close the socket without it
                entry = self._per_loop[loop] = _LoopConnections(asyncio.Semaphore(self.settings.pool_size))
        return entry

    def _fault(self, doing: str, exc: DatabaseError) -> CheckpointerError:
        """``exc`` as a :class:`CheckpointerError`: one line, the URL's secrets masked."""
        text = " ".join(f"{type(exc).__name__}: {exc}".split())
        return CheckpointerError(doing, redact(text, url_secrets(self._conninfo))[:500])

    async def _connect(self) -> AsyncConnection[DictRow]:
        """A new connection (a :class:`CheckpointerError` when the server cannot be reached)."""
        timeout = max(2, round(self.settings.connect_timeout))  # libpq's connect_timeout: whole seconds, >= 2
        try:
            return await AsyncConnection.connect(self._conninfo, connect_timeout=timeout, **CONNECTION_KWARGS)
        except DatabaseError as exc:
            raise self._fault("to connect", exc) from exc

    async def _connection(self, entry: _LoopConnections) -> tuple[AsyncConnection[DictRow], bool]:
        """An idle connection (and True), else a new one (and False)."""
        while entry.idle:
            conn = entry.idle.pop()
            if not conn.closed:
                return conn, True
        conn = await self._connect()
        entry.opened += 1
        return conn, False

    async def _once_more(self, operation: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        """``operation``, run again once when it failed on an idle connection a database restart cut."""
        try:
            return await operation(*args, **kwargs)
        except StaleConnectionError as exc:
            log.info("checkpointer: a connection was cut (%s); running the operation again", exc.error)
            return await operation(*args, **kwargs)

    async def aget_tuple(self, *args: Any, **kwargs: Any) -> Any:
        """AsyncPostgresSaver's, once more on a new connection after a restart (see the module docstring)."""
        return await self._once_more(super().aget_tuple, *args, **kwargs)

    async def aput(self, *args: Any, **kwargs: Any) -> Any:
        """AsyncPostgresSaver's (an upsert), once more on a new connection after a restart."""
        return await self._once_more(super().aput, *args, **kwargs)

    async def aput_writes(self, *args: Any, **kwargs: Any) -> None:
        """AsyncPostgresSaver's (an upsert), once more on a new connection after a restart."""
        await self._once_more(super().aput_writes, *args, **kwargs)

    async def adelete_thread(self, *args: Any, **kwargs: Any) -> None:
        """AsyncPostgresSaver's (a delete), once more on a new connection after a restart."""
        await self._once_more(super().adelete_thread, *args, **kwargs)

    @asynccontextmanager
    async def _cursor(self, *, pipeline: bool = False) -> AsyncIterator[AsyncCursor[DictRow]]:
        """A cursor on a connection of the running loop (AsyncPostgresSaver's, without its one-at-a-time lock)."""
        entry = self._connections()
        async with entry.slots:
            conn, reused = await self._connection(entry)
            reusable = False
            try:
                if pipeline and self.supports_pipeline:
                    async with conn.pipeline(), conn.cursor(binary=True, row_factory=dict_row) as cur:
                        yield cur
                elif pipeline:
                    async with conn.transaction(), conn.cursor(binary=True, row_factory=dict_row) as cur:
                        yield cur
                else:
                    async with conn.cursor(binary=True, row_factory=dict_row) as cur:
                        yield cur
                reusable = not conn.closed and conn.info.transaction_status == TransactionStatus.IDLE
            except DatabaseError as exc:
                fault = self._fault("reading or writing a checkpoint", exc)
                if reused and isinstance(exc, OperationalError) and (conn.closed or conn.broken):
                    self._drop_idle(entry)  # a restart cut them all: none is tried again
                    raise StaleConnectionError("reading or writing a checkpoint", fault.error) from exc
                raise fault from exc
            finally:
                if reusable:
                    entry.idle.append(conn)
                else:
                    conn.pgconn.finish()  # failed or cancelled mid-operation: never reused

    @staticmethod
    def _drop_idle(entry: _LoopConnections) -> None:
        """Close the loop's idle connections (a restart cut them)."""
        while entry.idle:
            entry.idle.pop().pgconn.finish()

    async def open(self) -> None:
        """Connect once (a wrong URL or an unreachable server fails here) and create or migrate the tables.

        The migrations run under an advisory lock, so replicas starting together run them one after the
        other (the later ones find nothing to do); with ``checkpointer.setup`` off this only checks the
        connection. Idempotent.
        """
        try:
            async with await self._connect() as conn:
                if not self.settings.setup or self._set_up:
                    return
                await _advisory_lock(conn)
                try:
                    await AsyncPostgresSaver(conn).setup()
                finally:
                    await conn.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK,))
                self._set_up = True
        except DatabaseError as exc:
            raise self._fault("to create its tables", exc) from exc

    async def aclose(self) -> None:
        """Close the running loop's idle connections (and those of closed loops). The saver reconnects on use."""
        loop = asyncio.get_running_loop()
        with self._guard:
            entry = self._per_loop.pop(loop, None)
            dead = [self._per_loop.pop(lp) for lp in list(self._per_loop) if lp.is_closed()]
        for gone in dead:
            for conn in gone.idle:
                conn.pgconn.finish()
        if entry is not None:
            for conn in entry.idle:
                await conn.close()


async def _advisory_lock(conn: AsyncConnection[DictRow], poll: float = 0.05) -> None:
    """Take the setup lock, polling with ``pg_try_advisory_lock``.

    A session blocked in ``pg_advisory_lock`` keeps a statement open, and the migrations' ``CREATE INDEX
    CONCURRENTLY`` waits for every open statement to end: two replicas starting together deadlocked (measured
    with PostgreSQL 15). Polling keeps no statement open while waiting.
    """
    while True:
        cur = await conn.execute("SELECT pg_try_advisory_lock(%s) AS taken", (SETUP_LOCK,))
        row = await cur.fetchone()
        if row is not None and row["taken"]:
            return
        await asyncio.sleep(poll)
