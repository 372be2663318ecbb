"""Command line of rags-expert (minimal on the retrieval branch; the lead adds ``ask``)."""

from __future__ import annotations

import argparse
import sys

from rags_expert.retrieval import cli as retrieval_cli


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments and run the chosen subcommand."""
    parser = argparse.ArgumentParser(prog="rags-expert")
    sub = parser.add_subparsers(dest="command", required=True)
    retrieval_cli.register(sub)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
