"""Does the ``compact`` writer's refined context still hold the answer? Research for issue 52.

The ``compact`` profile's writer reads each retrieved chunk's best strips (knowledge refinement by the evidence:
``refinement.max_strips`` strips a chunk, each with the one after it), not the whole chunk. For every answerable
question of a split whose corpus has a knowledge base under ``--kb-dir``, this retrieves the top
``retrieval.top_k`` chunks as the profile does, refines them as the profile does, and counts the questions whose
answer pattern (``bench/real_docs/questions.jsonl``) matches the whole chunks and the refined strips, with the
mean characters of each; no model is called. ``--ids-out`` writes the ids of the questions the strips lose, for
``bench/local_designs.py --ids``.

    python bench/refine_coverage.py --kb-dir KBS [--split dev] [--max-strips N] [--ids-out lost.txt]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import real_docs as rd  # noqa: E402
from reader_signals import reading  # noqa: E402


async def coverage(kb_dir: Path, split: str, max_strips: int | None) -> list[dict[str, Any]]:
    """Per answerable question: whether its answer pattern matches the whole chunks and the strips, and their
    characters."""
    from rags_expert.rag.grade.refinement import Refiner, recompose, split_strips
    from rags_expert.rag.profiles import RefinePlan
    from rags_expert.retrieval.options import SearchOptions
    from rags_expert.retrieval.qdrant import close_client

    questions = [
        q
        for q in rd.load_questions()
        if q["split"] == split and q["kind"] != "unanswerable" and (kb_dir / q["corpus"]).is_dir()
    ]
    out = []
    for corpus in sorted({q["corpus"] for q in questions}):
        changes: dict[str, Any] = {"evidence.profile": "compact"}
        if max_strips:
            changes["refinement.max_strips"] = max_strips
        settings, retriever, stage, scorer, _ = reading(kb_dir / corpus, changes)
        plan = RefinePlan.of(settings)
        refiner = Refiner(None, None, scorer, plan)  # type: ignore[arg-type]  # the evidence method calls no model
        top_k = settings.retrieval.top_k
        try:
            for q in (q for q in questions if q["corpus"] == corpus):
                docs = retriever.invoke(q["question"], top_k=stage.fetch(SearchOptions.of({"top_k": top_k})).limit)
                docs = await stage.apply(q["question"], docs, top_k)
                parts = [split_strips(d.page_content, plan.window) for d in docs]
                keeps = await refiner._by_evidence(q["question"], docs, parts)
                strips = [
                    recompose(p, k) if k is not None and any(k) else d.page_content
                    for d, p, k in zip(docs, parts, keeps, strict=True)
                ]
                out.append(
                    {
                        "id": q["id"],
                        "kind": q["kind"],
                        "whole": any(rd.matches(q["patterns"], d.page_content) for d in docs),
                        "strips": any(rd.matches(q["patterns"], s) for s in strips),
                        "chars_whole": sum(len(d.page_content) for d in docs),
                        "chars_strips": sum(map(len, strips)),
                    }
                )
        finally:
            close_client(settings.store)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb-dir", type=Path, required=True, help="one knowledge base a corpus")
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    parser.add_argument("--max-strips", type=int, help="refinement.max_strips (default: the profile's)")
    parser.add_argument("--ids-out", type=Path, help="write the ids of the questions the strips lose")
    args = parser.parse_args()
    rows = asyncio.run(coverage(args.kb_dir, args.split, args.max_strips))
    print("| kind | questions | answer in the whole chunks | in the strips | lost by the strips |")
    print("|---|---|---|---|---|")
    counts = collections.Counter((r["kind"], r["whole"], r["strips"]) for r in rows)
    for kind in ("literal", "paraphrased"):
        n = sum(v for (k, *_), v in counts.items() if k == kind)
        whole = sum(v for (k, w, _), v in counts.items() if k == kind and w)
        strips = sum(v for (k, _, s), v in counts.items() if k == kind and s)
        lost = counts[(kind, True, False)]
        print(f"| {kind} | {n} | {whole} | {strips} | {lost} |")
    chars = [sum(r[k] for r in rows) / max(1, len(rows)) for k in ("chars_whole", "chars_strips")]
    print(f"\nmean characters a question: whole chunks {chars[0]:.0f}, strips {chars[1]:.0f}")
    if args.ids_out:
        args.ids_out.write_text(" ".join(r["id"] for r in rows if r["whole"] and not r["strips"]) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
