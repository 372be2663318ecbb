"""What keeping threads in PostgreSQL costs (issue 14): per question, at 50 questions at once, on disk.

A throwaway PostgreSQL 15 server (tests/helpers/pg_server.py: 127.0.0.1, fsync off as in the tests) and a scripted
OpenAI-compatible server with no delay (tests/helpers/openai_server.py, castle_script: the happy path, about 7 requests
per question) in this process; one RagsExpert with LangChain's real ChatOpenAI and an in-memory keyword retriever
of 4 chunks, so the checkpointer is the only thing that differs between the variants:

* ``memory``: LangGraph's InMemorySaver (the default);
* ``postgres``: :class:`~rags_expert.checkpoints.postgres.PostgresCheckpointer` (``checkpointer.pool_size`` 4);
* ``postgres pool 1``: the same with ``pool_size`` 1 (one operation at a time, as LangGraph's saver);
* ``langgraph saver``: LangGraph's own AsyncPostgresSaver over a psycopg_pool AsyncConnectionPool of 4 (one loop);
* ``postgres durability=exit``: ``postgres``, the graph run with ``durability="exit"`` (a checkpoint when the run
  ends, not after every step: a host's choice, losing the resumption of a run that fails half-way).

Each round runs every variant (order flipped every round, so load from other work on shared cores hits all
alike) on a fresh database: ``--sequential`` questions one after another, then ``--concurrent`` questions at once,
each on a thread of its own. Reported: median wall time per sequential question, median wall time of the
concurrent batch, checkpoint reads and writes per question, and the database's bytes per question.

    python bench/checkpointer.py [--rounds 3] [--sequential 30] [--concurrent 50]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import uuid
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from helpers.documents import KeywordRetriever, make_docs  # noqa: E402
from helpers.openai_server import OpenAIServer, castle_script  # noqa: E402
from helpers.pg_server import PostgresServer  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver  # noqa: E402
from psycopg_pool import AsyncConnectionPool  # noqa: E402

from rags_expert import RagsExpert  # noqa: E402
from rags_expert.checkpoints.postgres import CONNECTION_KWARGS, PostgresCheckpointer  # noqa: E402
from rags_expert.settings import CheckpointerSettings, RagsExpertSettings  # noqa: E402

VARIANTS = ("memory", "postgres", "postgres pool 1", "langgraph saver", "postgres durability=exit")
DOCS = make_docs(
    {
        "castle": "Castle Varen was built in 1412 by Duke Albrecht on the river Mura.",
        "bridge": "The Mura bridge was completed in 1890 and rebuilt in 1951.",
        "cheese": "Mura valley cheese is aged for nine months in limestone cellars.",
        "duke": "Duke Albrecht ruled from 1398 to 1431 and founded the town of Varen.",
    }
)
QUESTION = "When was Castle Varen built?"


@asynccontextmanager
async def saver_for(variant: str, url: str):
    """The checkpointer of a variant, opened (tables created) and closed after."""
    if variant == "memory":
        yield InMemorySaver()
    elif variant == "langgraph saver":
        async with AsyncConnectionPool(url, max_size=4, kwargs=CONNECTION_KWARGS, open=False) as pool:
            saver = AsyncPostgresSaver(pool)
            await saver.setup()
            yield saver
    else:
        size = 1 if variant == "postgres pool 1" else 4
        saver = PostgresCheckpointer(CheckpointerSettings(url=url, pool_size=size))
        await saver.open()
        try:
            yield saver
        finally:
            await saver.aclose()


def count_operations(saver: Any, counts: dict[str, int]) -> None:
    """Count the saver's reads (``aget_tuple``) and writes (``aput``, ``aput_writes``)."""
    for name in ("aget_tuple", "aput", "aput_writes"):
        original = getattr(saver, name)

        async def counted(*args: Any, _original: Any = original, _name: str = name, **kwargs: Any) -> Any:
            counts[_name] = counts.get(_name, 0) + 1
            return await _original(*args, **kwargs)

        setattr(saver, name, counted)


async def run_variant(variant: str, url: str, settings: RagsExpertSettings, args: argparse.Namespace) -> dict:
    """Sequential then concurrent questions through one agent with the variant's checkpointer."""
    agent = await RagsExpert(settings, retriever=KeywordRetriever(docs=DOCS, calls=[])).async_init()
    counts: dict[str, int] = {}
    async with saver_for(variant, url) as saver:
        count_operations(saver, counts)
        graph = agent.get_compiled_graph(saver)

        durability = "exit" if variant.endswith("durability=exit") else "async"  # "async": LangGraph's default

        async def ask(thread: str) -> None:
            config: Any = {"configurable": {"thread_id": thread}}
            state = await graph.ainvoke({"messages": [("user", QUESTION)]}, config, durability=durability)
            assert state["messages"][-1].response_metadata["outcome"] == "success"

        await ask("warm-up")
        counts.clear()
        began = time.perf_counter()
        for i in range(args.sequential):
            await ask(f"s{i}")
        sequential = (time.perf_counter() - began) / args.sequential
        began = time.perf_counter()
        await asyncio.gather(*(ask(f"c{i}") for i in range(args.concurrent)))
        concurrent = time.perf_counter() - began
    questions = args.sequential + args.concurrent
    return {
        "sequential": sequential,
        "concurrent": concurrent,
        "reads": counts.get("aget_tuple", 0) / questions,
        "writes": (counts.get("aput", 0) + counts.get("aput_writes", 0)) / questions,
        "questions": questions + 1,
    }


def database_bytes(pg: PostgresServer, database: str) -> int:
    """The size of the checkpoint tables of ``database``."""
    import psycopg

    with psycopg.connect(pg.url(database)) as conn:
        row = conn.execute(
            "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname LIKE 'checkpoint%'"
        ).fetchone()
    return int(row[0] or 0) if row else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sequential", type=int, default=30)
    parser.add_argument("--concurrent", type=int, default=50)
    args = parser.parse_args()
    results: dict[str, list[dict]] = {v: [] for v in VARIANTS}
    with PostgresServer() as pg, OpenAIServer(castle_script) as server:
        print(f"PostgreSQL started in {pg.started_in:.2f} s (initdb + start)")
        settings = RagsExpertSettings(
            llm={"base_url": server.base_url, "api_key": "sk-bench", "max_retries": 0},
            lessons={"enabled": False},
            speculative_draft=False,
        )
        for r in range(args.rounds):
            order = VARIANTS if r % 2 == 0 else tuple(reversed(VARIANTS))
            for variant in order:
                database = "b_" + uuid.uuid4().hex[:10]
                url = pg.create_database(database)
                if variant == "postgres" and r == 0:
                    fresh = PostgresCheckpointer(CheckpointerSettings(url=url))
                    began = time.perf_counter()
                    asyncio.run(fresh.open())
                    created = time.perf_counter() - began
                    began = time.perf_counter()
                    asyncio.run(PostgresCheckpointer(CheckpointerSettings(url=url)).open())
                    print(f"open(): {created * 1000:.0f} ms creating the tables, "
                          f"{(time.perf_counter() - began) * 1000:.0f} ms when they exist")  # fmt: skip
                out = asyncio.run(run_variant(variant, url, settings, args))
                out["bytes"] = database_bytes(pg, database) / out["questions"] if variant != "memory" else 0
                results[variant].append(out)
    print(f"\n{args.rounds} rounds; medians | {args.sequential} sequential, {args.concurrent} concurrent questions\n")
    print("| checkpointer | ms / sequential question | s for the concurrent batch | reads / question | writes / question "
          "| bytes / question |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for variant, runs in results.items():

        def med(key: str, runs: list[dict] = runs) -> float:
            return statistics.median(run[key] for run in runs)

        print(f"| {variant} | {med('sequential') * 1000:.1f} | {med('concurrent'):.2f} | {med('reads'):.1f} | "
              f"{med('writes'):.1f} | {med('bytes'):.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()
