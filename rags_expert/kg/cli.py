"""``rags-expert kg "question" --schema PATH``: ask the KG agent from the command line.

Prints the executed query, the rows and the steps (or ``--json``). Exit codes:
0 rows found, 1 no rows or a failure (the reason is printed), 2 bad input
(unreadable schema, unknown sample, no chat model configured).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from rags_expert.llm import build_chat_model, redact
from rags_expert.settings import RagsExpertSettings


def register(subparsers: Any) -> None:
    """Add the ``kg`` subcommand to the top-level CLI."""
    p = subparsers.add_parser("kg", help="answer a question with a Cypher query on a knowledge graph")
    p.add_argument("question", help="the question, in natural language")
    p.add_argument("--schema", required=True, type=Path,
                   help="BioCypher schema_config.yaml / schema_info.yaml, or a file of several kg_schemas")
    p.add_argument("--schema-name", help="which schema of a kg_schemas file (e.g. gene_kg)")
    p.add_argument("--backend", choices=["falkordb", "neo4j"], help="graph database (default: settings kg.backend)")
    p.add_argument("--graph", help="FalkorDB graph name (default: the schema name, else settings kg.graph)")
    p.add_argument("--load-sample", action="store_true",
                   help="load the packaged sample graph for the schema first (replaces the graph)")
    p.add_argument("--max-steps", type=int, help="queries the agent may execute")
    p.add_argument("--json", action="store_true", help="print the whole result as JSON")
    p.add_argument("--local", action="store_true", help="run on the bundled offline model (needs the 'local' extra)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, *, chat_model: BaseChatModel | None = None,
        settings: RagsExpertSettings | None = None) -> int:
    """Run the ``kg`` subcommand (on a local model started for the call with ``--local``); returns the exit code."""
    from rags_expert.local_llm import maybe_local

    async def go() -> int:
        async with maybe_local(settings or RagsExpertSettings(), getattr(args, "local", False)) as s:
            return await _run(args, chat_model, s)

    return asyncio.run(go())


async def _run(args: argparse.Namespace, chat_model: BaseChatModel | None,
               settings: RagsExpertSettings | None) -> int:
    from rags_expert.kg import GraphQueryError, KGQueryReflexionAgent, SchemaError, backend_from_settings, load_schema
    from rags_expert.kg.loader import load_sample_graph
    from rags_expert.lessons import LessonMemory

    settings = settings or RagsExpertSettings()
    updates: dict[str, Any] = {}
    if args.backend:
        updates["backend"] = args.backend
    if args.max_steps:
        updates["max_steps"] = args.max_steps
    if updates:
        settings = settings.model_copy(update={"kg": settings.kg.model_copy(update=updates)})
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
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except GraphQueryError as exc:
        print(f"error: graph database: {redact(str(exc), secrets)}", file=sys.stderr)
        return 1
    finally:
        await backend.close()
    if args.json:
        print(redact(json.dumps(result.to_dict(), default=str, ensure_ascii=False, indent=2), secrets))
        return 0 if result.ok else 1
    print(f"query: {result.query or '(none executed successfully)'}")
    print(f"score: {'-' if result.score is None else f'{result.score:g}'}/10   "
          f"steps: {result.steps}   stopped: {result.exit_reason}")
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
    return 0 if result.ok else 1
