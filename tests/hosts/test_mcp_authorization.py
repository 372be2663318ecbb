"""Answer-time authorization behind ``rags-expert mcp`` (stdio, the MCP SDK's client): the HTTP hook on
127.0.0.1 is asked about every chunk ``search`` and ``ask`` would show, with no user (MCP requests carry none);
a denied chunk is neither a hit nor a source, and a failing hook fails closed."""

from __future__ import annotations

import sys

import pytest
from helpers.cli_run import ROOT
from helpers.mcp_run import text_of
from helpers.permissions import PermissionTable, permission_server

from hosts.test_mcp_server import kb, llm, server_env  # noqa: F401 - fixtures

pytest.importorskip("mcp.client.stdio", reason="the 'mcp' extra is not installed (pip install -e '.[mcp]')")

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]
TOKEN = "acl-token-5e6f7a8b"


async def test_search_and_ask_show_only_what_the_hook_allows_and_fail_closed(kb, llm, tmp_path):  # noqa: F811
    table = PermissionTable()  # nobody may read anything yet
    with permission_server(table, token=TOKEN) as acl:
        env = server_env(
            kb,
            llm,
            RAGS_EXPERT_AUTHORIZATION__URL=f"http://127.0.0.1:{acl.server_port}/authorize",
            RAGS_EXPERT_AUTHORIZATION__TOKEN=TOKEN,
        )
        params = StdioServerParameters(command=sys.executable, args=["-m", "rags_expert.cli", "mcp"], env=env, cwd=ROOT)
        errlog = tmp_path / "stderr.log"
        with errlog.open("w") as err:
            async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                denied = await session.call_tool("search", {"query": "Castle Varen", "top_k": 2})
                asked = {uid for check in table.checks[""] for uid in check.asked}
                refused = await session.call_tool("ask", {"question": "When was Castle Varen built?"})
                for uid in asked:  # grant every chunk but the castle's
                    table.grant(None, uid)
                castle_uids = {
                    s["uid"]
                    for s in (
                        await session.call_tool("ask", {"question": "When was Castle Varen built?"})
                    ).structured_content["sources"]
                }
                for uid in castle_uids:
                    table.revoke(None, uid)
                partial = await session.call_tool("search", {"query": "Castle Varen", "top_k": 2})
                acl.status = 503
                failing = await session.call_tool("search", {"query": "Castle Varen", "top_k": 2})
                failing_ask = await session.call_tool("ask", {"question": "When was Castle Varen built?"})
    assert denied.structured_content["hits"] == [] and len(asked) == 2
    assert {c.user for c in table.checks[""]} == {None}  # MCP requests carry no user
    assert refused.structured_content["sources"] == [] and refused.structured_content["outcome"] == "failure"
    assert "1412" not in text_of(refused)
    assert len(castle_uids) == 1 and castle_uids < asked  # the castle chunk, once granted, answered
    hits = [h["content"] for h in partial.structured_content["hits"]]
    assert len(hits) == 1 and "Castle Varen" not in hits[0]  # revoked again: only the cheese chunk is a hit
    assert failing.is_error and "AuthorizationError: the HTTP authorization hook failed (HTTP 503)" in text_of(failing)
    assert failing_ask.structured_content["reason"] == "authorization_error"
    assert "1412" not in text_of(failing_ask)
    stderr = errlog.read_text()
    assert TOKEN not in stderr and "Traceback" not in stderr
    assert all(r["authorization"] == f"Bearer {TOKEN}" for r in acl.requests)
