"""Ingestion: files → chunks → embeddings → Qdrant points, idempotently.

Point ids are UUIDv5 of (source, unit key, chunk index, chunk text), so
re-ingesting the same file writes the same points (nothing is re-embedded:
existing ids are looked up first). Every point of a file carries the file's
content hash and its chunking label (chunker version and chunk settings); once
all chunks of a new version are stored, points with another hash or label are
deleted, so a chunker upgrade or a chunk-size change re-chunks unchanged files
without leaving duplicates (``ingest`` says so once per run). Killed at any
moment, a rerun converges to exactly one copy of every chunk. ``prune`` removes files that disappeared under the
ingested folders (or are no regular file any more: replaced by a folder, say).

A file is stored under its path in the folder it was found in (:func:`~rags_expert.retrieval.loaders.source_path`):
a symbolic link under the link's path, never its target's. A link to a file outside its folder is skipped with a
warning unless ``ingestion.follow_outside_links`` is on, and ``prune`` removes what an earlier ingest stored of it
(under the link's path, or under the target's path where an older version stored it).

The store is its own manifest: a file counts as done when its chunk ids are in the store. Before a run says
it is done it flushes and closes the store and reads every file's chunk ids back (:meth:`Ingestor.verify`); a
file with chunks missing (another process wrote the folder at the same time, say) is written again, and if
chunks are still missing the run fails naming the files (:class:`IngestIncompleteError`) instead of exiting 0.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from qdrant_client import models

from rags_expert.retrieval import sparse
from rags_expert.retrieval.chunking import LEGACY_CHUNKING, chunk_text, chunking_label, is_markdown
from rags_expert.retrieval.loaders import (
    SUPPORTED_SUFFIXES,
    EmptyFileError,
    LoadOptions,
    MissingExtraError,
    UnreadableFileError,
    format_of,
    ignore_patterns,
    install_hint,
    is_ignored,
    is_under,
    iter_files,
    load_file,
    read_source,
    shown_path,
    source_path,
)
from rags_expert.retrieval.loaders.pdf import has_table_extractor
from rags_expert.retrieval.loaders.registry import PDF_TABLES_EXTRA
from rags_expert.retrieval.qdrant import DENSE, SPARSE, KnowledgeBase, KnowledgeBaseError

log = logging.getLogger(__name__)

NAMED_AT_MOST = 5
"""How many files of unsupported types the warning names before it says "and N more"."""


def name_some(names: list[str], limit: int = NAMED_AT_MOST) -> str:
    """``a, b, c`` or, past ``limit`` names, ``a, b, c and 4 more``."""
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


class IngestIncompleteError(KnowledgeBaseError):
    """Chunks of some files were still missing from the store after they were written twice."""


OUTSIDE_LINKS_SETTING = "ingestion.follow_outside_links"
"""The setting that lets ``ingest`` follow a folder's symbolic links to files outside it."""


NAMESPACE = uuid.UUID("6f1c1c5e-6a57-4f39-9a52-6d2b3c3f1e01")


@dataclass
class ChunkRecord:
    """One chunk ready to store: deterministic id, text to embed, and payload."""

    id: str
    text: str
    payload: dict[str, Any]


@dataclass
class FormatCount:
    """What one ingestion read of one format: files and chunks, files skipped, and why when an extra was missing."""

    files: int = 0
    chunks: int = 0
    skipped: int = 0
    empty: int = 0
    """Of the files skipped, those with no text to index (empty, or only markup, comments or includes)."""
    outside: int = 0
    """Of the files skipped, the symbolic links to files outside their folder (not followed)."""
    missing_extra: dict[str, list[str]] = field(default_factory=dict)
    """Suffix → the files of it skipped because the format's extra is not installed."""
    extra: str = ""
    """The extra those files need."""
    note: str = ""
    """A remark on how the files were read (PDF without its tables' columns)."""


@dataclass
class IngestReport:
    """What one ingestion run did."""

    files: int = 0
    unchanged: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(path, reason) of each file that could not be ingested (one warning logged for each)."""
    ignored: list[str] = field(default_factory=list)
    """Files under the given folders whose type is not supported (summarised, not warned about one by one)."""
    left_out: list[str] = field(default_factory=list)
    """Files under the given folders that their folder's ignore file (``ingestion.ignore_file``) leaves out."""
    ignore_file: str = ""
    """The name of that file."""
    chunks_total: int = 0
    chunks_embedded: int = 0
    chunks_deleted: int = 0
    files_pruned: int = 0
    files_repaired: int = 0
    """Files whose chunks were missing when read back, and were written again (:meth:`Ingestor.verify`)."""
    rechunked: int = 0
    previous_chunkings: set[str] = field(default_factory=set)
    seconds: float = 0.0
    formats: dict[str, FormatCount] = field(default_factory=dict)
    """Per format (its name: "Markdown", "reStructuredText" …): files and chunks read, files skipped and why."""

    def of(self, path: Path) -> FormatCount:
        """The counts of ``path``'s format (a file of no supported type counts as "other")."""
        fmt = format_of(path)
        return self.formats.setdefault(fmt.name if fmt else "other", FormatCount())

    @property
    def chunks_per_second(self) -> float:
        """Embedded-and-stored chunks per wall-clock second."""
        return self.chunks_embedded / self.seconds if self.seconds > 0 else 0.0


class IngestProgress(Protocol):
    """Where an ingestion reports how far it is (:mod:`rags_expert.hosts.progress` shows it to a user)."""

    def start(self, files: int) -> None:
        """The files to ingest are listed: ``files`` of them."""

    def file_chunks(self, name: str, total: int) -> None:
        """The file ``name`` (its name, not its path) is read: ``total`` chunks of it are to be stored."""

    def chunks(self, n: int) -> None:
        """``n`` more chunks are stored (embedded now, or found already stored)."""

    def file_done(self) -> None:
        """One more file is done (ingested, unchanged or skipped)."""


class _ChunkCallback:
    """Progress given to a function of the number of chunks stored (the older ``progress=`` form), or nowhere."""

    def __init__(self, report: Callable[[int], None] | None = None) -> None:
        self.report = report

    def start(self, files: int) -> None:
        """Not reported."""

    def file_chunks(self, name: str, total: int) -> None:
        """Not reported."""

    def chunks(self, n: int) -> None:
        """Pass ``n`` on."""
        if self.report is not None:
            self.report(n)

    def file_done(self) -> None:
        """Not reported."""


def chunk_id(source: str, key: str, index: int, text: str) -> str:
    """Deterministic point id of a chunk: UUIDv5 over its source, unit, position and content."""
    return str(uuid.uuid5(NAMESPACE, f"{source}\x00{key}\x00{index}\x00{text}"))


def doc_id(source: str) -> str:
    """Stable id of a source document (used by ``document_uids`` filters)."""
    return str(uuid.uuid5(NAMESPACE, source))


def file_records(
    path: Path, data: bytes, tags: list[str], size: int, overlap: int, options: LoadOptions | None = None
) -> list[ChunkRecord]:
    """The chunk records of one file (raises UnreadableFileError)."""
    source = source_path(path)
    file_hash = hashlib.sha256(data).hexdigest()
    chunking = chunking_label(size, overlap)
    records: list[ChunkRecord] = []
    for unit in load_file(path, data, options):
        for index, chunk in enumerate(chunk_text(unit.text, size, overlap, markdown=is_markdown(path))):
            section = " > ".join(s for s in (unit.section, chunk.section) if s)  # a PDF table's caption first
            # The section heading is part of the embedded text: it often names the subject.
            text = f"{section}\n{chunk.text}" if section else chunk.text
            cid = chunk_id(source, unit.key, index, text)
            payload = dict(unit.metadata)
            payload.update(
                content=text,
                title=unit.title,
                source=source,
                page=unit.page,
                chunk_index=index,
                section=section,
                tags=list(tags),
                doc_id=doc_id(source),
                file_hash=file_hash,
                chunk_id=cid,
                unit=unit.key,
                chunking=chunking,
            )
            records.append(ChunkRecord(cid, text, payload))
    return records


def _source_filter(source: str, keep_hash: str | None = None, keep_chunking: str | None = None) -> models.Filter:
    """Points of ``source``, except those of file version ``keep_hash`` and chunking ``keep_chunking`` (if given)."""
    must = [models.FieldCondition(key="source", match=models.MatchValue(value=source))]
    keep = [
        models.FieldCondition(key=key, match=models.MatchValue(value=value))
        for key, value in (("file_hash", keep_hash), ("chunking", keep_chunking))
        if value
    ]
    return models.Filter(must=must, must_not=[models.Filter(must=keep)] if keep else [])


class Ingestor:
    """Ingests files into one knowledge base (a Qdrant collection).

    ``progress`` hears of the files listed, the chunks stored and the files done (:class:`IngestProgress`); a
    plain function is given the number of chunks stored at each step.
    """

    def __init__(
        self,
        kb: KnowledgeBase,
        tags: list[str] | None = None,
        progress: IngestProgress | Callable[[int], None] | None = None,
    ) -> None:
        self.kb = kb
        self.tags = sorted(set(tags or []))
        self.progress: IngestProgress = _ChunkCallback(progress) if progress is None or callable(progress) else progress
        s = kb.settings.ingestion
        self.size, self.overlap, self.batch = s.chunk_size, s.chunk_overlap, s.upsert_batch_size
        self.options = LoadOptions(
            notebook_output_chars=s.notebook_output_chars,
            max_unzipped_mb=s.max_unzipped_mb,
            pdf_max_table_crossings=s.pdf_max_table_crossings,
        )
        self.follow_outside = s.follow_outside_links
        self.ignore_file = s.ignore_file
        self.written: dict[Path, list[str]] = {}
        """The chunk ids each file of this run should have in the store (read back by :meth:`verify`)."""

    def _existing(self, records: list[ChunkRecord]) -> dict[str, dict[str, Any]]:
        """Existing point ids among the records, with their stored tags, title, file hash and chunking label."""
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(records), 1024):
            ids = [r.id for r in records[start : start + 1024]]
            found.update(self.kb.retrieve_payloads(ids, ["tags", "title", "file_hash", "chunking"]))
        return found

    def _retitle(self, records: list[ChunkRecord], existing: dict[str, dict[str, Any]]) -> None:
        """Give stored points the title their file has now (titles once came from a ``# comment`` in code)."""
        stale: dict[str, list[str]] = {}
        for r in records:
            if r.id in existing and existing[r.id].get("title") != r.payload["title"]:
                stale.setdefault(r.payload["title"], []).append(r.id)
        for title, ids in stale.items():
            self.kb.set_payload(ids, {"title": title})

    def store(self, records: list[ChunkRecord]) -> int:
        """Embed and upsert the records that are not stored yet (in batches); fix tags of the others.

        A stored chunk of another file version or chunking label (same text, same id) gets the record's
        payload, so that deleting the file's older points afterwards keeps it.
        """
        existing = self._existing(records)
        todo = [r for r in records if r.id not in existing]
        self._adopt(records, existing)
        self._retitle(records, existing)
        retag = [r.id for r in records if r.id in existing and sorted(existing[r.id].get("tags") or []) != self.tags]
        self.kb.set_payload(retag, {"tags": self.tags})
        self.progress.chunks(len(records) - len(todo))
        embeddings = self.kb.embeddings
        embed = getattr(embeddings, "embed_bulk", None) or embeddings.embed_documents  # a host's own Embeddings
        for start in range(0, len(todo), self.batch):
            batch = todo[start : start + self.batch]
            vectors = embed([r.text for r in batch])
            points = [
                models.PointStruct(
                    id=r.id, vector={DENSE: v, SPARSE: sparse.document_vector(r.text)}, payload=r.payload
                )
                for r, v in zip(batch, vectors)
            ]
            self.kb.upsert(points)
            self.progress.chunks(len(batch))
        return len(todo)

    def _adopt(self, records: list[ChunkRecord], existing: dict[str, dict[str, Any]]) -> None:
        """Give stored points of another file version or chunking label their record's payload (in place)."""
        for r in records:
            old = existing.get(r.id)
            version = (r.payload.get("file_hash"), r.payload.get("chunking"))
            if old is not None and (old.get("file_hash"), old.get("chunking")) != version:
                self.kb.set_payload([r.id], {**r.payload, "tags": self.tags})
                old.update(tags=self.tags, title=r.payload["title"])

    def ingest_file(self, path: Path, report: IngestReport) -> None:
        """Ingest one file; one that cannot be read is recorded as skipped with a warning.

        A file without text (empty, or nothing extractable) is skipped too, and the chunks of
        its earlier versions are removed: the knowledge base follows the file.
        """
        counts = report.of(path)
        try:
            data = read_source(path)
            records = file_records(path, data, self.tags, self.size, self.overlap, self.options)
            if not records:
                raise EmptyFileError(f"{shown_path(path)}: no text to index")
        except MissingExtraError as exc:  # one line per format at the end of the run, not one per file
            report.skipped.append((str(path), str(exc)))
            counts.skipped += 1
            counts.missing_extra.setdefault(exc.suffix, []).append(str(path))
            counts.extra = exc.extra
            self.written.pop(path, None)
            return
        except UnreadableFileError as exc:
            log.warning("skipping %s", exc)
            report.skipped.append((str(path), str(exc)))
            counts.skipped += 1
            self.written.pop(path, None)
            if isinstance(exc, EmptyFileError):
                counts.empty += 1
                self._drop_versions(path, None, report)
            return
        report.files += 1
        report.chunks_total += len(records)
        counts.files += 1
        counts.chunks += len(records)
        source, chunking = source_path(path), chunking_label(self.size, self.overlap)
        previous = self._older_chunkings(source, chunking)
        if previous:
            report.rechunked += 1
            report.previous_chunkings |= previous
        self.progress.file_chunks(path.name, len(records))
        embedded = self.store(records)
        report.chunks_embedded += embedded
        if embedded == 0:
            report.unchanged += 1
        # Only now that the new version is complete do older versions (and older chunkings) go.
        self._drop_versions(path, hashlib.sha256(data).hexdigest(), report, chunking)
        self.written[path] = [r.id for r in records]

    def missing(self) -> dict[Path, int]:
        """How many chunks each file of this run lacks in the store, read back after a flush and a reopen."""
        self.kb.release()  # flushed and closed: what is read next is what the store holds on disk
        lacking: dict[Path, int] = {}
        for path, ids in self.written.items():
            wanted = set(ids)
            found: set[str] = set()
            for start in range(0, len(ids), 1024):
                found.update(i for i, _ in self.kb.retrieve_payloads(ids[start : start + 1024], ["source"]))
            if len(found & wanted) < len(wanted):
                lacking[path] = len(wanted - found)
        self.kb.release()
        return lacking

    def verify(self, report: IngestReport) -> None:
        """Check that every file of this run has all its chunks in the store; write the lacking ones again.

        Raises :class:`IngestIncompleteError`, naming the files, when chunks are still missing after that.
        """
        lacking = self.missing()
        if not lacking:
            return
        log.warning(
            "%d file(s) had chunks missing from the store after writing, writing them again: %s",
            len(lacking),
            name_some([shown_path(p) for p in lacking]),
        )
        progress, self.progress = self.progress, _ChunkCallback()
        try:
            for path in lacking:
                again = IngestReport()
                self.ingest_file(path, again)
                report.chunks_embedded += again.chunks_embedded
        finally:
            self.progress = progress
        report.files_repaired += len(lacking)
        still = self.missing()
        if still:
            raise IngestIncompleteError(
                f"{sum(still.values())} chunk(s) of {len(still)} file(s) are still missing from the store after "
                f"writing them twice: {name_some([shown_path(p) for p in still])}; run the same ingest again"
            )

    def _drop_versions(
        self, path: Path, keep_hash: str | None, report: IngestReport, keep_chunking: str | None = None
    ) -> None:
        """Delete the stored chunks of ``path`` except those of version ``keep_hash`` chunked as
        ``keep_chunking`` (all of them when ``keep_hash`` is None)."""
        older = _source_filter(source_path(path), keep_hash, keep_chunking)
        stale = self.kb.scroll_payloads(["source"], older)
        if stale:
            self.kb.delete(older)
            report.chunks_deleted += len(stale)

    def _older_chunkings(self, source: str, chunking: str) -> set[str]:
        """Chunking labels other than ``chunking`` among the points stored for ``source`` (none: v1)."""
        points = self.kb.scroll_payloads(["chunking"], _source_filter(source, keep_chunking=chunking))
        return {p.get("chunking") or LEGACY_CHUNKING for _, p in points}

    def _missing_extras(self, report: IngestReport) -> None:
        """One warning per suffix whose files were skipped for a missing extra, naming the ``pip install``; a
        note on PDFs read without their tables' columns (pdfplumber missing)."""
        missing = sorted(
            (suffix, len(paths), c.extra) for c in report.formats.values() for suffix, paths in c.missing_extra.items()
        )
        for suffix, n, extra in missing:
            log.warning("skipped %d %s file%s: %s", n, suffix, "" if n == 1 else "s", install_hint(extra))
        pdf = report.formats.get("PDF")
        if pdf is not None and pdf.files and not has_table_extractor():
            pdf.note = f"tables read as plain text: {install_hint(PDF_TABLES_EXTRA)}"

    def prune(
        self, roots: list[Path], report: IngestReport, outside: list[Path] | None = None, kept: set[str] | None = None
    ) -> None:
        """Delete the points of files under ``roots`` that are no longer regular files (deleted, or replaced by a
        folder, a pipe …) or that their folder's ignore file now lists, and those of the ``outside`` links found under them (symbolic links to files outside
        their folder): stored under the link's path when such links are not followed, and under the target's path
        (where an older version stored them) unless that path is in ``kept`` (the sources of this run)."""
        prefixes = [os.path.realpath(r) for r in roots]
        outside = outside or []
        refused = set() if self.follow_outside else {source_path(p) for p in outside}
        targets = {os.path.realpath(p) for p in outside} - (kept or set())
        patterns = {pre: ignore_patterns(Path(pre), self.ignore_file) for pre in prefixes}
        sources = {p.get("source") for _, p in self.kb.scroll_payloads(["source"])}
        for src in sorted(s for s in sources if s):
            under = any(is_under(src, pre) for pre in prefixes)
            listed = any(
                is_under(src, pre) and is_ignored(os.path.relpath(src, pre).replace(os.sep, "/"), pats)
                for pre, pats in patterns.items()
                if pats
            )
            if under and (not Path(src).is_file() or src in refused or listed) or src in targets:
                n = len(self.kb.scroll_payloads(["source"], _source_filter(src)))
                self.kb.delete(_source_filter(src))
                report.files_pruned += 1
                report.chunks_deleted += n
                log.info("pruned %s (%d chunks)", shown_path(src), n)

    def _outside_links(self, links: list[Path], report: IngestReport) -> None:
        """One warning for each symbolic link to a file outside its folder that is not followed (all are, with
        ``ingestion.follow_outside_links``), recorded as skipped."""
        if self.follow_outside:
            return
        for link in links:
            reason = (
                f"{shown_path(link)}: a symbolic link to {shown_path(os.path.realpath(link))}, outside the ingested "
                f"folder: not followed (set {OUTSIDE_LINKS_SETTING} = true, "
                f"RAGS_EXPERT_{OUTSIDE_LINKS_SETTING.upper().replace('.', '__')}=true, to ingest it)"
            )
            log.warning("skipping %s", reason)
            report.skipped.append((str(link), reason))
            counts = report.of(link)
            counts.skipped += 1
            counts.outside += 1

    def run(self, paths: list[Path], prune: bool = False) -> IngestReport:
        """Ingest every supported file under ``paths``; optionally prune deleted files."""
        start = time.perf_counter()
        report = IngestReport()
        missing = [p for p in paths if not (p.exists() or p.is_symlink())]  # a broken link is reported as skipped
        if missing:
            raise FileNotFoundError(f"no such file or directory: {', '.join(map(shown_path, missing))}")
        self.kb.ensure_collection()
        ignored: list[Path] = []
        outside: list[Path] = []
        left_out: list[Path] = []
        files = list(iter_files(paths, ignored, outside, self.follow_outside, self.ignore_file, left_out))
        report.left_out, report.ignore_file = [str(p) for p in left_out], self.ignore_file
        if left_out:
            log.info(
                "leaving out %d file(s) listed in %s: %s",
                len(left_out),
                self.ignore_file,
                name_some([shown_path(p) for p in left_out]),
            )
        self._outside_links(outside, report)
        self.progress.start(len(files))
        for path in files:
            self.ingest_file(path, report)
            self.progress.file_done()
        report.ignored = [str(p) for p in ignored]
        self._missing_extras(report)
        if ignored:  # named like the skipped ones (one warning each), in one line: there may be thousands
            log.warning(
                "ignoring %d file(s) of unsupported types: %s (supported: %s)",
                len(ignored),
                name_some([shown_path(p) for p in ignored]),
                " ".join(sorted(SUPPORTED_SUFFIXES)),
            )
        if prune:
            self.prune([p for p in paths if p.is_dir()], report, outside, {source_path(p) for p in files})
        self.verify(report)
        if report.rechunked:
            n, old = report.rechunked, ", ".join(sorted(report.previous_chunkings))
            log.warning(
                "chunking changed (%s → %s): %d file%s re-chunked, their old chunks replaced",
                old,
                chunking_label(self.size, self.overlap),
                n,
                "" if n == 1 else "s",
            )
        report.seconds = time.perf_counter() - start
        return report
