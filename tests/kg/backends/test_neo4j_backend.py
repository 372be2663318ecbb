"""Neo4jBackend without a Neo4j server: what can be checked honestly at the Bolt level.

There is no Neo4j here, so queries against a real server are NOT tested. These
tests use a tiny local TCP listener speaking the first steps of Bolt: it checks
that the driver really sends the configured credentials in its HELLO, and that
refused logins and unreachable servers become clean, redacted GraphQueryErrors
(and, through the agent, reflections/results rather than crashes).
"""

from __future__ import annotations

import asyncio
import socket

import pytest

pytest.importorskip("neo4j", reason="the neo4j driver is not installed (kg extra)")

from helpers.kg import SCHEMA_FILE, needs_shared, scripted  # noqa: E402

from rags_expert.kg import GraphQueryError, KGQueryReflexionAgent, Neo4jBackend  # noqa: E402
from rags_expert.outcomes import exit_code
from rags_expert.settings import KGExpertSettings  # noqa: E402

PASSWORD = "s3cret-pw-42"


def _failure(code: str, message: str) -> bytes:
    """A chunked Bolt FAILURE message {code, message} (PackStream, short strings)."""

    def s(text: str) -> bytes:
        raw = text.encode()
        return (bytes([0x80 + len(raw)]) if len(raw) < 16 else b"\xd0" + bytes([len(raw)])) + raw

    body = b"\xb1\x7f\xa2" + s("code") + s(code) + s("message") + s(message)
    return len(body).to_bytes(2, "big") + body + b"\x00\x00"


class FakeBolt:
    """Accepts one Bolt 4.4 connection, records what the client sends, refuses the login."""

    def __init__(self) -> None:
        self.received = bytearray()
        self.handshake = b""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.handshake = await reader.readexactly(20)
        writer.write(bytes([0, 0, 4, 4]))  # agree on Bolt 4.4: credentials travel in HELLO
        await writer.drain()
        try:
            chunk = await asyncio.wait_for(reader.read(4096), 5)
            self.received.extend(chunk)
            writer.write(_failure("Neo.ClientError.Security.Unauthorized", "The client is unauthorized"))
            await writer.drain()
            await asyncio.wait_for(reader.read(4096), 1)
        except (TimeoutError, ConnectionError):
            pass
        writer.close()


async def test_credentials_are_sent_in_the_bolt_hello_and_never_leak():
    fake = FakeBolt()
    server = await asyncio.start_server(fake.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    backend = Neo4jBackend(f"bolt://127.0.0.1:{port}", "alice", PASSWORD, connection_timeout=3)
    try:
        with pytest.raises(GraphQueryError) as info:
            await backend.run_read("MATCH (n) RETURN n", timeout=2, max_rows=5)
    finally:
        await backend.close()
        server.close()
    assert fake.handshake[:4] == bytes.fromhex("6060b017")
    hello = bytes(fake.received)
    assert b"\xb1\x01" in hello  # a HELLO message
    assert b"principal\x85alice" in hello and b"credentials\x8c" + PASSWORD.encode() in hello
    assert info.value.kind == "auth"
    assert PASSWORD not in str(info.value) and PASSWORD not in repr(info.value)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_unreachable_server_is_a_clean_connection_error():
    backend = Neo4jBackend(
        f"bolt://127.0.0.1:{_free_port()}", "neo4j", PASSWORD, connection_timeout=2, max_retry_time=0
    )
    with pytest.raises(GraphQueryError) as info:
        await backend.run_read("MATCH (n) RETURN n", timeout=2, max_rows=5)
    await backend.close()
    assert info.value.kind == "connection" and PASSWORD not in str(info.value)


async def test_bad_uri_is_a_clean_error():
    with pytest.raises(GraphQueryError) as info:
        await Neo4jBackend("ftp://nowhere:1", "neo4j", PASSWORD).start()
    assert info.value.kind == "connection" and PASSWORD not in str(info.value)


@needs_shared
async def test_agent_on_unreachable_neo4j_ends_with_a_result():
    backend = Neo4jBackend(
        f"bolt://127.0.0.1:{_free_port()}", "neo4j", PASSWORD, connection_timeout=1, max_retry_time=0
    )
    model = scripted(lambda prompt: "MATCH (g:Gene) RETURN g.name", scores=0.0)
    settings = KGExpertSettings(kg={"max_steps": 2, "neo4j_password": PASSWORD})
    agent = KGQueryReflexionAgent(model, backend, SCHEMA_FILE, schema_name="gene_kg", settings=settings)
    result = await agent.execute("List genes")
    await backend.close()
    assert result.exit_reason == "backend_error" and result.query is None and not result.rows
    assert all(a["error_kind"] == "connection" for a in result.attempts)
    assert exit_code(result.end()) == 2  # the database's fault, not an honest "no rows"
    assert PASSWORD not in str(result.to_dict())


def test_settings_build_a_neo4j_backend_with_the_secret():
    settings = KGExpertSettings(kg={"backend": "neo4j", "neo4j_uri": "bolt://db:7687", "neo4j_password": PASSWORD})
    from rags_expert.kg import backend_from_settings

    backend = backend_from_settings(settings.kg)
    assert isinstance(backend, Neo4jBackend) and backend.uri == "bolt://db:7687"
    assert PASSWORD not in repr(settings) and PASSWORD in settings.secrets()
