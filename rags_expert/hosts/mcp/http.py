"""Who may call ``rags-expert mcp --http``: the start-up check for an exposed address, the bearer-token check
of every request, and the Host/Origin checks (the SDK's DNS rebinding protection) for the address served.

A server on a loopback address is reached only from this machine. Any other address is refused unless
``mcp.auth_token`` is set (every request must then carry ``Authorization: Bearer <token>``) or
``mcp.trust_proxy_auth`` says a proxy in front authenticates. A token, when set, is enforced on loopback too.
The token is compared in constant time and never logged or echoed.
"""

from __future__ import annotations

import hmac
import ipaddress
import json

from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from rags_expert.settings import McpSettings

LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
"""The Host header values the SDK accepts on loopback (its own default list)."""


class ExposedServerError(ValueError):
    """``--http`` on an address other machines reach, with no authentication configured."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is reached only from this machine."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve to any interface
        return False


def check_exposure(mcp: McpSettings) -> None:
    """Raise :class:`ExposedServerError` (one line) when HTTP would serve off loopback without authentication."""
    if mcp.transport != "http" or is_loopback(mcp.host) or mcp.auth_token is not None or mcp.trust_proxy_auth:
        return
    raise ExposedServerError(
        f"refusing to serve --http on {mcp.host} without authentication: set RAGS_EXPERT_MCP__AUTH_TOKEN "
        "(clients then send 'Authorization: Bearer <token>'), or pass --behind-auth-proxy "
        "(RAGS_EXPERT_MCP__TRUST_PROXY_AUTH=true) when a proxy in front authenticates every request"
    )


def transport_security(mcp: McpSettings) -> TransportSecuritySettings:
    """The Host/Origin checks for the address served: ``mcp.allowed_hosts`` when set, else the address itself (and
    on loopback the SDK's loopback names), none on a wildcard address (any name may reach it; authentication
    guards it)."""
    if mcp.allowed_hosts:
        hosts = list(mcp.allowed_hosts)
    elif _wildcard(mcp.host):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    else:
        name = f"[{mcp.host}]" if ":" in mcp.host else mcp.host
        hosts = list(dict.fromkeys([*(LOOPBACK_HOSTS if is_loopback(mcp.host) else []), name, f"{name}:*"]))
    origins = [f"{scheme}://{host}" for host in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


def _wildcard(host: str) -> bool:
    """Whether ``host`` is an unspecified address (0.0.0.0, ::): every interface."""
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


class BearerAuth:
    """ASGI middleware: HTTP requests without ``Authorization: Bearer <token>`` get 401 (lifespan passes)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass an authorised request (or a non-HTTP event) to the app; answer 401 to any other."""
        if scope["type"] != "http" or self._authorised(scope):
            await self.app(scope, receive, send)
            return
        body = json.dumps({"error": "unauthorized", "message": "send 'Authorization: Bearer <token>'"}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"www-authenticate", b'Bearer realm="rags-expert mcp"'),
        ]
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def _authorised(self, scope: Scope) -> bool:
        """Whether the request's Authorization header is ``Bearer`` (any case) and the token (constant-time)."""
        given = next((value for name, value in scope.get("headers", []) if name == b"authorization"), b"")
        scheme, _, credentials = given.strip().partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self._token)


def secured_app(app: ASGIApp, mcp: McpSettings) -> ASGIApp:
    """``app`` behind :class:`BearerAuth` when ``mcp.auth_token`` is set, else unchanged."""
    if mcp.auth_token is None:
        return app
    return BearerAuth(app, mcp.auth_token.get_secret_value())
