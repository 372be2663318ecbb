"""How often the speculative draft is kept, and what it costs, on HotpotQA dev questions.

Every question runs twice, interleaved: with the speculative draft (the default) and without, on the same
agent settings otherwise (the ``standard`` profile: the model grades, so the draft applies). Reported per
model: drafts kept / discarded, answers, LLM calls, input and output tokens per question (the final
message's ``usage``), seconds per question.

Models:

* ``yes``: a local OpenAI-compatible server (tests/helpers/openai_server.py) that grades every chunk relevant, every
  answer grounded and useful, and answers citing the first chunk that shares a word with the question;
* ``local``: SmolLM2-135M-Instruct behind llama.cpp (the ``local`` extra), in the ``standard`` profile.

    python bench/speculative_kept.py --models yes local --limit 20
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
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("RAGS_EXPERT_LESSONS__ENABLED", "false")

from helpers.openai_server import OpenAIServer, prompt_text, request_kind  # noqa: E402
from helpers.shared_data import HOTPOTQA as DATA  # noqa: E402 - $RAGS_EXPERT_SHARED_DATA or ../shared/data
from langchain_core.messages import HumanMessage  # noqa: E402
from speed_cost import yes_grade  # noqa: E402

from rags_expert.evaluation import load_questions, write_corpus  # noqa: E402
from rags_expert.settings import RagsExpertSettings  # noqa: E402


def yes_script(body: dict[str, Any]) -> Any:
    if (grade := yes_grade(request_kind(body))) is not None:
        return grade
    text = prompt_text(body)
    question = set(re.findall(r"\w{4,}", text.rsplit("Question:", 1)[-1].lower()))
    for n, chunk in re.findall(r'<chunk n="(\d+)"[^>]*>\n(.*?)\n</chunk>', text, re.S):
        if question & set(re.findall(r"\w{4,}", chunk.lower())):
            return f"{chunk.split('.')[0]} [{n}]."
    return "No chunk answers it [1]."


async def run_model(name: str, base: dict[str, Any], questions: list[dict[str, Any]]) -> list[str]:
    from rags_expert.local.server import maybe_local
    from rags_expert.rag import RagsExpert

    settings = RagsExpertSettings(**base)
    async with maybe_local(settings, name == "local") as local:
        await local.ready()
        agents = {}
        for variant, draft in (("speculative", True), ("off", False)):
            s = local.settings.model_copy(update={"speculative_draft": draft})
            agents[variant] = (await RagsExpert(s).async_init()).get_compiled_graph(checkpointer=False)
        stats: dict[str, dict[str, list[float]]] = {v: {} for v in agents}
        kept = dict.fromkeys(agents, 0)
        discarded = dict.fromkeys(agents, 0)
        for i, q in enumerate(questions):
            order = list(agents) if i % 2 == 0 else list(reversed(agents))
            for variant in order:
                start = time.perf_counter()
                events, final = [], None
                async for mode, chunk in agents[variant].astream(
                    {"messages": [HumanMessage(q["question"])]}, stream_mode=["custom", "values"]
                ):
                    if mode == "custom":
                        events.append(chunk.get("event"))
                    else:
                        final = chunk["messages"][-1]
                seconds = time.perf_counter() - start
                meta = final.response_metadata if final is not None else {}
                usage = meta.get("usage", {})
                row = stats[variant]
                for key, value in (
                    ("answered", float(meta.get("outcome") == "success")),
                    ("calls", float(usage.get("calls", 0))),
                    ("input", float(usage.get("input_tokens", 0))),
                    ("output", float(usage.get("output_tokens", 0))),
                    ("seconds", seconds),
                ):
                    row.setdefault(key, []).append(value)
                kept[variant] += events.count("draft_kept")
                discarded[variant] += events.count("draft_discarded")
    lines = []
    for variant, row in stats.items():
        n = len(row["calls"])
        lines.append(
            f"| {name} | {variant} | {n} | {kept[variant]} | {discarded[variant]} | {100 * sum(row['answered']) / n:.0f}% "
            f"| {statistics.mean(row['calls']):.1f} | {statistics.mean(row['input']):.0f} | {statistics.mean(row['output']):.0f} "
            f"| {statistics.median(row['seconds']):.2f} |"
        )
    return lines


async def main_async(args: argparse.Namespace) -> None:
    from rags_expert.retrieval.ingest import Ingestor
    from rags_expert.retrieval.qdrant import KnowledgeBase

    all_questions = load_questions(DATA / "dev.jsonl")
    questions = all_questions[: args.limit]
    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="rx-spec-"))
    base: dict[str, Any] = {
        "store": {"data_dir": str(data_dir), "collection": "hotpotqa_dev"},
        "ingestion": {"chunk_size": 20000, "chunk_overlap": 0},
        "evidence": {"profile": "standard"},
        "local": {"profile": "standard"},
        "retrieval": {"top_k": args.k},
    }
    corpus = data_dir / "hotpotqa-dev.jsonl"
    write_corpus(all_questions, corpus)
    Ingestor(KnowledgeBase(RagsExpertSettings(**base))).run([corpus])
    print(
        "| model | variant | questions | drafts kept | drafts discarded | answered | LLM calls | input tokens | output tokens | s / question (median) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.models:
        if name == "yes":
            with OpenAIServer(yes_script) as server:
                model = {"llm": {"base_url": server.base_url, "api_key": "sk-bench-000000", "max_retries": 0}}
                for line in await run_model(name, {**base, **model}, questions):
                    print(line, flush=True)
        else:
            for line in await run_model(name, base, questions):
                print(line, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["yes", "local"], choices=["yes", "local"])
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("-k", type=int, default=4)
    ap.add_argument("--data-dir", help="where the knowledge base goes (default: a new temporary folder)")
    asyncio.run(main_async(ap.parse_args()))


if __name__ == "__main__":
    main()
