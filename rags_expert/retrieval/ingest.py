"""Ingestion: files → chunks → embeddings → Qdrant points, idempotently.

Point ids are UUIDv5 of (source, unit key, chunk index, chunk text), so
re-ingesting the same file writes the same points (nothing is re-embedded:
existing ids are looked up first). Every point of a file carries the file's
content hash; once all chunks of a new version are stored, points of older
versions are deleted. Killed at any moment, a rerun converges to exactly one
copy of every chunk. ``prune`` removes files that disappeared under the
ingested folders.
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from qdrant_client import models

from rags_expert.retrieval import sparse
from rags_expert.retrieval.chunking import chunk_text
from rags_expert.retrieval.loaders import EmptyFileError, UnreadableFileError, iter_files, load_file, read_source
from rags_expert.retrieval.qdrant import DENSE, SPARSE, KnowledgeBase

log = logging.getLogger(__name__)
NAMESPACE = uuid.UUID("6f1c1c5e-6a57-4f39-9a52-6d2b3c3f1e01")


@dataclass
class ChunkRecord:
    """One chunk ready to store: deterministic id, text to embed, and payload."""

    id: str
    text: str
    payload: dict[str, Any]


@dataclass
class IngestReport:
    """What one ingestion run did."""

    files: int = 0
    unchanged: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(path, reason) of each file that could not be ingested (one warning logged for each)."""
    ignored: list[str] = field(default_factory=list)
    """Files under the given folders whose type is not supported (summarised, not warned about one by one)."""
    chunks_total: int = 0
    chunks_embedded: int = 0
    chunks_deleted: int = 0
    files_pruned: int = 0
    seconds: float = 0.0

    @property
    def chunks_per_second(self) -> float:
        """Embedded-and-stored chunks per wall-clock second."""
        return self.chunks_embedded / self.seconds if self.seconds > 0 else 0.0


def chunk_id(source: str, key: str, index: int, text: str) -> str:
    """Deterministic point id of a chunk: UUIDv5 over its source, unit, position and content."""
    return str(uuid.uuid5(NAMESPACE, f"{source}\x00{key}\x00{index}\x00{text}"))


def doc_id(source: str) -> str:
    """Stable id of a source document (used by ``document_uids`` filters)."""
    return str(uuid.uuid5(NAMESPACE, source))


def file_records(path: Path, data: bytes, tags: list[str], size: int, overlap: int) -> list[ChunkRecord]:
    """The chunk records of one file (raises UnreadableFileError)."""
    source = str(path.resolve())
    file_hash = hashlib.sha256(data).hexdigest()
    records: list[ChunkRecord] = []
    for unit in load_file(path, data):
        for index, chunk in enumerate(chunk_text(unit.text, size, overlap)):
            # The section heading is part of the embedded text: it often names the subject.
            text = f"{chunk.section}\n{chunk.text}" if chunk.section else chunk.text
            cid = chunk_id(source, unit.key, index, text)
            payload = dict(unit.metadata)
            payload.update(
                content=text, title=unit.title, source=source, page=unit.page, chunk_index=index,
                section=chunk.section, tags=list(tags), doc_id=doc_id(source), file_hash=file_hash,
                chunk_id=cid, unit=unit.key,
            )
            records.append(ChunkRecord(cid, text, payload))
    return records


def _source_filter(source: str, keep_hash: str | None = None) -> models.Filter:
    """Points of ``source``, optionally excluding those of version ``keep_hash``."""
    must = [models.FieldCondition(key="source", match=models.MatchValue(value=source))]
    must_not = [models.FieldCondition(key="file_hash", match=models.MatchValue(value=keep_hash))] if keep_hash else []
    return models.Filter(must=must, must_not=must_not)


class Ingestor:
    """Ingests files into one knowledge base (a Qdrant collection)."""

    def __init__(self, kb: KnowledgeBase, tags: list[str] | None = None,
                 progress: Callable[[int], None] | None = None) -> None:
        self.kb = kb
        self.tags = sorted(set(tags or []))
        self.progress = progress or (lambda n: None)
        s = kb.settings
        self.size, self.overlap, self.batch = s.chunk_size, s.chunk_overlap, s.upsert_batch_size

    def _existing(self, records: list[ChunkRecord]) -> dict[str, list[str]]:
        """Existing point ids among the records, with their stored tags."""
        found: dict[str, list[str]] = {}
        for start in range(0, len(records), 1024):
            ids = [r.id for r in records[start : start + 1024]]
            found.update({pid: list(p.get("tags") or []) for pid, p in self.kb.retrieve_payloads(ids, ["tags"])})
        return found

    def store(self, records: list[ChunkRecord]) -> int:
        """Embed and upsert the records that are not stored yet (in batches); fix tags of the others."""
        existing = self._existing(records)
        todo = [r for r in records if r.id not in existing]
        retag = [r.id for r in records if r.id in existing and sorted(existing[r.id]) != self.tags]
        self.kb.set_payload(retag, {"tags": self.tags})
        self.progress(len(records) - len(todo))
        for start in range(0, len(todo), self.batch):
            batch = todo[start : start + self.batch]
            vectors = self.kb.embeddings.embed_documents([r.text for r in batch])
            points = [
                models.PointStruct(id=r.id, vector={DENSE: v, SPARSE: sparse.document_vector(r.text)}, payload=r.payload)
                for r, v in zip(batch, vectors)
            ]
            self.kb.upsert(points)
            self.progress(len(batch))
        return len(todo)

    def ingest_file(self, path: Path, report: IngestReport) -> None:
        """Ingest one file; one that cannot be read is recorded as skipped with a warning.

        A file without text (empty, or nothing extractable) is skipped too, and the chunks of
        its earlier versions are removed: the knowledge base follows the file.
        """
        try:
            data = read_source(path)
            records = file_records(path, data, self.tags, self.size, self.overlap)
            if not records:
                raise EmptyFileError(f"{path}: no text to index")
        except UnreadableFileError as exc:
            log.warning("skipping %s", exc)
            report.skipped.append((str(path), str(exc)))
            if isinstance(exc, EmptyFileError):
                self._drop_versions(path, None, report)
            return
        report.files += 1
        report.chunks_total += len(records)
        embedded = self.store(records)
        report.chunks_embedded += embedded
        if embedded == 0:
            report.unchanged += 1
        # Only now that the new version is complete do older versions go.
        self._drop_versions(path, hashlib.sha256(data).hexdigest(), report)

    def _drop_versions(self, path: Path, keep_hash: str | None, report: IngestReport) -> None:
        """Delete the stored chunks of ``path`` except those of version ``keep_hash`` (all when None)."""
        source = str(path.resolve())
        stale = self.kb.scroll_payloads(["source"], _source_filter(source, keep_hash))
        if stale:
            self.kb.delete(_source_filter(source, keep_hash))
            report.chunks_deleted += len(stale)

    def prune(self, roots: list[Path], report: IngestReport) -> None:
        """Delete the points of files under ``roots`` that no longer exist."""
        prefixes = [str(r.resolve()) for r in roots]
        sources = {p.get("source") for _, p in self.kb.scroll_payloads(["source"])}
        for src in sorted(s for s in sources if s):
            under = any(src == pre or src.startswith(pre.rstrip("/") + "/") for pre in prefixes)
            if under and not Path(src).exists():
                n = len(self.kb.scroll_payloads(["source"], _source_filter(src)))
                self.kb.delete(_source_filter(src))
                report.files_pruned += 1
                report.chunks_deleted += n
                log.info("pruned %s (%d chunks)", src, n)

    def run(self, paths: list[Path], prune: bool = False) -> IngestReport:
        """Ingest every supported file under ``paths``; optionally prune deleted files."""
        start = time.perf_counter()
        report = IngestReport()
        missing = [p for p in paths if not (p.exists() or p.is_symlink())]  # a broken link is reported as skipped
        if missing:
            raise FileNotFoundError(f"no such file or directory: {', '.join(map(str, missing))}")
        self.kb.ensure_collection()
        ignored: list[Path] = []
        for path in iter_files(paths, ignored):
            self.ingest_file(path, report)
        report.ignored = [str(p) for p in ignored]
        if ignored:
            log.info("ignored %d file(s) of unsupported types under the given folders", len(ignored))
        if prune:
            self.prune([p for p in paths if p.is_dir()], report)
        report.seconds = time.perf_counter() - start
        return report
