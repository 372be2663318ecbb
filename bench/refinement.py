"""Knowledge refinement on HotpotQA dev: the answer prompt's tokens and the answers, with and without.

Every question runs once per variant, the variants interleaved (their order turns each question), on one
knowledge base (the split's 500 paragraphs, one chunk each, embedded by the default e5 model). Reported per
model and variant:

* **answers written**: questions where an answer call was made (something was relevant); the two token
  columns after it are means over those;
* **context tokens**: the chunks' text the answer reads, at ~4 characters a token;
* **answer prompt tokens**: input tokens of one answer call (``usage.by_node.generate``); then all input tokens
  of the question (grading, refinement, answer and checks), a mean over all questions;
* **supporting sentences kept**: of HotpotQA's supporting-fact sentences whose paragraph is in the answer's
  context, the share still in it after refinement (what a capable reader needs to answer);
* **answers**: answered, and the answer holding the gold string (HotpotQA's normalisation);
* seconds per question (median).

Models:

* ``reader``: a scripted stand-in for a capable model, on a local OpenAI-compatible server
  (tests/helpers/openai_server.py, real ChatOpenAI over HTTP, tokens counted there at ~4 characters a token). It
  grades a chunk relevant when it is one of the question's gold paragraphs (a perfect grader, so that only
  the refinement differs), and answers with the gold answer, citing its chunk, when the gold answer is in
  the context it is shown; otherwise it answers without a citation (rejected: an honest failure). Its
  answer quality is therefore exactly "the gold answer survived refinement". The ``llm`` method is not run
  with it: a scripted strip grader would only measure the script.
* ``local``: SmolLM2-135M-Instruct behind llama.cpp (``--local``: the ``small`` profile, evidence grading),
  answers scored against the gold answer; its ``llm`` variant asks SmolLM2 to choose the strips.

    python bench/refinement.py --models reader local --limit 50
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

VARIANTS: dict[str, dict[str, Any]] = {
    "off": {"method": "off"},
    "evidence, 1 strip": {"method": "evidence", "max_strips": 1},
    "evidence, 2 strips": {"method": "evidence", "max_strips": 2},
    "evidence, 3 strips": {"method": "evidence", "max_strips": 3},
    "evidence, ≤3 strips from 0.3": {"method": "evidence", "max_strips": 3, "min_score": 0.3},
    "evidence, 2 windows of 2": {"method": "evidence", "max_strips": 2, "window": 2},
    "llm": {"method": "llm"},
}
MODEL_VARIANTS = {"reader": [v for v in VARIANTS if v != "llm"], "local": list(VARIANTS)}


class Reader:
    """The scripted capable model (see the module docstring); ``question`` is the one being asked."""

    def __init__(self) -> None:
        self.question: dict[str, Any] = {}

    def __call__(self, body: dict[str, Any]) -> Any:
        kind = request_kind(body)
        text = prompt_text(body)
        if kind == "relevance":
            first = re.search(r"<chunk>\s*(.*?)\n", text)
            return {"relevant": bool(first) and first.group(1) in {t for t, _ in self.question["supporting_facts"]}}
        if kind in ("grounded", "useful"):
            return {kind: True}
        if kind == "condense":
            return {"question": self.question["question"]}
        if kind == "rephrase":
            return {"query": self.question["question"]}
        gold = normalize_answer(self.question["answer"])
        for n, chunk in re.findall(r'<chunk n="(\d+)"[^>]*>\n(.*?)\n</chunk>', text, re.S):
            if gold and f" {gold} " in f" {normalize_answer(chunk)} ":
                return f"{self.question['answer']} [{n}]."
        return "The sources do not say."


def kept_support(q: dict[str, Any], context: list[tuple[str, str]]) -> tuple[int, int]:
    """(supporting sentences in the context, supporting sentences whose paragraph is in it)."""
    by_title = {p["title"]: p["sentences"] for p in q["paragraphs"]}
    texts = {title: text for title, text in context}
    kept = total = 0
    for title, index in q["supporting_facts"]:
        if title not in texts or index >= len(by_title.get(title, [])):
            continue
        total += 1
        kept += by_title[title][index].strip() in texts[title]
    return kept, total


async def ask(graph: Any, question: str) -> tuple[Any, list[tuple[str, str]], float]:
    """The final message, the answer's context as (title, text) pairs, and the seconds taken."""
    from rags_expert.rag._shared.context import refined_context

    relevant, strips, final = [], {}, None
    start = time.perf_counter()
    async for mode, chunk in graph.astream({"messages": [HumanMessage(question)]}, stream_mode=["updates", "values"]):
        if mode == "values":
            final = chunk["messages"][-1] if chunk.get("messages") else final
            continue
        for update in chunk.values():
            if update and update.get("relevant"):
                relevant = update["relevant"]
            if update and update.get("strips"):
                strips = update["strips"]
    context = [(str(d.metadata.get("title")), d.page_content) for d in refined_context(relevant, strips)]
    return final, context, time.perf_counter() - start


async def run_model(
    name: str, base: dict[str, Any], questions: list[dict[str, Any]], reader: Reader | None
) -> list[str]:
    from rags_expert.local.server import maybe_local
    from rags_expert.rag import RagsExpert

    async with maybe_local(RagsExpertSettings(**base), name == "local") as local:
        await local.ready()
        variants = MODEL_VARIANTS[name]
        graphs = {}
        for variant in variants:
            s = local.settings.model_copy(
                update={"refinement": local.settings.refinement.model_validate(VARIANTS[variant])}
            )
            graphs[variant] = (await RagsExpert(s).async_init()).get_compiled_graph(checkpointer=False)
        rows: dict[str, dict[str, list[float]]] = {v: {} for v in variants}
        for i, q in enumerate(questions):
            if reader is not None:
                reader.question = q
            shift = i % len(variants)
            for variant in variants[shift:] + variants[:shift]:
                final, context, seconds = await ask(graphs[variant], q["question"])
                meta = final.response_metadata
                by_node = meta.get("usage", {}).get("by_node", {})
                answered = meta.get("outcome") == "success"
                generate = by_node.get("generate", {})
                kept, total = kept_support(q, context)
                row = rows[variant]
                for key, value in (
                    ("all_in", float(meta.get("usage", {}).get("input_tokens", 0))),
                    ("calls", float(meta.get("usage", {}).get("calls", 0))),
                    ("answered", float(answered)),
                    ("right", score_question(q, final.content, [], answered=answered)["contains"]),
                    ("seconds", seconds),
                ):
                    row.setdefault(key, []).append(value)
                if total:
                    row.setdefault("support", []).append(kept / total)
                if generate.get("calls"):  # an answer was written: what its prompt held
                    row.setdefault("answer_in", []).append(generate["input_tokens"] / generate["calls"])
                    row.setdefault("context", []).append(sum(len(text) for _, text in context) / 4)
            print(f"{name}: {i + 1}/{len(questions)} questions", file=sys.stderr, flush=True)
    lines = []
    off_tokens = statistics.mean(rows["off"].get("answer_in") or [float("nan")])
    for variant, row in rows.items():
        n = len(row["calls"])
        answer_in = statistics.mean(row.get("answer_in") or [float("nan")])
        context = statistics.mean(row.get("context") or [float("nan")])
        support = 100 * statistics.mean(row["support"]) if row.get("support") else float("nan")
        lines.append(
            f"| {name} | {variant} | {n} | {len(row.get('answer_in', []))} | {context:.0f} | {answer_in:.0f} | {answer_in / off_tokens:.2f} "
            f"| {statistics.mean(row['all_in']):.0f} "
            f"| {statistics.mean(row['calls']):.1f} | {support:.0f}% | {100 * statistics.mean(row['answered']):.0f}% "
            f"| {100 * statistics.mean(row['right']):.0f}% | {statistics.median(row['seconds']):.2f} |"
        )
    return lines


async def main_async(args: argparse.Namespace) -> None:
    from rags_expert.retrieval.ingest import Ingestor
    from rags_expert.retrieval.qdrant import KnowledgeBase

    all_questions = load_questions(DATA / f"{args.split}.jsonl")
    questions = all_questions[: args.limit]
    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="rx-refine-"))
    base: dict[str, Any] = {
        "store": {"data_dir": str(data_dir), "collection": f"hotpotqa_{args.split}"},
        "ingestion": {"chunk_size": 20000, "chunk_overlap": 0},
        "retrieval": {"top_k": args.k},
        "speculative_draft": False,  # a kept draft is written over whole chunks: refinement would not apply
        "max_rephrases": 0,  # the same retrieval for every variant
    }
    corpus = data_dir / f"hotpotqa-{args.split}.jsonl"
    write_corpus(all_questions, corpus)
    Ingestor(KnowledgeBase(RagsExpertSettings(**base))).run([corpus])
    print(
        "| model | variant | questions | answers written | context tokens | answer prompt tokens | / off | input tokens / question | LLM calls "
        "| supporting sentences kept | answered | right | s / question (median) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.models:
        if name == "reader":
            reader = Reader()
            with OpenAIServer(reader) as server:
                model = {"llm": {"base_url": server.base_url, "api_key": "sk-bench-000000", "max_retries": 0}}
                for line in await run_model(name, {**base, **model, "max_generations": 1}, questions, reader):
                    print(line, flush=True)
        else:
            for line in await run_model(name, base, questions, None):
                print(line, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["reader", "local"], choices=["reader", "local"])
    ap.add_argument("--split", default="dev", choices=["dev", "test"])
    ap.add_argument("--limit", type=int, default=50)
    ap.add_argument("-k", type=int, default=4)
    ap.add_argument("--data-dir", help="where the knowledge base goes (default: a new temporary folder)")
    asyncio.run(main_async(ap.parse_args()))


if __name__ == "__main__":
    main()
