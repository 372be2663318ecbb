"""`rags-expert mcp` driven by the MCP SDK's own client, over stdio and over streamable HTTP.

The server is a real subprocess on a knowledge base filled by `rags-expert ingest`; its chat model is
the scripted OpenAI-compatible server of the integration tests (real HTTP on 127.0.0.1). Each transport
lists the tools, asks (answer with sources), follows up on the returned thread id, searches, asks an
unanswerable question (a tool error carrying the honest message) and a question whose model call fails
with an error that echoes the API key (a tool error, the key masked); no response and no line of the
server's stderr holds the key. With a KG configured, ``kg_query`` is listed and answers on the sample
graph in an embedded FalkorDB.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.cli_run import ROOT, cli_env, run_cli
from helpers.mcp_run import HttpServer, text_of
from helpers.openai_server import OpenAIServer, error, request_kind, requested_tool, tag_content

pytest.importorskip("mcp.client.stdio", reason="the 'mcp' extra is not installed (pip install -e '.[mcp]')")

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]

API_KEY = "sk-mcp-test-4f1d9c2e7a"
ECHOED = "What is the launch code?"  # the model's reply to this question is an error echoing the key
UNANSWERABLE = "What is the airspeed of a swallow?"
KG_QUERY = (
    "MATCH (g:Gene)-[:GENE_EXPRESSED_IN_CELL_TYPE]->(c:CellType) "
    "WHERE c.cell_type_name = 'fibroblast' RETURN g.name ORDER BY g.name"
)


def script(body: dict[str, Any]) -> Any:
    """A capable model for the castle knowledge base (and the gene_kg sample graph)."""
    tool = requested_tool(body)
    if tool in ("DraftQuery", "RevisedQuery"):
        return {"query": KG_QUERY, "reflection": "matches the cell type by exact name"}
    if tool == "ScoreGrade":
        return {"score": 9, "reason": "lists the genes"}
    kind = request_kind(body)
    question = tag_content(body, "question")
    if ECHOED in json.dumps(body):
        return error(401, f"Incorrect API key provided: {API_KEY}")
    if kind == "condense":
        return {"question": "Who built Castle Varen?"}
    if kind == "relevance":
        return {"relevant": "castle varen" in question.lower() and "Castle Varen" in tag_content(body, "chunk")}
    if kind in ("grounded", "useful"):
        return {kind: True}
    if kind == "rephrase":
        return {"query": "swallow flight speed"}
    if "Who built" in json.dumps(body):
        return "Castle Varen was built by Duke Albrecht [1]."
    return "Castle Varen was built in 1412 [1]."


@pytest.fixture(scope="module")
def kb(tmp_path_factory) -> Path:
    """A data dir with two tagged documents, ingested through the CLI."""
    root = tmp_path_factory.mktemp("mcp_kb")
    docs = root / "docs"
    docs.mkdir()
    (docs / "castle.md").write_text("# Castle Varen\n\nCastle Varen was built in 1412 by Duke Albrecht.\n")
    (docs / "cheese.md").write_text("# Cheese\n\nMura valley cheese is aged for nine months.\n")
    done = run_cli(["ingest", str(docs), "--tags", "history", "-q"], cli_env(root / "data"))
    assert done.returncode == 0, done.stderr
    return root / "data"


@pytest.fixture(scope="module")
def llm():
    with OpenAIServer(script) as server:
        yield server


def server_env(kb: Path, llm: OpenAIServer, **extra: str) -> dict[str, str]:
    """The server's environment: the knowledge base, the scripted model and its API key."""
    return cli_env(kb, RAGS_EXPERT_LLM__BASE_URL=llm.base_url, RAGS_EXPERT_LLM__API_KEY=API_KEY, **extra)


async def exercise(session: ClientSession) -> dict[str, Any]:
    """The scenario both transports run; every result, for the assertions."""
    await session.initialize()
    out: dict[str, Any] = {"tools": {t.name: t for t in (await session.list_tools()).tools}}
    out["ask"] = await session.call_tool("ask", {"question": "When was Castle Varen built?"})
    thread = out["ask"].structured_content["thread_id"]
    out["follow_up"] = await session.call_tool("ask", {"question": "Who built it?", "thread_id": thread})
    out["search"] = await session.call_tool("search", {"query": "Castle Varen", "top_k": 1})
    out["search_tagged"] = await session.call_tool("search", {"query": "cheese", "library_tags": ["other"]})
    out["search_scoped"] = await session.call_tool("search", {"query": "cheese", "library_tags": ["history"]})
    out["search_nothing"] = await session.call_tool("search", {"query": "cheese", "library_tags": []})
    out["unanswerable"] = await session.call_tool("ask", {"question": UNANSWERABLE})
    out["echoed"] = await session.call_tool("ask", {"question": ECHOED})
    out["bad_arguments"] = await session.call_tool("search", {"query": "castle", "top_k": 0})
    return out


def check_scenario(out: dict[str, Any], llm: OpenAIServer, stderr: str) -> None:
    """The assertions on one transport's scenario."""
    assert set(out["tools"]) == {"ask", "search"}  # no KG configured: no kg_query
    assert out["tools"]["ask"].output_schema["properties"]["sources"]

    ask = out["ask"]
    assert not ask.is_error
    assert ask.structured_content["outcome"] == "success"
    assert ask.structured_content["answer"] == "Castle Varen was built in 1412 [1]."
    (source,) = ask.structured_content["sources"]
    assert source["n"] == 1 and source["source"].endswith("castle.md") and "1412" in source["content"]
    assert text_of(ask).startswith("Castle Varen was built in 1412 [1].") and "[1] Castle Varen" in text_of(ask)
    (citation,) = ask.structured_content["citations"]
    assert citation["span"]["quote"] == "Castle Varen was built in 1412 by Duke Albrecht."
    assert citation["span"]["uid"] == source["uid"] and not citation["unsupported"]

    follow = out["follow_up"]
    assert not follow.is_error and follow.structured_content["thread_id"] == ask.structured_content["thread_id"]
    assert follow.structured_content["answer"] == "Castle Varen was built by Duke Albrecht [1]."
    condensed = [r for r in llm.requests if r.kind == "condense"]
    assert condensed and "1412" in condensed[-1].prompt  # the thread's history reached the follow-up

    hits = out["search"].structured_content["hits"]
    assert not out["search"].is_error and len(hits) == 1 and hits[0]["source"].endswith("castle.md")
    assert out["search_tagged"].structured_content["hits"] == []  # no chunk carries the tag
    assert out["search_scoped"].structured_content["hits"][0]["source"].endswith("cheese.md")
    assert out["search_nothing"].structured_content["hits"] == []  # an empty tag list scopes nothing

    failed = out["unanswerable"]
    assert failed.is_error
    assert text_of(failed) == f'I could not find an answer to "{UNANSWERABLE}" in the knowledge base.'
    assert failed.structured_content["reason"] == "no_relevant_documents"

    echoed = out["echoed"]
    assert echoed.is_error and "AuthenticationError" in text_of(echoed)
    assert out["bad_arguments"].is_error and "top_k" in text_of(out["bad_arguments"])

    assert any(r.headers.get("authorization") == f"Bearer {API_KEY}" for r in llm.requests)  # the key was used
    responses = json.dumps([r.model_dump(mode="json") for r in out.values() if not isinstance(r, dict)])
    assert API_KEY not in responses and API_KEY not in stderr
    assert "Traceback" not in stderr


async def test_stdio(kb, llm, tmp_path):
    errlog = tmp_path / "stderr.log"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "rags_expert.cli", "mcp"], env=server_env(kb, llm), cwd=ROOT
    )
    with errlog.open("w") as err:
        async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
            out = await exercise(session)
    stderr = errlog.read_text()
    assert "rags-expert mcp: serving ask, search over stdio" in stderr
    check_scenario(out, llm, stderr)


async def test_streamable_http(kb, llm, tmp_path):
    server = HttpServer(server_env(kb, llm), tmp_path / "stderr.log")
    try:
        assert server.url.startswith("http://127.0.0.1:")  # the default host: this machine only
        async with streamable_http_client(server.url) as (read, write), ClientSession(read, write) as session:
            out = await exercise(session)
        # a second session continues the first one's thread: the agents live as long as the server
        thread = out["ask"].structured_content["thread_id"]
        async with streamable_http_client(server.url) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            again = await session.call_tool("ask", {"question": "Who built it?", "thread_id": thread})
        assert again.structured_content["answer"] == "Castle Varen was built by Duke Albrecht [1]."
    finally:
        code = server.stop()
    stderr = server.log.read_text()
    assert code == 0, stderr
    check_scenario(out, llm, stderr)


@pytest.mark.parametrize(
    ("flags", "env", "message"),
    [
        (
            ["--port", "70000"],
            {},
            "rags-expert mcp: error: argument --port: 70000 is invalid: must be ≤ 65535 (mcp.port)",
        ),
        (
            [],
            {"RAGS_EXPERT_MCP__TRANSPORT": "sse"},
            "error: RAGS_EXPERT_MCP__TRANSPORT=sse is invalid: must be one of",
        ),
        (["--path", "mcp"], {}, "error: --path=mcp is invalid: the path must start with / (mcp.path)"),
    ],
)
def test_invalid_flags_and_settings_are_one_line_errors(flags, env, message, tmp_path):
    done = run_cli(["mcp", *flags], cli_env(tmp_path, **env))
    assert done.returncode == 2 and done.stderr.startswith(message) and done.stderr.count("\n") == 1, done.stderr


def test_busy_port_is_a_one_line_error(kb, llm):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_cli(["mcp", "--http", "--port", str(port)], server_env(kb, llm))
    assert done.returncode == 2
    assert done.stderr.startswith("error: OSError") and "in use" in done.stderr and done.stderr.count("\n") == 1


async def test_kg_query_is_served_when_a_kg_is_configured(kb, llm, tmp_path):
    from helpers.kg import falkordb_missing
    from helpers.shared_data import SCHEMA_FILE, skip_unless

    skip_unless(SCHEMA_FILE, "the BioChatter KG schema")
    if reason := falkordb_missing():
        pytest.skip(reason)
    env = server_env(
        kb,
        llm,
        RAGS_EXPERT_KG__SCHEMA_FILE=str(SCHEMA_FILE),
        RAGS_EXPERT_KG__SCHEMA_NAME="gene_kg",
        RAGS_EXPERT_KG__LOAD_SAMPLE="true",
    )
    server = HttpServer(env, tmp_path / "stderr.log")
    try:
        async with streamable_http_client(server.url) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name for t in (await session.list_tools()).tools}
            result = await session.call_tool("kg_query", {"question": "Which genes are expressed in fibroblasts?"})
    finally:
        code = server.stop()
    assert tools == {"ask", "search", "kg_query"}
    assert not result.is_error, text_of(result)
    data = result.structured_content
    assert data["outcome"] == "success" and data["query"] == KG_QUERY
    assert {row["g.name"] for row in data["rows"]} >= {"COL1A1", "VIM"}
    assert "COL1A1" in text_of(result)
    assert code == 0 and API_KEY not in json.dumps(data) + server.log.read_text()
