"""Span citations and ``verify``: do spans resolve to the exact quoted text, and does ``verify`` flag exactly the
answers that cited an edited sentence?

Two sets: the answerable questions of ``bench/single_fact`` (40, six documents) and the HotpotQA dev split
(50 questions, its 500 paragraphs one Markdown file each; ``RAGS_EXPERT_SHARED_DATA`` or ``../shared/data``).
Each set is ingested into a private embedded knowledge base (wordllama embeddings) and every question is asked
through ``ainvoke`` of the standard profile with a scripted reader model (in-process, no network): it grades every
chunk relevant and answers with the context sentence that holds the gold answer (else the first chunk's first
fact: a sentence, item or row, no heading), alternately quoted as is and worded ("In short, ..."), citing its chunk (before the full stop, or after it every
third answer); every fourth answer adds a
sentence no chunk says (a planted unsupported claim). Reported:

* **spans exact**: spans whose ``quote`` is the stored chunk's text at ``start:end`` and whose ``sha256`` is
  that of the stored text (looked up by ``uid`` in the knowledge base, not in the answer);
* **planted flagged / real spanned**: planted sentences reported ``unsupported``, the reader's own sentences
  given a span;
* **verify**: ``trials`` seeded edits; each picks a cited span at random, changes one word of it in its document,
  re-ingests, verifies every answer of the set, then restores and re-ingests. An answer is *affected* when one of
  its spans, found in the original file, covers the edited word (computed from the files, not by ``verify``);
  *flagged* when ``verify`` reports a citation ``changed`` or ``gone``. Precision and recall of flagged vs
  affected over all trials × answers. A span whose quote covers the edited word but whose words are still in
  the document elsewhere (a title repeated in the first sentence) is not affected: ``verify`` reports it
  ``moved``; such cases are counted as *quote kept elsewhere*.

    RAGS_EXPERT_SHARED_DATA=/work/shared/data python bench/citations.py [--trials 10] [--seed 26] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from langchain_core.messages import HumanMessage  # noqa: E402

from rags_expert import RagsExpert  # noqa: E402
from rags_expert.evidence.units import units  # noqa: E402
from rags_expert.retrieval.ingest import Ingestor  # noqa: E402
from rags_expert.retrieval.qdrant import KnowledgeBase, close_client  # noqa: E402
from rags_expert.retrieval.verify import chunk_sha256, verify_citations  # noqa: E402
from rags_expert.settings import KnowledgeBaseSettings, RagsExpertSettings  # noqa: E402
from rags_expert.testing import ScriptedChatModel  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/results.py, for --record
import results as bench_results  # noqa: E402

SINGLE_FACT = ROOT / "bench" / "single_fact"
SHARED = Path(os.environ.get("RAGS_EXPERT_SHARED_DATA") or ROOT.parent / "shared" / "data")
PLANTED = "It was also praised by critics in Lisbon."
_CHUNK = re.compile(r"<chunk n=\"(\d+)\"[^>]*>\n(.*?)\n</chunk>", re.DOTALL)


def single_fact_set(folder: Path) -> list[dict[str, Any]]:
    """Copy the single-fact documents to ``folder``; the answerable questions."""
    shutil.copytree(SINGLE_FACT / "docs", folder)
    rows = [json.loads(line) for line in (SINGLE_FACT / "questions.jsonl").open()]
    return [{"question": r["question"], "answers": r["answers"]} for r in rows if r["answers"]]


def hotpot_set(folder: Path) -> list[dict[str, Any]]:
    """Write the HotpotQA dev paragraphs to ``folder`` (one Markdown file each); its questions."""
    folder.mkdir()
    rows = [json.loads(line) for line in (SHARED / "hotpotqa" / "dev.jsonl").open()]
    for row in rows:
        for p in row["paragraphs"]:
            name = re.sub(r"[^\w.-]+", "_", p["title"])[:80] + ".md"
            (folder / name).write_text(f"# {p['title']}\n\n{''.join(p['sentences']).strip()}\n")
    return [{"question": r["question"], "answers": [r["answer"]]} for r in rows]


class Reader:
    """The scripted model: every chunk relevant, every draft grounded and useful; answers from the context."""

    def __init__(self, gold: dict[str, list[str]]) -> None:
        self.gold, self.asked = gold, 0

    def __call__(self, text: str, kwargs: dict[str, Any]) -> Any:
        for marker, reply in (
            ('{"relevant": [', None),
            ('{"relevant":', '{"relevant": true}'),
            ('{"grounded":', '{"grounded": true}'),
            ('{"useful":', '{"useful": true}'),
            ('{"query":', '{"query": "rephrased"}'),
            ('{"needed":', '{"needed": [1]}'),
        ):
            if marker in text:
                chunks = len(_CHUNK.findall(text))
                return reply or json.dumps({"relevant": list(range(1, chunks + 1))})
        return self.answer(text)

    def answer(self, text: str) -> str:
        question = next((q for q in self.gold if q in text), "")
        chunks = [(int(n), body) for n, body in _CHUNK.findall(text)]
        picked = None
        facts = [(n, u.text) for n, body in chunks for u in units(body) if u.kind != "heading"]
        for n, sentence in facts:
            if any(a.lower() in sentence.lower() for a in self.gold.get(question, [])):
                picked = picked or (n, sentence)
        picked = picked or (facts[0] if facts else None)
        self.asked += 1
        if picked is None:
            return "I found nothing."
        n, sentence = picked
        body = sentence.rstrip(".")
        worded = f"In short, {body[:1].lower()}{body[1:]}" if self.asked % 2 else body
        planted = f" {PLANTED}" if self.asked % 4 == 0 else ""
        cited = f"{worded}. [{n}]" if self.asked % 3 == 0 else f"{worded} [{n}]."  # both ways models cite
        return cited + planted


def kb_settings(data: Path, collection: str) -> KnowledgeBaseSettings:
    """The set's embedded knowledge base (wordllama: fast, offline)."""
    return KnowledgeBaseSettings(
        store={"data_dir": data, "collection": collection, "engine": "edge"}, embeddings={"provider": "wordllama"}
    )


async def answer_all(kb: KnowledgeBase, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every question through ``ainvoke``; the answers as ``ask --json`` saves them."""
    base = kb.settings
    settings = RagsExpertSettings(
        store=base.store, embeddings=base.embeddings, llm={"max_retries": 0}, lessons={"enabled": False}
    )
    reader = Reader({r["question"]: r["answers"] for r in rows})
    agent = await RagsExpert(settings, chat_model=ScriptedChatModel(responder=reader)).async_init()
    graph = agent.get_compiled_graph()
    out = []
    for i, row in enumerate(rows):
        state = await graph.ainvoke(
            {"messages": [HumanMessage(row["question"])]}, {"configurable": {"thread_id": str(i)}}
        )
        message = state["messages"][-1]
        out.append({"answer": message.content, **message.response_metadata})
    await agent.aclose()
    return out


def span_stats(kb: KnowledgeBase, answers: list[dict[str, Any]]) -> dict[str, Any]:
    """Spans exact against the stored chunks; planted sentences flagged; the reader's sentences spanned."""
    spans = exact = planted = planted_flagged = real = real_spanned = 0
    for answer in answers:
        for c in answer.get("citations") or []:
            if c["sentence"] == PLANTED:
                planted += 1
                planted_flagged += c["unsupported"]
                continue
            real += 1
            if (span := c["span"]) is None:
                continue
            real_spanned += 1
            spans += 1
            found = kb.retrieve_payloads([span["uid"]], ["content"])
            text = found[0][1]["content"] if found else None
            exact += (
                text is not None
                and text[span["start"] : span["end"]] == span["quote"]
                and chunk_sha256(text) == span["sha256"]
            )
    return {
        "answers": len(answers),
        "succeeded": sum(a.get("outcome") == "success" for a in answers),
        "spans": spans,
        "spans exact": f"{exact}/{spans} ({100 * exact / max(1, spans):.1f} %)",
        "planted flagged": f"{planted_flagged}/{planted}",
        "real spanned": f"{real_spanned}/{real}",
    }


def pick_edit(rng: random.Random, answers: list[dict[str, Any]]) -> tuple[Path, int, int] | None:
    """A cited span at random, and one word of it in its document: ``(path, start, end)`` in the file's text."""
    spans = [c["span"] for a in answers for c in a.get("citations") or [] if c["span"]]
    for _ in range(100):
        span = rng.choice(spans)
        path = Path(span["source"])
        text = path.read_text()
        at = text.find(span["quote"])
        words = [m for m in re.finditer(r"[A-Za-z]{4,}", span["quote"])]
        if at >= 0 and words:
            word = rng.choice(words)
            return path, at + word.start(), at + word.end()
    return None


def affected(answer: dict[str, Any], path: Path, text: str, edited: str, where: tuple[int, int]) -> tuple[bool, bool]:
    """``(affected, kept)``: one of the answer's spans, found in the original file ``text``, covers the edited
    word ``text[start:end]`` and its quote is no longer anywhere in the ``edited`` file (affected), or still is
    (kept: the same words are cited from another place of the document, which ``verify`` reports ``moved``)."""
    start, end = where
    hit = kept = False
    for c in answer.get("citations") or []:
        span = c["span"]
        if not span or Path(span["source"]) != path:
            continue
        if any(m.start() <= start and end <= m.end() for m in re.finditer(re.escape(span["quote"]), text)):
            if span["quote"] in edited:
                kept = True
            else:
                hit = True
    return hit, kept and not hit


def verify_trials(kb: KnowledgeBase, docs: Path, answers: list[dict[str, Any]], trials: int, seed: int) -> dict:
    """Seeded edits of one cited word each: precision and recall of ``verify`` (see the module docstring)."""
    rng = random.Random(seed)
    tp = fp = fn = kept = 0
    for _ in range(trials):
        edit = pick_edit(rng, answers)
        if edit is None:
            break
        path, start, end = edit
        original = path.read_text()
        edited = original[:start] + "redacted" + original[end:]
        path.write_text(edited)
        Ingestor(kb).run([docs])
        for answer in answers:
            truth, still = affected(answer, path, original, edited, (start, end))
            kept += still
            flagged = any(c.status in ("changed", "gone") for c in verify_citations(answer, kb))
            tp, fp, fn = tp + (truth and flagged), fp + (flagged and not truth), fn + (truth and not flagged)
        path.write_text(original)
        Ingestor(kb).run([docs])
    return {
        "trials": trials,
        "affected": tp + fn,
        "flagged": tp + fp,
        "quote kept elsewhere": kept,
        "precision": round(tp / max(1, tp + fp), 3),
        "recall": round(tp / max(1, tp + fn), 3),
    }


async def run_set(name: str, tmp: Path, trials: int, seed: int) -> dict[str, Any]:
    """Ingest, answer, measure one set."""
    docs = tmp / name
    rows = single_fact_set(docs) if name == "single-fact" else hotpot_set(docs)
    settings = kb_settings(tmp / f"data-{name}", name.replace("-", "_"))
    kb = KnowledgeBase(settings)
    Ingestor(kb).run([docs])
    try:
        answers = await answer_all(kb, rows)
        return {"set": name} | span_stats(kb, answers) | verify_trials(kb, docs, answers, trials, seed)
    finally:
        close_client(settings.store)


def table(rows: list[dict[str, Any]]) -> str:
    """A Markdown table of the rows."""
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(str(r[k]) for k in keys) + " |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=10, help="seeded edits per set")
    ap.add_argument("--seed", type=int, default=26)
    ap.add_argument("--sets", default="single-fact,hotpotqa-dev")
    ap.add_argument("--json", help="write the rows to this file")
    bench_results.add_option(ap)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.sets.split(","):
            if name == "hotpotqa-dev" and not (SHARED / "hotpotqa" / "dev.jsonl").exists():
                print(f"skipping {name}: no {SHARED / 'hotpotqa' / 'dev.jsonl'} (set RAGS_EXPERT_SHARED_DATA)")
                continue
            rows.append(asyncio.run(run_set(name, Path(tmp), args.trials, args.seed)))
            print(rows[-1], flush=True)
    print(table(rows))
    bench_results.record(args.record, "citations", "Span citations and `verify`", table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
