"""The ``rags-expert`` command line: ``ask`` (plus the subcommands other modules register).

``rags-expert ask "question"`` streams the answer's tokens as they are generated,
notes on stderr when a draft is rejected and regenerated, then prints the
sources. Settings come from ``RAGS_EXPERT_*`` environment variables; the flags
below override the common ones.

Exit codes: 0 answered; 1 an honest "not found" (no grounded answer in the
knowledge base); 2 an error (invalid settings or flags, a model or retriever
fault, an invalid request); 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from rags_expert.cli_support import (
    SETTINGS_ERRORS,
    OneLineParser,
    SecretBook,
    args_settings,
    configure_logging,
    describe_settings_error,
    positive_int,
    setting_type,
    settings_from_args,
)
from rags_expert.settings import RagsExpertSettings, settings_reference

log = logging.getLogger(__name__)

PROGRESS = {
    "prepare": "reading the question",
    "retrieve": "searching the knowledge base",
    "grade_documents": "grading the chunks",
    "rephrase_query": "rephrasing the search",
    "generate": "writing the answer",
    "grade_generation": "checking the answer",
}
NOT_FOUND_REASONS = frozenset({"no_relevant_documents", "not_grounded", "not_useful"})
"""Failure reasons that are an honest "not in the knowledge base" (exit 1); the others are errors (exit 2)."""
ASK_FLAGS = {"model": "llm.model", "base_url": "llm.base_url", "top_k": "retrieval.top_k",
             "collection": "store.collection"}
"""Flags of ``ask`` and ``eval`` that override settings (argparse dest -> settings path)."""


def exit_code(metadata: dict[str, Any]) -> int:
    """0 for an answer, 1 for an honest not-found, 2 when the run failed on an error."""
    if metadata.get("outcome") == "success":
        return 0
    if metadata.get("error") or metadata.get("reason") not in NOT_FOUND_REASONS:
        return 2
    return 1


async def ask(args: argparse.Namespace) -> int:
    """Answer one question (on a local model started for the call with ``--local``)."""
    from rags_expert.local_llm import maybe_local

    if args.local and not args.quiet and not args.json:
        print("[starting the local model]", file=sys.stderr, flush=True)
    async with maybe_local(args_settings(args), args.local) as settings:
        return await answer(args, settings)


async def answer(args: argparse.Namespace, settings: RagsExpertSettings) -> int:
    """Answer one question, streaming tokens to stdout and progress to stderr."""
    from rags_expert.rag import RagsExpert

    agent = await RagsExpert(settings).async_init()
    graph = agent.get_compiled_graph()
    config: dict[str, Any] = {"configurable": {"thread_id": args.thread}}
    if args.tags:
        config["configurable"]["library_tags"] = [t for t in args.tags.split(",") if t]
    final = None
    streamed = False
    async for mode, chunk in graph.astream(
        {"messages": [("user", args.question)]}, config, stream_mode=["messages", "updates"]
    ):
        if mode == "messages":
            message, meta = chunk
            if meta.get("langgraph_node") == "generate" and not args.json and message.content:
                print(message.content, end="", flush=True)
                streamed = True
            continue
        for node, update in chunk.items():
            if not args.json and not args.quiet and node in PROGRESS:
                print(f"[{PROGRESS[node]}]", file=sys.stderr, flush=True)
            if node == "grade_generation" and update and update.get("feedback") and not args.json:
                print(f"\n[draft rejected: {update['feedback']}]", file=sys.stderr, flush=True)
            if node.startswith("finalize_") and update:
                final = update["messages"][-1]
    if final is None:
        print("error: the run ended without an answer", file=sys.stderr)
        return 2
    meta = final.response_metadata
    if args.json:
        print(json.dumps({"answer": final.content, **meta}, indent=2, default=str))
    else:
        if meta["outcome"] != "success" or not streamed:
            print(("\n" if streamed else "") + final.content)
        else:
            print()
        for src in meta["sources"]:
            where = src.get("source") or ""
            page = f", p. {src['page']}" if src.get("page") is not None else ""
            print(f"[{src['n']}] {src.get('title') or where}{page} ({where})")
    return exit_code(meta)


async def evaluate(args: argparse.Namespace) -> int:
    """Run a benchmark through the agent and write the report."""
    from rags_expert.evaluation import run_hotpotqa, write_report

    settings = args_settings(args)
    questions_file = args.data / f"{args.split}.jsonl"
    if not args.quiet:
        print(f"[indexing the {args.split} corpus, then asking; per-question lines follow]", file=sys.stderr)

    def progress(r) -> None:
        if not args.quiet:
            mark = "ok " if r.outcome == "success" else "-- "
            print(f"{mark} EM {r.exact_match:.0f} F1 {r.f1:.2f} calls {r.llm_calls:2d} {r.seconds:5.1f}s  "
                  f"{r.question[:70]}", file=sys.stderr, flush=True)

    from rags_expert.local_llm import maybe_local

    async with maybe_local(settings, args.local) as settings:
        report = await run_hotpotqa(settings, questions_file, split=args.split, limit=args.limit, progress=progress)
    json_path, png_path = write_report(report, args.out)
    print(report.table())
    print(f"\nreport: {json_path}" + (f"\nplot: {png_path}" if png_path else "\n(plot skipped: install matplotlib)"))
    return 0


def _default_hotpotqa_dir() -> Path:
    env = os.environ.get("RAGS_EXPERT_HOTPOTQA_DIR")
    return Path(env) if env else Path("..") / "shared" / "data" / "hotpotqa"


def build_parser() -> argparse.ArgumentParser:
    """The ``rags-expert`` parser with every subcommand (usage errors: one line, exit 2)."""
    parser = OneLineParser(prog="rags-expert", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="log at INFO level to stderr (-vv: DEBUG, every library's records); secrets are masked")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("ask", help="answer a question from the knowledge base")
    p.add_argument("question")
    p.add_argument("--model", type=setting_type("llm.model"), help="chat model name (RAGS_EXPERT_LLM__MODEL)")
    p.add_argument("--base-url", help="OpenAI-compatible base URL (RAGS_EXPERT_LLM__BASE_URL)")
    p.add_argument("-k", "--top-k", type=setting_type("retrieval.top_k"), help="chunks retrieved per query")
    p.add_argument("--collection", type=setting_type("store.collection"), help="knowledge-base collection")
    p.add_argument("--tags", help="comma-separated library tags to filter on")
    p.add_argument("--thread", default="cli", help="conversation thread id")
    p.add_argument("--json", action="store_true", help="print the final message and metadata as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument("--local", action="store_true",
                   help="answer offline with a local model server started for this call (needs the 'local' extra)")
    p.set_defaults(func=lambda a: asyncio.run(ask(a)), settings_flags=ASK_FLAGS)

    p = sub.add_parser("eval", help="evaluate the agent on a benchmark (HotpotQA)")
    p.add_argument("benchmark", choices=["hotpotqa"])
    p.add_argument("--split", choices=["dev", "test"], default="dev")
    p.add_argument("--limit", type=positive_int, help="the first N questions only")
    p.add_argument("--data", type=Path, default=_default_hotpotqa_dir(),
                   help="folder with <split>.jsonl (default: $RAGS_EXPERT_HOTPOTQA_DIR or ../shared/data/hotpotqa)")
    p.add_argument("--out", type=Path, default=Path("eval-out"), help="where the JSON report and PNG plot go")
    p.add_argument("--model", type=setting_type("llm.model"), help="chat model name (RAGS_EXPERT_LLM__MODEL)")
    p.add_argument("--base-url", help="OpenAI-compatible base URL (RAGS_EXPERT_LLM__BASE_URL)")
    p.add_argument("-k", "--top-k", type=setting_type("retrieval.top_k"), help="chunks retrieved per query")
    p.add_argument("-q", "--quiet", action="store_true", help="no per-question lines on stderr")
    p.add_argument("--local", action="store_true", help="run on the bundled offline model (needs the 'local' extra)")
    p.set_defaults(func=lambda a: asyncio.run(evaluate(a)), collection=None, settings_flags=ASK_FLAGS)

    p = sub.add_parser("settings", help="print the settings reference (markdown)")
    p.set_defaults(func=lambda a: print(settings_reference()))

    for module in ("rags_expert.retrieval.cli", "rags_expert.kg.cli"):
        try:
            register = __import__(module, fromlist=["register"]).register
        except ImportError:
            continue
        register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rags-expert`` script: one redacted line and exit 2 on any error, never a traceback."""
    args = build_parser().parse_args(argv)
    book = SecretBook()
    configure_logging(args.verbose, book)
    try:
        args.settings = settings_from_args(args)
    except SETTINGS_ERRORS as exc:
        return _fail(book, describe_settings_error(exc, _flag_names(args)))
    book.add_settings(args.settings)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except SETTINGS_ERRORS as exc:
        return _fail(book, describe_settings_error(exc, _flag_names(args)))
    except Exception as exc:  # the last resort: a clear one-line error, never a secret
        log.debug("traceback of the error below", exc_info=True)  # -vv only; the log filter redacts it
        return _fail(book, f"{type(exc).__name__}: {exc}")


def _flag_names(args: argparse.Namespace) -> dict[str, str]:
    """Settings paths the command line set, with the flag that set them (to name it in errors)."""
    flags = getattr(args, "settings_flags", None) or {}
    return {path: "--" + dest.replace("_", "-") for dest, path in flags.items() if getattr(args, dest, None) is not None}


def _fail(book: SecretBook, message: str) -> int:
    """Print ``error: message`` (redacted, one line) on stderr; the exit status 2."""
    print("error: " + " ".join(book.redact(message).split()), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
