"""MCP transports: time from spawning ``rags-expert mcp`` to its tool list (process start, agents built,
handshake), and per-call latency of ``search`` and ``ask``, over stdio and over streamable HTTP.

The model is the scripted local server of the tests (tests/helpers/openai_server.py, no delay), so ``ask`` measures the
server's own overhead plus the graph's calls over loopback HTTP; the knowledge base is one ingested document.
The two transports run interleaved (``--repeats`` times each), with the SDK's own client.

    PYTHONPATH=. python bench/mcp_transports.py --repeats 3
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers.cli_run import ROOT, cli_env, run_cli  # noqa: E402
from helpers.openai_server import OpenAIServer  # noqa: E402
from hosts.test_mcp_server import API_KEY, script  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

QUESTION = "When was Castle Varen built?"


async def measure(session: ClientSession, t0: float, rows: dict[str, list[float]]) -> None:
    """Handshake and tool list (since ``t0``), then 5 searches and 3 questions, each timed."""
    await session.initialize()
    await session.list_tools()
    rows["ready"].append(time.perf_counter() - t0)
    for _ in range(5):
        t = time.perf_counter()
        await session.call_tool("search", {"query": "castle"})
        rows["search"].append(time.perf_counter() - t)
    for _ in range(3):
        t = time.perf_counter()
        result = await session.call_tool("ask", {"question": QUESTION})
        rows["ask"].append(time.perf_counter() - t)
        assert not result.is_error, result


async def over_stdio(env: dict[str, str], rows: dict[str, list[float]], errlog: Any) -> None:
    """One stdio server: the client spawns it."""
    t0 = time.perf_counter()
    params = StdioServerParameters(command=sys.executable, args=["-m", "rags_expert.cli", "mcp"], env=env, cwd=ROOT)
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        await measure(session, t0, rows)


def start_http(env: dict[str, str], log: Path) -> tuple[subprocess.Popen, str, float]:
    """Spawn ``rags-expert mcp --http --port 0``; its process, URL (from the ready line) and start time."""
    t0 = time.perf_counter()
    with log.open("w") as err:  # the child keeps its own descriptor
        proc = subprocess.Popen(
            [sys.executable, "-m", "rags_expert.cli", "mcp", "--http", "--port", "0"],
            env=env,
            cwd=ROOT,
            stderr=err,
            stdout=subprocess.DEVNULL,
        )
    while not (found := re.search(r"at (http://\S+)", log.read_text())):
        if proc.poll() is not None:
            raise RuntimeError(log.read_text())
        time.sleep(0.02)
    return proc, found.group(1), t0


async def over_http(url: str, t0: float, rows: dict[str, list[float]]) -> None:
    """One session with a running HTTP server."""
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await measure(session, t0, rows)


def main() -> None:
    """Ingest, then alternate the transports and print a markdown table of medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp())
    docs = root / "docs"
    docs.mkdir()
    (docs / "castle.md").write_text("# Castle Varen\n\nCastle Varen was built in 1412 by Duke Albrecht.\n")
    assert run_cli(["ingest", str(docs), "-q"], cli_env(root / "data")).returncode == 0
    res: dict[str, dict[str, list[float]]] = {t: {"ready": [], "search": [], "ask": []} for t in ("stdio", "http")}
    with OpenAIServer(script) as llm, open(root / "stdio.log", "w") as errlog:
        env = cli_env(root / "data", RAGS_EXPERT_LLM__BASE_URL=llm.base_url, RAGS_EXPERT_LLM__API_KEY=API_KEY)
        for _ in range(args.repeats):  # interleaved
            asyncio.run(over_stdio(env, res["stdio"], errlog))
            proc, url, t0 = start_http(env, root / "http.log")
            try:
                asyncio.run(over_http(url, t0, res["http"]))
            finally:
                proc.terminate()
                proc.wait()
    n = args.repeats
    print(
        f"| transport | spawn to tool list (s), median of {n} | search (ms), median of {5 * n} "
        f"| ask (ms), median of {3 * n} |"
    )
    print("|---|---|---|---|")
    for transport, rows in res.items():
        ready, search, ask = (statistics.median(rows[k]) for k in ("ready", "search", "ask"))
        print(f"| {transport} | {ready:.2f} | {1000 * search:.1f} | {1000 * ask:.0f} |")


if __name__ == "__main__":
    main()
