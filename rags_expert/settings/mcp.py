"""The MCP server's own section (``rags-expert mcp``): its transport and where it listens."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from rags_expert.settings.base import SettingsSection

McpTransport = Literal["stdio", "http"]


class McpSettings(SettingsSection):
    """``rags-expert mcp``: the agents as MCP tools, over stdio or streamable HTTP."""

    transport: McpTransport = Field(
        "stdio",
        description="stdio: the MCP client starts the server and talks over its stdin/stdout; http: streamable "
        "HTTP at http://host:port + path (the --http flag).",
    )
    host: str = Field(
        "127.0.0.1",
        min_length=1,
        description="HTTP transport: the address to listen on. The default serves this machine only (with DNS "
        "rebinding protection); the server has no authentication, so listen elsewhere only behind one.",
    )
    port: int = Field(8000, ge=0, le=65535, description="HTTP transport: the TCP port (0: any free port, printed).")
    path: str = Field("/mcp", description="HTTP transport: the endpoint's path.")

    @field_validator("path")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError("the path must start with /")
        return value
