"""The MCP server's own section (``rags-expert mcp``): its transport, where it listens and who may call it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr, field_validator

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
        "rebinding protection). Any other address needs mcp.auth_token or mcp.trust_proxy_auth, or the server "
        "refuses to start.",
    )
    port: int = Field(8000, ge=0, le=65535, description="HTTP transport: the TCP port (0: any free port, printed).")
    path: str = Field("/mcp", description="HTTP transport: the endpoint's path.")
    auth_token: SecretStr | None = Field(
        None,
        description="HTTP transport: a bearer token every request must carry (Authorization: Bearer TOKEN; "
        "others get 401), on any address. Set it in the environment, not on a command line. None: no check.",
    )
    trust_proxy_auth: bool = Field(
        False,
        description="HTTP transport: a proxy in front authenticates every request, so the server may listen off "
        "loopback without mcp.auth_token (the --behind-auth-proxy flag).",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="HTTP transport: the Host header values accepted (DNS rebinding protection; a JSON list in the "
        'environment), e.g. ["mcp.example.org", "10.0.0.5:*"]. Empty: the loopback names on a loopback host, the '
        "address itself on another specific address, no Host check on a wildcard address (0.0.0.0, ::).",
    )

    @field_validator("path")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError("the path must start with /")
        return value

    @field_validator("auth_token")
    @classmethod
    def _not_blank(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not value.get_secret_value().strip():
            raise ValueError("the token must not be empty (unset the setting for no token)")
        return value
