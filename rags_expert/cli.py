"""Command line of rags-expert (minimal; the RAG subcommands are added by the main branch)."""

from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rags-expert", description="Corrective-RAG and KG-query agents")
    subparsers = parser.add_subparsers(dest="command", required=True)
    from rags_expert.kg.cli import register as register_kg

    register_kg(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
