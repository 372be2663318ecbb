"""Permission tables for authorization tests: an in-process hook over a mutable table, and the same table
served as the HTTP hook (``POST {"user", "uids"}`` → ``{"allowed": [...]}``) on 127.0.0.1."""

from __future__ import annotations

import contextvars
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

RUN: contextvars.ContextVar[str] = contextvars.ContextVar("run", default="")
"""The test's id of the question being answered (the hook logs its checks under it)."""


@dataclass
class Check:
    """One call of the hook: when (the table's clock), for whom, what was asked and what was allowed."""

    at: int
    user: str | None
    asked: list[str]
    allowed: set[str]


@dataclass
class PermissionTable:
    """``grants[user]`` = the uids ``user`` may read; a logical clock orders checks and changes."""

    grants: dict[str | None, set[str]] = field(default_factory=dict)
    clock: int = 0
    checks: dict[str, list[Check]] = field(default_factory=dict)
    revoked_at: dict[tuple[str | None, str], int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def grant(self, user: str | None, uid: str) -> None:
        with self.lock:
            self.clock += 1
            self.grants.setdefault(user, set()).add(uid)
            self.revoked_at.pop((user, uid), None)

    def revoke(self, user: str | None, uid: str) -> None:
        with self.lock:
            self.clock += 1
            self.grants.setdefault(user, set()).discard(uid)
            self.revoked_at[(user, uid)] = self.clock

    def allowed(self, user: str | None, uids: list[str]) -> list[str]:
        """The hook (sync): the asked uids ``user`` may read now, logged under the current run."""
        with self.lock:
            self.clock += 1
            allowed = set(uids) & self.grants.get(user, set())
            self.checks.setdefault(RUN.get(), []).append(Check(self.clock, user, list(uids), allowed))
        return sorted(allowed)

    async def aallowed(self, user: str | None, uids: list[str]) -> list[str]:
        """The same hook, async."""
        return self.allowed(user, uids)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        srv = self.server
        srv.requests.append({"path": self.path, "authorization": self.headers.get("Authorization")})
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        if srv.delay:
            time.sleep(srv.delay)
        if srv.token and self.headers.get("Authorization") != f"Bearer {srv.token}":
            self._reply(401, {"error": "unauthorized"})
        elif srv.status != 200:
            self._reply(srv.status, {"error": f"failing with {srv.status}"})
        else:
            self._reply(200, {"allowed": srv.table.allowed(body.get("user"), list(body.get("uids") or []))})

    def _reply(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass


class _Server(ThreadingHTTPServer):
    table: PermissionTable
    token: str | None
    status: int
    delay: float
    requests: list[dict[str, Any]]


@contextmanager
def permission_server(table: PermissionTable, token: str | None = None) -> Iterator[_Server]:
    """The HTTP hook over ``table`` on 127.0.0.1 (``server.status`` / ``server.delay`` script faults)."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.table, server.token, server.status, server.delay, server.requests = table, token, 200, 0.0, []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


DENY_SECRET: set[str] = {"secret"}


def deny_secret(user: str | None, uids: list[str]) -> list[str]:
    """An import-path hook (``helpers.permissions:deny_secret``): every uid but ``secret`` for everyone."""
    return [uid for uid in uids if uid not in DENY_SECRET]
