"""`rags-expert mcp` with its threads in PostgreSQL when the database goes down (issue 23): ``ask`` answers a
tool error carrying the agent's honest failure and ``reason`` ``checkpointer_error``; once the database is back the
same thread goes on. The official MCP client over stdio, a real PostgreSQL the test stops and starts again
(tests/helpers/pg_server.py), the scripted model of tests/hosts/test_mcp_server.py over real HTTP."""

from __future__ import annotations

import sys
import uuid

import pytest
from helpers.cli_run import ROOT

pytest.importorskip("mcp.client.stdio", reason="the 'mcp' extra is not installed (pip install -e '.[mcp]')")
pytest.importorskip("langgraph.checkpoint.postgres", reason="the 'postgres' extra is not installed")

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

import hosts.test_mcp_server as mcp_case  # noqa: E402
from hosts.test_mcp_server import server_env, text_of  # noqa: E402

kb, llm = mcp_case.kb, mcp_case.llm  # its fixtures: the castle knowledge base and the scripted model

pytestmark = [pytest.mark.integration, pytest.mark.slow]

QUESTION = "When was Castle Varen built?"


async def test_ask_with_the_database_down_is_a_tool_error_naming_the_checkpointer(kb, llm, own_postgres, tmp_path):
    url = own_postgres.create_database("mcp_" + uuid.uuid4().hex[:8])
    env = server_env(kb, llm, RAGS_EXPERT_CHECKPOINTER__URL=url)
    params = StdioServerParameters(command=sys.executable, args=["-m", "rags_expert.cli", "mcp"], env=env, cwd=ROOT)
    errlog = tmp_path / "stderr.log"
    with errlog.open("w") as err:
        async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            first = await session.call_tool("ask", {"question": QUESTION})
            thread = first.structured_content["thread_id"]
            own_postgres.halt()
            try:
                down = await session.call_tool("ask", {"question": QUESTION, "thread_id": thread})
            finally:
                own_postgres.resume()
            back = await session.call_tool("ask", {"question": QUESTION, "thread_id": thread})
    stderr = errlog.read_text()
    assert not first.is_error and first.structured_content["outcome"] == "success"
    assert down.is_error and down.structured_content["reason"] == "checkpointer_error"
    assert down.structured_content["outcome"] == "failure" and down.structured_content["thread_id"] == thread
    assert text_of(down) == (
        f'I could not answer "{QUESTION}" because the conversation store (the PostgreSQL checkpointer) failed '
        "(OperationalError). Please try again later."
    )
    assert not back.is_error and back.structured_content["outcome"] == "success"
    assert own_postgres.password not in text_of(down) + str(down.structured_content) + stderr
    assert "Traceback" not in stderr
