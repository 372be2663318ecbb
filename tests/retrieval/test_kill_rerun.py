"""Killing ingestion mid-way (SIGKILL) and running it again leaves exactly one copy of every chunk."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from helpers.knowledge_base import make_settings

from rags_expert.retrieval.ingest import file_records
from rags_expert.retrieval.loaders import iter_files
from rags_expert.retrieval.qdrant import KnowledgeBase, close_client

# The killed run reports its progress (chunks stored) on stdout, one line per batch, so the test can kill it
# mid-way whatever the engine's on-disk format.
INGEST_WITH_PROGRESS = """
import sys
from pathlib import Path
from rags_expert.retrieval.ingest import Ingestor
from rags_expert.retrieval.qdrant import KnowledgeBase
from rags_expert.settings import RagsExpertSettings
kb = KnowledgeBase(RagsExpertSettings())
Ingestor(kb, progress=lambda n: print(n, flush=True)).run([Path(sys.argv[1])])
"""


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["edge", "local"])
def test_sigkill_mid_ingest_then_rerun_converges(tmp_path, engine):
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(150):
        body = " ".join(f"Document {i} sentence {j} talks about topic {i * 7 + j}." for j in range(12))
        (docs / f"doc{i:02d}.md").write_text(f"# Doc {i}\n{body}\n")
    data = tmp_path / "data"
    env = {
        **os.environ,
        "RAGS_EXPERT_DATA_DIR": str(data),
        "RAGS_EXPERT_STORE__COLLECTION": "test",
        "RAGS_EXPERT_EMBEDDINGS__PROVIDER": "wordllama",
        "RAGS_EXPERT_INGESTION__UPSERT_BATCH_SIZE": "1",
        "RAGS_EXPERT_INGESTION__CHUNK_SIZE": "300",
        "RAGS_EXPERT_INGESTION__CHUNK_OVERLAP": "60",
        "RAGS_EXPERT_STORE__ENGINE": engine,
    }
    settings = make_settings(data, engine=engine)
    expected = {r.id for p in iter_files([docs]) for r in file_records(p, p.read_bytes(), [], 300, 60)}

    proc = subprocess.Popen(
        [sys.executable, "-c", INGEST_WITH_PROGRESS, str(docs)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    reported = 0
    for line in proc.stdout:  # kill as soon as a few chunks are stored
        reported += int(line)
        if reported >= 4:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    kb = KnowledgeBase(settings)
    partial = kb.count()
    close_client(settings.store)
    assert reported <= partial < len(expected), "the kill must land mid-way for this test to mean anything"

    # Change one file too, so the rerun must both finish and replace.
    (docs / "doc00.md").write_text("# Doc 0\nA rewritten first document.\n")
    expected = {r.id for p in iter_files([docs]) for r in file_records(p, p.read_bytes(), [], 300, 60)}
    cmd = [sys.executable, "-m", "rags_expert.cli", "ingest", str(docs), "-q"]
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
        close_client(settings.store)
