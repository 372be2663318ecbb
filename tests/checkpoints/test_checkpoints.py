"""The PostgreSQL checkpointer on a real server (tests/helpers/pg_server.py): many event loops, replicas starting together,
concurrent operations over the pool, a wrong URL failing at start without showing its password."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from helpers.documents import KeywordRetriever
from helpers.openai_server import OpenAIServer
from helpers.pg_server import free_port
from langgraph.checkpoint.memory import InMemorySaver
from rag.test_integration_openai import ANSWER, QUESTION, castle_script, make_settings

from rags_expert import RagsExpert
from rags_expert.checkpoints import build_checkpointer
from rags_expert.cli import main
from rags_expert.settings import CheckpointerSettings, RagsExpertSettings

pytest.importorskip("langgraph.checkpoint.postgres", reason="the 'postgres' extra is not installed")
from rags_expert.checkpoints.postgres import PostgresCheckpointer  # noqa: E402

pytestmark = pytest.mark.integration


def test_without_a_url_threads_stay_in_memory():
    assert isinstance(build_checkpointer(None), InMemorySaver)
    assert isinstance(build_checkpointer(CheckpointerSettings()), InMemorySaver)
    assert isinstance(RagsExpert(retriever=KeywordRetriever(docs=[]))._default_checkpointer, InMemorySaver)


def test_one_agent_on_postgres_serves_many_event_loops(castle_docs, postgres_url):
    """A host that runs each request in its own ``asyncio.run`` (worker threads): one pool per loop."""
    threads, turns = 6, 3
    with OpenAIServer(castle_script) as server:
        settings = make_settings(server).model_copy(update={"checkpointer": CheckpointerSettings(url=postgres_url)})
        agent = RagsExpert(settings, retriever=KeywordRetriever(docs=castle_docs, calls=[]))
        asyncio.run(agent.async_init())  # tables created on a loop closed before any question
        graph = agent.get_compiled_graph()
        barrier = threading.Barrier(threads)

        async def conversation(worker: int) -> list[int]:
            lengths = []
            for _ in range(turns):
                state = await graph.ainvoke(
                    {"messages": [("user", QUESTION)]}, {"configurable": {"thread_id": f"w{worker}"}}
                )
                assert state["messages"][-1].content == ANSWER
                lengths.append(len(state["messages"]))
            return lengths

        def worker(n: int) -> list[int]:
            barrier.wait()  # all loops live at once
            return asyncio.run(conversation(n))

        with ThreadPoolExecutor(threads) as pool:
            lengths = list(pool.map(worker, range(threads)))

        async def read_back() -> list[int]:  # another replica's view: a fresh saver
            other = RagsExpert(settings, retriever=KeywordRetriever(docs=castle_docs, calls=[]))
            await other.async_init()
            try:
                g = other.get_compiled_graph()
                states = [await g.aget_state({"configurable": {"thread_id": f"w{n}"}}) for n in range(threads)]
                return [len(s.values["messages"]) for s in states]
            finally:
                await other.aclose()

        stored = asyncio.run(read_back())
    assert lengths == [[2, 4, 6]] * threads  # each thread grew by one question and answer per turn
    assert stored == [2 * turns] * threads


def test_replicas_starting_together_set_up_the_tables_once(postgres_url):
    """The migrations run under an advisory lock: four replicas opening at once neither deadlock nor fail."""
    savers = [PostgresCheckpointer(CheckpointerSettings(url=postgres_url)) for _ in range(4)]
    barrier = threading.Barrier(len(savers))

    def start(saver: PostgresCheckpointer) -> None:
        barrier.wait()
        asyncio.run(saver.open())

    with ThreadPoolExecutor(len(savers)) as pool:
        list(pool.map(start, savers))

    async def migrations() -> list[int]:
        import psycopg

        async with await psycopg.AsyncConnection.connect(postgres_url) as conn:
            cur = await conn.execute("SELECT v FROM checkpoint_migrations ORDER BY v")
            return [row[0] for row in await cur.fetchall()]

    versions = asyncio.run(migrations())
    assert versions == list(range(len(PostgresCheckpointer.MIGRATIONS)))  # each migration once


async def test_operations_run_concurrently_over_the_pool(postgres_url):
    """LangGraph's saver runs one operation at a time; ours keeps up to pool_size in flight, each on its own
    connection."""
    saver = PostgresCheckpointer(CheckpointerSettings(url=postgres_url, pool_size=4))
    await saver.open()
    try:
        configs = [{"configurable": {"thread_id": f"c{i}", "checkpoint_ns": ""}} for i in range(40)]
        await asyncio.gather(*(saver.aget_tuple(c) for c in configs))
        connections = saver._connections()
        assert 1 < connections.opened <= 4 and len(connections.idle) == connections.opened
    finally:
        await saver.aclose()


def test_a_wrong_checkpointer_url_fails_at_start_in_one_redacted_line(capsys):
    url = f"postgresql://rags:s3cret-pw-77@127.0.0.1:{free_port()}/nowhere"  # nothing listens there
    assert "s3cret-pw-77" in RagsExpertSettings(checkpointer={"url": url}).secrets()
    rc = main(["ask", "When?", "--checkpointer-url", url, "--base-url", "http://127.0.0.1:9/v1", "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert "OperationalError" in err and "s3cret-pw-77" not in err
