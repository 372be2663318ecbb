"""The ``mcp`` subcommand of ``rags-expert``: serve the agents as MCP tools (needs the ``mcp`` extra).

``rags-expert mcp`` speaks MCP over stdio (an MCP client starts it as a subprocess); ``--http`` serves
streamable HTTP at ``http://127.0.0.1:8000/mcp`` instead (``--host``, ``--port``, ``--path``). Tools:
``ask``, ``search``, and ``kg_query`` when ``kg.schema_file`` is set (:mod:`rags_expert.hosts.mcp.server`).
Settings come from ``RAGS_EXPERT_*`` variables (the ``mcp`` section); the flags override them. Without a chat
model the server starts anyway (``search`` needs none); ``--local`` starts the bundled offline model for it.
``--http`` off loopback needs ``mcp.auth_token`` or ``--behind-auth-proxy`` (:mod:`rags_expert.hosts.mcp.http`).

Exit codes: 0 the client disconnected (stdio) or the server was stopped (HTTP); 2 an error (invalid
settings or flags, the ``mcp`` extra missing, an agent that could not be built, a port in use, an address
off loopback without authentication).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any, cast

from rags_expert.cli.support import args_settings, setting_type
from rags_expert.secrets import install_log_redaction
from rags_expert.settings import KGExpertSettings, RagsExpertSettings, coerce_settings
from rags_expert.settings.environment import SecretBook

FLAGS = {
    "transport": "mcp.transport",
    "host": "mcp.host",
    "port": "mcp.port",
    "path": "mcp.path",
    "model": "llm.model",
    "base_url": "llm.base_url",
    "collection": "store.collection",
    "trust_proxy_auth": "mcp.trust_proxy_auth",
}
"""Flags of ``mcp`` that override settings (argparse dest -> settings path)."""


def run(args: argparse.Namespace) -> int:
    """Serve until the client disconnects (stdio) or the server is stopped (HTTP)."""
    try:
        from rags_expert.hosts.mcp.http import ExposedServerError, check_exposure  # imports the SDK: the extra's check
    except ImportError as exc:
        print(f"error: rags-expert mcp needs the 'mcp' extra: pip install 'rags-expert[mcp]' ({exc})", file=sys.stderr)
        return 2
    settings = cast(RagsExpertSettings, args_settings(args))
    try:
        check_exposure(settings.mcp)
    except ExposedServerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    asyncio.run(_serve(args, settings))
    return 0


async def _serve(args: argparse.Namespace, settings: RagsExpertSettings) -> None:
    """Build the agents (on a local model server started for the server's life with ``--local``) and serve."""
    from rags_expert.hosts.mcp.server import Agents, serve
    from rags_expert.local.server import maybe_local

    async with maybe_local(settings, getattr(args, "local", False)) as local:
        kg_settings = coerce_settings(local.settings, KGExpertSettings)
        book = SecretBook()
        book.add_settings(local.settings)
        book.add_settings(kg_settings)
        install_log_redaction(book)  # the KG agent's secrets too
        kg = kg_settings if kg_settings.kg.schema_file is not None else None
        await serve(Agents(local.settings, kg, book, local.ready), args.verbose)


def register(subparsers: Any) -> None:
    """Add the ``mcp`` subcommand to the top-level CLI."""
    p = subparsers.add_parser("mcp", help="serve the agents as MCP tools (stdio, or streamable HTTP with --http)")
    p.add_argument(
        "--http",
        dest="transport",
        action="store_const",
        const="http",
        help="serve streamable HTTP at http://HOST:PORT/PATH instead of stdio (RAGS_EXPERT_MCP__TRANSPORT=http)",
    )
    p.add_argument(
        "--host",
        type=setting_type("mcp.host"),
        help="HTTP: address to listen on (default 127.0.0.1; any other needs RAGS_EXPERT_MCP__AUTH_TOKEN or "
        "--behind-auth-proxy)",
    )
    p.add_argument("--port", type=setting_type("mcp.port"), help="HTTP: port (default 8000; 0: any free port)")
    p.add_argument("--path", type=setting_type("mcp.path"), help="HTTP: endpoint path (default /mcp)")
    p.add_argument("--model", type=setting_type("llm.model"), help="chat model name (RAGS_EXPERT_LLM__MODEL)")
    p.add_argument("--base-url", help="OpenAI-compatible base URL (RAGS_EXPERT_LLM__BASE_URL)")
    p.add_argument("--collection", type=setting_type("store.collection"), help="knowledge-base collection")
    p.add_argument(
        "--local",
        action="store_true",
        help="answer with a local model server started for the server's life (needs the 'local' extra)",
    )
    p.add_argument(
        "--behind-auth-proxy",
        dest="trust_proxy_auth",
        action="store_const",
        const=True,
        help="HTTP: a proxy in front authenticates every request, so --host may be off loopback without "
        "RAGS_EXPERT_MCP__AUTH_TOKEN (RAGS_EXPERT_MCP__TRUST_PROXY_AUTH=true)",
    )
    p.set_defaults(func=run, settings_flags=FLAGS)
