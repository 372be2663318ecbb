"""A turn killed or cancelled mid-run leaves its question in the thread without an answer (issue 23): a later
follow-up is condensed with that question shown as never answered, not as an answered one.

Real parts: a PostgreSQL checkpointer (tests/helpers/pg_server.py), a scripted OpenAI-compatible model over real HTTP
that holds the interrupted turn's answer request until the test has cancelled the run (or killed the process).
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import threading
from typing import Any

import pytest
from helpers.cli_run import ROOT, cli_env, ingest_docs, run_cli
from helpers.documents import KeywordRetriever
from helpers.openai_server import OpenAIServer, request_kind, slow, tag_content
from rag.test_integration_openai import ANSWER, castle_script, make_settings

from rags_expert import RagsExpert
from rags_expert.conversation import UNANSWERED
from rags_expert.settings import CheckpointerSettings

pytest.importorskip("langgraph.checkpoint.postgres", reason="the 'postgres' extra is not installed")

pytestmark = pytest.mark.integration

BUILDER = "Who built the castle?"
INTERRUPTED = "Who ruled Varen when the castle was built?"
FOLLOW_UP = "And when did he die?"


class HeldAnswers:
    """``castle_script``, except that the answer to :data:`INTERRUPTED` is held (until the server stops) and
    ``reached`` is set when that request arrives."""

    def __init__(self) -> None:
        self.reached = threading.Event()

    def __call__(self, body: dict[str, Any]) -> Any:
        kind = request_kind(body)
        if kind == "relevance":
            return {"relevant": "Albrecht" in tag_content(body, "chunk")}
        if kind == "condense":  # the latest message, unchanged: the conversation is what the test checks
            return {"question": body["messages"][-1]["content"].rsplit("Latest message:", 1)[-1].split("\n")[0]}
        if kind == "answer" and INTERRUPTED in body["messages"][-1]["content"]:
            self.reached.set()
            return slow("Duke Albrecht [1].", 600)
        return castle_script(body)


async def test_a_cancelled_turn_is_condensed_as_unanswered(postgres_url, castle_docs):
    script = HeldAnswers()
    with OpenAIServer(script) as server:
        settings = make_settings(server).model_copy(update={"checkpointer": CheckpointerSettings(url=postgres_url)})
        agent = await RagsExpert(settings, retriever=KeywordRetriever(docs=castle_docs, calls=[])).async_init()
        graph = agent.get_compiled_graph()
        config: Any = {"configurable": {"thread_id": "t1"}}
        try:
            await graph.ainvoke({"messages": [("user", BUILDER)]}, config)
            run = asyncio.create_task(graph.ainvoke({"messages": [("user", INTERRUPTED)]}, config))
            assert await asyncio.to_thread(script.reached.wait, 60), "the interrupted turn never asked for its answer"
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run
            before = len(server.requests)
            state = await graph.ainvoke({"messages": [("user", FOLLOW_UP)]}, config)
            condensed = [r for r in server.requests[before:] if r.kind == "condense"]
        finally:
            await agent.aclose()
    assert [(m.type, m.content if m.type == "human" else "") for m in state["messages"]] == [
        ("human", BUILDER),
        ("ai", ""),
        ("human", INTERRUPTED),  # kept, with no answer after it
        ("human", FOLLOW_UP),
        ("ai", ""),
    ]
    assert len(condensed) == 1
    assert tag_content(condensed[0].body, "conversation").splitlines() == [
        f"User: {BUILDER}",
        f"Assistant: {ANSWER}",
        f"User: {INTERRUPTED} {UNANSWERED}",
    ]


@pytest.mark.slow
def test_a_killed_ask_is_condensed_as_unanswered_by_the_next_ask(postgres_url, tmp_path):
    """``ask --thread`` killed while the model writes its answer; the next ``ask`` on the thread condenses with
    that question shown as never answered (real processes, the threads in PostgreSQL)."""
    doc = "# Castle Varen\n\nCastle Varen was built in 1412 by Duke Albrecht, who ruled Varen until 1431.\n"
    kb = ingest_docs(tmp_path, {"castle.md": doc})
    script = HeldAnswers()
    with OpenAIServer(script) as server:
        env = cli_env(kb, RAGS_EXPERT_LLM__BASE_URL=server.base_url, OPENAI_API_KEY="sk-test-killed",
                      RAGS_EXPERT_CHECKPOINTER__URL=postgres_url)  # fmt: skip
        first = run_cli(["ask", BUILDER, "--thread", "k1", "-q"], env)
        killed = subprocess.Popen(
            [sys.executable, "-m", "rags_expert.cli", "ask", INTERRUPTED, "--thread", "k1", "-q"],
            env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            reached = script.reached.wait(120)
        finally:
            killed.kill()
            killed.communicate(timeout=60)
        assert reached, "the killed turn never asked for its answer"
        before = len(server.requests)
        follow_up = run_cli(["ask", FOLLOW_UP, "--thread", "k1", "-q"], env)
        condensed = [r for r in server.requests[before:] if r.kind == "condense"]
    assert first.returncode in (0, 1) and first.stdout.strip(), first.stderr[-2000:]
    assert killed.returncode == -signal.SIGKILL
    assert "Traceback" not in follow_up.stderr, follow_up.stderr[-2000:]
    assert len(condensed) == 1
    lines = tag_content(condensed[0].body, "conversation").splitlines()
    assert lines[0] == f"User: {BUILDER}" and lines[1].startswith("Assistant: ")
    assert lines[2:] == [f"User: {INTERRUPTED} {UNANSWERED}"]
