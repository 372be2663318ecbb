"""The ``stale`` subcommand of ``rags-expert``: which saved answers no longer stand on the knowledge base.

``rags-expert stale FOLDER`` verifies every ``*.json`` answer under ``FOLDER`` (saved with ``rags-expert ask
--json``) as ``verify`` does and lists those with a citation ``changed`` or ``gone``; JSON files that are no
saved answers are counted and passed over. With ``--checkpointer-url`` (or ``checkpointer.url``) the answers of
every conversation thread stored there are verified too (named ``thread:ID#K``, the K-th answer of the thread).
``--reask`` asks each stale answer's question again, on a fresh thread, and prints the old answer, then the new
one (the saved file and the thread are left as they are: they are the user's record).

Exit codes: 0 no answer is stale; 1 some are; 2 an error (no such folder, a knowledge base that cannot be read,
a model fault on ``--reask``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rags_expert.cli.ask import THREAD_FLAGS
from rags_expert.cli.knowledge import FLAGS as KB_FLAGS
from rags_expert.cli.knowledge import store_options
from rags_expert.cli.support import args_settings, setting_type
from rags_expert.cli.verify import AnswerFileError, load_answer, open_kb
from rags_expert.secrets import redact

if TYPE_CHECKING:
    from rags_expert.retrieval.qdrant import KnowledgeBase
    from rags_expert.settings import RagsExpertSettings


Stale = list[tuple[str, dict[str, Any], list[str]]]
"""``(name, saved answer, bad statuses)`` of each stale answer."""


def folder_answers(folder: Path) -> tuple[list[tuple[str, dict[str, Any]]], int]:
    """``(path, answer)`` of the JSON files under ``folder``, and how many could not be read as JSON objects."""
    out, skipped = [], 0
    for path in sorted(folder.rglob("*.json")):
        try:
            out.append((str(path), load_answer(path)))
        except AnswerFileError:
            skipped += 1
    return out, skipped


async def thread_answers(settings: RagsExpertSettings) -> list[tuple[str, dict[str, Any]]]:
    """``(thread:ID#K, answer)`` of every answer in the latest checkpoint of each thread of ``checkpointer.url``."""
    from langchain_core.messages import AIMessage

    from rags_expert.checkpoints import build_checkpointer, close_checkpointer, open_checkpointer

    saver = build_checkpointer(settings.checkpointer)
    await open_checkpointer(saver)
    try:
        latest: dict[str, list[Any]] = {}
        async for item in saver.alist(None):  # newest first
            thread = str(item.config["configurable"]["thread_id"])
            latest.setdefault(thread, list(item.checkpoint["channel_values"].get("messages") or []))
    finally:
        await close_checkpointer(saver)
    out = []
    for thread, messages in sorted(latest.items()):
        answers = [m for m in messages if isinstance(m, AIMessage) and "outcome" in m.response_metadata]
        out += [(f"thread:{thread}#{k}", {"answer": m.content, **m.response_metadata}) for k, m in enumerate(answers)]
    return out


def stale_answers(answers: list[tuple[str, dict[str, Any]]], kb: KnowledgeBase) -> tuple[Stale, int]:
    """The stale ones among ``answers``, and how many were no saved answers."""
    from rags_expert.retrieval.verify import AnswerFormatError, verify_citations

    stale: Stale = []
    skipped = 0
    for name, answer in answers:
        try:
            checks = verify_citations(answer, kb)
        except AnswerFormatError:
            skipped += 1
            continue
        bad = [str(c.status) for c in checks if not c.good]
        if bad:
            stale.append((name, answer, bad))
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
    from rags_expert.checkpoints import CheckpointerError
    from rags_expert.retrieval.qdrant import KnowledgeBaseError

    settings = cast("RagsExpertSettings", args_settings(args))
    secrets = settings.secrets()
    if args.folder is None and settings.checkpointer.url is None:
        print("error: give a FOLDER of saved answers, --checkpointer-url, or both", file=sys.stderr)
        return 2
    if args.folder is not None and not Path(args.folder).is_dir():
        print(f"error: no such folder: {args.folder}", file=sys.stderr)
        return 2
    try:
        answers, unreadable = folder_answers(Path(args.folder)) if args.folder is not None else ([], 0)
        if settings.checkpointer.url is not None:
            answers += asyncio.run(thread_answers(settings))
        stale, skipped = stale_answers(answers, open_kb(args))
    except (KnowledgeBaseError, CheckpointerError) as exc:
        print(f"error: {redact(str(exc), secrets)}", file=sys.stderr)
        return 2
    skipped += unreadable
    for name, _, bad in stale:
        counts = ", ".join(f"{bad.count(s)} {s}" for s in dict.fromkeys(bad))
        print(f"{name}: {counts}")
    print(f"{len(stale)} stale answer(s){f'; {skipped} file(s) not saved answers' if skipped else ''}")
    if args.reask and stale:
        questions = [str(answer.get("question") or "") for _, answer, _ in stale]
        for (name, old, _), new in zip(stale, asyncio.run(reask(settings, questions)), strict=True):
            print(f"{name}\n  question: {old.get('question')}\n  old: {old.get('answer')}\n  new: {new}")
    return 1 if stale else 0


def register(subparsers: Any) -> None:
    """Add the ``stale`` subcommand."""
    p = subparsers.add_parser(
        "stale", help="list saved answers (ask --json) whose citations no longer match the knowledge base"
    )
    p.add_argument(
        "folder", metavar="FOLDER", nargs="?", help="a folder of answers saved with 'rags-expert ask --json'"
    )
    store_options(p)
    p.add_argument(
        "--checkpointer-url",
        type=setting_type("checkpointer.url"),
        help="also verify the answers of every thread kept in this PostgreSQL checkpointer "
        "(RAGS_EXPERT_CHECKPOINTER__URL, preferred for a password)",
    )
    p.add_argument("--reask", action="store_true", help="ask each stale answer's question again: old → new")
    p.set_defaults(func=cmd_stale, settings_flags={**KB_FLAGS, **THREAD_FLAGS})
