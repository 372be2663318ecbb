"""Passage vectors kept in the data folder, by model and text: embedded once, read by every later question.

The evidence and the answer selector of the ``small`` profile compare the question with every unit (sentence, list
item, table row) of the retrieved chunks, their heading paths and the chunks themselves: some two hundred texts a
question, which embedding anew was most of an offline answer's time (issue 54: 2-8 s of a 3-16 s answer on 2
cores). A passage's vector depends only on the model and the text, so an embedded store keeps them in
``<data_dir>/vectors.sqlite`` (SQLite, from the standard library): ``ingest`` fills it for the chunks it stores
(:func:`rags_expert.evidence.passages.fill_vector_cache`), and a question embeds only the texts it lacks and adds
them (a knowledge base ingested before the file existed fills it as it is asked).

A vector read back is the one the model gave, bit for bit (stored as float32 when that holds it exactly, else as
float64), so answers are the same with the file or without it. The file is derived data: deleting it costs only
the time to embed again, and a file that cannot be read or written (another process writing it, a read-only folder)
is skipped with a log line, never an error. ``evidence.vector_cache`` turns it off.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import sqlite3
import threading
from array import array
from collections.abc import Mapping, Sequence
from pathlib import Path

from langchain_core.embeddings import Embeddings

from rags_expert.retrieval.embeddings import NamedEmbeddings, query_vector
from rags_expert.settings import StoreSettings

log = logging.getLogger(__name__)

FILE_NAME = "vectors.sqlite"
_BATCH = 500
"""Keys a query asks for at once (below SQLite's limit on bound parameters)."""


def cache_file(store: StoreSettings) -> Path | None:
    """Where an embedded store keeps its passage vectors; None for a Qdrant server (``store.url``)."""
    return None if store.url else Path(store.data_dir).expanduser() / FILE_NAME


def _key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _pack(vector: Sequence[float]) -> bytes:
    """``f`` + float32 bytes when float32 holds every component exactly, else ``d`` + float64 bytes."""
    single = array("f", vector)
    if single.tolist() == list(vector):
        return b"f" + single.tobytes()
    return b"d" + array("d", vector).tobytes()


def _unpack(blob: bytes) -> list[float]:
    values: array[float] = array("f" if blob[:1] == b"f" else "d")
    values.frombytes(blob[1:])
    return values.tolist()


class VectorCache:
    """Passage vectors by (model name, text) in one SQLite file, opened on first use; safe across threads and
    processes (SQLite's own locking; a busy file is skipped)."""

    def __init__(self, path: Path, timeout: float = 2.0) -> None:
        self.path = path
        self.timeout = timeout
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._broken = False

    def _connect(self) -> sqlite3.Connection | None:
        if self._db is None and not self._broken:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.path, timeout=self.timeout, check_same_thread=False, isolation_level=None)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(
                    "CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, key BLOB NOT NULL, vector BLOB NOT NULL, "
                    "PRIMARY KEY (model, key)) WITHOUT ROWID"
                )
                db.execute(
                    "CREATE TABLE IF NOT EXISTS filled (tag TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (tag, id)) "
                    "WITHOUT ROWID"
                )
                self._db = db
            except (sqlite3.Error, OSError) as exc:
                self._broken = True  # one log line, then the process embeds without the file
                log.info("passage vectors are not kept: %s (%s)", self.path, exc)
        return self._db

    def get(self, model: str, texts: Sequence[str]) -> dict[str, list[float]]:
        """The stored vectors of those of ``texts`` that are stored."""
        by_key = {_key(t): t for t in dict.fromkeys(texts)}
        out: dict[str, list[float]] = {}
        keys = list(by_key)
        with self._lock:
            db = self._connect()
            if db is None:
                return out
            try:
                for start in range(0, len(keys), _BATCH):
                    part = keys[start : start + _BATCH]
                    marks = ",".join("?" * len(part))
                    rows = db.execute(
                        f"SELECT key, vector FROM vectors WHERE model = ? AND key IN ({marks})",  # noqa: S608 - marks
                        [model, *part],
                    )
                    out.update((by_key[bytes(k)], _unpack(v)) for k, v in rows)
            except sqlite3.Error as exc:
                log.info("could not read passage vectors from %s (%s)", self.path, exc)
        return out

    def put(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        """Store ``vectors`` (text -> vector) of ``model``."""
        if not vectors:
            return
        rows = [(model, _key(t), _pack(v)) for t, v in vectors.items()]
        with self._lock:
            db = self._connect()
            if db is None:
                return
            try:
                db.execute("BEGIN")
                db.executemany("INSERT OR REPLACE INTO vectors (model, key, vector) VALUES (?, ?, ?)", rows)
                db.execute("COMMIT")
            except sqlite3.Error as exc:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                log.info("could not keep passage vectors in %s (%s)", self.path, exc)

    def filled(self, tag: str, ids: Sequence[str]) -> set[str]:
        """Those of ``ids`` (chunk ids) marked as filled under ``tag`` (:meth:`mark_filled`)."""
        out: set[str] = set()
        with self._lock:
            db = self._connect()
            if db is None:
                return out
            try:
                for start in range(0, len(ids), _BATCH):
                    part = list(ids[start : start + _BATCH])
                    marks = ",".join("?" * len(part))
                    rows = db.execute(f"SELECT id FROM filled WHERE tag = ? AND id IN ({marks})", [tag, *part])  # noqa: S608
                    out.update(str(i) for (i,) in rows)
            except sqlite3.Error as exc:
                log.info("could not read %s (%s)", self.path, exc)
        return out

    def mark_filled(self, tag: str, ids: Sequence[str]) -> None:
        """Mark chunks whose passages are all stored, so that the next ``ingest`` reads only the others."""
        with self._lock:
            db = self._connect()
            if db is None or not ids:
                return
            try:
                db.executemany("INSERT OR IGNORE INTO filled (tag, id) VALUES (?, ?)", [(tag, i) for i in ids])
            except sqlite3.Error as exc:
                log.info("could not write %s (%s)", self.path, exc)

    def missing(self, model: str, texts: Sequence[str]) -> list[str]:
        """Those of ``texts`` (each once) that are not stored."""
        known = self.get(model, texts)
        return [t for t in dict.fromkeys(texts) if t not in known]

    def close(self) -> None:
        """Close the file (it reopens on next use)."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


class CachedEmbeddings(NamedEmbeddings):
    """``inner`` whose passage vectors are read from a :class:`VectorCache` when stored, embedded and stored
    otherwise; queries go to ``inner`` (shared with the search through :func:`query_vector`)."""

    def __init__(self, inner: Embeddings, cache: VectorCache) -> None:
        self.inner = inner
        self.cache = cache
        self.model_name = str(getattr(inner, "model_name", type(inner).__name__))
        self.dimension = int(getattr(inner, "dimension", 0))
        self.max_input_chars = int(getattr(inner, "max_input_chars", self.max_input_chars))

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """The stored vectors of ``texts``, the others embedded by ``inner`` (once each) and stored."""
        known = self.cache.get(self.model_name, texts)
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        if missing:
            fresh = dict(zip(missing, self.inner.embed_documents(missing), strict=True))
            self.cache.put(self.model_name, fresh)
            known |= fresh
        return [known[t] for t in texts]

    def embed_bulk(self, texts: list[str]) -> list[list[float]]:
        """As :meth:`embed_documents`, the missing ones by ``inner``'s bulk path where it has one (an ``ingest``: its
        chunk vectors are stored as they are made, so the evidence's later fill does not embed them again)."""
        known = self.cache.get(self.model_name, texts)
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        if missing:
            embed = getattr(self.inner, "embed_bulk", None) or self.inner.embed_documents
            fresh = dict(zip(missing, embed(missing), strict=True))
            self.cache.put(self.model_name, fresh)
            known |= fresh
        return [known[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        """``inner``'s query vector (remembered for the model's last few queries)."""
        return query_vector(self.inner, text)


_OPEN: dict[Path, VectorCache] = {}
_OPEN_LOCK = threading.Lock()


def shared_cache(path: Path) -> VectorCache:
    """The process's one :class:`VectorCache` of ``path``."""
    with _OPEN_LOCK:
        if not _OPEN:
            atexit.register(_close_all)
        return _OPEN.setdefault(path, VectorCache(path))


def _close_all() -> None:
    """Close every file at exit (SQLite then folds its write-ahead log into the file and removes it)."""
    for cache in list(_OPEN.values()):
        cache.close()


def passage_embeddings(embeddings: Embeddings, store: StoreSettings) -> Embeddings:
    """``embeddings`` with its passage vectors kept in the store's data folder (:func:`cache_file`); unchanged for
    a Qdrant server."""
    path = cache_file(store)
    return embeddings if path is None else CachedEmbeddings(embeddings, shared_cache(path))
