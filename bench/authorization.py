"""Overhead of answer-time authorization per answer, with an in-process hook (docs/authorization.md).

Two agents on the same scripted model and keyword retriever over 100 documents: one without a hook, one with
an async in-process hook over a permission table (everything allowed, so both give the same answers). The
questions run interleaved, one at a time, A then B; reported: the median and mean seconds per answer of each,
the difference, the hook calls per answer.

    python bench/authorization.py --questions 300
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from helpers.documents import KeywordRetriever  # noqa: E402
from helpers.scripts import Script  # noqa: E402
from langchain_core.documents import Document  # noqa: E402

from rags_expert import RagsExpert, RagsExpertSettings  # noqa: E402
from rags_expert.testing import ScriptedChatModel  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/results.py, for --record
import results as bench_results  # noqa: E402

DOCS = [
    Document(f"Ledger entry {i} for item {i}: its code is u{i:03d}x.", metadata={"chunk_id": f"u{i:03d}x"})
    for i in range(100)
]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=300)
    bench_results.add_option(parser)
    args = parser.parse_args()
    grants = {"ann": {d.metadata["chunk_id"] for d in DOCS}}
    calls = 0

    async def hook(user: str | None, uids: list[str]) -> list[str]:
        nonlocal calls
        calls += 1
        return [u for u in uids if u in grants.get(user or "", set())]

    script = Script(generate=lambda text: "The code is in the first entry [1].")
    with tempfile.TemporaryDirectory() as tmp:
        settings = RagsExpertSettings(store={"data_dir": tmp}, lessons={"enabled": False})
        agents = {}
        for name, authorize in (("no hook", None), ("in-process hook", hook)):
            agent = RagsExpert(
                settings,
                chat_model=ScriptedChatModel(responder=script),
                retriever=KeywordRetriever(docs=DOCS),
                authorize=authorize,
            )
            agents[name] = (await agent.async_init()).get_compiled_graph()
        times: dict[str, list[float]] = {name: [] for name in agents}
        for n in range(args.questions + 10):
            for name, graph in agents.items():
                config = {"configurable": {"thread_id": f"{name}{n}", "user_id": "ann"}}
                start = time.perf_counter()
                out = await graph.ainvoke({"messages": [("user", f"What is the code for item {n % 100}?")]}, config)
                if n >= 10:  # warm-up left out
                    times[name].append(time.perf_counter() - start)
                assert out["messages"][-1].response_metadata["outcome"] == "success"
    base = statistics.median(times["no hook"])
    print(f"{args.questions} answers each, interleaved; scripted model, keyword retriever over 100 documents\n")
    lines = [
        "| agent | median ms / answer | mean ms / answer | overhead (median) | hook calls / answer |",
        "|---|---|---|---|---|",
    ]
    for name, values in times.items():
        med, mean = statistics.median(values), statistics.mean(values)
        per = f"{calls / (args.questions + 10):.1f}" if name != "no hook" else "0"
        lines.append(f"| {name} | {med * 1e3:.2f} | {mean * 1e3:.2f} | {(med - base) * 1e3:+.2f} ms | {per} |")
    print("\n".join(lines))
    title = "Answer-time authorization: an in-process hook's overhead"
    notes = f"{args.questions} answers each, interleaved; scripted model, keyword retriever over 100 documents."
    bench_results.record(args.record, "authorization", title, "\n".join(lines), notes=notes)


if __name__ == "__main__":
    asyncio.run(main())
