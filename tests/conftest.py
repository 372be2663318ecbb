"""Shared fixtures: a keyword retriever over in-memory chunks and scripted-model helpers."""

from __future__ import annotations

import os
import uuid
from importlib.util import find_spec

import pytest
from helpers.documents import make_docs
from langchain_core.documents import Document

pytest_plugins = ["helpers.slow_guard", "pytester"]  # slow_guard: a test that starts a process must be marked slow


@pytest.fixture(autouse=True)
def isolated_environment(tmp_path_factory, monkeypatch):
    """Keep tests off the user's data: a fresh data dir, no API key; lesson memory and the speculative draft
    off unless a test enables them (tests of other behaviour count the calls of the unspeculative path;
    tests/rag/answer/test_speculation.py and the termination property run with the draft on)."""
    monkeypatch.setenv("RAGS_EXPERT_DATA_DIR", str(tmp_path_factory.mktemp("data")))
    monkeypatch.setenv("RAGS_EXPERT_LESSONS__ENABLED", "false")
    monkeypatch.setenv("RAGS_EXPERT_SPECULATIVE_DRAFT", "false")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture
def castle_docs() -> list[Document]:
    return make_docs(
        {
            "castle": "Castle Varen was built in 1412 by Duke Albrecht on the river Mura.",
            "bridge": "The Mura bridge was completed in 1890 and rebuilt in 1951.",
            "cheese": "Mura valley cheese is aged for nine months in limestone cellars.",
            "duke": "Duke Albrecht ruled from 1398 to 1431 and founded the town of Varen.",
        }
    )


def _require_postgres() -> None:
    """Skip, with the reason, where no PostgreSQL server can run (fail instead when
    RAGS_EXPERT_TEST_POSTGRES=required, as in .ci/run)."""
    from helpers.pg_server import REQUIRED_ENV, unavailable_reason

    reason = unavailable_reason()
    if reason is None and find_spec("psycopg") is None:
        reason = "the 'postgres' extra is not installed (pip install -e '.[postgres]')"
    if reason is not None:
        if os.environ.get(REQUIRED_ENV) == "required":
            pytest.fail(reason)
        pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL server for the session (tests/helpers/pg_server.py), stopped and deleted after it. Skipped, with
    the reason, where none can run (failed instead when RAGS_EXPERT_TEST_POSTGRES=required, as in .ci/run)."""
    from helpers.pg_server import PostgresServer

    _require_postgres()
    with PostgresServer() as server:
        yield server


@pytest.fixture(scope="module")
def own_postgres():
    """A PostgreSQL server of the test module's own, which its tests may stop and restart (``halt``/``resume``)
    without disturbing the session's server; each test leaves it running."""
    from helpers.pg_server import PostgresServer

    _require_postgres()
    with PostgresServer() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server) -> str:
    """The URL of a fresh database on the session's PostgreSQL server (user and password in it)."""
    return postgres_server.create_database("t_" + uuid.uuid4().hex[:12])
