"""Multi-hop retrieval on HotpotQA: one search (``multihop.max_hops = 1``) against two (the default), per model.

Every question runs once per variant (the variants interleaved, their order turning each question), on one
knowledge base (the split's 500 paragraphs, one chunk each, embedded by the default e5 model). Reported per
model, variant and HotpotQA question type (bridge / comparison):

* **answered**, and **right**: a successful answer holding the gold string (HotpotQA's normalisation, as
  ``rags-expert eval`` scores it);
* **gold recall**: the share of the question's two gold paragraphs among the cited sources (``eval``'s);
  **both cited**: questions whose answer cites both gold paragraphs;
* **hops**: questions that made a second search; **LLM calls** and **input tokens** per question (means);
  seconds per question (median).

Models:

* ``reader``: a scripted stand-in for a capable model on a local OpenAI-compatible server (tests/helpers/openai_server.py,
  real ChatOpenAI over HTTP, tokens counted there at ~4 characters a token), as the former refinement benchmark did. It
  grades a chunk relevant when it is a gold paragraph; asked for a follow-up query (prompt ``hop_query``), it
  replies "none" when both gold paragraphs are in the chunks it is shown, else the missing gold paragraph's title
  with the question (a perfect follow-up, so that only the graph's hop differs); it answers with the gold answer,
  citing every gold paragraph in its context, when the gold answer is there (a yes/no answer: when both gold
  paragraphs are), else without a citation (rejected: an honest failure).
* ``local``: SmolLM2-135M-Instruct behind llama.cpp (``--local``: the ``small`` profile, evidence grading, the
  model-free bridge).

    python bench/multihop.py --models reader local --split dev
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("RAGS_EXPERT_LESSONS__ENABLED", "false")

from helpers.openai_server import OpenAIServer, prompt_text, request_kind  # noqa: E402
from helpers.shared_data import HOTPOTQA as DATA  # noqa: E402 - $RAGS_EXPERT_SHARED_DATA or ../shared/data
from langchain_core.messages import HumanMessage  # noqa: E402

from rags_expert.evaluation import load_questions, normalize_answer, score_question, write_corpus  # noqa: E402
from rags_expert.settings import RagsExpertSettings  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/results.py, for --record
import results as bench_results  # noqa: E402

VARIANTS = {"one search (max_hops 1)": 1, "multi-hop (max_hops 2)": 2}
_CHUNK = re.compile(r'<chunk n="(\d+)"[^>]*>\n(.*?)\n</chunk>', re.S)


class Reader:
    """The scripted capable model (see the module docstring); ``question`` is the one being asked."""

    def __init__(self) -> None:
        self.question: dict[str, Any] = {}

    def gold_titles(self) -> set[str]:
        return {t for t, _ in self.question["supporting_facts"]}

    def __call__(self, body: dict[str, Any]) -> Any:
        kind = request_kind(body)
        text = prompt_text(body)
        if kind == "relevance":
            first = re.search(r"<chunk>\s*(.*?)\n", text)
            return {"relevant": bool(first) and first.group(1) in self.gold_titles()}
        if kind in ("grounded", "useful"):
            return {kind: True}
        if kind in ("condense", "rephrase"):
            return {"question" if kind == "condense" else "query": self.question["question"]}
        chunks = {int(n): body for n, body in _CHUNK.findall(text)}
        gold_in = {n: c for n, c in chunks.items() if c.split("\n", 1)[0] in self.gold_titles()}
        if kind == "hop":
            missing = self.gold_titles() - {c.split("\n", 1)[0] for c in gold_in.values()}
            return {"follow_up": f"{sorted(missing)[0]}: {self.question['question']}" if missing else "none"}
        gold = normalize_answer(self.question["answer"])
        cites = "".join(f"[{n}]" for n in sorted(gold_in))
        if gold in ("yes", "no"):
            return (
                f"{self.question['answer'].capitalize()} {cites}." if len(gold_in) >= 2 else "The sources do not say."
            )
        if gold and any(f" {gold} " in f" {normalize_answer(c)} " for c in gold_in.values()):
            return f"{self.question['answer']} {cites}."
        return "The sources do not say."


async def ask(graph: Any, question: str) -> tuple[Any, float]:
    """The final message and the seconds taken."""
    start = time.perf_counter()
    out = await graph.ainvoke({"messages": [HumanMessage(question)]})
    return out["messages"][-1], time.perf_counter() - start


def row_line(name: str, variant: str, kind: str, rows: list[dict[str, float]]) -> str:
    """One table row over ``rows`` (one per question)."""

    def pct(key: str) -> str:
        return f"{100 * statistics.mean(r[key] for r in rows):.0f}%"

    return (
        f"| {name} | {variant} | {kind} | {len(rows)} | {pct('answered')} | {pct('right')} | {pct('recall')} "
        f"| {pct('both')} | {pct('hopped')} | {statistics.mean(r['calls'] for r in rows):.1f} "
        f"| {statistics.mean(r['tokens'] for r in rows):.0f} | {statistics.median(r['seconds'] for r in rows):.2f} |"
    )


async def run_model(
    name: str, base: dict[str, Any], questions: list[dict[str, Any]], reader: Reader | None
) -> list[str]:
    from rags_expert.local.server import maybe_local
    from rags_expert.rag import RagsExpert

    async with maybe_local(RagsExpertSettings(**base), name == "local") as local:
        await local.ready()
        graphs = {}
        for variant, hops in VARIANTS.items():
            s = local.settings.model_copy(
                update={"multihop": local.settings.multihop.model_validate({"max_hops": hops})}
            )
            graphs[variant] = (await RagsExpert(s).async_init()).get_compiled_graph(checkpointer=False)
        rows: dict[str, list[dict[str, Any]]] = {v: [] for v in VARIANTS}
        variants = list(VARIANTS)
        for i, q in enumerate(questions):
            if reader is not None:
                reader.question = q
            shift = i % len(variants)
            for variant in variants[shift:] + variants[:shift]:
                final, seconds = await ask(graphs[variant], q["question"])
                meta = final.response_metadata
                answered = meta.get("outcome") == "success"
                score = score_question(
                    q, str(final.content), meta.get("sources", []) if answered else [], answered=answered
                )
                rows[variant].append(
                    {
                        "type": q["type"],
                        "answered": float(answered),
                        "right": score["contains"],
                        "recall": score["gold_recall"],
                        "both": float(score["gold_recall"] == 1.0),
                        "hopped": float(bool(meta.get("hops"))),
                        "calls": float(meta.get("usage", {}).get("calls", 0)),
                        "tokens": float(meta.get("usage", {}).get("input_tokens", 0)),
                        "seconds": seconds,
                    }
                )
            print(f"{name}: {i + 1}/{len(questions)} questions", file=sys.stderr, flush=True)
    lines = []
    for variant, all_rows in rows.items():
        for kind in ("bridge", "comparison", "all"):
            picked = [r for r in all_rows if kind in ("all", r["type"])]
            if picked:
                lines.append(row_line(name, variant, kind, picked))
    return lines


async def main_async(args: argparse.Namespace) -> None:
    from rags_expert.retrieval.ingest import Ingestor
    from rags_expert.retrieval.qdrant import KnowledgeBase

    all_questions = load_questions(DATA / f"{args.split}.jsonl")
    questions = all_questions[: args.limit]
    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="rx-multihop-"))
    base: dict[str, Any] = {
        "store": {"data_dir": str(data_dir), "collection": f"hotpotqa_{args.split}"},
        "ingestion": {"chunk_size": 20000, "chunk_overlap": 0},
        "retrieval": {"top_k": args.k},
    }
    corpus = data_dir / f"hotpotqa-{args.split}.jsonl"
    write_corpus(all_questions, corpus)
    Ingestor(KnowledgeBase(RagsExpertSettings(**base))).run([corpus])
    head = (
        "| model | variant | type | questions | answered | right | gold recall | both gold cited | hopped "
        "| LLM calls | input tokens | s / question (median) |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    print(head)
    for name in args.models:
        if name == "reader":
            reader = Reader()
            with OpenAIServer(reader) as server:
                model = {"llm": {"base_url": server.base_url, "api_key": "sk-bench-000000", "max_retries": 0}}
                lines = await run_model(name, {**base, **model}, questions, reader)
        else:
            lines = await run_model(name, base, questions, None)
        print("\n".join(lines), flush=True)
        who = "a capable-model stand-in (the scripted reader)" if name == "reader" else "the local model"
        limit = f"_first{args.limit}" if args.limit else ""
        title = f"HotpotQA {args.split}, one search against multi-hop, {who}"
        bench_results.record(args.record, f"multihop_{name}_{args.split}{limit}", title, "\n".join([head, *lines]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["reader", "local"], choices=["reader", "local"])
    ap.add_argument("--split", default="dev", choices=["dev", "test"])
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("-k", type=int, default=4)
    ap.add_argument("--data-dir", help="where the knowledge base goes (default: a new temporary folder)")
    bench_results.add_option(ap)
    asyncio.run(main_async(ap.parse_args()))


if __name__ == "__main__":
    main()
