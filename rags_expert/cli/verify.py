"""The ``verify`` subcommand of ``rags-expert``: re-check a saved answer's span citations, offline.

``rags-expert verify ANSWER.json`` reads an answer saved with ``rags-expert ask --json`` and checks every span
citation against the knowledge base as it is now (:mod:`rags_expert.retrieval.verify`): one line per answer
sentence, ``ok`` / ``moved`` / ``changed`` / ``gone`` (or ``unsupported``: it was never cited), and one per closest
passage a not-found answer quotes (``closest passage: ...``).

Only a regular file of at most :data:`MAX_ANSWER_BYTES` (16 MiB) is read: a named pipe, a device or a socket is
refused unread. UTF-8 (with or without a byte-order mark), UTF-16 and UTF-32 are read. Nothing is created: a
knowledge base that does not exist is an error, not a new empty folder.

Exit codes: 0 every citation ``ok`` or ``moved``; 1 some citation ``changed`` or ``gone``; 2 an error, in one line
naming the file and what is wrong (a file that cannot be read or is no saved answer, a span whose offsets are
not ``0 ≤ start ≤ end`` or whose quote is empty), or a knowledge base that does not exist or cannot be read.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rags_expert.cli.knowledge import FLAGS as KB_FLAGS
from rags_expert.cli.knowledge import store_options
from rags_expert.cli.support import args_settings, printable
from rags_expert.secrets import redact

if TYPE_CHECKING:
    from rags_expert.retrieval.qdrant import KnowledgeBase
    from rags_expert.retrieval.verify import CitationCheck
    from rags_expert.settings import KnowledgeBaseSettings


MAX_ANSWER_BYTES = 16 * 2**20
"""The largest answer file ``verify`` and ``stale`` read: 16 MiB (a saved answer is a few kB)."""

_KINDS = {
    stat.S_IFDIR: "a folder",
    stat.S_IFIFO: "a named pipe",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


class AnswerFileError(ValueError):
    """A saved answer that cannot be read (missing, unreadable, no regular file, too large, not JSON)."""


def read_answer_bytes(path: Path) -> bytes:
    """The bytes of the regular file ``path``, at most :data:`MAX_ANSWER_BYTES` of them (raises
    :class:`AnswerFileError`, without reading it, for a named pipe, a device, a socket or a folder)."""
    name = printable(path, None)
    try:
        kind = stat.S_IFMT(path.stat().st_mode)
        if kind == stat.S_IFREG:  # opened without blocking and checked again: it may have been swapped since
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
            with os.fdopen(fd, "rb") as file:
                kind = stat.S_IFMT(os.fstat(fd).st_mode)
                data = file.read(MAX_ANSWER_BYTES + 1) if kind == stat.S_IFREG else b""
    except OSError as exc:
        raise AnswerFileError(f"{name}: cannot read it: {exc.strerror or exc}") from None
    if kind != stat.S_IFREG:
        raise AnswerFileError(f"{name}: not a regular file ({_KINDS.get(kind, 'a special file')}): not read")
    if len(data) > MAX_ANSWER_BYTES:
        raise AnswerFileError(f"{name}: too large for a saved answer (over {MAX_ANSWER_BYTES // 2**20} MiB): not read")
    return data


def load_answer(path: Path) -> dict[str, Any]:
    """The JSON object of a saved answer (raises :class:`AnswerFileError` with a one-line reason naming the file).

    UTF-8 with or without a byte-order mark, UTF-16 and UTF-32 are read (``json.loads`` of the bytes detects which:
    Windows PowerShell 5.1's ``>`` writes UTF-16)."""
    data = read_answer_bytes(path)
    try:
        answer = json.loads(data)
    except UnicodeDecodeError:
        fault = "not UTF-8, UTF-16 or UTF-32 text"
    except json.JSONDecodeError as exc:
        fault = f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    except ValueError as exc:  # a number over Python's int-string conversion limit
        fault = str(exc).split(":")[0]
    except RecursionError:
        fault = "nested too deeply"
    else:
        if isinstance(answer, dict):
            return answer
        fault = "not an object"
    raise AnswerFileError(f"{printable(path, None)}: not a JSON answer ({fault})")


def open_kb(args: argparse.Namespace) -> KnowledgeBase:
    """The knowledge base the settings (and ``--collection`` / ``--data-dir``) name, opened to read: nothing is
    created (raises ``KnowledgeBaseError`` when it does not exist)."""
    from rags_expert.retrieval.qdrant import KnowledgeBase

    return KnowledgeBase.existing(cast("KnowledgeBaseSettings", args_settings(args)))


def saved_answer(path: Path) -> dict[str, Any]:
    """The saved answer in ``path``, checked for shape before any knowledge base is opened (raises
    :class:`AnswerFileError` naming the file and what is wrong with it)."""
    from rags_expert.retrieval.verify import AnswerFormatError, answer_citations

    answer = load_answer(path)
    try:
        answer_citations(answer)
    except AnswerFormatError as exc:
        raise AnswerFileError(f"{printable(path, None)}: {exc}") from None
    return answer


def describe(check: CitationCheck) -> str:
    """One line for a check: the status, the chunk, the sentence (and where a moved quote is now); every value
    from the file made printable and cut (a forged uid can neither add a line nor fill the screen)."""
    where = check.where
    moved = f" → {printable(where['uid'])}[{where['start']}:{where['end']}]" if where else ""
    uid = f" {printable(check.uid)}" if check.uid else ""
    what = "closest passage: " if check.kind == "closest" else ""
    return f"{check.status:<11}{uid}{moved}  {what}{printable(check.sentence, 100)}"


def cmd_verify(args: argparse.Namespace) -> int:
    """Verify one saved answer; print a line per citation (or JSON); the exit code."""
    from rags_expert.retrieval.qdrant import KnowledgeBaseError
    from rags_expert.retrieval.verify import all_good, verify_citations

    try:
        checks = verify_citations(saved_answer(Path(args.answer)), open_kb(args))
    except (AnswerFileError, KnowledgeBaseError) as exc:
        print(f"error: {redact(str(exc), args_settings(args).secrets())}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([c.as_dict() for c in checks], ensure_ascii=False, indent=2))
    else:
        for check in checks:
            print(describe(check))
        if not checks:
            print("nothing to verify: the answer cites nothing")
    return 0 if all_good(checks) else 1


def register(subparsers: Any) -> None:
    """Add the ``verify`` subcommand."""
    p = subparsers.add_parser(
        "verify", help="re-check a saved answer's span citations (ask --json) against the knowledge base"
    )
    p.add_argument("answer", metavar="ANSWER.json", help="an answer saved with 'rags-expert ask --json'")
    store_options(p)
    p.add_argument("--json", action="store_true", help="print a JSON list of {sentence, status, uid, kind, where}")
    p.set_defaults(func=cmd_verify, settings_flags=KB_FLAGS)
