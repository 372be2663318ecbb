"""Issue 23 (10, first bullet): one big request does not stall the MCP HTTP server for another client.

Through the real server (``rags-expert mcp --http`` in a subprocess) and the official MCP client: client A asks a
7,000-character question whose model calls are held on a gate and then answered with 5 MB of unpunctuated
words; while A's request is in flight (the scripted model has received it and waits on the gate), client B's
``search`` is answered. Event-driven: no timing assertion; A can only finish after the gate opens.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from helpers.openai_server import OpenAIServer, text

pytest.importorskip("mcp.client.streamable_http", reason="the 'mcp' extra is not installed (pip install -e '.[mcp]')")

from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from hosts.test_mcp_server import HttpServer, kb, script, server_env, text_of  # noqa: E402, F401 - kb is a fixture

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MARK = "HUGE-REQUEST"
BIG_QUESTION = f"{MARK} When was Castle Varen built? " + "and in which year exactly " * 260  # ~7,000 chars
GARBAGE = ("x" * 999 + " ") * 5_000  # 5 MB


async def test_search_is_answered_while_a_big_ask_is_in_flight(kb, tmp_path):  # noqa: F811 - the fixture
    entered, gate = threading.Event(), threading.Event()

    def gated(body: dict[str, Any]) -> Any:
        if MARK in str(body):
            entered.set()
            gate.wait(120)
            return text(GARBAGE)
        return script(body)

    with OpenAIServer(gated) as llm:
        server = HttpServer(server_env(kb, llm), tmp_path / "stderr.log")
        try:
            async with (
                streamable_http_client(server.url) as (read_a, write_a),
                ClientSession(read_a, write_a) as big,
                streamable_http_client(server.url) as (read_b, write_b),
                ClientSession(read_b, write_b) as small,
            ):
                await big.initialize()
                await small.initialize()
                asking = asyncio.create_task(big.call_tool("ask", {"question": BIG_QUESTION}))
                assert await asyncio.to_thread(entered.wait, 120), "the big request never reached the model"
                found = await small.call_tool("search", {"query": "Castle Varen", "top_k": 1})
                assert not asking.done()  # the big request is still held on the gate
                gate.set()
                answered = await asking
        finally:
            gate.set()
            code = server.stop()
    assert not found.is_error and found.structured_content["hits"][0]["source"].endswith("castle.md")
    assert answered.structured_content["outcome"] in {"success", "failure"}  # ended, with a bounded answer
    assert len(text_of(answered)) < 200_000
    assert code == 0, server.log.read_text()


async def test_a_megabyte_question_and_query_are_answered_in_one_line(kb, tmp_path):  # noqa: F811 - the fixture
    """The probe's 1 MB question (no reply in 120 s, before): ``ask`` answers at once with the honest failure naming
    the limit, without a model call; a 1 MB ``search`` query is a one-line tool error naming the same limit, and
    the server answers the next search. (``wait_for`` only guards against the old hang; nothing measures speed.)"""
    megabyte = "When was Castle Varen built? " + "and in which year exactly " * 40_000  # ~1 MB
    with OpenAIServer(script) as llm:
        server = HttpServer(server_env(kb, llm), tmp_path / "stderr.log")
        try:
            async with streamable_http_client(server.url) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                asked = await asyncio.wait_for(session.call_tool("ask", {"question": megabyte}), 120)
                refused = await asyncio.wait_for(
                    session.call_tool("search", {"query": "Castle Varen " + megabyte, "top_k": 1}), 120
                )
                found = await session.call_tool("search", {"query": "Castle Varen", "top_k": 1})
        finally:
            server.stop()
        calls = len(llm.requests)
    assert calls == 0  # refused before any model call
    result = asked.structured_content or {}
    assert result.get("outcome") == "failure" and result.get("reason") == "question_too_long", asked
    assert "8,000" in text_of(asked)
    assert refused.is_error and len(text_of(refused).splitlines()) == 1
    assert "more than the limit of 8,000" in text_of(refused) and "max_question_chars" in text_of(refused)
    assert not found.is_error and found.structured_content["hits"][0]["source"].endswith("castle.md")
