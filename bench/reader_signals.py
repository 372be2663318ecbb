"""Which signal ranks the answering unit first? Today's evidence score, e5 similarity, question likelihood, answer PMI.

For every dev question of ``bench/real_docs`` (the corpora named), the small profile's retrieval is run as the agent
runs it (the retriever's candidates, the evidence reranker's top ``retrieval.top_k``, the knowledge base's term
frequencies over its first ``evidence.term_sample`` chunks as the agent reads them), the retrieved chunks are cut
into units (:mod:`rags_expert.evidence.units`; headings left out) and each unit gets its features
(:func:`unit_features`): the evidence scorer's match (today's ranking), lexical coverage plain and IDF-weighted,
the e5 similarity of question and unit / heading path / chunk, the retrieval rank, the answer-type match, the
unit's kind, and from the local model (``bench/likelihood.py``) the question likelihood
``log P(q | heading + unit)`` (UPR) and the answer PMI ``log P(s | heading, q) - log P(s | heading)``.

A unit is *gold* when one of the question's answer patterns matches it. For the answerable questions with a gold
unit among the candidates, MRR and top-1 of each signal's ranking are printed; ``--out`` writes every candidate's
features (the reader's training data, :mod:`bench.train_reader`). Dev half only: ``--split test`` does not exist.
``--corpus hotpotqa`` reads HotpotQA's dev questions on ``KB_DIR/hotpotqa``, its dev paragraphs one chunk each
(``rags_expert.evaluation.write_corpus``, then ``ingest`` with ``RAGS_EXPERT_INGESTION__CHUNK_SIZE=20000``).

    python bench/reader_signals.py --kb-dir /tmp/wtr_kbs --corpus starlette black --server http://127.0.0.1:18708 \\
        --out /tmp/reader_features.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))  # helpers.shared_data: where HotpotQA is

import real_docs as rd  # noqa: E402
from helpers.shared_data import HOTPOTQA  # noqa: E402
from likelihood import (  # noqa: E402
    QUESTION_PROMPT,
    SENTENCE_PRIOR_PROMPT,
    SENTENCE_PROMPT,
    LikelihoodScorer,
)

SIGNALS = ("evidence", "coverage", "idf_coverage", "e5_unit", "ql", "pmi", "retrieval", "e5_unit>ql@8", "evidence>ql@8")
SHORTLIST = 8
"""``a>b@8``: the first 8 candidates by ``a``, reordered by ``b`` (the likelihoods of a shortlist only)."""


async def candidates(
    question: str,
    settings: Any,
    retriever: Any,
    stage: Any,
    scorer: Any,
    frequencies: Any = None,
    graded: bool = False,
) -> list[dict[str, Any]]:
    """The units of the chunks the small profile retrieves for ``question`` (the reader's training data) or, with
    ``graded``, of those it keeps as relevant (the agent's own :class:`~rags_expert.rag.grade.relevance.RelevanceJudge`,
    up to ``max_context_chunks``: what the agent's reader reads on a question's first retrieval), with their
    model-free features (:func:`rags_expert.evidence.reader.features.candidates`). Measured on the dev folds: a reader trained
    on every retrieved unit reads the relevant chunks' units as well as all of them (77 % literal, 17 % paraphrased
    at 5 % wrong), and better than one trained on the relevant chunks' units (70 % / 11 %)."""
    from rags_expert.evidence.reader.features import candidates as reader_candidates
    from rags_expert.rag.grade.relevance import RelevanceJudge
    from rags_expert.retrieval.options import SearchOptions

    top_k = settings.retrieval.top_k
    options = SearchOptions.of({"top_k": top_k})
    docs = retriever.invoke(question, top_k=stage.fetch(options).limit)
    docs = await stage.apply(question, docs, top_k)
    if graded:
        hops = settings.multihop
        pairs = hops.pair_coverage if hops.max_hops > 1 else None
        judge = RelevanceJudge(None, None, scorer, settings.evidence, by_llm=False, pair_coverage=pairs)  # type: ignore[arg-type]
        judged = await judge.judge(question, docs, {})
        docs = [d for d, keep in zip(docs, judged.verdicts, strict=True) if keep][: settings.max_context_chunks]
    return [{"text": c.text} | c.row for c in await reader_candidates(scorer, question, docs, frequencies)]


def reading(data_dir: Path, changes: dict[str, Any]) -> tuple[Any, Any, Any, Any, Any]:
    """``(settings, retriever, rerank stage, reading scorer, term frequencies)`` of the knowledge base in
    ``data_dir`` as the agent reads it, ``changes`` applied to the default settings; close the store with
    ``rags_expert.retrieval.qdrant.close_client(settings.store)``."""
    from rags_expert.evidence.reader.scorer import ReadingScorer
    from rags_expert.rag.agent import retriever_frequencies
    from rags_expert.rag.retrieve.reranking import RerankStage
    from rags_expert.retrieval.factory import retriever_from_settings
    from rags_expert.settings import RagsExpertSettings

    settings = RagsExpertSettings().updated({"store.data_dir": str(data_dir), **changes})
    retriever = retriever_from_settings(settings)
    kb = getattr(retriever, "kb", None)
    read = retriever_frequencies(retriever, settings.evidence.term_sample)
    frequencies = read() if read else None  # what the agent reads of the knowledge base
    scorer = ReadingScorer(
        settings.evidence,
        (lambda: kb.embeddings) if kb is not None else None,
        frequencies=lambda: frequencies,
    )
    return settings, retriever, RerankStage.from_settings(settings), scorer, frequencies


def add_likelihoods(
    question: str,
    rows: list[dict[str, Any]],
    llm: LikelihoodScorer,
    pmi_llm: LikelihoodScorer,
    pool: ThreadPoolExecutor,
) -> None:
    """QL and PMI of every row, the requests sent side by side (a server with several slots batches them); the PMI
    forces at most ``pmi_llm.max_tokens`` tokens of a unit (its beginning)."""
    q = " " + question.strip()
    ql_pairs = [(QUESTION_PROMPT.format(passage=f"{r['heading']}\n{r['text']}".strip()), q) for r in rows]
    ql_jobs = [pool.submit(llm.score, ql_pairs[s : s + llm.batch]) for s in range(0, len(ql_pairs), llm.batch)]
    pmi_jobs = (
        []
        if pmi_llm is None
        else [
            pool.submit(
                pmi_llm.score,
                [
                    (SENTENCE_PROMPT.format(context=r["heading"], question=question.strip()), " " + r["text"]),
                    (SENTENCE_PRIOR_PROMPT.format(context=r["heading"]), " " + r["text"]),
                ],
            )
            for r in rows
        ]
    )
    ql = [s for job in ql_jobs for s in job.result()]
    for r, scored in zip(rows, ql, strict=True):
        r["ql"] = scored.logprob
        r["ql_tokens"] = scored.tokens
    for r, job in zip(rows if pmi_jobs else [], pmi_jobs, strict=True):
        cond, prior = job.result()
        r["pmi"] = (cond.logprob - prior.logprob) / max(1, cond.tokens)
        r["pmi_sum"] = cond.logprob - prior.logprob
        r["s_tokens"] = cond.tokens


def ordering(rows: list[dict[str, Any]], signal: str) -> list[int]:
    """Candidate indices, best first, by ``signal`` (see :func:`rank_metrics`)."""
    if ">" in signal:
        first, then = signal.split("@")[0].split(">")
        head = ordering(rows, first)
        short, rest = head[:SHORTLIST], head[SHORTLIST:]
        return sorted(short, key=lambda i: (-(rows[i][then] or 0.0), i)) + rest
    if signal == "evidence":
        return sorted(range(len(rows)), key=lambda i: (rows[i]["evidence_rank"], i))
    if signal == "retrieval":
        return list(range(len(rows)))
    return sorted(range(len(rows)), key=lambda i: (-(rows[i][signal] or 0.0), i))


SINGLE_FACT = ROOT / "bench" / "single_fact" / "questions.jsonl"


def dev_questions() -> list[dict[str, Any]]:
    """The dev questions of ``bench/real_docs``, of the single-fact set (corpus ``single_fact``: our own six
    documents, ingested from ``bench/single_fact/docs``; an answer string is a literal pattern) and of HotpotQA when
    the shared data is there (corpus ``hotpotqa``, kind ``multihop``: its dev split's paragraphs ingested one chunk
    each; a unit holding the gold answer is gold, so the reader learns from the supporting facts that state it;
    yes/no answers, which no unit states, left out)."""
    rows = [q for q in rd.load_questions() if q["split"] == "dev"]
    hotpotqa = HOTPOTQA / "dev.jsonl"
    for line in hotpotqa.read_text(encoding="utf-8").splitlines() if hotpotqa.is_file() else []:
        q = json.loads(line)
        if q["answer"].strip().lower() not in ("yes", "no"):
            rows.append(
                {"id": "hq-" + q["id"], "corpus": "hotpotqa", "split": "dev", "kind": "multihop"}
                | {"question": q["question"], "patterns": [re.escape(q["answer"].strip())]}
            )
    for line in SINGLE_FACT.read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        if q["split"] == "dev":
            answers = q.get("answers") or []
            kind = "literal" if answers else "unanswerable"
            patterns = [re.escape(a) for a in answers]
            rows.append(
                {"id": "sf-" + q["id"], "corpus": "single_fact", "split": "dev", "kind": kind}
                | {"question": q["question"], "patterns": patterns}
            )
    return rows


def sent(*scorers: LikelihoodScorer | None) -> int:
    """Requests the scorers have sent so far."""
    return sum(s.requests for s in scorers if s is not None)


def rank_metrics(rows: list[dict[str, Any]], signal: str) -> tuple[float, bool]:
    """(reciprocal rank of the first gold unit, whether it is first) when ranking by ``signal`` (ties: the
    retrieval order; for ``evidence``, today's own order; for ``retrieval``, chunk rank then unit order)."""
    order = ordering(rows, signal)
    first = next(pos for pos, i in enumerate(order) if rows[i]["gold"])
    return 1 / (first + 1), first == 0


async def collect(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every dev question's candidates with their features and gold labels."""
    from rags_expert.retrieval.qdrant import close_client

    questions = [q for q in dev_questions() if q["corpus"] in args.corpus]
    if args.limit:
        questions = rd.select(questions, "dev", args.corpus, args.limit)
    llm = LikelihoodScorer(args.server, batch=args.batch) if args.server else None
    pmi_llm = LikelihoodScorer(args.server, max_tokens=args.pmi_tokens) if args.server and not args.no_pmi else None
    out = []
    with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
        for corpus in args.corpus:
            settings, retriever, stage, scorer, frequencies = reading(
                args.kb_dir / corpus, {"evidence.profile": "small"}
            )
            try:
                for q in [q for q in questions if q["corpus"] == corpus]:
                    began = time.monotonic()
                    rows = await candidates(q["question"], settings, retriever, stage, scorer, frequencies, args.graded)
                    model_free = time.monotonic() - began
                    requests_before = sent(llm, pmi_llm)
                    if llm is not None and rows:
                        lm_began = time.monotonic()
                        add_likelihoods(q["question"], rows, llm, pmi_llm, pool)
                        lm_seconds = time.monotonic() - lm_began
                    else:
                        lm_seconds = 0.0
                    for r in rows:
                        r["gold"] = q["kind"] != "unanswerable" and rd.matches(q["patterns"], r["text"])
                    out.append(
                        {
                            "id": q["id"],
                            "corpus": corpus,
                            "kind": q["kind"],
                            "question": q["question"],
                            "units": rows,
                            "seconds_model_free": round(model_free, 2),
                            "seconds_llm": round(lm_seconds, 2),
                            "requests_llm": sent(llm, pmi_llm) - requests_before,
                        }
                    )
                    if args.partial:
                        with args.partial.open("a", encoding="utf-8") as f:
                            f.write(json.dumps(out[-1], ensure_ascii=False) + "\n")
                    gold = sum(r["gold"] for r in rows)
                    print(
                        f"  {q['id']}: {len(rows)} units, {gold} gold, {model_free:.1f}s + llm {lm_seconds:.1f}s "
                        f"({out[-1]['requests_llm']} requests)",
                        flush=True,
                    )
            finally:
                close_client(settings.store)
    return out


def report(data: list[dict[str, Any]]) -> str:
    """The Markdown table of MRR / top-1 per signal, per kind of question."""
    lines = [
        "| signal | MRR literal | top-1 literal | MRR paraphrased | top-1 paraphrased | MRR all | top-1 all |",
        "|---|---|---|---|---|---|---|",
    ]
    usable = [q for q in data if q["kind"] != "unanswerable" and any(r["gold"] for r in q["units"])]
    present = set.intersection(*({k for k in r} for q in usable for r in q["units"])) if usable else set()
    signals = [s for s in SIGNALS if s == "retrieval" or set(s.split("@")[0].split(">")) <= present]
    for signal in signals:
        cells = [signal]
        for kind in ("literal", "paraphrased", None):
            qs = [q for q in usable if kind in (None, q["kind"])]
            got = [rank_metrics(q["units"], signal) for q in qs]
            mrr = sum(g[0] for g in got) / len(got) if got else 0.0
            top1 = sum(g[1] for g in got) / len(got) if got else 0.0
            cells += [f"{mrr:.2f}", f"{top1:.0%}"]
        lines.append("| " + " | ".join(cells) + " |")
    answerable = [q for q in data if q["kind"] != "unanswerable"]
    units = [len(q["units"]) for q in data]
    lm = sorted(q["seconds_llm"] for q in data)
    req = sorted(q["requests_llm"] for q in data)
    lines.append(
        f"\n{len(usable)} of {len(answerable)} answerable questions have a gold unit among the candidates; "
        f"{sum(units) / max(1, len(units)):.0f} units per question; likelihoods {lm[len(lm) // 2] if lm else 0:.1f} s "
        f"median ({max(lm) if lm else 0:.1f} max), {req[len(req) // 2] if req else 0} requests median per question"
    )
    return "\n".join(lines)


def numbers_only(question: dict[str, Any]) -> dict[str, Any]:
    """A question's record without any text of the documents or the question (what ``bench/reader/`` commits)."""
    drop = {"text", "heading"}
    units = [
        {k: round(v, 5) if isinstance(v, float) else v for k, v in u.items() if k not in drop}
        for u in question["units"]
    ]
    return {k: v for k, v in question.items() if k not in ("question", "units")} | {"units": units}


def main() -> int:
    """Parse, collect (or read ``--in``), print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb-dir", type=Path, default=Path("/tmp/wtr_kbs"), help="ingested corpora (DIR/<corpus>)")
    parser.add_argument("--corpus", nargs="+", default=["starlette", "black", "structlog"])
    parser.add_argument("--limit", type=int, default=0, help="first N questions of each corpus and kind")
    parser.add_argument("--server", default="", help="llama.cpp server URL for QL and PMI (none: model-free only)")
    parser.add_argument("--batch", type=int, default=8, help="prompts per request")
    parser.add_argument("--pmi-tokens", type=int, default=24, help="a unit's first N tokens scored for the PMI")
    parser.add_argument("--no-pmi", action="store_true", help="question likelihood only (a request per unit less)")
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight (the server's slots)")
    parser.add_argument(
        "--graded",
        action="store_true",
        help="only the units of the chunks the agent grades relevant (what its reader reads), not every retrieved one",
    )
    parser.add_argument("--out", type=Path, help="write every question's candidates and features (JSONL)")
    parser.add_argument("--partial", type=Path, help="append each question's record here as soon as it is done")
    parser.add_argument("--numbers", type=Path, help="also write the features without any text (for bench/reader/)")
    parser.add_argument("--in", dest="inp", type=Path, nargs="+", help="report on files written by --out instead")
    args = parser.parse_args()
    if args.inp:
        data = [json.loads(line) for p in args.inp for line in p.read_text().splitlines() if line.strip()]
    else:
        data = asyncio.run(collect(args))
        if args.out:
            args.out.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in data))
    if args.numbers:
        args.numbers.write_text("".join(json.dumps(numbers_only(q)) + "\n" for q in data))
    print(report(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
