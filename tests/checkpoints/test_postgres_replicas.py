"""Two agent processes share a real PostgreSQL checkpointer (issue 14): a thread's follow-up may land on either.

The server is a throwaway PostgreSQL started by the test (tests/helpers/pg_server.py, fixture in conftest.py); the model
is a scripted OpenAI-compatible server in this process (real HTTP, real ChatOpenAI in the replicas); each replica
has its own copy of one embedded knowledge base (an embedded engine is one process per data directory) of 50
towers, each with a year and a builder. A first question names a tower; the follow-up "Who built it?" can only
be answered by condensing it with that thread's history, which the replica answering it never saw in memory.
"""

from __future__ import annotations

import json
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.cli_run import ROOT, cli_env, ingest_docs, run_cli
from helpers.openai_server import OpenAIServer, request_kind, tag_content

pytestmark = [pytest.mark.integration, pytest.mark.slow]

FIRST, SECOND = (
    ["Kal", "Mor", "Ves", "Tan", "Bri", "Dol", "Fen", "Gar", "Hul", "Jor"],
    ["ador", "ibel", "uvin", "esko", "arth"],
)
NAMES = [a + b for b in SECOND for a in FIRST]
"""50 made-up tower names, one token each (Kalador, Morador, ...)."""
FOLLOW_UP = "Who built it?"
THREADS = 50


def builder(name: str) -> str:
    return "Duke " + name[::-1].capitalize()


def year(name: str) -> int:
    return 1300 + NAMES.index(name)


def first_question(name: str) -> str:
    return f"When was Tower {name} built?"


def first_answer(name: str) -> str:
    return f"Tower {name} was built in {year(name)}."


def second_answer(name: str) -> str:
    return f"Tower {name} was built by {builder(name)}."


def names_in(text: str) -> list[str]:
    """The tower names ``text`` mentions."""
    return [n for n in NAMES if re.search(rf"\b{n}\b", text)]


def uncited(text: str) -> str:
    """``text`` without its ``[n]`` citations."""
    return re.sub(r"\s*\[\d+\]", "", text).strip()


def script(body: dict[str, Any]) -> Any:
    """A capable model for the towers: grades by the tower named, condenses "it" from the history, answers from
    the chunk of the tower the question names."""
    kind = request_kind(body)
    if kind == "relevance":
        named = names_in(tag_content(body, "question"))
        return {"relevant": bool(named) and all(n in tag_content(body, "chunk") for n in named)}
    if kind in ("grounded", "useful"):
        return {kind: True}
    if kind == "condense":
        towers = names_in(tag_content(body, "conversation"))
        latest = body["messages"][-1]["content"].rsplit("Latest message:", 1)[-1].split("\n")[0].strip()
        return {"question": f"Who built Tower {towers[0]}?" if len(towers) == 1 else latest}
    if kind == "rephrase":
        return {"query": "tower builder"}
    prompt = body["messages"][-1]["content"]
    question = prompt.rsplit("Question:", 1)[-1].split("\n")[0]
    chunks = re.findall(r'<chunk n="(\d+)"[^>]*>\n(.*?)\n</chunk>', prompt, re.S)
    for name in names_in(question):
        for n, chunk in chunks:
            if name in chunk:
                fact = second_answer(name) if question.strip().startswith("Who") else first_answer(name)
                return fact[:-1] + f" [{n}]."
    return "The chunks do not say."


@pytest.fixture(scope="module")
def replicas(tmp_path_factory) -> tuple[Path, Path]:
    """Two data directories holding the same knowledge base of 50 towers (ingested once, then copied)."""
    root = tmp_path_factory.mktemp("towers")
    data = ingest_docs(
        root, {f"{n.lower()}.md": f"# Tower {n}\n\nTower {n} was built in {year(n)} by {builder(n)}.\n" for n in NAMES}
    )
    return shutil.copytree(data, root / "replica-a"), shutil.copytree(data, root / "replica-b")


def replica_env(data_dir: Path, server: OpenAIServer, url: str | None = None) -> dict[str, str]:
    """A replica's environment: its own data dir, the model server, the shared checkpointer (when given)."""
    extra = {"RAGS_EXPERT_LLM__BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test-replicas"}
    if url:
        extra["RAGS_EXPERT_CHECKPOINTER__URL"] = url
    return cli_env(data_dir, **extra)


def test_a_follow_up_on_the_other_process_is_condensed_from_the_shared_history(replicas, postgres_url, postgres_server):
    a, b = replicas
    tower = NAMES[17]
    with OpenAIServer(script) as server:
        first = run_cli(["-vv", "ask", first_question(tower), "--thread", "t1", "--checkpointer-url", postgres_url],
                        replica_env(a, server))  # fmt: skip
        after_first = len(server.requests)
        second = run_cli(["-vv", "ask", FOLLOW_UP, "--thread", "t1"], replica_env(b, server, postgres_url))
        condensed = [r for r in server.requests[after_first:] if r.kind == "condense"]
        # the same follow-up on a replica that keeps threads in its own memory has no history to condense
        before_control = len(server.requests)
        control = run_cli(["ask", FOLLOW_UP, "--thread", "t1"], replica_env(b, server))
        control_condensed = [r for r in server.requests[before_control:] if r.kind == "condense"]

    assert first.returncode == 0, first.stderr[-2000:]
    assert uncited(first.stdout.splitlines()[0]) == first_answer(tower)
    assert second.returncode == 0, second.stderr[-2000:]
    assert uncited(second.stdout.splitlines()[0]) == second_answer(tower)
    assert len(condensed) == 1
    history = tag_content(condensed[0].body, "conversation")
    assert f"User: {first_question(tower)}" in history and uncited(first_answer(tower)) in uncited(history)
    assert control.returncode == 1 and not control_condensed  # lost follow-up: nothing found
    for run in (first, second):  # -vv logs every library's records: the URL's password never shows
        assert postgres_server.password not in run.stdout + run.stderr


def start_replica(data_dir: Path, server: OpenAIServer, url: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "helpers" / "replica_worker.py")],
        env=replica_env(data_dir, server, url),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
        cwd=ROOT,
    )


def read_lines(replica: int, proc: subprocess.Popen, out: queue.Queue) -> None:
    """Put each JSON line of a replica's stdout on ``out`` as ``(replica, line)``; ``(replica, None)`` at the end."""
    assert proc.stdout is not None
    for line in proc.stdout:
        out.put((replica, json.loads(line)))
    out.put((replica, None))


def test_fifty_threads_over_two_replicas_never_see_each_others_state(replicas, postgres_url):
    """Every thread's first question goes to one replica and its follow-up to the other, all threads at once."""
    with OpenAIServer(script) as server:
        procs = [start_replica(data, server, postgres_url) for data in replicas]
        results: queue.Queue = queue.Queue()
        for i, proc in enumerate(procs):
            threading.Thread(target=read_lines, args=(i, proc, results), daemon=True).start()
        try:
            for _ in procs:
                replica, ready = results.get(timeout=120)
                assert ready is not None and "ready" in ready, procs[replica].stderr.read()[-3000:]
            began = time.monotonic()
            for i, name in enumerate(NAMES[:THREADS]):
                send(procs[i % 2], {"id": f"{i}/1", "thread": f"thread-{i}", "question": first_question(name)})
            replies: dict[str, tuple[int, dict[str, Any]]] = {}
            while len(replies) < 2 * THREADS:
                replica, reply = results.get(timeout=120)
                assert reply is not None, procs[replica].stderr.read()[-3000:]
                replies[reply["id"]] = (replica, reply)
                i, turn = map(int, reply["id"].split("/"))
                if turn == 1:  # the follow-up goes to the other replica while other threads still run
                    send(procs[1 - replica], {"id": f"{i}/2", "thread": f"thread-{i}", "question": FOLLOW_UP})
            elapsed = time.monotonic() - began
        finally:
            for proc in procs:
                assert proc.stdin is not None
                proc.stdin.close()
            codes = [proc.wait(timeout=60) for proc in procs]
    print(f"\n{2 * THREADS} questions on {THREADS} threads over 2 replicas in {elapsed:.1f} s")

    assert codes == [0, 0]
    errors = [r for _, r in replies.values() if "error" in r]
    assert not errors, errors[:3]
    for i, name in enumerate(NAMES[:THREADS]):
        (r1, one), (r2, two) = replies[f"{i}/1"], replies[f"{i}/2"]
        assert r1 != r2 and one["pid"] != two["pid"]  # the follow-up ran on the other process
        assert uncited(one["answer"]) == first_answer(name) and uncited(two["answer"]) == second_answer(name)
        # the thread's whole state, as the second replica read it from PostgreSQL: its own four messages only
        assert [(role, uncited(text)) for role, text in two["messages"]] == [
            ("human", first_question(name)),
            ("ai", first_answer(name)),
            ("human", FOLLOW_UP),
            ("ai", second_answer(name)),
        ]
    condensed = server.of_kind("condense")
    assert len(condensed) == THREADS
    assert all(len(names_in(tag_content(r.body, "conversation"))) == 1 for r in condensed)  # one thread's history


def send(proc: subprocess.Popen, request: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(request) + "\n")
    proc.stdin.flush()
