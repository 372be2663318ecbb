"""Two real processes on one data folder (issue 23): turns between them, and one clear line when the wait runs out.

The embedded stores let one process at a time hold a folder; each process holds it only while it uses
it (``rags_expert/retrieval/lease.py``). The ingest below stops between two of its files on an embeddings
server that answers a marked text only when the test says so, so nothing here waits on a clock.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.cli_run import ROOT, cli_env, ingest_docs, run_cli
from helpers.embedding_server import GATE, EmbeddingServer
from helpers.openai_server import OpenAIServer, castle_script

from rags_expert.retrieval import lease
from rags_expert.retrieval.lease import HOLDER, busy_message, process_label
from rags_expert.retrieval.qdrant import KnowledgeBase, close_client
from rags_expert.settings import KnowledgeBaseSettings

CASTLE = {"castle.txt": "Castle Varen was built in 1412 on the river bank."}
QUESTION = "When was Castle Varen built?"

HOLD = """
import sys
from rags_expert.retrieval.qdrant import KnowledgeBase, get_client
from rags_expert.settings import RagsExpertSettings

settings = RagsExpertSettings()
if sys.argv[1] == "lessons":  # the lesson memory's folder (qdrant-client local mode in data_dir)
    client, lease = get_client(settings.store)
    with lease:
        client.get_collections()
        print("held", flush=True)
        sys.stdin.readline()
else:  # the knowledge base, in the middle of a (long) store call
    kb = KnowledgeBase(settings)
    with kb.lock:
        kb.count()
        print("held", flush=True)
        sys.stdin.readline()
"""


def _docs(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def _holding(tmp_path: Path, what: str, env: dict[str, str]) -> subprocess.Popen:
    """A process (``hold_store.py``) that holds the knowledge base or the lessons' folder until its stdin closes."""
    script = tmp_path / "hold_store.py"
    script.write_text(HOLD)
    holder = subprocess.Popen(
        [sys.executable, str(script), what], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def _release(holder: subprocess.Popen) -> None:
    assert holder.stdin is not None
    holder.stdin.close()
    assert holder.wait(60) == 0


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["edge", "local"])
def test_ask_answers_while_ingest_runs_on_the_same_folder(tmp_path, engine):
    first = _docs(tmp_path / "first", CASTLE)
    later = _docs(
        tmp_path / "later",
        {"a.txt": "The harbour of Varen has three piers.", "b.txt": f"The {GATE} tower of Varen is red."},
    )
    data = tmp_path / "data"
    with EmbeddingServer() as emb, OpenAIServer(castle_script) as chat:
        env = {
            **cli_env(data, RAGS_EXPERT_LLM__BASE_URL=chat.base_url, RAGS_EXPERT_LLM__API_KEY="sk-test"),
            "RAGS_EXPERT_EMBEDDINGS__PROVIDER": "openai",
            "RAGS_EXPERT_EMBEDDINGS__BASE_URL": emb.base_url,
            "RAGS_EXPERT_EMBEDDINGS__API_KEY": "sk-test",
            "RAGS_EXPERT_STORE__ENGINE": engine,
        }
        assert run_cli(["ingest", str(first), "-q"], env).returncode == 0
        # the ingest would keep the folder for an hour when idle: only the waiting ask makes it let go
        ingest = subprocess.Popen(
            [sys.executable, "-m", "rags_expert.cli", "ingest", str(later), "-q"],
            env={**env, "RAGS_EXPERT_STORE__IDLE_RELEASE_S": "3600"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        try:
            assert emb.gated.wait(120), "the ingest never reached its second file"
            held = data / "edge" if engine == "edge" else data
            assert f'"pid": {ingest.pid}' in (held / HOLDER).read_text()  # it holds the folder now
            asked = run_cli(["ask", QUESTION, "-q"], env)
            assert ingest.poll() is None  # the ingest is still running, between two files
        finally:
            emb.release()
            out, err = ingest.communicate(timeout=120)
    assert asked.returncode == 0, asked.stdout + asked.stderr
    assert "1412" in asked.stdout
    assert ingest.returncode == 0, err
    assert out.startswith("2 files, 2 chunks (2 new")
    with EmbeddingServer() as emb:
        found = run_cli(["search", "tower", "--json"], {**env, "RAGS_EXPERT_EMBEDDINGS__BASE_URL": emb.base_url})
    assert found.returncode == 0, found.stderr
    assert "red" in found.stdout and "1412" in found.stdout  # both ingests stored everything


def _busy_env(data: Path, **extra: str) -> dict[str, str]:
    return {**cli_env(data, RAGS_EXPERT_STORE__LOCK_WAIT_S="0.5", RAGS_EXPERT_LLM__API_KEY="sk-test"), **extra}


def _busy_line(data: Path, holder: subprocess.Popen, folder: Path | None = None) -> str:
    return (
        f"the data folder {folder or data} is in use by hold_store.py, pid {holder.pid} and was still busy after "
        "0.5 s (store.lock_wait_s): wait for it to finish, stop it, or use a Qdrant server (store.url)"
    )


@pytest.mark.slow
def test_ingest_and_search_past_the_wait_get_one_line_naming_the_holder(tmp_path):
    data = ingest_docs(tmp_path, CASTLE)
    env = _busy_env(data)
    holder = _holding(tmp_path, "kb", env)
    try:
        ingested = run_cli(["ingest", str(tmp_path / "docs"), "-q"], env)
        searched = run_cli(["search", "castle"], env)
    finally:
        _release(holder)
    for done in (ingested, searched):
        assert done.returncode == 2
        assert done.stderr == f"error: {_busy_line(data, holder)}\n"
    assert run_cli(["search", "castle"], env).returncode == 0  # free again once the holder is gone


@pytest.mark.slow
def test_ask_past_the_wait_is_an_honest_failure_naming_the_holder(tmp_path):
    data = ingest_docs(tmp_path, CASTLE)
    with OpenAIServer(castle_script) as chat:
        env = _busy_env(data, RAGS_EXPERT_LLM__BASE_URL=chat.base_url)
        holder = _holding(tmp_path, "kb", env)
        try:
            asked = run_cli(["ask", QUESTION, "-q"], env)
        finally:
            _release(holder)
    assert asked.returncode == 2
    assert asked.stdout.strip() == (
        f'I could not answer "{QUESTION}" because the knowledge base failed (StoreBusyError): '
        f"{_busy_line(data, holder)}"
    )
    assert "Traceback" not in asked.stderr


@pytest.mark.slow
def test_lessons_past_the_wait_are_skipped_with_one_line_naming_the_holder(tmp_path):
    """The lesson memory is an aid: a question still gets its answer, and the warning says who holds the folder
    (which the lesson check opens only when it holds a lessons collection: a folder without one is not waited for)."""
    from qdrant_client import QdrantClient, models

    data = ingest_docs(tmp_path, CASTLE)
    client = QdrantClient(path=str(data))  # an empty lessons collection: the check must open the folder to count
    client.create_collection("rags_expert_lessons", vectors_config=models.VectorParams(size=4, distance="Cosine"))
    client.close()
    with OpenAIServer(castle_script) as chat:
        env = _busy_env(data, RAGS_EXPERT_LLM__BASE_URL=chat.base_url, RAGS_EXPERT_LESSONS__ENABLED="true")
        holder = _holding(tmp_path, "lessons", env)
        try:
            asked = run_cli(["ask", QUESTION, "-q"], env)
        finally:
            _release(holder)
    assert asked.returncode == 0, asked.stdout + asked.stderr
    assert "1412" in asked.stdout
    assert f"lesson recall failed: StoreBusyError: {_busy_line(data, holder)}" in asked.stderr
    assert "Traceback" not in asked.stderr


@pytest.mark.slow
def test_an_idle_process_lets_another_process_in(tmp_path):
    """A long-lived process (a host) that used the store keeps it only until another process asks for it."""
    data = ingest_docs(tmp_path, CASTLE)
    settings = KnowledgeBaseSettings(
        store={"data_dir": data, "idle_release_s": 3600}, embeddings={"provider": "wordllama"}
    )
    kb = KnowledgeBase(settings)
    try:
        assert kb.count() == 1  # this process holds the folder now, idle
        searched = run_cli(["search", "castle", "--json"], cli_env(data))
        assert searched.returncode == 0, searched.stderr
        assert "1412" in searched.stdout
        assert kb.count() == 1  # and gets it back
    finally:
        close_client(settings.store)


def test_the_holder_is_named_by_its_subcommand_never_its_arguments():
    assert process_label(["/venv/bin/rags-expert", "ask", "--base-url", "http://u:pw@h/v1", "q"]) == "rags-expert ask"
    assert process_label(["/src/rags_expert/cli.py", "-q", "ingest", "docs"]) == "rags-expert ingest"
    assert process_label(["/venv/bin/rags-expert", "http://u:pw@h"]) == "rags-expert"
    assert process_label(["/venv/bin/langgraph", "dev"]) == "langgraph"
    assert process_label(["-c"]) == "python"


@pytest.mark.slow
def test_a_holder_file_left_by_a_dead_process_names_no_one(tmp_path):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / HOLDER).write_text(json.dumps({"pid": int(gone.stdout), "command": "rags-expert ingest"}))
    assert lease.holder(tmp_path) is None
    assert " is in use by another process and " in busy_message(tmp_path, tmp_path, 1)


CREATE = """
import sys, time
from pathlib import Path
from rags_expert.retrieval.qdrant import KnowledgeBase
from rags_expert.settings import RagsExpertSettings

kb = KnowledgeBase(RagsExpertSettings())
kb.embeddings  # loaded before the start, so the processes reach the store together
go = Path(sys.argv[1])
while not go.exists():
    time.sleep(0.001)
kb.ensure_collection()
print("created", flush=True)
"""


@pytest.mark.slow
def test_processes_creating_one_collection_at_once_all_succeed(tmp_path):
    """Three processes create the knowledge base of one fresh data folder at the same instant (the first
    `ingest` of several at once): each takes its turn on the folder, none fails, and the folder then takes an
    ingest as usual."""
    data, go = tmp_path / "data", tmp_path / "go"
    env = cli_env(data)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CREATE, str(go)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    time.sleep(3)  # each has loaded its embedding model and waits for the start
    go.touch()
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err[-600:] for _, err in outs]
    assert all(out.strip() == "created" for out, _ in outs)
    done = run_cli(["ingest", str(_docs(tmp_path / "docs", CASTLE))], env)
    assert done.returncode == 0, done.stderr
    assert "1 chunks" in done.stdout or "1 chunk" in done.stdout, done.stdout


class _SlowShard:
    """A real shard whose flush waits until the test lets it go (a close in progress)."""

    def __init__(self, shard, flushing, go):
        self.shard, self.flushing, self.go = shard, flushing, go

    def flush(self):
        self.flushing.set()
        assert self.go.wait(30)
        self.shard.flush()

    def close(self):
        self.shard.close()


def test_the_exit_close_waits_for_a_release_in_progress_before_the_folder_lock_goes(tmp_path):
    """At interpreter exit the stores close under their leases' locks: while the lease's watcher thread is
    still flushing a shard, the folder's lock stays held, so the next process never reads a half-closed shard.
    (Closing beside the watcher let the lock go at once: three processes creating one fresh folder's knowledge
    base at the same instant: one of them once failed in CI on the half-closed shard.)"""
    import threading

    from rags_expert.retrieval import qdrant
    from rags_expert.retrieval.edge import EdgeStore
    from rags_expert.retrieval.lease import FolderLock, Lease

    root = tmp_path / "edge"
    store = EdgeStore(root, wait_s=5)
    store.create("kb", 4, {"embedding_model": "m"})
    flushing, go = threading.Event(), threading.Event()
    store._shards["kb"] = _SlowShard(store._shards["kb"], flushing, go)
    lease_ = Lease(store.close, store.is_open, root, 60)
    key = ("edge-test", str(root))
    with qdrant._CLIENTS_LOCK:
        qdrant._CLIENTS[key] = (store, lease_)
    watcher = threading.Thread(target=lease_.release_now)  # as the lease's watcher releases an idle store
    watcher.start()
    assert flushing.wait(30)
    at_exit = threading.Thread(target=qdrant._close_all)
    at_exit.start()
    at_exit.join(0.5)
    other = FolderLock(root)
    try:
        assert at_exit.is_alive(), "the exit close returned while the shard was still being flushed"
        assert not other.try_acquire(), "the folder's lock went while a shard was still being flushed"
    finally:
        go.set()
        watcher.join(30)
        at_exit.join(30)
    assert not store.is_open()
    assert other.try_acquire()
    other.release()
    reopened = EdgeStore(root)
    try:
        assert reopened.count("kb") == 0  # the shard closed whole: it opens again
    finally:
        reopened.close()


WAIT = """
from rags_expert.retrieval.qdrant import KnowledgeBase
from rags_expert.settings import RagsExpertSettings

KnowledgeBase(RagsExpertSettings()).count()  # waits: another process holds the folder
"""


def _want_files(data: Path) -> list[Path]:
    return sorted(data.rglob(f"{lease.WANT}*"))


def _killed_waiter(tmp_path: Path, data: Path, env: dict[str, str]) -> None:
    """A process that waits for ``data`` (held by another) and is killed while it waits, its want file left behind.

    It runs as pid 1 of its own pid namespace (``unshare --pid``, as in a container): from outside, pid 1 is
    alive. Where unshare is refused, its want file is renamed after a live pid (a reused pid) instead."""
    script = tmp_path / "wait_store.py"
    script.write_text(WAIT)
    unshare = shutil.which("unshare")
    isolated = (
        bool(unshare) and subprocess.run([unshare, "--pid", "--fork", "true"], capture_output=True).returncode == 0
    )
    command = [sys.executable, str(script)]
    waiter = subprocess.Popen(
        [unshare, "--pid", "--fork", "--kill-child", *command] if isolated and unshare else command, env=env
    )
    deadline = time.monotonic() + 60
    while not _want_files(data) and time.monotonic() < deadline and waiter.poll() is None:
        time.sleep(0.05)
    (want,) = _want_files(data)
    waiter.kill()  # SIGKILL: --kill-child takes the waiter in the namespace with it
    waiter.wait(30)
    time.sleep(0.5)
    if not isolated:
        want = want.rename(want.with_name(f"{lease.WANT}{os.getpid()}"))
    assert want.exists()  # left behind, naming a pid that looks alive from here


@pytest.mark.slow
def test_a_waiter_killed_while_waiting_costs_a_later_search_nothing(tmp_path):
    """A search on a folder whose waiter was killed while it waited is as fast as one on an idle folder (it
    waited the whole store.lock_wait_s for the dead waiter's turn: 34 s instead of 4 s)."""
    (tmp_path / "killed").mkdir()
    (tmp_path / "idle").mkdir()
    data = ingest_docs(tmp_path / "killed", CASTLE)
    idle = ingest_docs(tmp_path / "idle", CASTLE)
    env = cli_env(data, RAGS_EXPERT_STORE__LOCK_WAIT_S="30")
    holder = _holding(tmp_path, "kb", env)
    try:
        _killed_waiter(tmp_path, data, env)
    finally:
        _release(holder)
    timings = {}
    for name, folder in (("idle", idle), ("killed", data)):
        began = time.monotonic()
        searched = run_cli(["search", "castle"], {**env, "RAGS_EXPERT_DATA_DIR": str(folder)})
        timings[name] = time.monotonic() - began
        assert searched.returncode == 0, searched.stderr
        assert "1412" in searched.stdout
    assert timings["killed"] < 3 * timings["idle"], timings


@pytest.mark.slow
def test_a_want_file_counts_only_while_its_waiter_lives(tmp_path):
    """``others_waiting`` sees a live waiter; once the waiter is killed its file no longer counts, whatever the pid
    in its name, and an old one is removed."""
    waiter = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from rags_expert.retrieval.lease import wanting\n"
            "with wanting(Path(sys.argv[1])):\n    print('waiting', flush=True); sys.stdin.readline()",
            str(tmp_path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert waiter.stdout is not None and waiter.stdout.readline() == "waiting\n"
    try:
        assert lease.others_waiting(tmp_path)
    finally:
        waiter.kill()
        waiter.wait(30)
    (want,) = _want_files(tmp_path)
    assert not lease.others_waiting(tmp_path)
    assert want.exists()  # young: left for a moment (a new waiter may be about to lock it)
    os.utime(want, (time.time() - 3600, time.time() - 3600))
    assert not lease.others_waiting(tmp_path)
    assert not want.exists()
    with lease.wanting(tmp_path):
        assert not lease.others_waiting(tmp_path)  # a process never waits for itself
    assert not _want_files(tmp_path)
