"""Speed and cost of a question with the default settings, against a hand-written minimal pipeline (issue 27).

A local OpenAI-compatible server (tests/helpers/openai_server.py, in a child process so its CPU is not the client's)
answers every request after L seconds, saying yes to every grade and citing chunk [1] in every answer: the
happy path. The agent runs with LangChain's real ChatOpenAI over HTTP and an in-memory list retriever of k
chunks, with the **default settings** (only the endpoint, ``retrieval.top_k`` = k and a fresh temporary
``store.data_dir`` differ: ``--show-settings`` prints every setting that differs from the defaults).

Three pipelines, measured side by side in one run (interleaved, the order rotated):

* ``default``: ``RagsExpert`` with the default settings (lesson memory on; its store is empty);
* ``lessons off``: the same with ``lessons.enabled`` false;
* ``model checks``: the defaults with ``evidence.verify_answers`` off, so the model checks every answer. With the
  defaults the answer, which quotes its chunk, is accepted by the evidence without the model's two checks
  (:mod:`rags_expert.rag.verdict.verified`); this column is what an answer the evidence cannot check costs;
* ``minimal``: a hand-written LangGraph pipeline (retrieve → k grades at once → answer → two checks at once)
  on ChatOpenAI, with the same kind of requests and no corrective logic.

Rows: the happy path's wall time per question in units of L at each k (median of ``--repeats``); the client's
CPU per question (``time.process_time``, every thread of this process) against a server with no delay, as a
ratio to ``minimal``; ``--concurrent`` questions at once (L as above), wall time as a ratio to ``minimal``'s.

    python bench/speed_cost.py                      # L = 0.3 s, k = 4 8 16, 3 repeats, 40 CPU questions, 100 at once
    python bench/speed_cost.py --show-settings      # and the settings that differ from the defaults
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
import tempfile
import time
from pathlib import Path
from typing import Any, TypedDict

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from helpers.openai_server import OpenAIServer, request_kind  # noqa: E402
from langchain_core.callbacks import CallbackManagerForRetrieverRun  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.messages import HumanMessage, SystemMessage  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402
from pydantic import SecretStr  # noqa: E402

from rags_expert import RagsExpert, RagsExpertSettings  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/results.py, for --record
import results as bench_results  # noqa: E402

QUESTION = "When was Castle Varen built?"
PIPELINES = {
    "default": {},
    "lessons off": {"lessons": {"enabled": False}},
    "model checks": {"evidence": {"verify_answers": False}},
}
"""Our agent's settings besides the endpoint, k and the data folder (``default``: none; ``model checks``: the
evidence's answer check off, :mod:`rags_expert.rag.verdict.verified`, so that the model checks every answer)."""
SHOWN = ("default", "lessons off", "model checks", "minimal")


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


def bench_settings(base_url: str, k: int, variant: dict[str, Any], data_dir: str) -> RagsExpertSettings:
    """The agent's settings: the defaults but for the endpoint, ``retrieval.top_k`` = k, a fresh data folder
    (so the lesson store starts empty and the user's is left alone) and ``variant``."""
    settings = {
        "llm": {"base_url": base_url, "api_key": "sk-bench-000000"},
        "retrieval": {"top_k": k},
        "store": {"data_dir": data_dir},
        **variant,
    }
    return RagsExpertSettings(**settings)


async def our_graph(base_url: str, k: int, variant: dict[str, Any], data_dir: str | None = None):
    """Our agent on ``ListRetriever``; the returned ``ask()`` checks the answer passed and returns its metadata."""
    data_dir = data_dir or tempfile.mkdtemp(prefix="rx-speed-")
    settings = bench_settings(base_url, k, variant, data_dir)
    agent = await RagsExpert(settings, retriever=ListRetriever(docs=make_docs(k))).async_init()
    graph = agent.get_compiled_graph(checkpointer=False)

    async def ask() -> dict[str, Any]:
        out = await graph.ainvoke({"messages": [HumanMessage(QUESTION)]})
        final = out["messages"][-1]
        assert final.response_metadata["outcome"] == "success", final.content
        return final.response_metadata

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

    async def ask() -> dict[str, Any]:
        out = await graph.ainvoke({"question": QUESTION})
        assert out["ok"]
        return {}

    return ask


# --- the three measures ---------------------------------------------------------------------------


async def askers(base_url: str, k: int, data_dir: str) -> dict[str, Any]:
    """The three pipelines at k, warmed up (HTTP pools open, caches filled)."""
    out = {name: await our_graph(base_url, k, v, data_dir) for name, v in PIPELINES.items()}
    out["minimal"] = minimal_pipeline(base_url, k)
    for ask in out.values():
        await ask()
    return out


def rotations(names: list[str], repeats: int):
    """``names`` in a rotated order per repeat, so no pipeline always runs first."""
    for r in range(repeats):
        yield names[r % len(names) :] + names[: r % len(names)]


async def happy_path(latency: float, ks: list[int], repeats: int, data_dir: str, recalls: list[dict]) -> dict:
    """Median wall time per question / L, and requests per question, per pipeline and k."""
    server = Server(latency)
    result: dict[str, dict[int, tuple[float, int]]] = {}
    try:
        for k in ks:
            ask = await askers(server.base_url, k, data_dir)
            times: dict[str, list[float]] = {n: [] for n in ask}
            requests: dict[str, int] = {}
            for order in rotations(list(ask), repeats):
                for name in order:
                    before = server.stats()[0]
                    start = time.perf_counter()
                    meta = await ask[name]()
                    times[name].append(time.perf_counter() - start)
                    requests[name] = server.stats()[0] - before
                    if "lesson_recall" in meta.get("timings", {}):
                        recalls.append(meta["timings"]["lesson_recall"])
            for name in ask:
                result.setdefault(name, {})[k] = (statistics.median(times[name]) / latency, requests[name])
    finally:
        server.close()
    return result


async def client_cpu(questions: int, k: int, data_dir: str) -> dict[str, float]:
    """Median client CPU seconds per question (no server delay), per pipeline."""
    server = Server(0.0)
    try:
        ask = await askers(server.base_url, k, data_dir)
        cpu: dict[str, list[float]] = {n: [] for n in ask}
        for order in rotations(list(ask), questions):
            for name in order:
                start = time.process_time()
                await ask[name]()
                cpu[name].append(time.process_time() - start)
    finally:
        server.close()
    return {name: statistics.median(values) for name, values in cpu.items()}


async def concurrent(latency: float, n: int, k: int, repeats: int, data_dir: str) -> dict[str, float]:
    """Median wall seconds of ``n`` questions asked at once, per pipeline."""
    server = Server(latency)
    try:
        ask = await askers(server.base_url, k, data_dir)
        walls: dict[str, list[float]] = {name: [] for name in ask}
        for order in rotations(list(ask), repeats):
            for name in order:
                start = time.perf_counter()
                await asyncio.gather(*(ask[name]() for _ in range(n)))
                walls[name].append(time.perf_counter() - start)
    finally:
        server.close()
    return {name: statistics.median(values) for name, values in walls.items()}


# --- the report -----------------------------------------------------------------------------------


def settings_diff(settings: RagsExpertSettings) -> list[str]:
    """``path = value`` for every setting that differs from the defaults (secrets masked)."""
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("RAGS_EXPERT_")}
    try:
        defaults = RagsExpertSettings().model_dump()
    finally:
        os.environ.update(saved)
    lines: list[str] = []

    def walk(ours: Any, theirs: Any, path: str) -> None:
        if isinstance(ours, dict) and isinstance(theirs, dict):
            for key in sorted(set(ours) | set(theirs)):
                walk(ours.get(key), theirs.get(key), f"{path}.{key}" if path else key)
        elif ours != theirs:
            shown = "***" if isinstance(ours, SecretStr) else repr(ours)
            lines.append(f"{path} = {shown} (default {theirs!r})")

    walk(settings.model_dump(), defaults, "")
    return lines


def report(args: argparse.Namespace, latency: dict, cpu: dict[str, float], wall: dict[str, float]) -> list[str]:
    """The issue's table: one column per pipeline, the goal last."""
    ks = args.ks
    rows = [
        "| | default settings | lessons off | evidence.verify_answers off | minimal pipeline | goal |",
        "|---|---|---|---|---|---|",
        f"| happy path k = {' / '.join(map(str, ks))} (× L) | "
        + " | ".join(" / ".join(f"{latency[n][k][0]:.2f}" for k in ks) for n in SHOWN)
        + " | ≤ 2.0 L |",
        f"| requests per question, k = {' / '.join(map(str, ks))} | "
        + " | ".join(" / ".join(str(latency[n][k][1]) for k in ks) for n in SHOWN)
        + " | |",
        f"| client CPU per question, k = {args.cpu_k} | "
        + " | ".join(f"{1000 * cpu[n]:.1f} ms = {cpu[n] / cpu['minimal']:.2f}×" for n in SHOWN)
        + " | ≤ 1.1× |",
        f"| {args.concurrent} concurrent questions, k = {args.cpu_k}, wall | "
        + " | ".join(f"{wall[n]:.2f} s = {wall[n] / wall['minimal']:.2f}×" for n in SHOWN)
        + " | ≤ 1.1× |",
    ]
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--latency", type=float, default=0.3, help="seconds the server waits per request (L)")
    ap.add_argument("--ks", type=int, nargs="+", default=[4, 8, 16], help="chunks retrieved (happy-path rows)")
    ap.add_argument("--repeats", type=int, default=3, help="questions per pipeline and k (the median is shown)")
    ap.add_argument("--cpu-questions", type=int, default=40, help="questions per pipeline for the CPU row")
    ap.add_argument("--cpu-k", type=int, default=4, help="k of the CPU and concurrency rows")
    ap.add_argument("--concurrent", type=int, default=100, help="questions asked at once (0: skip the row)")
    ap.add_argument("--concurrent-repeats", type=int, default=3)
    ap.add_argument("--show-settings", action="store_true", help="print the settings that differ from the defaults")
    bench_results.add_option(ap)
    args = ap.parse_args()
    data_dir = tempfile.mkdtemp(prefix="rx-speed-")
    print(f"# {platform.node()} {platform.python_version()}, {os.cpu_count()} cores, L = {args.latency}s")
    if args.show_settings:
        print("# settings that differ from the defaults (pipeline 'default'; 'lessons off' adds lessons.enabled):")
        for line in settings_diff(bench_settings("http://127.0.0.1:PORT/v1", args.cpu_k, {}, data_dir)):
            print(f"#   {line}")
    recalls: list[dict] = []
    latency = asyncio.run(happy_path(args.latency, args.ks, args.repeats, data_dir, recalls))
    cpu = asyncio.run(client_cpu(args.cpu_questions, args.cpu_k, data_dir))
    wall = asyncio.run(concurrent(args.latency, args.concurrent, args.cpu_k, args.concurrent_repeats, data_dir))
    rows = report(args, latency, cpu, wall)
    print("\n".join(rows))
    recall = ""
    if recalls:
        skipped = sum(bool(r.get("skipped")) for r in recalls)
        recall = (
            f"lesson recall (default, happy path): skipped (empty store) in {skipped}/{len(recalls)} questions; "
            f"waited for at most {max(r['waited_s'] for r in recalls) * 1000:.2f} ms, "
            f"recall wall at most {max(r['wall_s'] for r in recalls) * 1000:.2f} ms"
        )
        print(f"\n{recall}")
    title = f"Happy path against a minimal pipeline (scripted server, L = {args.latency} s a request)"
    bench_results.record(args.record, "speed_cost", title, "\n".join(rows), notes=recall[:1].upper() + recall[1:])


if __name__ == "__main__":
    main()
