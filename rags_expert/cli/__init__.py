"""The ``rags-expert`` command line: one module per subcommand in this package (``ask``, ``evaluate``,
``knowledge`` for ingest and search, ``kg``, ``mcp``, ``verify``, ``stale``), what they share in :mod:`rags_expert.cli.support`.

A thin dispatcher: every subcommand module adds itself through its ``register(subparsers)`` (listed in
:data:`COMMANDS`); this module parses, validates the settings once, runs the handler and turns any error into one
redacted line. Subcommand modules import no optional extra; their heavy imports stay
inside the handlers.

Exit codes (every subcommand): 0 done; 1 an honest "nothing found"; 2 an error
(invalid settings or flags, a model, retriever or database fault); 130 interrupted.
"""

from __future__ import annotations

import argparse
import gc
import logging
import sys
from collections.abc import Callable
from typing import Any

from rags_expert.cli import ask, evaluate, kg, knowledge, mcp, stale, verify
from rags_expert.cli.support import (
    SETTINGS_ERRORS,
    OneLineParser,
    configure_logging,
    describe_settings_error,
    settings_from_args,
)
from rags_expert.settings import settings_reference
from rags_expert.settings.environment import SecretBook

log = logging.getLogger(__name__)


DESCRIPTION = (
    "Answer questions from your documents (corrective RAG with cited sources) or from a knowledge graph "
    "(Cypher), offline with a bundled model (--local) or through any OpenAI-compatible endpoint."
)
"""What ``rags-expert --help`` says first (the exit codes follow the command list: this docstring's last paragraph)."""


GC_THRESHOLD = 10_000
"""Allocations between two collections of the youngest generation while a command runs (Python's default: 700)."""


def register_settings(subparsers: Any) -> None:
    """Add the ``settings`` subcommand: print the settings reference."""
    p = subparsers.add_parser("settings", help="print the settings reference (markdown)")
    p.set_defaults(func=lambda a: print(settings_reference()))


COMMANDS: tuple[Callable[[Any], None], ...] = (
    ask.register,  # ask
    evaluate.register,  # eval
    register_settings,  # settings
    knowledge.register,  # ingest, search
    kg.register,  # kg
    mcp.register,  # mcp
    verify.register,  # verify
    stale.register,  # stale
)
"""The subcommand registrations, in the order ``--help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    """The ``rags-expert`` parser with every subcommand (usage errors: one line, exit 2)."""
    parser = OneLineParser(prog="rags-expert", description=DESCRIPTION, epilog=__doc__.strip().split("\n\n")[-1])
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="log at INFO level to stderr (-vv: DEBUG, every library's records); secrets are masked",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for register in COMMANDS:
        register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rags-expert`` script: one redacted line and exit 2 on any error, never a traceback."""
    # A command builds a few hundred thousand objects that live until it exits (the modules a subcommand imports,
    # pydantic's schemas, the graph, the embedding model) and little cyclic garbage: collecting every 700
    # allocations (Python's default) walked them ~330 times, 0.15-0.2 s of an `ask --local` (issue 54).
    threshold = gc.get_threshold()
    gc.set_threshold(GC_THRESHOLD, *threshold[1:])
    try:
        return _main(argv)
    finally:
        gc.set_threshold(*threshold)  # a host calling main() in its own process keeps its own


def _main(argv: list[str] | None) -> int:
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
    finally:
        # Everything the command built dies with the process: the exit's garbage collection walked all of it
        # (the knowledge base's points, the embedding model, pydantic's schemas), 1.5 s of `ask --local`'s 11 s.
        # Frozen objects are left to the operating system; every file and connection was closed before this.
        gc.freeze()


def _flag_names(args: argparse.Namespace) -> dict[str, str]:
    """Settings paths the command line set, with the flag that set them (to name it in errors)."""
    flags = getattr(args, "settings_flags", None) or {}
    return {
        path: "--" + dest.replace("_", "-") for dest, path in flags.items() if getattr(args, dest, None) is not None
    }


def _fail(book: SecretBook, message: str) -> int:
    """Print ``error: message`` (redacted, one line) on stderr; the exit status 2."""
    print("error: " + " ".join(book.redact(message).split()), file=sys.stderr)
    return 2
