"""One replica of the RAG agent, as a deployment runs several behind a load balancer (tests/checkpoints/test_postgres_replicas.py).

Settings come from the environment (``RAGS_EXPERT_*``): the shared PostgreSQL checkpointer, the model server,
this replica's own data directory. The replica reads requests as JSON lines on stdin, ``{"id", "thread",
"question"}``, runs each at once on the agent's graph (concurrently, in one event loop), and writes one JSON line
per answer on stdout: ``{"id", "thread", "pid", "outcome", "answer", "messages": [[role, text], ...]}``, the
messages being the thread's whole history after the run, as this replica read it from the checkpointer. Its
first line is ``{"ready": pid}``; at the end of stdin it finishes the runs in flight and exits.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from langchain_core.runnables import RunnableConfig

from rags_expert import RagsExpert


async def answer(graph: Any, request: dict[str, Any]) -> dict[str, Any]:
    """Run one question on its thread; the reply line's fields."""
    config: RunnableConfig = {"configurable": {"thread_id": request["thread"]}}
    state = await graph.ainvoke({"messages": [("user", request["question"])]}, config)
    final = state["messages"][-1]
    return {
        "id": request["id"],
        "thread": request["thread"],
        "pid": os.getpid(),
        "outcome": final.response_metadata.get("outcome"),
        "answer": final.content,
        "messages": [[m.type, m.content] for m in state["messages"]],
    }


async def serve() -> None:
    """Answer every request of stdin concurrently; one JSON line per answer on stdout."""
    agent = await RagsExpert().async_init()
    graph = agent.get_compiled_graph()
    print(json.dumps({"ready": os.getpid()}), flush=True)
    loop = asyncio.get_running_loop()
    running: set[asyncio.Task[None]] = set()

    async def one(request: dict[str, Any]) -> None:
        try:
            reply = await answer(graph, request)
        except Exception as exc:  # noqa: BLE001 - reported to the test, which fails on it
            reply = {"id": request["id"], "thread": request["thread"], "error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(reply), flush=True)

    while line := await loop.run_in_executor(None, sys.stdin.readline):
        task = asyncio.create_task(one(json.loads(line)))
        running.add(task)
        task.add_done_callback(running.discard)
    await asyncio.gather(*running)
    await agent.aclose()


if __name__ == "__main__":
    asyncio.run(serve())
