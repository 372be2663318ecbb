"""``rags-expert mcp``: the agents as MCP tools, served with the official ``mcp`` SDK (``MCPServer``).

Tools:

* ``ask(question, thread_id=None, library_tags=None)``: the corrective-RAG agent. The result holds the
  checked answer, ``outcome``, ``reason`` and the cited ``sources``; a thread id (returned, or given)
  carries follow-ups. An honest "not found" or a failed run is a tool error (``isError``) whose text is the
  agent's honest message, with the same structured fields.
* ``search(query, top_k=None, library_tags=None)``: the knowledge-base hits, as ``rags-expert search``.
* ``kg_query(question, thread_id=None)``: the KG-query agent; listed only when ``kg.schema_file`` is set.

Arguments of the wrong type are a tool error of one line naming each argument, what it expects and what came
(:func:`~rags_expert.hosts.mcp.tools.argument_error`); a message that is no valid one (a stdio line that is not JSON,
a request without a usable id) gets a JSON-RPC error (:mod:`rags_expert.hosts.mcp.jsonrpc`); over HTTP,
:mod:`rags_expert.hosts.mcp.http` decides who may call.

The agents are built once per server process, when it starts (before the first stdio message is read,
before the HTTP port accepts connections), and each keeps one in-memory checkpointer, so a thread id works
across calls and, over HTTP, across sessions. Every response is redacted (the settings' secrets and
credential-shaped text); logs go to stderr, which the CLI's redacting filter covers. stdout belongs to the
stdio transport.

The tools' results and the agents behind them are in :mod:`rags_expert.hosts.mcp.tools`. This module imports the
SDK at import time: the CLI imports it inside the command only. It has no
``from __future__ import annotations``: the SDK reads the tools' signatures at run time.
"""

import asyncio
import contextlib
import os
import signal
import socket
import sys
from collections.abc import Callable, Iterator
from typing import Annotated, Any

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field, ValidationError

from rags_expert import __version__
from rags_expert.hosts.mcp.http import secured_app, transport_security
from rags_expert.hosts.mcp.jsonrpc import ReplyingReader, RequestIdCheck
from rags_expert.hosts.mcp.tools import Agents, AskResult, KGResult, SearchResult, argument_error

INSTRUCTIONS = (
    "Answers questions from a knowledge base with cited, checked answers (ask), searches it (search) and, "
    "when configured, queries a knowledge graph (kg_query). A tool error from ask or kg_query is an honest "
    "answer that nothing grounded was found (or that a component failed): do not retry it unchanged."
)

NO_MODEL_NOTE = "no chat model configured: ask and kg_query answer an error saying how to set one; search works"

Question = Annotated[str, Field(description="The question, in natural language.")]
ThreadId = Annotated[
    str | None,
    Field(description="A conversation id: give the thread_id of an earlier result to ask a follow-up."),
]
LibraryTags = Annotated[
    list[str] | None,
    Field(
        description="Only chunks carrying any of these tags (absent: no filter; an empty list: nothing is in "
        "scope, so nothing is found)."
    ),
]


class _Server(MCPServer):
    """The SDK's server with one-line argument errors (redacted) and JSON-RPC errors for invalid stdio lines."""

    redact: Callable[[str], str] = staticmethod(lambda text: text)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """The SDK's call; a rejected argument is one line instead of pydantic's report (its cause kept, so the
        SDK logs only the field names)."""
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            raise ToolError(argument_error(name, exc.__cause__, self.redact)) from exc.__cause__

    async def run_stdio_async(self) -> None:
        """Serve over stdin/stdout as the SDK does, answering every line that is no valid message."""
        lowlevel = self._lowlevel_server
        async with stdio_server() as (read, write):
            await lowlevel.run(ReplyingReader(read, write), write, lowlevel.create_initialization_options())


def build_server(agents: Agents, log_level: str = "WARNING") -> MCPServer:
    """The MCP server with the tools of ``agents`` (``kg_query`` only with a KG configured)."""
    server = _Server(
        "rags-expert",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level=log_level,  # type: ignore[arg-type]  # one of the SDK's level names
    )
    server.redact = agents.book.redact
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    conversation = ToolAnnotations(destructive_hint=False, open_world_hint=False)  # remembers the thread

    async def ask(
        question: Question, thread_id: ThreadId = None, library_tags: LibraryTags = None
    ) -> Annotated[CallToolResult, AskResult]:
        """Answer a question from the knowledge base: a checked answer citing its sources as [n].

        When the knowledge base holds no grounded answer, the result is an error whose text says so
        honestly (no answer is invented).
        """
        return await agents.ask(question, thread_id, library_tags)

    async def search(
        query: Annotated[str, Field(description="What to look for.")],
        top_k: Annotated[int | None, Field(ge=1, description="Hits to return (default: retrieval.top_k).")] = None,
        library_tags: LibraryTags = None,
    ) -> Annotated[CallToolResult, SearchResult]:
        """Search the knowledge base (no model call): the chunks that best match the query, best first."""
        return await agents.search(query, top_k, library_tags)

    async def kg_query(question: Question, thread_id: ThreadId = None) -> Annotated[CallToolResult, KGResult]:
        """Answer a question from the knowledge graph with a read-only Cypher query (shown with its rows).

        When no query finds rows, the result is an error whose text says so honestly.
        """
        return await agents.kg_query(question, thread_id)

    server.add_tool(ask, annotations=conversation)
    server.add_tool(search, annotations=read_only)
    if agents.kg_settings is not None:
        server.add_tool(kg_query, annotations=conversation)
    return server


async def serve(agents: Agents, verbosity: int = 0) -> None:
    """Build the agents, then serve the tools over the transport of ``agents.settings.mcp`` until the client
    (stdio) or a signal (HTTP) ends it. A ready line goes to stderr once the tools can be called."""
    mcp = agents.settings.mcp
    level = "WARNING" if verbosity <= 0 else "INFO" if verbosity == 1 else "DEBUG"
    server = build_server(agents, level)
    tools = ", ".join(agents.tools)
    sock = _bind(mcp.host, mcp.port) if mcp.transport == "http" else None  # a busy port fails before the build
    this = asyncio.current_task()
    assert this is not None
    stopping: list[asyncio.Task[None]] = []  # a reference keeps the task alive

    def stop() -> None:
        if sock is None:  # stdio: the transport reads stdin in a thread that no cancellation stops
            stopping.append(asyncio.ensure_future(_close_and_exit(agents)))
        else:  # while the agents are built; then uvicorn's graceful stop takes over
            this.cancel()

    for sig in (signal.SIGTERM, signal.SIGINT) if sock is None else (signal.SIGTERM,):
        asyncio.get_running_loop().add_signal_handler(sig, stop)
    try:
        with contextlib.redirect_stdout(sys.stderr):  # stdout is the stdio transport's: no stray print there
            await agents.open()
        note = "" if agents.has_model else f" ({NO_MODEL_NOTE})"
        if sock is None:
            _ready(f"serving {tools} over stdio{note}")
            await server.run_stdio_async()
            return
        app = server.streamable_http_app(
            streamable_http_path=mcp.path, host=mcp.host, transport_security=transport_security(mcp)
        )
        config = uvicorn.Config(
            secured_app(RequestIdCheck(app, mcp.path), mcp),
            log_config=None,
            log_level=level.lower(),
            access_log=verbosity > 0,
        )
        host = f"[{mcp.host}]" if ":" in mcp.host else mcp.host
        url = f"http://{host}:{sock.getsockname()[1]}{mcp.path}"
        guard = " (bearer token required)" if mcp.auth_token is not None else ""
        http = _HttpServer(config, lambda: _ready(f"serving {tools} at {url}{guard}{note}"))
        await http.serve(sockets=[sock])  # while it serves, SIGTERM and SIGINT stop it gracefully
    except asyncio.CancelledError:
        if not this.cancelling():
            raise
        this.uncancel()  # a requested stop, not an error
    finally:
        if sock is not None:
            sock.close()
        await agents.aclose()


async def _close_and_exit(agents: Agents) -> None:
    """SIGTERM or SIGINT on stdio: close the agents, then end the process (its stdin reader cannot be interrupted)."""
    try:
        await agents.aclose()
    finally:
        sys.stderr.flush()
        os._exit(0)


class _HttpServer(uvicorn.Server):
    """uvicorn's server, stopped gracefully by SIGINT/SIGTERM without re-raising the signal afterwards
    (uvicorn does, which would kill the process before the agents are closed); ``on_started`` runs once
    it accepts connections."""

    def __init__(self, config: uvicorn.Config, on_started: Callable[[], None]) -> None:
        super().__init__(config)
        self.on_started = on_started

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's start-up (the app's lifespan, then listening), then ``on_started``."""
        await super().startup(sockets)
        if self.started:
            self.on_started()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Ask the server to exit on SIGINT/SIGTERM (a second SIGINT forces it), for as long as it serves."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.handle_exit, sig, None)
        try:
            yield
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)


def _bind(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (port 0: a free one); a busy port or bad address raises OSError."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def _ready(line: str) -> None:
    """Say on stderr that the server is ready (stdout is the stdio transport's)."""
    print(f"rags-expert mcp: {line}", file=sys.stderr, flush=True)
