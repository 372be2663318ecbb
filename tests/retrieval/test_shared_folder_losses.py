"""Several real processes on one data folder lose nothing (issue 34): every file's chunks exactly once, every run
exits 0 or says one clear line.

Before the folder lock (``lease.FolderLock``), two ``ingest`` runs at once could read a segment the other was
rewriting: one exited 2 with Qdrant's raw engine error, the other exited 0, and chunks of files both had
stored were gone. Each scenario below runs real ``rags-expert`` processes (``python -m rags_expert.cli``) on
one data folder, with the tests' OpenAI-compatible embeddings and chat servers on 127.0.0.1, then reads the
store back and compares it, file by file, with the chunk ids the files should have.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from helpers.cli_run import ROOT, cli_env, run_cli
from helpers.embedding_server import GATE, EmbeddingServer
from helpers.openai_server import OpenAIServer, castle_script

from rags_expert.retrieval.ingest import IngestIncompleteError, Ingestor, file_records
from rags_expert.retrieval.qdrant import KnowledgeBase, close_client
from rags_expert.settings import KnowledgeBaseSettings

pytestmark = pytest.mark.slow

WORDS = [
    "harbour",
    "tower",
    "river",
    "bridge",
    "market",
    "castle",
    "garden",
    "library",
    "mill",
    "chapel",
    "gate",
    "wall",
    "road",
    "square",
    "fountain",
    "archive",
    "workshop",
    "forge",
    "granary",
    "quay",
    "lantern",
    "orchard",
    "vineyard",
    "meadow",
    "cellar",
    "stable",
]
STRESS_S = float(os.environ.get("RAGS_EXPERT_STRESS_S", "60"))
"""How long the stress test runs its loops (a minute by default)."""


def _write_docs(folder: Path, n: int, prefix: str, seed: int, sentences: int = 60) -> Path:
    """``n`` text files of ``sentences`` distinct sentences each (several chunks a file)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        lines = [
            f"The {rng.choice(WORDS)} of {prefix} {i} number {j} stands by the {rng.choice(WORDS)} "
            f"since {1000 + rng.randrange(900)}."
            for j in range(sentences)
        ]
        (folder / f"{prefix}{i:03d}.txt").write_text(" ".join(lines) + "\n")
    return folder


def _env(data: Path, emb: EmbeddingServer, chat: OpenAIServer | None = None, **extra: str) -> dict[str, str]:
    """A CLI environment on ``data`` with the fast embeddings server (and a scripted chat model)."""
    chat_env = {"RAGS_EXPERT_LLM__BASE_URL": chat.base_url, "RAGS_EXPERT_LLM__API_KEY": "sk-test"} if chat else {}
    return {
        **cli_env(data, **chat_env),
        "RAGS_EXPERT_EMBEDDINGS__PROVIDER": "openai",
        "RAGS_EXPERT_EMBEDDINGS__BASE_URL": emb.base_url,
        "RAGS_EXPERT_EMBEDDINGS__API_KEY": "sk-test",
        "RAGS_EXPERT_INGESTION__UPSERT_BATCH_SIZE": "4",  # many small writes: many turns between the processes
        **extra,
    }


def _popen(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "rags_expert.cli", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def _clear(done: subprocess.CompletedProcess | tuple[int, str, str]) -> str | None:
    """None when a run exited 0 (or 1, an honest not-found); else what it printed, for the assertion message."""
    rc, out, err = (done.returncode, done.stdout, done.stderr) if not isinstance(done, tuple) else done
    return None if rc in (0, 1) and "Traceback" not in err else f"rc {rc}: {out[-500:]} {err[-1500:]}"


def assert_exactly_once(data: Path, folders: list[Path]) -> int:
    """Every file under ``folders`` has exactly its chunks in the store of ``data``, and nothing else is there."""
    settings = KnowledgeBaseSettings(store={"data_dir": data}, embeddings={"provider": "wordllama"})
    size, overlap = settings.ingestion.chunk_size, settings.ingestion.chunk_overlap
    expected: dict[str, set[str]] = {}
    for folder in folders:
        for path in sorted(folder.iterdir()):
            records = file_records(path, path.read_bytes(), [], size, overlap)
            expected[str(path.resolve())] = {r.id for r in records}
    kb = KnowledgeBase(settings)
    try:
        stored = kb.scroll_payloads(["source"])
        total = kb.count()
    finally:
        close_client(settings.store)
    by_source: dict[str, list[str]] = {}
    for pid, payload in stored:
        by_source.setdefault(payload.get("source") or "", []).append(pid)
    lacking = {s: len(ids - set(by_source.get(s, []))) for s, ids in expected.items()}
    lacking = {Path(s).name: n for s, n in lacking.items() if n}
    extra = {Path(s).name: len(set(ids) - expected.get(s, set())) for s, ids in by_source.items()}
    extra = {s: n for s, n in extra.items() if n}
    doubled = [pid for pid, n in Counter(pid for pid, _ in stored).items() if n > 1]
    assert not lacking, f"chunks missing from the store, per file: {lacking}"
    assert not extra, f"chunks in the store that no file has: {extra}"
    assert not doubled
    want = sum(len(ids) for ids in expected.values())
    assert total == len(stored) == want
    return want


def test_two_ingests_at_once_of_one_folder_lose_nothing(tmp_path):
    """The first probe: two ``ingest`` runs of the same 40-file folder into a knowledge base holding other files."""
    data = tmp_path / "data"
    other = _write_docs(tmp_path / "other", 10, "other", seed=1)
    folders = [other]
    with EmbeddingServer() as emb:
        env = _env(data, emb)
        assert run_cli(["ingest", str(other), "-q"], env).returncode == 0
        for round_ in range(3):  # the loss showed in about half the runs: three rounds, each a new folder
            forty = _write_docs(tmp_path / f"forty{round_}", 40, f"f{round_}-", seed=10 + round_)
            folders.append(forty)
            runs = [_popen(["ingest", str(forty), "-q"], env) for _ in range(2)]
            for run in runs:
                out, err = run.communicate(timeout=300)
                assert run.returncode == 0, f"rc {run.returncode}: {err[-1500:]}"
                assert "Traceback" not in err
            assert_exactly_once(data, folders)


def test_ask_and_search_while_ingest_runs_lose_nothing(tmp_path):
    """The second probe: ``ask`` and ``search`` one after another for as long as an ingest of a larger folder runs."""
    data = tmp_path / "data"
    first = tmp_path / "first"
    first.mkdir()
    (first / "castle.txt").write_text("Castle Varen was built in 1412 on the river bank.")
    big = _write_docs(tmp_path / "big", 90, "big", seed=7)
    # embeddings as slow as a small local model, in the default batches: the ingest holds the folder between them
    with EmbeddingServer(delay_per_text=0.01) as emb, OpenAIServer(castle_script) as chat:
        env = _env(data, emb, chat, RAGS_EXPERT_INGESTION__UPSERT_BATCH_SIZE="64")
        assert run_cli(["ingest", str(first), "-q"], env).returncode == 0
        ingest = _popen(["ingest", str(big), "-q"], env)
        faults: list[str] = []
        rounds = 0
        while ingest.poll() is None or rounds < 3:
            for args in (["search", "castle built", "-k", "3"], ["ask", "When was Castle Varen built?", "-q"]):
                done = run_cli(args, env)
                if (fault := _clear(done)) is not None:
                    faults.append(f"{args[0]}: {fault}")
                elif args[0] == "ask":
                    assert "1412" in done.stdout, done.stdout
            rounds += 1
        out, err = ingest.communicate(timeout=300)
    assert ingest.returncode == 0, err[-1500:]
    assert not faults, faults
    assert_exactly_once(data, [first, big])


def test_stress_two_ingest_loops_a_search_loop_and_an_ask_loop_for_a_minute(tmp_path):
    """Two ingest loops over overlapping folders (each adding a file of its own every round), a search loop and an
    ask loop on one data folder for :data:`STRESS_S` seconds; then every file is there exactly once."""
    data = tmp_path / "data"
    shared = _write_docs(tmp_path / "shared", 12, "shared", seed=3)
    own = [_write_docs(tmp_path / f"own{k}", 4, f"own{k}-", seed=20 + k) for k in range(2)]
    (shared / "castle.txt").write_text("Castle Varen was built in 1412 on the river bank.")
    faults: list[str] = []
    counts: Counter[str] = Counter()
    with EmbeddingServer(delay_per_text=0.005) as emb, OpenAIServer(castle_script) as chat:
        env = _env(data, emb, chat)
        assert run_cli(["ingest", str(shared), "-q"], env).returncode == 0
        deadline = time.monotonic() + STRESS_S
        loops: dict[str, subprocess.Popen | None] = {"ingest0": None, "ingest1": None, "search": None, "ask": None}
        while True:
            for name, proc in list(loops.items()):
                if proc is not None and proc.poll() is None:
                    continue
                if proc is not None:
                    out, err = proc.communicate()
                    if (fault := _clear((proc.returncode, out, err))) is not None:
                        faults.append(f"{name}: {fault}")
                    if name.startswith("ingest") and proc.returncode != 0:
                        faults.append(f"{name} exited {proc.returncode}")
                    counts[name] += 1
                if time.monotonic() >= deadline:
                    loops[name] = None
                    continue
                if name.startswith("ingest"):
                    k = int(name[-1])
                    _write_docs(
                        own[k], 1, f"round{counts[name]:03d}-own{k}-", seed=100 * k + counts[name], sentences=30
                    )
                    loops[name] = _popen(["ingest", str(own[k]), str(shared), "-q"], env)
                elif name == "search":
                    loops[name] = _popen(["search", "the harbour of shared 3", "-k", "5"], env)
                else:
                    loops[name] = _popen(["ask", "When was Castle Varen built?", "-q"], env)
            if all(p is None for p in loops.values()):
                break
            time.sleep(0.05)
    assert not faults, faults[:5]
    assert min(counts.values()) >= 2, counts  # every loop went round more than once
    assert_exactly_once(data, [shared, *own])


DELETE = """
import sys
from qdrant_client import models
from rags_expert.retrieval.qdrant import KnowledgeBase
from rags_expert.settings import RagsExpertSettings

kb = KnowledgeBase(RagsExpertSettings())
kb.delete(models.Filter(must=[models.FieldCondition(key="source", match=models.MatchValue(value=sys.argv[1]))]))
"""


def test_ingest_reads_its_chunks_back_and_writes_again_what_another_process_removed(tmp_path):
    """Chunks of a file that vanish while the ingest runs (here another process deletes them) are written again
    before the ingest says done, and the summary says so."""
    data = tmp_path / "data"
    docs = _write_docs(tmp_path / "docs", 3, "doc", seed=5)
    (docs / "zz_last.txt").write_text(f"The {GATE} tower of Varen is red.")
    script = tmp_path / "delete.py"
    script.write_text(DELETE)
    with EmbeddingServer() as emb:
        env = _env(data, emb)
        ingest = _popen(["ingest", str(docs)], env)
        try:
            assert emb.gated.wait(120), "the ingest never reached its last file"
            first = str((docs / "doc000.txt").resolve())
            deleted = subprocess.run([sys.executable, str(script), first], env=env, capture_output=True, text=True)
            assert deleted.returncode == 0, deleted.stderr
        finally:
            emb.release()
            out, err = ingest.communicate(timeout=120)
    assert ingest.returncode == 0, err
    assert f"1 file(s) had chunks missing from the store after writing, writing them again: {first}" in err
    assert ", 1 written again) into 'rags_expert'" in out
    assert_exactly_once(data, [docs])


def test_ingest_that_cannot_store_a_file_fails_naming_it(tmp_path):
    """A store that keeps losing one file's chunks: the ingest fails naming the file instead of saying done."""
    docs = _write_docs(tmp_path / "docs", 2, "doc", seed=6)
    settings = KnowledgeBaseSettings(store={"data_dir": tmp_path / "data"}, embeddings={"provider": "wordllama"})
    lost = str((docs / "doc001.txt").resolve())

    class LosingKnowledgeBase(KnowledgeBase):
        def upsert(self, points):
            super().upsert([p for p in points if (p.payload or {}).get("source") != lost])

    try:
        with pytest.raises(IngestIncompleteError) as caught:
            Ingestor(LosingKnowledgeBase(settings)).run([docs])
    finally:
        close_client(settings.store)
    assert str(caught.value).endswith(
        f"still missing from the store after writing them twice: {lost}; run the same ingest again"
    )


def test_a_damaged_shard_is_one_line_saying_what_to_do(tmp_path):
    """Files of the shard changed behind the engine's back: one line, exit 2, no raw engine error."""
    data = tmp_path / "data"
    docs = _write_docs(tmp_path / "docs", 2, "doc", seed=8)
    with EmbeddingServer() as emb:
        env = _env(data, emb)
        assert run_cli(["ingest", str(docs), "-q"], env).returncode == 0
        for path in (data / "edge").rglob("*"):
            if path.is_file() and path.parent.name != "wal" and path.suffix != ".json" and path.stat().st_size:
                path.write_bytes(b"\0" * 7)
        searched = run_cli(["search", "harbour"], env)
    assert searched.returncode == 2, searched.stdout + searched.stderr
    assert "Traceback" not in searched.stderr and "Service runtime error" not in searched.stderr
    lines = searched.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: the knowledge base in {data / 'edge' / 'rags_expert'} "), (
        lines
    )
    assert "restore them or ingest again into a fresh data folder (store.data_dir)" in lines[0]
