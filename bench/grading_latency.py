"""Grading latency: concurrent vs one-chunk-at-a-time ``grade_documents`` over real HTTP.

A local OpenAI-compatible server (tests/helpers/openai_server.py) answers every call after a
fixed delay (``--delay-ms``, standing in for model latency). For k chunks the real
node ``RagNodes.grade_documents`` runs with LangChain's ``ChatOpenAI`` against it,
once with the configured concurrency and once with ``concurrency=1``, interleaved
in the same run (median of ``--repeats``). The claim shown: with concurrency >= k,
grading k chunks costs about one call's latency, not k.

    python bench/grading_latency.py --delay-ms 200 --ks 4 8 16 --repeats 3
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from helpers.openai_server import OpenAIServer, request_kind, tag_content  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402

from rags_expert.llm.chat import build_chat_model  # noqa: E402
from rags_expert.llm.grading import GradingContext  # noqa: E402
from rags_expert.prompts import PromptStore  # noqa: E402
from rags_expert.rag.nodes import RagDeps, RagNodes  # noqa: E402
from rags_expert.settings import RagsExpertSettings  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/results.py, for --record
import results as bench_results  # noqa: E402

QUESTION = "When was Castle Varen built?"


class _NoRetriever(BaseRetriever):
    def _get_relevant_documents(self, query, *, run_manager):  # pragma: no cover - never called
        return []


def script(body):
    if request_kind(body) == "relevance":
        return {"relevant": "even" in tag_content(body, "chunk")}
    return "unused"


def make_docs(k: int) -> list[Document]:
    return [
        Document(
            f"Chunk {i} ({'even' if i % 2 == 0 else 'odd'}): Castle Varen fact number {i}.",
            metadata={"chunk_id": f"c{i}", "title": f"c{i}"},
        )
        for i in range(k)
    ]


def make_nodes(base_url: str, concurrency: int) -> RagNodes:
    settings = RagsExpertSettings(
        llm={"base_url": base_url, "api_key": "sk-bench-not-a-key", "timeout": 30, "max_retries": 0},
        grading={"concurrency": concurrency, "timeout": 30},
    )
    prompts = PromptStore().validate()
    deps = RagDeps(
        model=build_chat_model(settings.llm),
        retriever=_NoRetriever(),
        settings=settings,
        grading=GradingContext.from_settings(settings, prompts),
    )
    return RagNodes(deps)


async def time_grading(nodes: RagNodes, docs: list[Document]) -> float:
    state = {"question": QUESTION, "documents": docs, "graded": {}, "relevant": [], "llm_calls": 0}
    start = time.perf_counter()
    update = await nodes.grade_documents(state, {})
    elapsed = time.perf_counter() - start
    if update.get("error") or len(update["graded"]) != len(docs):
        raise RuntimeError(f"grading failed: {update.get('error')}")
    if update["new_relevant"] != (len(docs) + 1) // 2:
        raise RuntimeError("unexpected verdicts: the benchmark's server script is not being used")
    return elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay-ms", type=float, default=200.0, help="fixed server delay per call")
    parser.add_argument("--ks", type=int, nargs="+", default=[4, 8, 16], help="chunk counts")
    parser.add_argument("--repeats", type=int, default=3, help="runs per cell (median reported)")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="grading.concurrency of the concurrent variant (default: the settings default)",
    )
    bench_results.add_option(parser)
    args = parser.parse_args()
    concurrency = args.concurrency or RagsExpertSettings().grading.concurrency
    delay = args.delay_ms / 1000

    with OpenAIServer(script, delay=delay) as server:
        concurrent = make_nodes(server.base_url, concurrency)
        sequential = make_nodes(server.base_url, 1)
        # warm up both clients (imports, connection pools) outside the measurements
        await time_grading(concurrent, make_docs(2))
        await time_grading(sequential, make_docs(2))
        rows = []
        for k in args.ks:
            docs = make_docs(k)
            conc, seq = [], []
            for _ in range(args.repeats):  # interleaved, so drift hits both variants alike
                conc.append(await time_grading(concurrent, docs))
                seq.append(await time_grading(sequential, docs))
            c, s = statistics.median(conc), statistics.median(seq)
            rows.append((k, c, s))
        requests = len(server.requests)

    print(
        f"Grading latency, `RagNodes.grade_documents` over HTTP, server delay {args.delay_ms:.0f} ms/call, "
        f"concurrency {concurrency} vs 1, median of {args.repeats} "
        f"({platform.python_version()}, {platform.machine()}, {requests} requests served)\n"
    )
    lines = [
        "| k | concurrent ms | sequential ms | ratio seq/conc | concurrent / one-call delay |",
        "|---:|---:|---:|---:|---:|",
    ]
    lines += [f"| {k} | {c * 1000:.0f} | {s * 1000:.0f} | {s / c:.1f} | {c / delay:.2f} |" for k, c, s in rows]
    print("\n".join(lines))
    title = f"Grading k chunks at once against one at a time ({args.delay_ms:.0f} ms a call)"
    notes = f"`grading.concurrency` {concurrency} against 1, over HTTP, median of {args.repeats}."
    bench_results.record(args.record, "grading_latency", title, "\n".join(lines), notes=notes)


if __name__ == "__main__":
    asyncio.run(main())
