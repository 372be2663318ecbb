"""`rags-expert mcp` over stdio as a client meets it: without a chat model, with `--local`, with arguments of the
wrong type, and with lines whose request id cannot be used.

The server is a real subprocess on a knowledge base filled by `rags-expert ingest`, driven by the MCP SDK's own
client, or (for the invalid lines the SDK's client never sends) by raw JSON-RPC lines on its stdin. The `--local`
test swaps llama.cpp's server for a stand-in `llama-server` binary (`local.runner = "llama_server"`) that serves
the scripted OpenAI-compatible model of the integration tests, so no model file is needed.
"""

from __future__ import annotations

import json
import queue
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers.cli_run import ROOT, cli_env, ingest_docs, run_cli
from helpers.mcp_run import text_of

pytest.importorskip("mcp.client.stdio", reason="the 'mcp' extra is not installed (pip install -e '.[mcp]')")

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from rags_expert.hosts.mcp.tools import NO_MODEL  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SECRET = "sk-mcp-startup-9b8e7d6c5a4f3e2d1c0b9a8f7e6d5c4b3a"  # longer than an echoed value is shown
TESTS = Path(__file__).resolve().parents[1]

# A stand-in llama-server: started with the runner's command line (-m MODEL --host H --port P --alias A ...), it
# serves GET /v1/models and the scripted castle model on that port, logging each request's model name.
FAKE_LLAMA_SERVER = f"""#!{sys.executable}
import json, os, sys
sys.path.insert(0, {str(TESTS)!r})
from helpers.openai_server import OpenAIServer, _Handler, _HTTPServer, castle_script
args = sys.argv[1:]
port = int(args[args.index("--port") + 1])
log = os.environ["FAKE_LOG"]
open(log + ".pid", "w").write(str(os.getpid()))
def script(body):
    with open(log, "a") as out:
        out.write(json.dumps(body.get("model")) + "\\n")
    return castle_script(body)
class Handler(_Handler):
    def do_GET(self):
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.end_headers()
        self.wfile.write(b'{{"data": []}}')
httpd = _HTTPServer(("127.0.0.1", port), Handler)
httpd.owner = OpenAIServer(script)
httpd.serve_forever()
"""


@pytest.fixture(scope="module")
def kb(tmp_path_factory) -> Path:
    """A data dir with one document, ingested through the CLI."""
    return ingest_docs(
        tmp_path_factory.mktemp("mcp_startup"),
        {"castle.md": "# Castle Varen\n\nCastle Varen was built in 1412 by Duke Albrecht.\n"},
    )


def no_model_env(kb: Path, **extra: str) -> dict[str, str]:
    """The server's environment with no chat model: no base URL and no API key anywhere."""
    env = cli_env(kb, **extra)
    env.pop("OPENAI_API_KEY", None)
    env.pop("OPENAI_BASE_URL", None)
    return env


async def stdio_session(env: dict[str, str], errlog: Path, calls: list[tuple[str, dict[str, Any]]], *flags: str):
    """Start ``rags-expert mcp FLAGS`` over stdio, list its tools and make ``calls``; (tools, results, stderr)."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "rags_expert.cli", "mcp", *flags], env=env, cwd=ROOT
    )
    with errlog.open("w") as err:
        async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name for t in (await session.list_tools()).tools}
            results = [await session.call_tool(name, arguments) for name, arguments in calls]
    return tools, results, errlog.read_text()


async def test_without_a_chat_model_search_works_and_ask_says_how_to_configure_one(kb, tmp_path):
    calls = [("search", {"query": "Castle Varen", "top_k": 1}), ("ask", {"question": "When was Castle Varen built?"})]
    tools, (search, ask), stderr = await stdio_session(no_model_env(kb), tmp_path / "stderr.log", calls)
    assert tools == {"ask", "search"}
    assert not search.is_error
    (hit,) = search.structured_content["hits"]
    assert hit["source"].endswith("castle.md") and "1412" in hit["content"]
    assert ask.is_error
    assert text_of(ask) == NO_MODEL.format(tool="ask") and "\n" not in text_of(ask)
    assert "llm.model" in text_of(ask) and "--model" in text_of(ask) and "--local" in text_of(ask)
    assert ask.structured_content["outcome"] == "failure"
    assert ask.structured_content["reason"] == "no_chat_model"
    assert "serving ask, search over stdio (no chat model configured" in stderr
    assert "Traceback" not in stderr


async def test_local_flag_answers_on_the_local_model_server(kb, tmp_path):
    binary = tmp_path / "llama-server"
    binary.write_text(FAKE_LLAMA_SERVER)
    binary.chmod(binary.stat().st_mode | stat.S_IEXEC)
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    log = tmp_path / "requests.log"
    env = no_model_env(
        kb,
        FAKE_LOG=str(log),
        RAGS_EXPERT_LOCAL__RUNNER="llama_server",
        RAGS_EXPERT_LOCAL__SERVER_BINARY=str(binary),
        RAGS_EXPERT_LOCAL__MODEL_PATH=str(model),
        RAGS_EXPERT_LOCAL__MODEL_ALIAS="castle-local",
        RAGS_EXPERT_EVIDENCE__DRAFT="true",  # the small profile's drafts back on: the answer is the model's
    )
    calls = [("ask", {"question": "When was Castle Varen built?"})]
    tools, (ask,), stderr = await stdio_session(env, tmp_path / "stderr.log", calls, "--local")
    assert tools == {"ask", "search"}
    assert not ask.is_error, text_of(ask)
    assert ask.structured_content["answer"] == "Castle Varen was built in 1412 [1]."
    assert ask.structured_content["sources"][0]["source"].endswith("castle.md")
    models = {json.loads(line) for line in log.read_text().splitlines()}
    assert models == {"castle-local"}  # every model call went to the local server, under its alias
    assert "no chat model" not in stderr and "Traceback" not in stderr
    pid = int((tmp_path / "requests.log.pid").read_text())
    assert not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z", (
        "the local model server outlived the MCP server"
    )


def test_local_flag_with_a_runner_that_cannot_start_is_one_line_and_exit_2(kb, tmp_path):
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    env = no_model_env(
        kb,
        RAGS_EXPERT_LOCAL__RUNNER="llama_server",
        RAGS_EXPERT_LOCAL__SERVER_BINARY=str(tmp_path / "no-such-llama-server"),
        RAGS_EXPERT_LOCAL__MODEL_PATH=str(model),
    )
    done = run_cli(["mcp", "--local"], env)
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1
    assert done.stderr.startswith("error: LocalModelError: could not start the local model server"), done.stderr


async def test_wrong_argument_types_are_one_line_errors_naming_the_argument(kb, tmp_path):
    calls = [
        ("search", {"query": "castle", "top_k": "three"}),
        ("search", {"query": 5}),
        ("ask", {"question": "When?", "library_tags": "history"}),
        ("search", {}),
        ("search", {"query": "castle", "top_k": SECRET}),
    ]
    env = no_model_env(kb, RAGS_EXPERT_MCP__AUTH_TOKEN=SECRET)  # a configured secret, echoed by a bad argument
    _, results, stderr = await stdio_session(env, tmp_path / "stderr.log", calls)
    texts = [text_of(r) for r in results]
    assert all(r.is_error for r in results) and all("\n" not in t for t in texts), texts
    assert texts[:4] == [
        "invalid arguments for search: top_k: expected a valid integer, got str 'three'",
        "invalid arguments for search: query: expected a valid string, got int 5",
        "invalid arguments for ask: library_tags: expected a valid list, got str 'history'",
        "invalid arguments for search: query: missing (required)",
    ]
    assert texts[4].startswith("invalid arguments for search: top_k: expected a valid integer, got str")
    assert SECRET[:12] not in texts[4] and "***" in texts[4] and SECRET not in stderr


class RawStdio:
    """``rags-expert mcp`` over stdio, spoken to line by line (a reader thread, so no read blocks the test)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rags_expert.cli", "mcp"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = 60) -> dict[str, Any]:
        try:
            return json.loads(self.lines.get(timeout=timeout))
        except queue.Empty:
            pytest.fail(f"no reply within {timeout} s")

    def close(self) -> tuple[int, str]:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        return code, self.proc.stderr.read()


BAD_LINES = [
    ('{"jsonrpc": "2.0", "id": {"n": 1}, "method": "tools/list"}', -32600),  # an object as id
    ('{"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}', -32600),  # a float as id
    ('{"jsonrpc": "2.0", "id": [2], "method": "tools/call", "params": {"name": "search"}}', -32600),  # a list
    ('{"jsonrpc": "2.0", "id": 3, "method": "tools/list"', -32700),  # cut-off JSON
    ('{"jsonrpc": "2.0", "id": 4}', -32600),  # no method, no result
]


def test_lines_whose_id_cannot_be_used_get_a_json_rpc_error_each(kb):
    server = RawStdio(no_model_env(kb))
    try:
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        server.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))
        assert server.receive()["id"] == 1
        server.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))  # no reply: valid
        for line, _ in BAD_LINES:
            server.send(line)
        server.send(json.dumps({"jsonrpc": "2.0", "id": "after", "method": "tools/list"}))
        replies = [server.receive() for _ in range(len(BAD_LINES) + 1)]
    finally:
        code, stderr = server.close()
    errors = [r for r in replies if r.get("id") is None]
    assert [(e["jsonrpc"], e["error"]["code"]) for e in errors] == [("2.0", code) for _, code in BAD_LINES]
    assert all(e["error"]["message"] for e in errors)
    (listed,) = [r for r in replies if r.get("id") == "after"]  # the server goes on answering
    assert {t["name"] for t in listed["result"]["tools"]} == {"ask", "search"}
    assert code == 0 and "Traceback" not in stderr


async def test_kg_query_without_a_chat_model_is_an_error_saying_how_to_configure_one(kb, monkeypatch):
    from rags_expert.hosts.mcp.tools import Agents
    from rags_expert.settings import KGExpertSettings, RagsExpertSettings
    from rags_expert.settings.environment import SecretBook

    for name, value in no_model_env(kb).items():
        if name.startswith("RAGS_EXPERT_"):
            monkeypatch.setenv(name, value)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    agents = Agents(RagsExpertSettings(), KGExpertSettings(), SecretBook())
    await agents.open()  # no model: only the retriever is built, no graph database is started
    result = await agents.kg_query("Which genes are expressed in fibroblasts?", None)
    await agents.aclose()
    assert agents.tools == ["ask", "search", "kg_query"] and agents.kg is None
    assert result.is_error and text_of(result) == NO_MODEL.format(tool="kg_query")
    assert result.structured_content["outcome"] == "failure"
    assert result.structured_content["reason"] == result.structured_content["exit_reason"] == "no_chat_model"
