"""A real, throwaway PostgreSQL server for tests: ``initdb`` into a fresh directory, started on 127.0.0.1 (a free
port, password authentication) and a private unix-socket directory; stopped and deleted afterwards.

The server binaries come from ``PATH`` or Debian's ``/usr/lib/postgresql/<version>/bin`` (the ``postgresql``
package; ``.ci/run`` installs it when missing). PostgreSQL refuses to run as root: under root the server runs as
the ``postgres`` user (the package creates it), else as ``nobody``, in a directory that user owns.

Usage::

    with PostgresServer() as pg:
        pg.create_database("t1")       # postgresql://rags:<password>@127.0.0.1:<port>/t1
        pg.halt(); pg.resume()         # a database restart: same port, same data
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

USER = "rags"
"""The database superuser the tests connect as."""
REQUIRED_ENV = "RAGS_EXPERT_TEST_POSTGRES"
"""Set to ``required`` (``.ci/run`` does once the server is installed): a missing server fails the tests
instead of skipping them."""


def bin_dir() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl``: on PATH, else Debian's newest, else None."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(on_path).parent
    debian = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0
    )
    return debian[-1].parent if debian else None


def server_user() -> str | None:
    """The user the server runs as: None (this user) unless root, then ``postgres`` or ``nobody``."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    return ""


def unavailable_reason() -> str | None:
    """Why no server can be started here (None when one can)."""
    if bin_dir() is None:
        return (
            "no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in /usr/lib/postgresql/*/bin: install "
            "Debian's 'postgresql' package (.ci/run does: apt-get install -y postgresql)"
        )
    if server_user() == "":
        return "running as root and neither a 'postgres' nor a 'nobody' user exists: PostgreSQL refuses to run as root"
    return None


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """One PostgreSQL server in a temporary directory (see the module docstring); a context manager."""

    def __init__(self) -> None:
        self.password = "pw-" + secrets.token_hex(8)
        self.port = 0
        self.root: Path | None = None
        self.started_in = 0.0
        """Seconds initdb and the start took."""

    @property
    def data(self) -> Path:
        assert self.root is not None, "server not started"
        return self.root / "data"

    def url(self, database: str = "postgres") -> str:
        """``postgresql://rags:<password>@127.0.0.1:<port>/<database>``."""
        return f"postgresql://{USER}:{self.password}@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str) -> subprocess.CompletedProcess:
        binaries = bin_dir()
        assert binaries is not None and self.root is not None
        user = server_user() or None
        done = subprocess.run(
            [str(binaries / args[0]), *args[1:]], user=user, cwd=self.root, capture_output=True, text=True, timeout=120
        )
        if done.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{args[0]} failed ({done.returncode}): {done.stderr.strip()}\n{tail}")
        return done

    def start(self) -> PostgresServer:
        """initdb, then start the server and wait until it accepts connections."""
        if reason := unavailable_reason():
            raise RuntimeError(reason)
        began = time.monotonic()
        self.root = Path(tempfile.mkdtemp(prefix="rags-pg-"))
        user = server_user()
        pwfile = self.root / "pw"
        pwfile.write_text(self.password + "\n")
        if user:
            shutil.chown(self.root, user)
            shutil.chown(pwfile, user)
        self._run(
            "initdb", "-D", str(self.data), "-U", USER, "-E", "UTF8", "--no-sync", "--auth-local=trust",
            "--auth-host=scram-sha-256", f"--pwfile={pwfile}",
        )  # fmt: skip
        pwfile.unlink()
        for attempt in range(3):  # the free port may be taken between the probe and the start
            self.port = free_port()
            try:
                self.resume()
                break
            except RuntimeError:
                if attempt == 2:
                    raise
        self.started_in = time.monotonic() - began
        return self

    def resume(self) -> None:
        """Start the initialised server (again) on its port and data directory; wait until it accepts connections."""
        assert self.root is not None, "server not initialised"
        options = f"-h 127.0.0.1 -k {self.root} -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-w", "-t", "60",
                  "-o", f"{options} -p {self.port}", "start")  # fmt: skip

    def halt(self) -> None:
        """Stop the server (fast shutdown: open sessions get ``AdminShutdown``) and keep its data, so that
        :meth:`resume` starts it again as a database restart or failover would."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def stop(self) -> None:
        """Stop the server (fast shutdown) and delete its directory."""
        if self.root is None:
            return
        try:
            if (self.data / "postmaster.pid").exists():
                self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def create_database(self, name: str) -> str:
        """Create database ``name`` (needs psycopg) and return its URL."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
