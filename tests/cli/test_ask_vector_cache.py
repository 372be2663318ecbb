"""``ingest`` keeps the evidence's passage vectors in the data folder and ``ask --local`` reads them (issue 54):
the answers are the same with the file, without it, and with ``evidence.vector_cache`` off."""

from __future__ import annotations

import json
import sqlite3

import pytest
from helpers.cli_run import cli_env, ingest_docs, run_cli

from rags_expert.local.server import local_extra_installed

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(not local_extra_installed(), reason="the 'local' extra or the model is not installed"),
]

PAGES = {
    "client.md": """# Client

The `Client` class sends requests and keeps connections open between them.

## Timeouts

Every request has a connect timeout and a read timeout. The connect timeout defaults to 5 seconds. The read
timeout defaults to 30 seconds: a server that sends nothing for that long fails the request with `ReadTimeout`.

## Connection pooling

Pooling is off by default. When it is on, the pool keeps at most 10 connections per host.
""",
    "retries.md": """# Retries

- `retries`: how many times a failed request is sent again. The default is 3.
- `backoff_factor`: the base of the delay between two attempts, 0.5 seconds by default.
""",
}
QUESTIONS = ("What is the default read timeout?", "What is the default write timeout of the client?")


def rows(path) -> int:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT count(*) FROM vectors").fetchone()[0]


def answers(env) -> list[tuple[int, str, list]]:
    out = []
    for question in QUESTIONS:
        done = run_cli(["ask", "--local", "--json", question], env)
        assert done.returncode in (0, 1), done.stdout + done.stderr
        reply = json.loads(done.stdout)
        out.append((done.returncode, reply["answer"], [s["source"] for s in reply["sources"]]))
    return out


def test_ingest_keeps_the_passage_vectors_and_answers_do_not_depend_on_them(tmp_path):
    env = cli_env(tmp_path / "data")
    data = ingest_docs(tmp_path, PAGES, env)
    kept = data / "vectors.sqlite"
    assert kept.is_file() and rows(kept) > 10  # every unit, heading path and chunk text of both pages
    before = rows(kept)
    with_file = answers(env)
    assert rows(kept) == before  # ingest left nothing for the questions to embed
    assert with_file[0][0] == 0 and "30 seconds" in with_file[0][1]
    assert answers(env | {"RAGS_EXPERT_EVIDENCE__VECTOR_CACHE": "false"}) == with_file
    for path in data.glob("vectors.sqlite*"):
        path.unlink()
    assert answers(env) == with_file  # a deleted file costs time only; the questions fill it again
    assert 0 < rows(kept) < before


def test_ingest_again_embeds_nothing_new(tmp_path):
    env = cli_env(tmp_path / "data")
    ingest_docs(tmp_path, PAGES, env)
    done = run_cli(["ingest", str(tmp_path / "docs")], env)
    assert done.returncode == 0, done.stderr
    assert "passage vectors kept" not in done.stderr


def test_without_ingest_vectors_the_questions_fill_the_file(tmp_path):
    env = cli_env(tmp_path / "data", RAGS_EXPERT_EVIDENCE__INGEST_VECTORS="false")
    data = ingest_docs(tmp_path, PAGES, env)
    assert not (data / "vectors.sqlite").exists()
    answers(env)
    assert rows(data / "vectors.sqlite") > 0
