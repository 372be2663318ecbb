"""``rags-expert kg "question" --schema PATH``: ask the KG agent from the command line.

Prints the executed query, the rows and the steps (or ``--json``). Exit codes:
0 rows found; 1 no rows (the queries ran, none answered); 2 an error: bad input
(invalid flags or settings, unreadable schema, unknown sample, no chat model
configured), a model failure, or a graph database that could not be used.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rags_expert.cli.support import question_error, setting_type, settings_from_args, text_arg
from rags_expert.outcomes import FailureReason, exit_code
from rags_expert.secrets import redact
from rags_expert.settings import KGExpertSettings

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

FLAGS = {"backend": "kg.backend", "max_steps": "kg.max_steps"}
"""Flags of ``kg`` that override settings (argparse dest -> settings path)."""


def register(subparsers: Any) -> None:
    """Add the ``kg`` subcommand to the top-level CLI."""
    p = subparsers.add_parser("kg", help="answer a question with a Cypher query on a knowledge graph")
    p.add_argument("question", type=text_arg, help="the question, in natural language")
    p.add_argument(
        "--schema",
        required=True,
        type=Path,
        help="BioCypher schema_config.yaml / schema_info.yaml, or a file of several kg_schemas",
    )
    p.add_argument("--schema-name", help="which schema of a kg_schemas file (e.g. gene_kg)")
    p.add_argument("--backend", choices=["falkordb", "neo4j"], help="graph database (default: settings kg.backend)")
    p.add_argument(
        "--graph",
        type=setting_type("kg.graph"),
        help="FalkorDB graph name (default: the schema name, else settings kg.graph)",
    )
    p.add_argument(
        "--load-sample",
        action="store_true",
        help="load the packaged sample graph for the schema first (replaces the graph)",
    )
    p.add_argument("--max-steps", type=setting_type("kg.max_steps"), help="queries the agent may execute")
    p.add_argument("--json", action="store_true", help="print the whole result as JSON")
    p.add_argument("--local", action="store_true", help="run on the bundled offline model (needs the 'local' extra)")
    p.set_defaults(func=run, settings_flags=FLAGS, settings_class=KGExpertSettings)


def run(
    args: argparse.Namespace, *, chat_model: BaseChatModel | None = None, settings: KGExpertSettings | None = None
) -> int:
    """Run the ``kg`` subcommand (on a local model started for the call with ``--local``); returns the exit code."""
    from rags_expert.local.server import maybe_local

    base = settings or getattr(args, "settings", None)
    settings = cast(KGExpertSettings, settings_from_args(args, base))  # validated; flags win over the given settings
    if error := question_error(args.question, settings):
        print(error, file=sys.stderr)
        return 2

    async def go() -> int:
        async with maybe_local(settings, getattr(args, "local", False)) as local:
            await local.ready()
            return await _run(args, chat_model, local.settings)

    return asyncio.run(go())


async def _run(args: argparse.Namespace, chat_model: BaseChatModel | None, settings: KGExpertSettings | None) -> int:
    from rags_expert.kg import (
        GraphQueryError,
        KGQueryReflexionAgent,
        SchemaError,
        backend_from_settings,
        load_schema,
    )
    from rags_expert.kg.biocypher.loader import load_sample_graph
    from rags_expert.lessons import LessonMemory
    from rags_expert.llm.chat import build_chat_model

    settings = settings or KGExpertSettings()
    secrets = settings.secrets()
    try:
        schema = load_schema(args.schema, args.schema_name)
        model = chat_model or build_chat_model(settings.llm)
    except (SchemaError, ValueError) as exc:
        print(f"error: {redact(str(exc), secrets)}", file=sys.stderr)
        return 2
    backend = backend_from_settings(settings.kg, graph=args.graph or schema.name or None)
    try:
        if args.load_sample:
            plan = await load_sample_graph(backend, schema)
            print(f"loaded sample graph {schema.name!r}: {plan.node_count} nodes, {plan.edge_count} edges")
        memory = LessonMemory.from_settings(settings) if settings.lessons.enabled else None
        agent = KGQueryReflexionAgent(model, backend, schema, settings=settings, lesson_memory=memory)
        result = await agent.execute(args.question)
    except SchemaError as exc:
        print(f"error: {redact(str(exc), secrets)}", file=sys.stderr)
        return 2
    except GraphQueryError as exc:
        print(f"error: graph database: {redact(str(exc), secrets)}", file=sys.stderr)
        return 2
    finally:
        await backend.close()
    if args.json:
        print(redact(json.dumps(result.to_dict(), default=str, ensure_ascii=False, indent=2), secrets))
        return exit_code(result.end())
    print(f"query: {result.query or '(none executed successfully)'}")
    print(
        f"score: {'-' if result.score is None else f'{result.score:g}'}/10   "
        f"steps: {result.steps}   stopped: {result.exit_reason}"
    )
    if result.error:
        print(f"error: {redact(result.error, secrets)}")
    print(f"rows ({len(result.rows)}{', truncated' if result.truncated else ''}):")
    for row in result.rows:
        print("  " + json.dumps(row, default=str, ensure_ascii=False))
    print("steps:")
    for a in result.attempts:
        outcome = f"ERROR ({a['error_kind']}): {a['error']}" if a["error"] else f"{len(a['rows'])} row(s)"
        score = "-" if a["score"] is None else f"{a['score']:g}"
        print(f"  {a['step']}. {a['query'] or '(no query)'}\n     -> {redact(outcome, secrets)[:300]}; score {score}")
        if a.get("reflection"):
            print(f"     critique: {a['reflection']}")
    if result.exit_reason == FailureReason.BACKEND_ERROR and not result.error:
        print("error: graph database: every query failed to reach it (see the steps above)", file=sys.stderr)
    return exit_code(result.end())
