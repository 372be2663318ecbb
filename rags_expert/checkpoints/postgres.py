"""LangGraph's async Postgres checkpointer, usable from any number of event loops and replicas.

:class:`PostgresCheckpointer` is LangGraph's :class:`~langgraph.checkpoint.postgres.aio.AsyncPostgresSaver`
(same tables, same queries, same serialisation) with three changes:

* **connections per event loop**: a psycopg async connection belongs to the loop that opened it, and our
  agents serve many loops (a host may ``asyncio.run`` each request in a worker thread,
  ``tests/test_event_loops.py``), as the chat model does with its HTTP pools (:mod:`rags_expert.llm`). Each
  loop keeps up to ``checkpointer.pool_size`` idle connections, opened on demand in the caller's task. There is
  no background task: psycopg_pool's async pool swallows the cancellation of a worker that is connecting, so
  a loop that ends while the pool grows never finishes closing (measured: ``asyncio.run`` hung in 1 of 4 runs
  of 6 loops x 3 questions). Connections of loops that have closed are closed when the next loop starts.
* **``pool_size`` operations in flight per loop**: AsyncPostgresSaver runs one checkpoint read or write at a
  time per saver, even over a pool; here each operation has a connection of its own.
* **tables created once, under an advisory lock** (:meth:`open`): replicas that start together do not race
  on ``CREATE TABLE``; a role without DDL rights turns ``checkpointer.setup`` off.

A connection an operation failed on is closed, not reused (after a database restart, each idle connection
fails one operation). Sync use (``graph.invoke``) works like AsyncPostgresSaver's, from a thread other than a
loop that uses the saver; the agents' graphs are meant for ``ainvoke``/``astream``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.serde.base import SerializerProtocol
from psycopg import AsyncConnection, AsyncCursor, Capabilities
from psycopg.pq import TransactionStatus
from psycopg.rows import DictRow, dict_row

from rags_expert.settings import CheckpointerSettings

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

    async def _connect(self) -> AsyncConnection[DictRow]:
        timeout = max(2, round(self.settings.connect_timeout))  # libpq's connect_timeout: whole seconds, >= 2
        return await AsyncConnection.connect(self._conninfo, connect_timeout=timeout, **CONNECTION_KWARGS)

    @asynccontextmanager
    async def _cursor(self, *, pipeline: bool = False) -> AsyncIterator[AsyncCursor[DictRow]]:
        """A cursor on a connection of the running loop (AsyncPostgresSaver's, without its one-at-a-time lock)."""
        entry = self._connections()
        async with entry.slots:
            conn = entry.idle.pop() if entry.idle else None
            if conn is None or conn.closed:
                conn = await self._connect()
                entry.opened += 1
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
            finally:
                if reusable:
                    entry.idle.append(conn)
                else:
                    conn.pgconn.finish()  # failed or cancelled mid-operation: never reused

    async def open(self) -> None:
        """Connect once (a wrong URL or an unreachable server fails here) and create or migrate the tables.

        The migrations run under an advisory lock, so replicas starting together run them one after the
        other (the later ones find nothing to do); with ``checkpointer.setup`` off this only checks the
        connection. Idempotent.
        """
        async with await self._connect() as conn:
            if not self.settings.setup or self._set_up:
                return
            await _advisory_lock(conn)
            try:
                await AsyncPostgresSaver(conn).setup()
            finally:
                await conn.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK,))
            self._set_up = True

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
