"""Where a question's client CPU goes: cProfile around happy-path questions (bench/speed_cost.py's set-up).

The server runs in a child process (its CPU is not profiled); the agent is the default (``speculative``) or
the hand-written ``minimal`` pipeline. Prints the top functions by own time and the time per package.

    python bench/profile_question.py --questions 40 --k 4 --which ours minimal
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import io
import pstats
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import speed_cost  # noqa: E402

PACKAGES = (
    "rags_expert",
    "langgraph",
    "langchain_openai",
    "langchain_core",
    "openai",
    "httpx",
    "httpcore",
    "h11",
    "anyio",
    "pydantic",
    "json_repair",
    "tenacity",
    "asyncio",
    "typing",
)


def package(path: str) -> str:
    for name in PACKAGES:
        if f"/{name}/" in path or path.endswith(f"/{name}.py"):
            return name
    return "builtins" if path == "~" else "other"


async def profile(which: str, questions: int, k: int) -> cProfile.Profile:
    server = speed_cost.Server(0.0)
    try:
        if which == "ours":
            ask = await speed_cost.our_graph(server.base_url, k, {})
        else:
            ask = speed_cost.minimal_pipeline(server.base_url, k)
        for _ in range(5):  # warm the pools and caches
            await ask()
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(questions):
            await ask()
        profiler.disable()
    finally:
        server.close()
    return profiler


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=40)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--which", nargs="+", default=["ours", "minimal"], choices=["ours", "minimal"])
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args()
    for which in args.which:
        stats = pstats.Stats(asyncio.run(profile(which, args.questions, args.k)))
        out = io.StringIO()
        stats.stream = out  # type: ignore[attr-defined]
        stats.sort_stats("tottime").print_stats(args.top)
        print(f"## {which}: {args.questions} questions, k = {args.k}")
        print("\n".join(line for line in out.getvalue().splitlines() if "/" in line or "function calls" in line))
        totals: collections.Counter[str] = collections.Counter()
        for (path, _, _), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
            totals[package(path)] += own
        for name, seconds in totals.most_common(10):
            print(f"  {name:18s} {1000 * seconds / args.questions:6.2f} ms/question (profiled)")


if __name__ == "__main__":
    main()
