"""The ``ingest`` and ``search`` subcommands of ``rags-expert``."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from rags_expert.settings import RagsExpertSettings, RetrievalSettings


def _settings(args: argparse.Namespace) -> RetrievalSettings:
    """Retrieval settings from the environment, with command-line overrides."""
    r = RagsExpertSettings().retrieval
    updates: dict[str, Any] = {}
    if getattr(args, "collection", None):
        updates["collection"] = args.collection
    if getattr(args, "data_dir", None):
        updates["data_dir"] = Path(args.data_dir)
    if getattr(args, "mode", None):
        updates["mode"] = args.mode
    return RetrievalSettings(**{**r.model_dump(), **updates}) if updates else r


def cmd_ingest(args: argparse.Namespace) -> int:
    """Ingest files and folders into the knowledge base."""
    from tqdm import tqdm

    from rags_expert.retrieval.ingest import Ingestor
    from rags_expert.retrieval.qdrant import KnowledgeBase, KnowledgeBaseError

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    settings = _settings(args)
    tags = [t.strip() for t in (args.tags or "").split(",") if t.strip()]
    bar = tqdm(unit="chunk", desc="ingest", disable=args.quiet or None, file=sys.stderr)
    try:
        kb = KnowledgeBase(settings)
        report = Ingestor(kb, tags, progress=bar.update).run([Path(p) for p in args.paths], prune=args.prune)
    except (FileNotFoundError, KnowledgeBaseError, ValueError) as exc:
        bar.close()
        print(f"error: {exc}", file=sys.stderr)
        return 2
    bar.close()
    print(
        f"{report.files} files, {report.chunks_total} chunks ({report.chunks_embedded} new, "
        f"{report.chunks_deleted} removed, {report.unchanged} files unchanged, {report.files_pruned} pruned, "
        f"{len(report.skipped)} skipped) into {settings.collection!r} in {report.seconds:.1f}s"
    )
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    """Search the configured retriever (``retrieval.backend``, as ``ask`` does) and print the hits."""
    from rags_expert.retrieval.factory import retriever_from_settings
    from rags_expert.retrieval.knowledge_flow import KnowledgeFlowError
    from rags_expert.retrieval.qdrant import KnowledgeBaseError

    settings = _settings(args)
    tags = [t.strip() for t in (args.tags or "").split(",") if t.strip()] or None
    try:
        docs = retriever_from_settings(settings).invoke(args.query, top_k=args.k, library_tags=tags)
    except (KnowledgeBaseError, KnowledgeFlowError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        out = [
            {"content": d.page_content, "title": d.metadata.get("title"), "source": d.metadata.get("source"),
             "page": d.metadata.get("page"), "score": d.metadata.get("score")}
            for d in docs
        ]
        print(json.dumps(out, ensure_ascii=False, indent=2))
        return 0
    if not docs:
        print("no hits")
    for rank, d in enumerate(docs, start=1):
        m = d.metadata
        page = f" p.{m['page']}" if m.get("page") is not None else ""
        print(f"{rank}. [{m['score']:.4f}] {m.get('title')} — {m.get('source')}{page}")
        snippet = " ".join(d.page_content.split())
        print(f"   {snippet[:300]}{'…' if len(snippet) > 300 else ''}")
    return 0


def _common(p: argparse.ArgumentParser) -> None:
    """Options shared by ingest and search."""
    p.add_argument("--collection", help="Qdrant collection (default: retrieval.collection setting)")
    p.add_argument("--data-dir", help="embedded Qdrant data directory (default: RAGS_EXPERT_DATA_DIR or per-user)")


def register(subparsers: Any) -> None:
    """Add the ``ingest`` and ``search`` subcommands to an argparse subparsers object."""
    p = subparsers.add_parser("ingest", help="ingest files and folders (.md .txt .html .pdf .jsonl) into the knowledge base")
    p.add_argument("paths", nargs="+", metavar="PATH")
    _common(p)
    p.add_argument("--tags", default="", help="comma-separated tags stored with every chunk (for filtering)")
    p.add_argument("--prune", action="store_true", help="remove files that no longer exist under the given folders")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_ingest)

    s = subparsers.add_parser("search", help="search the configured retriever (retrieval.backend) for debugging it")
    s.add_argument("query")
    s.add_argument("-k", type=int, default=5, help="number of hits (default 5)")
    _common(s)
    s.add_argument("--tags", default="", help="only chunks with any of these comma-separated tags "
                   "(knowledge-flow: tag ids, not names)")
    s.add_argument("--mode", choices=["dense", "sparse", "hybrid"], help="override retrieval.mode")
    s.add_argument("--json", action="store_true", help="print a JSON list of {content, title, source, page, score}")
    s.set_defaults(func=cmd_search)
