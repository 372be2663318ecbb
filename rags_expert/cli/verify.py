"""The ``verify`` subcommand of ``rags-expert``: re-check a saved answer's span citations, offline.

``rags-expert verify ANSWER.json`` reads an answer saved with ``rags-expert ask --json`` and checks every span
citation against the knowledge base as it is now (:mod:`rags_expert.retrieval.verify`): one line per answer
sentence, ``ok`` / ``moved`` / ``changed`` / ``gone`` (or ``unsupported``: it was never cited).

Exit codes: 0 every citation ``ok`` or ``moved``; 1 some citation ``changed`` or ``gone``; 2 an error (a file
that cannot be read or is no saved answer, a knowledge base that cannot be read).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rags_expert.cli.knowledge import FLAGS as KB_FLAGS
from rags_expert.cli.knowledge import store_options
from rags_expert.cli.support import args_settings
from rags_expert.secrets import redact

if TYPE_CHECKING:
    from rags_expert.retrieval.qdrant import KnowledgeBase
    from rags_expert.retrieval.verify import CitationCheck
    from rags_expert.settings import KnowledgeBaseSettings


class AnswerFileError(ValueError):
    """A saved answer that cannot be read (missing, unreadable, not JSON)."""


def load_answer(path: Path) -> dict[str, Any]:
    """The JSON object of a saved answer (raises :class:`AnswerFileError` with a one-line reason)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AnswerFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AnswerFileError(f"{path} is not a JSON answer ({type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise AnswerFileError(f"{path} is not a JSON answer (not an object)")
    return data


def open_kb(args: argparse.Namespace) -> KnowledgeBase:
    """The knowledge base the settings (and ``--collection`` / ``--data-dir``) name."""
    from rags_expert.retrieval.qdrant import KnowledgeBase

    return KnowledgeBase(cast("KnowledgeBaseSettings", args_settings(args)))


def check_file(path: Path, kb: KnowledgeBase) -> list[CitationCheck]:
    """The checks of one saved answer (raises :class:`AnswerFileError` or ``AnswerFormatError``)."""
    from rags_expert.retrieval.verify import verify_citations

    return verify_citations(load_answer(path), kb)


def describe(check: CitationCheck) -> str:
    """One line for a check: the status, the chunk, the sentence (and where a moved quote is now)."""
    moved = f" → {check.where['uid']}[{check.where['start']}:{check.where['end']}]" if check.where else ""
    uid = f" {check.uid}" if check.uid else ""
    return f"{check.status:<11}{uid}{moved}  {check.sentence[:100]}"


def cmd_verify(args: argparse.Namespace) -> int:
    """Verify one saved answer; print a line per citation (or JSON); the exit code."""
    from rags_expert.retrieval.qdrant import KnowledgeBaseError
    from rags_expert.retrieval.verify import AnswerFormatError, all_good

    try:
        checks = check_file(Path(args.answer), open_kb(args))
    except (AnswerFileError, AnswerFormatError, KnowledgeBaseError) as exc:
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
    p.add_argument("--json", action="store_true", help="print a JSON list of {sentence, status, uid, where}")
    p.set_defaults(func=cmd_verify, settings_flags=KB_FLAGS)
