"""The ``stale`` subcommand of ``rags-expert``: which saved answers no longer stand on the knowledge base.

``rags-expert stale FOLDER`` verifies every ``*.json`` answer under ``FOLDER`` (saved with ``rags-expert ask
--json``) as ``verify`` does and lists those with a citation ``changed`` or ``gone``. A file that cannot be checked
(unreadable, not a regular file, over 16 MiB, not JSON, no saved answer) is one warning line on stderr naming it and
what is wrong; the others are still checked and listed. With ``--checkpointer-url`` (or ``checkpointer.url``) the
answers of every conversation thread stored there are verified too (named ``thread:ID#K``, the K-th answer of the
thread). ``--reask`` asks each stale answer's question again, on a fresh thread (``--local``: on the bundled
offline model), and prints the old answer, then the new one (the saved file and the thread are left as they are:
they are the user's record); a re-ask that fails (the model is down) is reported as such, never as the new answer.

Exit codes: 0 every answer checked and none is stale; 1 some are stale (and every answer was checked); 2 an error
(no such folder, a knowledge base or checkpointer that cannot be read, an answer that could not be checked, a
re-ask that failed), the stale answers found still listed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rags_expert.cli.ask import THREAD_FLAGS, exit_code, local_note
from rags_expert.cli.knowledge import FLAGS as KB_FLAGS
from rags_expert.cli.knowledge import store_options
from rags_expert.cli.support import args_settings, printable, setting_type
from rags_expert.cli.verify import AnswerFileError, open_kb, saved_answer
from rags_expert.secrets import redact

if TYPE_CHECKING:
    from rags_expert.retrieval.qdrant import KnowledgeBase
    from rags_expert.settings import RagsExpertSettings


Stale = list[tuple[str, dict[str, Any], list[str]]]
"""``(name, saved answer, bad statuses)`` of each stale answer."""


def folder_answers(folder: Path) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """``(path, answer)`` of the saved answers under ``folder``, and why each other ``*.json`` could not be checked."""
    out, faults = [], []
    for path in sorted(folder.rglob("*.json")):
        try:
            out.append((str(path), saved_answer(path)))
        except AnswerFileError as exc:
            faults.append(str(exc))
    return out, faults


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


def stale_answers(answers: list[tuple[str, dict[str, Any]]], kb: KnowledgeBase) -> tuple[Stale, list[str]]:
    """The stale ones among ``answers``, and why each that is no saved answer could not be checked."""
    from rags_expert.retrieval.verify import AnswerFormatError, verify_citations

    stale: Stale = []
    faults = []
    for name, answer in answers:
        try:
            checks = verify_citations(answer, kb)
        except AnswerFormatError as exc:
            faults.append(f"{printable(name, None)}: {exc}")
            continue
        bad = [str(c.status) for c in checks if not c.good]
        if bad:
            stale.append((name, answer, bad))
    return stale, faults


async def reask(settings: RagsExpertSettings, questions: list[str], local: bool) -> list[tuple[str, dict[str, Any]]]:
    """The current answer to each of ``questions`` (each on its own thread, on the bundled model with ``local``):
    ``(text, response_metadata)``, in order."""
    from langchain_core.messages import HumanMessage

    from rags_expert.local.server import maybe_local
    from rags_expert.rag import RagsExpert

    async with maybe_local(settings, local) as run:
        agent, _ = await asyncio.gather(RagsExpert(run.settings).async_init(), run.ready())
        try:
            graph = agent.get_compiled_graph()
            out = []
            for i, question in enumerate(questions):
                state = await graph.ainvoke(
                    {"messages": [HumanMessage(question)]}, {"configurable": {"thread_id": f"stale-{i}"}}
                )
                final = state["messages"][-1]
                out.append((str(final.content), dict(final.response_metadata)))
            return out
        finally:
            await agent.aclose()


def print_reasked(stale: Stale, settings: RagsExpertSettings, local: bool) -> bool:
    """Ask each stale answer's saved question again; print the old and the new answer, or why there is none.
    Whether every re-ask that was made succeeded (an answer without a question is not asked)."""
    questions = {name: q for name, answer, _ in stale if isinstance(q := answer.get("question"), str) and q.strip()}
    if questions and local:
        print(f"[starting the local model{local_note(settings)}]", file=sys.stderr, flush=True)
    answers = asyncio.run(reask(settings, list(questions.values()), local)) if questions else []
    new = dict(zip(questions, answers, strict=True))
    succeeded = True
    for name, old, _ in stale:
        print(printable(name, None))
        if name not in new:
            print("  cannot re-ask: no question saved")
            continue
        text, meta = new[name]
        old_text = old.get("answer") if isinstance(old.get("answer"), str) else ""
        print(f"  question: {printable(questions[name], None)}\n  old: {printable(old_text, None)}")
        if exit_code(meta) == 2:  # the model (or the budget) failed: that says nothing of the knowledge base
            succeeded = False
            why = redact(str(meta.get("error") or meta.get("reason")), settings.secrets())
            print(f"  re-ask failed: {printable(why, 300)}")
        else:
            print(f"  new: {printable(text, None)}")
    return succeeded


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
        print(f"error: no such folder: {printable(args.folder, None)}", file=sys.stderr)
        return 2
    answers, unread = folder_answers(Path(args.folder)) if args.folder is not None else ([], [])
    for fault in unread:  # before the knowledge base is opened: said even when it cannot be
        print(f"warning: {redact(fault, secrets)}", file=sys.stderr)
    try:
        if settings.checkpointer.url is not None:
            answers += asyncio.run(thread_answers(settings))
        stale, unchecked = stale_answers(answers, open_kb(args))
    except (KnowledgeBaseError, CheckpointerError) as exc:
        print(f"error: {redact(str(exc), secrets)}", file=sys.stderr)
        return 2
    for fault in unchecked:
        print(f"warning: {redact(fault, secrets)}", file=sys.stderr)
    faults = len(unread) + len(unchecked)
    for name, _, bad in stale:
        counts = ", ".join(f"{bad.count(s)} {s}" for s in dict.fromkeys(bad))
        print(f"{printable(name, None)}: {counts}")
    print(f"{len(stale)} stale answer(s){f'; {faults} could not be checked (see the warnings)' if faults else ''}")
    reasked = print_reasked(stale, settings, args.local) if args.reask and stale else True
    return 2 if faults or not reasked else 1 if stale else 0


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
    p.add_argument(
        "--local",
        action="store_true",
        help="--reask on a local model server started for this call (needs the 'local' extra)",
    )
    p.set_defaults(func=cmd_stale, settings_flags={**KB_FLAGS, **THREAD_FLAGS})
