"""Speed and cost of one question: round trips (in units of the model's latency L), requests, tokens, client CPU.

A local OpenAI-compatible server (tests/helpers/openai_server.py, in a child process so its CPU is not the client's)
answers every request after L seconds, saying yes to every grade and citing chunk [1] in every answer: the
happy path. The agent runs with LangChain's real ChatOpenAI over HTTP, an in-memory retriever of k chunks.

Variants, interleaved in one run:

* ``before``: the path before issue 13 (grading.concurrency 8, no speculative draft, one call per chunk);
* ``one wave``: every chunk graded at once, no draft;
* ``speculative``: the default (one wave + the speculative draft);
* ``batch``: the default with ``grading.batch`` (one grading call for all chunks);
* ``minimal``: a hand-written LangGraph pipeline (retrieve → k grades at once → answer → two checks at once)
  on the same ChatOpenAI, making the same calls as ``one wave``: the floor of what the framework costs.

Part 1 prints wall time per question / L, requests and tokens (the server's usage: ~4 characters a token) for
k = 4, 8, 16. Part 2 runs questions back to back against a server with no delay and prints the client's CPU
time per question (``time.process_time``) for each variant and its ratio to ``minimal``.

    python bench/speed_cost.py --latency 0.3 --ks 4 8 16 --repeats 3 --cpu-questions 40
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any, TypedDict

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("RAGS_EXPERT_LESSONS__ENABLED", "false")

from helpers.openai_server import OpenAIServer, request_kind  # noqa: E402
from langchain_core.callbacks import CallbackManagerForRetrieverRun  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.messages import HumanMessage, SystemMessage  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402

from rags_expert import RagsExpert  # noqa: E402

QUESTION = "When was Castle Varen built?"
VARIANTS = {
    "before": {"speculative_draft": False, "grading": {"concurrency": 8}},
    "one wave": {"speculative_draft": False},
    "speculative": {},
    "batch": {"grading": {"batch": True}},
}


# --- the server, in a child process ---------------------------------------------------------------


def yes_script(body: dict[str, Any]) -> Any:
    """Every chunk relevant, every answer cites [1] and passes both checks."""
    kind = request_kind(body)
    if kind == "relevance_batch":
        text = json.dumps(body)
        return {"relevant": list(range(1, text.count("<chunk n=") + 1))}
    return yes_grade(kind) or "Castle Varen was built in 1412 [1]."


def yes_grade(kind: str) -> dict[str, Any] | None:
    """A yes to a per-chunk relevance, grounding or usefulness request (None for other kinds)."""
    return {
        "relevance": {"relevant": True},
        "grounded": {"grounded": True, "unsupported": ""},
        "useful": {"useful": True, "missing": ""},
    }.get(kind)


def serve(latency: float, port_out: Any, stats_in: Any, stats_out: Any) -> None:
    """Run the server until told to stop; answer 'stats' requests with (requests, prompt, completion) so far."""
    from helpers.openai_server import _usage

    with OpenAIServer(yes_script, delay=latency) as server:
        port_out.put(server.base_url)
        while True:
            command = stats_in.get()
            if command == "stop":
                return
            tokens = [_usage(r.reply, r.body) for r in server.requests if r.reply is not None]
            stats_out.put(
                (
                    len(server.requests),
                    sum(t["prompt_tokens"] for t in tokens),
                    sum(t["completion_tokens"] for t in tokens),
                )
            )


class Server:
    """The child-process server and its counters."""

    def __init__(self, latency: float) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.port_q, self.cmd_q, self.stats_q = ctx.Queue(), ctx.Queue(), ctx.Queue()
        self.proc = ctx.Process(target=serve, args=(latency, self.port_q, self.cmd_q, self.stats_q), daemon=True)
        self.proc.start()
        self.base_url = self.port_q.get(timeout=60)

    def stats(self) -> tuple[int, int, int]:
        self.cmd_q.put("stats")
        return self.stats_q.get(timeout=60)

    def close(self) -> None:
        self.cmd_q.put("stop")
        self.proc.join(10)


# --- the agents -----------------------------------------------------------------------------------


class ListRetriever(BaseRetriever):
    """Returns its k chunks for any query."""

    docs: list[Document]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kw: Any):
        return list(self.docs)


def make_docs(k: int) -> list[Document]:
    return [
        Document(
            f"Castle Varen fact {i}: the castle on the river Mura was built in 1412 and rebuilt in {1500 + i}.",
            metadata={"chunk_id": f"c{i}", "title": f"fact {i}", "source": f"kb/fact{i}.md"},
        )
        for i in range(k)
    ]


async def our_graph(base_url: str, k: int, variant: dict[str, Any]):
    settings = {
        "llm": {"base_url": base_url, "api_key": "sk-bench-000000", "max_retries": 2},
        "retrieval": {"top_k": k},
        **variant,
    }
    agent = await RagsExpert(settings, retriever=ListRetriever(docs=make_docs(k))).async_init()
    graph = agent.get_compiled_graph(checkpointer=False)

    async def ask() -> str:
        out = await graph.ainvoke({"messages": [HumanMessage(QUESTION)]})
        final = out["messages"][-1]
        assert final.response_metadata["outcome"] == "success", final.content
        return final.response_metadata.get("answer_kind", "")

    return ask


class MinimalState(TypedDict, total=False):
    question: str
    docs: list[Document]
    relevant: list[Document]
    answer: str
    ok: bool


def minimal_pipeline(base_url: str, k: int):
    """Retrieve → grade every chunk at once → answer → both checks at once: the same requests (a system and a
    user message each), no corrective logic."""
    model = ChatOpenAI(model="bench", base_url=base_url, api_key="sk-bench-000000", max_retries=2)
    docs = make_docs(k)
    system = SystemMessage("You are a careful assistant.")

    async def retrieve(state: MinimalState) -> dict[str, Any]:
        return {"docs": docs}

    async def grade(state: MinimalState) -> dict[str, Any]:
        async def one(doc: Document) -> bool:
            prompt = (
                f"Question: {state['question']}\n<chunk>\n{doc.page_content}\n</chunk>\n"
                + 'Reply {"relevant": true|false}.'
            )
            reply = await model.ainvoke([system, HumanMessage(prompt)])
            return '"relevant": true' in str(reply.content)

        verdicts = await asyncio.gather(*(one(d) for d in state["docs"]))
        return {"relevant": [d for d, v in zip(state["docs"], verdicts) if v]}

    async def generate(state: MinimalState) -> dict[str, Any]:
        context = "\n".join(f"[{i}] {d.page_content}" for i, d in enumerate(state["relevant"], 1))
        reply = await model.ainvoke(
            [system, HumanMessage(f"{context}\nQuestion: {state['question']}\nAnswer citing [n].")]
        )
        return {"answer": str(reply.content)}

    async def check(state: MinimalState) -> dict[str, Any]:
        prompts = [
            f'Is it grounded? {state["answer"]} Reply {{"grounded": true|false}}.',
            f'Is it useful? {state["answer"]} Reply {{"useful": true|false}}.',
        ]
        replies = await asyncio.gather(*(model.ainvoke([system, HumanMessage(p)]) for p in prompts))
        return {"ok": all("true" in str(r.content) for r in replies)}

    builder = StateGraph(MinimalState)
    for name, fn in (("retrieve", retrieve), ("grade", grade), ("generate", generate), ("check", check)):
        builder.add_node(name, fn)
    builder.add_edge(START, "retrieve")
    builder.add_edge("retrieve", "grade")
    builder.add_edge("grade", "generate")
    builder.add_edge("generate", "check")
    builder.add_edge("check", END)
    graph = builder.compile()

    async def ask() -> str:
        out = await graph.ainvoke({"question": QUESTION})
        assert out["ok"]
        return "minimal"

    return ask


# --- the two parts --------------------------------------------------------------------------------


async def latency_table(latency: float, ks: list[int], repeats: int) -> list[str]:
    server = Server(latency)
    rows = [
        "| k | variant | time / L (median) | requests | prompt tokens | completion tokens |",
        "|---|---|---|---|---|---|",
    ]
    try:
        for k in ks:
            askers = {name: await our_graph(server.base_url, k, v) for name, v in VARIANTS.items()}
            askers["minimal"] = minimal_pipeline(server.base_url, k)
            for ask in askers.values():  # warm the HTTP pools
                await ask()
            times: dict[str, list[float]] = {n: [] for n in askers}
            counts: dict[str, list[tuple[int, int, int]]] = {n: [] for n in askers}
            names = list(askers)
            for r in range(repeats):
                for name in names[r % len(names) :] + names[: r % len(names)]:  # rotate the order
                    before = server.stats()
                    start = time.perf_counter()
                    await askers[name]()
                    times[name].append(time.perf_counter() - start)
                    after = server.stats()
                    counts[name].append(tuple(a - b for a, b in zip(after, before)))  # type: ignore[arg-type]
            for name in names:
                n, p, c = counts[name][-1]
                rows.append(f"| {k} | {name} | {statistics.median(times[name]) / latency:.2f} | {n} | {p} | {c} |")
    finally:
        server.close()
    return rows


async def cpu_table(questions: int, k: int) -> list[str]:
    server = Server(0.0)
    try:
        askers = {name: await our_graph(server.base_url, k, v) for name, v in VARIANTS.items()}
        askers["minimal"] = minimal_pipeline(server.base_url, k)
        for ask in askers.values():
            await ask()
        cpu: dict[str, list[float]] = {n: [] for n in askers}
        for _ in range(questions):
            for name, ask in askers.items():
                start = time.process_time()
                await ask()
                cpu[name].append(time.process_time() - start)
    finally:
        server.close()
    floor = statistics.median(cpu["minimal"])
    rows = [f"| variant (k = {k}) | client CPU ms / question (median) | / minimal |", "|---|---|---|"]
    for name, values in cpu.items():
        rows.append(f"| {name} | {1000 * statistics.median(values):.1f} | {statistics.median(values) / floor:.2f} |")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--latency", type=float, default=0.3, help="seconds the server waits per request (L)")
    ap.add_argument("--ks", type=int, nargs="+", default=[4, 8, 16])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cpu-questions", type=int, default=40)
    ap.add_argument("--cpu-k", type=int, default=4)
    args = ap.parse_args()
    print(f"# {platform.node()} {platform.python_version()}, {os.cpu_count()} cores, L = {args.latency}s")
    for line in asyncio.run(latency_table(args.latency, args.ks, args.repeats)):
        print(line)
    print()
    for line in asyncio.run(cpu_table(args.cpu_questions, args.cpu_k)):
        print(line)


if __name__ == "__main__":
    main()
