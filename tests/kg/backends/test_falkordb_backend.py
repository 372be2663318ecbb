"""The embedded FalkorDB process: start, persistence, loopback TCP, clean shutdown, no orphan."""

from __future__ import annotations

import os
import socket

import pytest
from helpers.kg import session_loop

from rags_expert.kg import FalkorDBBackend, GraphQueryError

pytestmark = session_loop


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone for our purposes only once reaped; check /proc state
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.slow
async def test_embedded_server_stops_cleanly_and_removes_its_socket(falkordb_reason):
    backend = FalkorDBBackend("t")
    await backend.start()
    pid, tmp = backend.pid, backend.server.workdir
    assert pid and alive(pid) and os.path.isdir(tmp)
    await backend.execute_write("CREATE (:Gene {name: 'X'})")
    assert (await backend.run_read("MATCH (g:Gene) RETURN g.name", timeout=5, max_rows=5)).rows == [{"g.name": "X"}]
    await backend.close()
    assert not alive(pid) and not os.path.exists(tmp)
    await backend.close()  # idempotent


@pytest.mark.slow
async def test_data_dir_persists_the_graph_across_restarts(falkordb_reason, tmp_path):
    async with FalkorDBBackend("p", data_dir=tmp_path) as backend:
        await backend.execute_write("CREATE (:Organ {name: 'brain'})")
    assert (tmp_path / "falkordb.rdb").is_file()
    async with FalkorDBBackend("p", data_dir=tmp_path) as backend:
        rows = (await backend.run_read("MATCH (o:Organ) RETURN o.name", timeout=5, max_rows=5)).rows
    assert rows == [{"o.name": "brain"}]


@pytest.mark.slow
async def test_loopback_port_and_connecting_to_a_running_server(falkordb_reason):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    async with FalkorDBBackend("t", port=port) as server:
        await server.execute_write("CREATE (:Gene {name: 'Y'})")
        client = FalkorDBBackend("t", host="127.0.0.1", port=port)  # connects, starts nothing
        rows = (await client.run_read("MATCH (g:Gene) RETURN g.name", timeout=5, max_rows=5)).rows
        assert rows == [{"g.name": "Y"}] and client.pid is None
        await client.close()
        assert (await server.run_read("RETURN 1 AS one", timeout=5, max_rows=1)).rows == [{"one": 1}]


async def test_unreachable_running_server_is_a_clean_error(falkordb_reason):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    backend = FalkorDBBackend("t", host="127.0.0.1", port=port, password="pw-never-shown")
    with pytest.raises(GraphQueryError) as info:
        await backend.start()
    assert info.value.kind == "connection" and "pw-never-shown" not in str(info.value)


async def test_missing_graph_is_explained(falkordb):
    with pytest.raises(GraphQueryError, match="does not exist"):
        await falkordb.for_graph("no_such_graph").run_read("MATCH (n) RETURN n", timeout=5, max_rows=5)


@pytest.mark.slow
async def test_embedded_password_is_required_and_never_on_the_command_line(falkordb_reason):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    async with FalkorDBBackend("t", port=port, password="pw-secret-123") as server:
        await server.execute_write("CREATE (:Gene {name: 'Y'})")
        assert (await server.run_read("MATCH (g:Gene) RETURN g.name", timeout=5, max_rows=5)).rows == [{"g.name": "Y"}]
        cmdline = open(f"/proc/{server.pid}/cmdline", "rb").read().decode()
        assert "pw-secret-123" not in cmdline
        intruder = FalkorDBBackend("t", host="127.0.0.1", port=port, password="wrong")
        with pytest.raises(GraphQueryError) as info:
            await intruder.start()
        assert "wrong" not in str(info.value) and "pw-secret-123" not in str(info.value)
