"""Killing ingestion mid-way (SIGKILL) and running it again leaves exactly one copy of every chunk."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rags_expert.retrieval.ingest import file_records
from rags_expert.retrieval.loaders import iter_files
from rags_expert.retrieval.qdrant import KnowledgeBase, close_client

from .conftest import make_settings


def _stored(data_dir: Path) -> int:
    """Points in the local-mode store, read straight from its SQLite file (the writer holds the client lock)."""
    db = data_dir / "collection" / "test" / "storage.sqlite"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as con:
            return con.execute("select count(*) from points").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


@pytest.mark.slow
def test_sigkill_mid_ingest_then_rerun_converges(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(150):
        body = " ".join(f"Document {i} sentence {j} talks about topic {i * 7 + j}." for j in range(12))
        (docs / f"doc{i:02d}.md").write_text(f"# Doc {i}\n{body}\n")
    data = tmp_path / "data"
    env = {**os.environ, "RAGS_EXPERT_DATA_DIR": str(data), "RAGS_EXPERT_RETRIEVAL__COLLECTION": "test",
           "RAGS_EXPERT_RETRIEVAL__EMBEDDING_PROVIDER": "wordllama", "RAGS_EXPERT_RETRIEVAL__UPSERT_BATCH_SIZE": "1",
           "RAGS_EXPERT_RETRIEVAL__CHUNK_SIZE": "300", "RAGS_EXPERT_RETRIEVAL__CHUNK_OVERLAP": "60"}
    settings = make_settings(data)
    expected = {r.id for p in iter_files([docs]) for r in file_records(p, p.read_bytes(), [], 300, 60)}
    cmd = [sys.executable, "-m", "rags_expert.cli", "ingest", str(docs), "-q"]

    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while _stored(data) < 4 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = _stored(data)
    assert proc.returncode == -signal.SIGKILL
    assert 0 < partial < len(expected), "the kill must land mid-way for this test to mean anything"

    # Change one file too, so the rerun must both finish and replace.
    (docs / "doc00.md").write_text("# Doc 0\nA rewritten first document.\n")
    expected = {r.id for p in iter_files([docs]) for r in file_records(p, p.read_bytes(), [], 300, 60)}
    rerun = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr

    kb = KnowledgeBase(settings)
    try:
        stored = kb.scroll_payloads(["content"])
        ids = [pid for pid, _ in stored]
        assert sorted(ids) == sorted(expected)  # every chunk, once, and nothing stale
        contents = [p["content"] for _, p in stored]
        assert len(contents) == len(set(contents))
    finally:
        close_client(settings)
