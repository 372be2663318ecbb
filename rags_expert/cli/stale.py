"""The ``stale`` subcommand of ``rags-expert``: which saved answers no longer stand on the knowledge base.

``rags-expert stale FOLDER`` verifies every ``*.json`` answer under ``FOLDER`` (saved with ``rags-expert ask
--json``) as ``verify`` does and lists those with a citation ``changed`` or ``gone``; JSON files that are no
saved answers are counted and passed over. ``--reask`` asks each stale answer's question again and prints the
old answer, then the new one (the saved file is left as it is: it is the user's record).

Exit codes: 0 no answer is stale; 1 some are; 2 an error (no such folder, a knowledge base that cannot be read,
a model fault on ``--reask``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rags_expert.cli.ask import ASK_FLAGS
from rags_expert.cli.support import args_settings
from rags_expert.cli.verify import AnswerFileError, check_file, load_answer, open_kb
from rags_expert.secrets import redact

if TYPE_CHECKING:
    from rags_expert.retrieval.qdrant import KnowledgeBase
    from rags_expert.settings import RagsExpertSettings


def stale_answers(folder: Path, kb: KnowledgeBase) -> tuple[list[tuple[Path, list[str]]], int]:
    """``(path, bad statuses)`` of each stale answer under ``folder``, and how many files were no answers."""
    from rags_expert.retrieval.verify import AnswerFormatError

    stale, skipped = [], 0
    for path in sorted(folder.rglob("*.json")):
        try:
            checks = check_file(path, kb)
        except (AnswerFileError, AnswerFormatError):
            skipped += 1
            continue
        bad = [str(c.status) for c in checks if not c.good]
        if bad:
            stale.append((path, bad))
    return stale, skipped


async def reask(settings: RagsExpertSettings, questions: list[str]) -> list[str]:
    """The current answers to ``questions`` (each on its own thread), in order."""
    from langchain_core.messages import HumanMessage

    from rags_expert.rag import RagsExpert

    agent = await RagsExpert(settings).async_init()
    try:
        graph = agent.get_compiled_graph()
        out = []
        for i, question in enumerate(questions):
            state = await graph.ainvoke(
                {"messages": [HumanMessage(question)]}, {"configurable": {"thread_id": f"stale-{i}"}}
            )
            out.append(str(state["messages"][-1].content))
        return out
    finally:
        await agent.aclose()


def cmd_stale(args: argparse.Namespace) -> int:
    """List (and with ``--reask`` answer again) the stale answers of a folder; the exit code."""
    from rags_expert.retrieval.qdrant import KnowledgeBaseError

    folder = Path(args.folder)
    secrets = args_settings(args).secrets()
    if not folder.is_dir():
        print(f"error: no such folder: {folder}", file=sys.stderr)
        return 2
    try:
        stale, skipped = stale_answers(folder, open_kb(args))
    except KnowledgeBaseError as exc:
        print(f"error: {redact(str(exc), secrets)}", file=sys.stderr)
        return 2
    for path, bad in stale:
        counts = ", ".join(f"{bad.count(s)} {s}" for s in dict.fromkeys(bad))
        print(f"{path}: {counts}")
    print(f"{len(stale)} stale answer(s){f'; {skipped} file(s) not saved answers' if skipped else ''}")
    if args.reask and stale:
        answers = [load_answer(path) for path, _ in stale]
        questions = [str(a.get("question") or "") for a in answers]
        settings = cast("RagsExpertSettings", args_settings(args))
        for (path, _), old, new in zip(stale, answers, asyncio.run(reask(settings, questions)), strict=True):
            print(f"{path}\n  question: {old.get('question')}\n  old: {old.get('answer')}\n  new: {new}")
    return 1 if stale else 0


def register(subparsers: Any) -> None:
    """Add the ``stale`` subcommand."""
    p = subparsers.add_parser(
        "stale", help="list saved answers (ask --json) whose citations no longer match the knowledge base"
    )
    p.add_argument("folder", metavar="FOLDER", help="a folder of answers saved with 'rags-expert ask --json'")
    p.add_argument("--collection", help="knowledge-base collection (store.collection)")
    p.add_argument("--reask", action="store_true", help="ask each stale answer's question again: old → new")
    p.set_defaults(func=cmd_stale, settings_flags={"collection": ASK_FLAGS["collection"]})
