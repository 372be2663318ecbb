"""LangGraph Server (`langgraph dev`, in-memory runtime) serves both graphs from langgraph.json.

The server is a real subprocess on 127.0.0.1; the chat model behind it is the local scripted
OpenAI-compatible server of the integration tests, and the knowledge base is a real embedded
Qdrant filled by `rags-expert ingest`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import requests
from helpers.openai_server import OpenAIServer, prompt_text, request_kind, requested_tool, tag_content
from helpers.shared_data import SCHEMA_FILE, needs

from rags_expert.cli import main as cli_main
from rags_expert.retrieval.qdrant import close_client
from rags_expert.settings import RagsExpertSettings

ROOT = Path(__file__).resolve().parents[2]
API_KEY = "sk-test-server-123456"
LANGGRAPH = shutil.which("langgraph", path=str(Path(sys.executable).parent)) or shutil.which("langgraph")
KG_QUERY = (
    "MATCH (g:Gene)-[:GENE_EXPRESSED_IN_CELL_TYPE]->(c:CellType) "
    "WHERE c.cell_type_name = 'fibroblast' RETURN g.name ORDER BY g.name"
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(LANGGRAPH is None, reason="langgraph-cli[inmem] is not installed (the 'server' extra)"),
]


def script(body: dict[str, Any]) -> Any:
    tool = requested_tool(body)
    if tool == "DraftQuery" or tool == "RevisedQuery":
        return {"query": KG_QUERY, "reflection": "matches the cell type by exact name"}
    if tool == "ScoreGrade":
        return {"score": 9, "reason": "lists the genes"}
    kind = request_kind(body)
    if kind == "relevance":
        return {"relevant": "1412" in tag_content(body, "chunk")}
    if kind in ("grounded", "useful"):
        return {kind: True}
    if "which key" in prompt_text(body):  # a model repeating the API key it was called with
        return f"Castle Varen was built in 1412 [1]. My key is {API_KEY}."
    return "Castle Varen was built in 1412 [1]."


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("kb")
    docs = tmp_path_factory.mktemp("docs")
    (docs / "castle.md").write_text("# Castle Varen\n\nCastle Varen was built in 1412 by Duke Albrecht.\n")
    (docs / "cheese.md").write_text("# Cheese\n\nMura valley cheese is aged for nine months.\n")
    env = {
        **os.environ,
        "RAGS_EXPERT_DATA_DIR": str(data_dir),
        "RAGS_EXPERT_LESSONS__ENABLED": "false",
        "LANGSMITH_TRACING": "false",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGGRAPH_NO_VERSION_CHECK": "true",
    }
    old = os.environ.get("RAGS_EXPERT_DATA_DIR")
    os.environ["RAGS_EXPERT_DATA_DIR"] = str(data_dir)
    try:
        assert cli_main(["ingest", str(docs)]) == 0
        close_client(RagsExpertSettings().store)  # embedded Qdrant: one process at a time
    finally:
        os.environ["RAGS_EXPERT_DATA_DIR"] = old or ""
    with OpenAIServer(script) as llm:
        env.update(
            RAGS_EXPERT_LLM__BASE_URL=llm.base_url,
            RAGS_EXPERT_LLM__API_KEY=API_KEY,
            RAGS_EXPERT_KG__SCHEMA_FILE=str(SCHEMA_FILE),
            RAGS_EXPERT_KG__SCHEMA_NAME="gene_kg",
            RAGS_EXPERT_KG__LOAD_SAMPLE="true",
        )
        port = free_port()
        log = open(tmp_path_factory.mktemp("log") / "langgraph.log", "w+")
        proc = subprocess.Popen(
            [LANGGRAPH, "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if requests.get(f"{url}/ok", timeout=2).ok:
                        break
                except requests.ConnectionError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    pytest.fail(f"langgraph dev did not start:\n{log.read()[-3000:]}")
                time.sleep(0.5)
            yield url, llm
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
            log.close()


async def test_rag_graph_answers_through_the_server(served):
    from langgraph_sdk import get_client

    url, llm = served
    client = get_client(url=url)
    thread = await client.threads.create()
    result = await client.runs.wait(
        thread["thread_id"],
        "rags_expert",
        input={"messages": [{"role": "user", "content": "When was Castle Varen built?"}]},
    )
    final = result["messages"][-1]
    assert final["type"] == "ai" and final["content"] == "Castle Varen was built in 1412 [1]."
    meta = final["response_metadata"]
    assert meta["outcome"] == "success"
    assert [s["n"] for s in meta["sources"]] == [1] and "1412" in meta["sources"][0]["content"]
    assert meta["sources"][0]["source"].endswith("castle.md")

    # the same thread keeps its history on the server; the state is readable
    state = await client.threads.get_state(thread["thread_id"])
    assert [m["type"] for m in state["values"]["messages"]] == ["human", "ai"]
    assert all(r.headers.get("authorization") == "Bearer sk-test-server-123456" for r in llm.requests)


async def test_streaming_through_the_server(served):
    from langgraph_sdk import get_client

    url, _ = served
    client = get_client(url=url)
    thread = await client.threads.create()
    nodes, finals = [], []
    async for part in client.runs.stream(
        thread["thread_id"],
        "rags_expert",
        input={"messages": [{"role": "user", "content": "When was Castle Varen built?"}]},
        stream_mode="updates",
    ):
        if part.event == "updates":
            nodes.extend(part.data)
            for update in part.data.values():
                for message in (update or {}).get("messages", []):
                    finals.append(message)
    assert nodes[0] == "prepare" and nodes[-1] == "finalize_success"
    assert finals[-1]["response_metadata"]["outcome"] == "success"


async def test_an_answer_repeating_the_api_key_is_masked_in_the_run_and_every_streamed_part(served):
    from langgraph_sdk import get_client

    url, _ = served
    client = get_client(url=url)
    thread = await client.threads.create()
    question = {"messages": [{"role": "user", "content": "When was Castle Varen built, and which key do you use?"}]}
    parts = [
        (part.event, part.data)
        async for part in client.runs.stream(
            thread["thread_id"], "rags_expert", input=question, stream_mode=["updates", "custom", "values"]
        )
    ]
    assert API_KEY not in json.dumps(parts, default=str)
    final = (await client.threads.get_state(thread["thread_id"]))["values"]["messages"][-1]
    assert final["content"] == "Castle Varen was built in 1412 [1]. My key is ***."


@needs(SCHEMA_FILE, "the BioChatter KG schema")
async def test_kg_graph_answers_through_the_server(served):
    from langgraph_sdk import get_client

    url, _ = served
    client = get_client(url=url)
    thread = await client.threads.create()
    result = await client.runs.wait(
        thread["thread_id"],
        "kg_query",
        input={"messages": [{"role": "user", "content": "Which genes are expressed in fibroblasts?"}]},
    )
    attempts = result["attempts"]
    assert attempts[-1]["query"] == KG_QUERY and attempts[-1]["score"] == 9
    assert {row["g.name"] for row in attempts[-1]["rows"]} >= {"COL1A1", "VIM"}
    assert json.dumps(result).count("sk-test-server-123456") == 0
