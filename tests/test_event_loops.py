"""One agent driven from many event loops (a host that calls ``asyncio.run`` per request in worker threads),
with the real ChatOpenAI over HTTP to a local scripted server."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from helpers.documents import KeywordRetriever
from helpers.openai_server import OpenAIServer
from rag.test_integration_openai import ANSWER, QUESTION, castle_script, make_settings

from rags_expert import RagsExpert
from rags_expert.llm.chat import build_chat_model

pytestmark = pytest.mark.integration

THREADS, QUESTIONS_PER_THREAD = 10, 5


@pytest.mark.slow
def test_one_agent_answers_from_many_event_loops(castle_docs):
    with OpenAIServer(castle_script) as server:
        settings = make_settings(server)
        agent = RagsExpert(settings, retriever=KeywordRetriever(docs=castle_docs, calls=[]))
        asyncio.run(agent.async_init())  # built on a loop that is closed before any question
        graph = agent.get_compiled_graph()
        barrier = threading.Barrier(THREADS)

        async def questions(worker: int) -> list[str]:
            out = []
            for i in range(QUESTIONS_PER_THREAD):
                state = await graph.ainvoke(
                    {"messages": [("user", QUESTION)]}, {"configurable": {"thread_id": f"w{worker}-{i}"}}
                )
                final = state["messages"][-1]
                out.append(f"{final.response_metadata['outcome']}: {final.content}")
            return out

        def worker(n: int) -> list[str]:
            barrier.wait()  # all loops live at once
            return asyncio.run(questions(n))

        with ThreadPoolExecutor(THREADS) as pool:
            results = [r for batch in pool.map(worker, range(THREADS)) for r in batch]

    failed = [r for r in results if r != f"success: {ANSWER}"]
    assert not failed, f"{len(failed)} of {len(results)} runs failed, e.g. {failed[:2]}"
    assert len(results) == THREADS * QUESTIONS_PER_THREAD
    assert len(server.of_kind("answer")) == THREADS * QUESTIONS_PER_THREAD


def test_the_built_model_also_works_after_its_loop_closed():
    with OpenAIServer(lambda body: "pong") as server:
        model = build_chat_model(make_settings(server).llm)
        for _ in range(3):  # a fresh loop each time, the previous one closed
            assert asyncio.run(model.ainvoke("ping")).content == "pong"
        assert len(model.http_async_client._per_loop) == 1  # the pools of closed loops were dropped
        assert model.invoke("ping").content == "pong"  # the sync path is unaffected
