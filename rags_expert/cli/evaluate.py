"""The ``eval`` subcommand of ``rags-expert``: run a benchmark (HotpotQA) through the agent.

Writes a JSON report (and a PNG plot when matplotlib is installed); exit 0 when the
benchmark ran, 2 on an error.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any, cast

from rags_expert.cli.ask import ASK_FLAGS
from rags_expert.cli.support import args_settings, positive_int, setting_type
from rags_expert.settings import RagsExpertSettings


async def evaluate(args: argparse.Namespace) -> int:
    """Run a benchmark through the agent and write the report."""
    from rags_expert.evaluation import run_hotpotqa, write_report

    settings = cast(RagsExpertSettings, args_settings(args))  # eval builds the RAG agent's settings
    questions_file = args.data / f"{args.split}.jsonl"
    if not args.quiet:
        print(f"[indexing the {args.split} corpus, then asking; per-question lines follow]", file=sys.stderr)

    def progress(r) -> None:
        if not args.quiet:
            mark = "ok " if r.outcome == "success" else "-- "
            print(
                f"{mark} EM {r.exact_match:.0f} F1 {r.f1:.2f} calls {r.llm_calls:2d} {r.seconds:5.1f}s  "
                f"{r.question[:70]}",
                file=sys.stderr,
                flush=True,
            )

    from rags_expert.local.server import maybe_local

    async with maybe_local(settings, args.local) as local:
        await local.ready()
        report = await run_hotpotqa(
            local.settings, questions_file, split=args.split, limit=args.limit, progress=progress
        )
    json_path, png_path = write_report(report, args.out)
    print(report.table())
    print(f"\nreport: {json_path}" + (f"\nplot: {png_path}" if png_path else "\n(plot skipped: install matplotlib)"))
    return 0


def _default_hotpotqa_dir() -> Path:
    env = os.environ.get("RAGS_EXPERT_HOTPOTQA_DIR")
    return Path(env) if env else Path("..") / "shared" / "data" / "hotpotqa"


def register(subparsers: Any) -> None:
    """Add the ``eval`` subcommand to the top-level CLI."""
    p = subparsers.add_parser("eval", help="evaluate the agent on a benchmark (HotpotQA)")
    p.add_argument("benchmark", choices=["hotpotqa"])
    p.add_argument("--split", choices=["dev", "test"], default="dev")
    p.add_argument("--limit", type=positive_int, help="the first N questions only")
    p.add_argument(
        "--data",
        type=Path,
        default=_default_hotpotqa_dir(),
        help="folder with <split>.jsonl (default: $RAGS_EXPERT_HOTPOTQA_DIR or ../shared/data/hotpotqa)",
    )
    p.add_argument("--out", type=Path, default=Path("eval-out"), help="where the JSON report and PNG plot go")
    p.add_argument("--model", type=setting_type("llm.model"), help="chat model name (RAGS_EXPERT_LLM__MODEL)")
    p.add_argument("--base-url", help="OpenAI-compatible base URL (RAGS_EXPERT_LLM__BASE_URL)")
    p.add_argument("-k", "--top-k", type=setting_type("retrieval.top_k"), help="chunks retrieved per query")
    p.add_argument("-q", "--quiet", action="store_true", help="no per-question lines on stderr")
    p.add_argument("--local", action="store_true", help="run on the bundled offline model (needs the 'local' extra)")
    p.set_defaults(func=lambda a: asyncio.run(evaluate(a)), collection=None, settings_flags=ASK_FLAGS)
