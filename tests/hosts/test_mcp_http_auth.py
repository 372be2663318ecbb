"""Who may call `rags-expert mcp --http`: a real server subprocess, the MCP SDK's client and raw HTTP requests.

Off loopback the server refuses to start without authentication (exit 2, one line); with `mcp.auth_token` every
request needs `Authorization: Bearer <token>` (401 otherwise), on loopback too; `--behind-auth-proxy` lets it
listen off loopback without a token; the Host check (DNS rebinding protection) stays on loopback with a token.
The token never shows in the server's output or in a refusal. A POSTed request without a usable id gets a
JSON-RPC error (400) instead of the SDK's bare `202 Accepted`.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import httpx2
import pytest
from helpers.cli_run import cli_env, ingest_docs, run_cli
from helpers.mcp_run import HttpServer

pytest.importorskip("mcp.client.streamable_http", reason="the 'mcp' extra is not installed (pip install -e '.[mcp]')")

from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from rags_expert.hosts.mcp.http import transport_security  # noqa: E402
from rags_expert.settings import McpSettings  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TOKEN = "mcp-token-3c0ffee5e1f"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@pytest.fixture(scope="module")
def kb(tmp_path_factory) -> Path:
    return ingest_docs(
        tmp_path_factory.mktemp("mcp_auth"), {"castle.md": "# Castle Varen\n\nCastle Varen was built in 1412.\n"}
    )


def local_url(url: str) -> str:
    """The server's URL on 127.0.0.1 (a wildcard address is served there too)."""
    host = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)[0]
    return url.replace(host, "127.0.0.1", 1)


async def search_with(url: str, headers: dict[str, str] | None = None) -> list[str]:
    """The sources ``search`` finds for "Castle Varen", through the SDK's client sending ``headers`` (the SDK's
    transport takes them on the httpx2 client it is given)."""
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool("search", {"query": "Castle Varen", "top_k": 1})
    assert not result.is_error
    return [hit["source"] for hit in result.structured_content["hits"]]


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.20.30.40", "mcp.example.org"])
def test_off_loopback_without_authentication_refuses_to_start(host, kb):
    done = run_cli(["mcp", "--http", "--host", host], cli_env(kb))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"error: refusing to serve --http on {host} without authentication: set RAGS_EXPERT_MCP__AUTH_TOKEN "
        "(clients then send 'Authorization: Bearer <token>'), or pass --behind-auth-proxy "
        "(RAGS_EXPERT_MCP__TRUST_PROXY_AUTH=true) when a proxy in front authenticates every request\n"
    )


def test_an_empty_token_is_an_invalid_setting(kb):
    done = run_cli(["mcp", "--http", "--host", "0.0.0.0"], cli_env(kb, RAGS_EXPERT_MCP__AUTH_TOKEN=" "))
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert done.stderr == (
        "error: RAGS_EXPERT_MCP__AUTH_TOKEN=*** is invalid: the token must not be empty (unset the setting for no "
        "token) (mcp.auth_token)\n"
    )


async def test_off_loopback_with_a_token_serves_only_requests_carrying_it(kb, tmp_path):
    server = HttpServer(cli_env(kb, RAGS_EXPERT_MCP__AUTH_TOKEN=TOKEN), tmp_path / "stderr.log", "--host", "0.0.0.0")
    try:
        url = local_url(server.url)
        refused = {}
        async with httpx.AsyncClient(timeout=30) as http:
            for name, auth in [("none", None), ("wrong", "Bearer not-the-token"), ("basic", f"Basic {TOKEN}")]:
                headers = HEADERS if auth is None else {**HEADERS, "authorization": auth}
                refused[name] = await http.post(url, json=INIT, headers=headers)
            lower = await http.post(url, json=INIT, headers={**HEADERS, "authorization": f"bearer {TOKEN}"})
        sources = await search_with(url, {"Authorization": f"Bearer {TOKEN}"})
    finally:
        code = server.stop()
    stderr = server.log.read_text()
    assert server.url.startswith("http://0.0.0.0:") and "(bearer token required)" in stderr
    for response in refused.values():
        assert response.status_code == 401 and response.headers["www-authenticate"].startswith("Bearer")
        assert TOKEN not in response.text
    assert lower.status_code == 200  # the scheme's case does not matter
    assert len(sources) == 1 and sources[0].endswith("castle.md")
    assert code == 0 and TOKEN not in stderr and "Traceback" not in stderr


async def test_on_loopback_a_token_is_enforced_and_the_host_check_stays(kb, tmp_path):
    server = HttpServer(cli_env(kb, RAGS_EXPERT_MCP__AUTH_TOKEN=TOKEN), tmp_path / "stderr.log", verbosity=2)
    try:
        authorised = {**HEADERS, "authorization": f"Bearer {TOKEN}"}
        async with httpx.AsyncClient(timeout=30) as http:
            without = await http.post(server.url, json=INIT, headers=HEADERS)
            rebound = await http.post(server.url, json=INIT, headers={**authorised, "host": "evil.example"})
            foreign = await http.post(server.url, json=INIT, headers={**authorised, "origin": "http://evil.example"})
        sources = await search_with(server.url, {"Authorization": f"Bearer {TOKEN}"})
    finally:
        code = server.stop()
    assert without.status_code == 401
    assert rebound.status_code == 421 and foreign.status_code == 403  # the SDK's DNS rebinding protection
    debug = server.log.read_text()  # -vv: every library's DEBUG records, the request headers' too
    assert len(sources) == 1 and code == 0
    assert "DEBUG" in debug and TOKEN not in debug


async def test_behind_an_auth_proxy_it_serves_off_loopback_without_a_token(kb, tmp_path):
    server = HttpServer(cli_env(kb), tmp_path / "stderr.log", "--host", "0.0.0.0", "--behind-auth-proxy")
    try:
        sources = await search_with(local_url(server.url))
    finally:
        code = server.stop()
    assert len(sources) == 1 and sources[0].endswith("castle.md") and code == 0


BAD_IDS = [{"n": 1}, 1.5, [2], None, True]


async def test_requests_without_a_usable_id_get_a_json_rpc_error(kb, tmp_path):
    server = HttpServer(cli_env(kb), tmp_path / "stderr.log")
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            init = await http.post(server.url, json=INIT, headers=HEADERS)
            session = {
                **HEADERS,
                "mcp-session-id": init.headers["mcp-session-id"],
                "mcp-protocol-version": "2025-06-18",
            }
            notified = await http.post(
                server.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session
            )
            bad = [
                await http.post(
                    server.url, json={"jsonrpc": "2.0", "id": given, "method": "tools/list"}, headers=session
                )
                for given in BAD_IDS
            ]
            missing = await http.post(server.url, json={"jsonrpc": "2.0", "method": "tools/list"}, headers=session)
            listed = await http.post(
                server.url, json={"jsonrpc": "2.0", "id": "after", "method": "tools/list"}, headers=session
            )
    finally:
        code = server.stop()
    assert init.status_code == 200 and notified.status_code == 202  # a real notification is still accepted
    for response in [*bad, missing]:
        assert response.status_code == 400
        reply = response.json()
        assert reply["jsonrpc"] == "2.0" and reply["id"] is None and reply["error"]["code"] == -32600
        assert "'tools/list' is a request" in reply["error"]["message"]
    assert listed.status_code == 200 and '"id":"after"' in listed.text and '"search"' in listed.text
    assert code == 0


@pytest.mark.parametrize(
    ("settings", "hosts"),
    [
        ({}, ["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1"]),
        ({"host": "localhost"}, ["127.0.0.1:*", "localhost:*", "[::1]:*", "localhost"]),
        ({"host": "127.0.0.2"}, ["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.2", "127.0.0.2:*"]),
        ({"host": "10.20.30.40"}, ["10.20.30.40", "10.20.30.40:*"]),
        ({"host": "fd00::5"}, ["[fd00::5]", "[fd00::5]:*"]),
        ({"host": "0.0.0.0", "allowed_hosts": ["mcp.example.org"]}, ["mcp.example.org"]),
        ({"host": "0.0.0.0"}, None),  # any name may reach a wildcard address: the token guards it
    ],
)
def test_the_host_check_follows_the_address_served(settings, hosts):
    security = transport_security(McpSettings(**settings))
    if hosts is None:
        assert not security.enable_dns_rebinding_protection
    else:
        assert security.enable_dns_rebinding_protection and security.allowed_hosts == hosts
        assert f"http://{hosts[0]}" in security.allowed_origins
