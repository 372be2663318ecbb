"""The Qdrant knowledge base: shared stores, the collection contract, hybrid search, and the retriever.

Three engines sit behind one ``KnowledgeBase``:

* ``store.engine = "edge"`` (default, embedded): Qdrant Edge, Qdrant's Rust engine in-process
  (``edge.py``), in ``data_dir/edge/<collection>``;
* ``store.engine = "local"`` (embedded): qdrant-client's local mode in ``data_dir`` (pure Python;
  its sparse search is a linear scan, ~0.3 s per hybrid query at 10k chunks);
* ``store.url`` set: a Qdrant server or cluster through qdrant-client (``engine`` is ignored).

An embedded store is held only while in use (``lease.py``): opened on its first call, waiting up to
``store.lock_wait_s`` for another process to let the folder go, released when idle or wanted elsewhere.

A collection has a named dense vector ``dense`` (cosine) and a sparse vector ``bm25`` with
Qdrant's IDF modifier; hybrid search fuses both (weighted RRF or DBSF) in a single query. The
collection's metadata records the embedding model and dimension; a different model is refused.

qdrant-client is imported where it is used (a server or local-mode client, a filter): a question on Qdrant Edge
without tags or documents to filter on does not load it (~0.6 s a process, issue 54).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from langchain_core.documents import Document

from rags_expert.language import detect_language
from rags_expert.limits import printable
from rags_expert.retrieval import sparse
from rags_expert.retrieval.base import ScopedRetriever
from rags_expert.retrieval.embeddings import NamedEmbeddings, build_embeddings, query_vector
from rags_expert.retrieval.lease import Lease, LocalClient, StoreBusyError
from rags_expert.retrieval.options import SearchOptions
from rags_expert.retrieval.store import DENSE, SPARSE, ClientStore, Hit, KnowledgeBaseError, VectorQuery
from rags_expert.settings import KnowledgeBaseSettings, RetrievalMode, StoreSettings

if TYPE_CHECKING:
    from qdrant_client import QdrantClient, models

__all__ = [
    "DENSE",
    "SPARSE",
    "DataFolderError",
    "Hit",
    "KnowledgeBase",
    "KnowledgeBaseError",
    "QdrantRetriever",
    "StoreBusyError",
    "build_filter",
    "get_client",
    "get_store",
]

SPARSE_SCHEME = "bm25-crc32-v1"
POLICY_TO_MODE: dict[str, RetrievalMode] = {"semantic": "dense", "hybrid": "hybrid", "strict": "sparse"}


class EmbeddingMismatchError(KnowledgeBaseError):
    """The collection was filled by another embedding model than the one configured."""


class DataFolderError(KnowledgeBaseError):
    """The embedded store's data folder cannot be created or written (read-only, or not this user's)."""


def writable_folder(path: Path) -> Path:
    """``path``, created if missing; :class:`DataFolderError` naming it, why, and the setting to change when it
    cannot be written. Every command that opens an embedded store writes in its folder (the lock that processes
    sharing it take turns by, a search's too), so a read-only one is refused before anything else."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        if os.access(path, os.W_OK | os.X_OK):
            return path
        reason = "read-only file system" if os.statvfs(path).f_flag & os.ST_RDONLY else "permission denied"
    except OSError as exc:
        reason = (exc.strerror or type(exc).__name__).lower()
    raise DataFolderError(
        f"the knowledge base needs a writable folder: cannot write in {printable(path, limit=None)} ({reason}); "
        "every command that opens it writes its lock there, a search too: set RAGS_EXPERT_DATA_DIR (--data-dir, "
        "setting store.data_dir) to a folder you can write"
    )


# --- shared clients and stores ----------------------------------------------------------------

_CLIENTS: dict[tuple[str, ...], tuple[Any, Lease]] = {}
_CLIENTS_LOCK = threading.Lock()


def _client_key(settings: StoreSettings) -> tuple[str, ...]:
    if settings.url:
        secret = settings.api_key.get_secret_value() if settings.api_key else ""
        return ("url", settings.url, str(hash(secret)))
    return ("path", str(Path(settings.data_dir).expanduser().resolve()))


def _edge_key(settings: StoreSettings) -> tuple[str, ...]:
    return ("edge", str(Path(settings.data_dir).expanduser().resolve() / "edge"))


def uses_edge(settings: StoreSettings) -> bool:
    """Whether the knowledge base runs on Qdrant Edge (embedded, ``engine = "edge"``, no ``url``)."""
    return not settings.url and settings.engine == "edge"


def get_client(settings: StoreSettings) -> tuple[QdrantClient, Lease]:
    """The process-wide qdrant-client (and the lease to hold around its calls): local mode in ``data_dir``, or ``url``.

    Qdrant's local mode allows one client per data directory, so an agent and the CLI in one process share
    it; its Python engine is not thread-safe either, hence the lease that every call takes. In local mode
    the client opens the directory on its first call and the lease closes it when idle (``lease.py``), so
    other processes get their turn. The lesson memory uses this client whatever ``engine`` is.
    """
    key = _client_key(settings)
    with _CLIENTS_LOCK:
        if key not in _CLIENTS:
            if settings.url:
                from qdrant_client import QdrantClient

                client = QdrantClient(
                    url=settings.url,
                    api_key=settings.api_key.get_secret_value() if settings.api_key else None,
                    timeout=int(settings.timeout),
                )
                _CLIENTS[key] = (client, Lease(client.close, lambda: False, None, None))
            else:
                path = writable_folder(Path(key[1]))
                local = LocalClient(path, settings.lock_wait_s, settings.local_wal)
                _CLIENTS[key] = (local, Lease(local.close, local.is_open, path, settings.idle_release_s))
        return cast("QdrantClient", _CLIENTS[key][0]), _CLIENTS[key][1]


def get_store(settings: StoreSettings) -> tuple[Any, Lease]:
    """The knowledge-base store (``ClientStore`` or ``EdgeStore``) and the lease to hold around its calls."""
    if not uses_edge(settings):
        client, lease = get_client(settings)
        return ClientStore(client, server=bool(settings.url), local_wal=settings.local_wal), lease
    key = _edge_key(settings)
    with _CLIENTS_LOCK:
        if key not in _CLIENTS:
            from rags_expert.retrieval.edge import EdgeStore

            root = writable_folder(Path(key[1]))
            store = EdgeStore(root, settings.lock_wait_s)
            _CLIENTS[key] = (store, Lease(store.close, store.is_open, root, settings.idle_release_s))
        return _CLIENTS[key]


def close_client(settings: StoreSettings) -> None:
    """Close and forget the shared client and Edge store for these settings (tests and the CLI use it)."""
    keys = [_client_key(settings)] + ([] if settings.url else [_edge_key(settings)])
    with _CLIENTS_LOCK:
        entries = [e for e in (_CLIENTS.pop(k, None) for k in keys) if e]
    for obj, lock in entries:
        with lock:
            obj.close()


@atexit.register
def _close_all() -> None:
    """Close everything before interpreter shutdown (local mode unlocks its directory, Edge flushes).

    Each store closes under its lease's lock, as in :func:`close_client`: a lease's watcher thread that is
    releasing the store at this moment finishes first, so the folder's lock goes only after every shard is
    flushed and closed (closing it beside the watcher let the lock go while a shard was still being written,
    and the next process read a half-closed shard).
    """
    with _CLIENTS_LOCK:
        entries = list(_CLIENTS.values())
        _CLIENTS.clear()
    for obj, lock in entries:
        with contextlib.suppress(Exception), lock:  # best effort at exit
            obj.close()


# --- the knowledge base -----------------------------------------------------------------------


def build_filter(library_tags: list[str] | None, document_uids: list[str] | None) -> models.Filter | None:
    """Payload filter: any of the tags, and any of the document ids (``doc_id`` or ``source``).

    ``None`` (or an empty list) adds no condition; callers check ``SearchOptions.scopes_nothing`` first.
    """
    if not library_tags and not document_uids:
        return None
    from qdrant_client import models

    must: list[Any] = []
    if library_tags:
        must.append(models.FieldCondition(key="tags", match=models.MatchAny(any=list(library_tags))))
    if document_uids:
        uids = list(document_uids)
        must.append(
            models.Filter(
                should=[
                    models.FieldCondition(key="doc_id", match=models.MatchAny(any=uids)),
                    models.FieldCondition(key="source", match=models.MatchAny(any=uids)),
                ]
            )
        )
    return models.Filter(must=must) if must else None


class KnowledgeBase:
    """A Qdrant collection (on the configured engine) plus the embedding model that fills and queries it."""

    def __init__(self, settings: KnowledgeBaseSettings, embeddings: NamedEmbeddings | None = None) -> None:
        self.settings = settings
        self.collection = settings.store.collection
        self.store, self.lock = get_store(settings.store)
        self._embeddings = embeddings
        self._checked = False

    @classmethod
    def existing(cls, settings: KnowledgeBaseSettings) -> KnowledgeBase:
        """The knowledge base, to read it only: an embedded one whose collection folder is absent raises
        :class:`KnowledgeBaseError` naming the data folder, and nothing is created (``verify``, ``stale``)."""
        store = settings.store
        if not store.url:
            root = Path(store.data_dir).expanduser()
            folder = root / "edge" / store.collection if uses_edge(store) else root / "collection" / store.collection
            if not folder.is_dir():
                raise KnowledgeBaseError(
                    f"no knowledge base {store.collection!r} in {root}; ingest documents first "
                    f"(rags-expert ingest PATH --data-dir {root} --collection {store.collection})"
                )
        return cls(settings)

    @property
    def embeddings(self) -> NamedEmbeddings:
        """The embedding model (loaded on first use)."""
        if self._embeddings is None:
            self._embeddings = build_embeddings(self.settings.embeddings)
        return self._embeddings

    # collection contract ------------------------------------------------------------------
    def exists(self) -> bool:
        """Whether the collection exists."""
        with self.lock:
            return self.store.exists(self.collection)

    def create(self, dimension: int, model_name: str) -> None:
        """Create the collection for vectors of ``dimension`` made by ``model_name`` (no-op if it exists)."""
        with self.lock:
            if not self.store.exists(self.collection):
                self.store.create(
                    self.collection,
                    dimension,
                    {"embedding_model": model_name, "dimension": dimension, "sparse": SPARSE_SCHEME},
                )
                self.store.prepare(self.collection)

    def ensure_collection(self) -> None:
        """Create the collection for the configured model, or check that an existing one matches it."""
        with self.lock:
            if not self.store.exists(self.collection):
                emb = self.embeddings
                self.create(emb.dimension, emb.model_name)
                self._checked = True
        self.check_model()

    def _missing_hint(self) -> str:
        """Where a collection of the same name lives on the other embedded engine, if it does."""
        if self.settings.store.url:
            return ""
        root = Path(self.settings.store.data_dir).expanduser()
        if uses_edge(self.settings.store) and (root / "collection" / self.collection).exists():
            return " (a collection of that name exists for engine 'local': set store.engine=local)"
        if not uses_edge(self.settings.store) and (root / "edge" / self.collection / "meta.json").exists():
            return " (a collection of that name exists for engine 'edge': set store.engine=edge)"
        return ""

    def check_model(self) -> None:
        """Raise :class:`EmbeddingMismatchError` unless the collection was built with the configured model."""
        if self._checked:
            return
        with self.lock:
            if not self.store.exists(self.collection):
                raise KnowledgeBaseError(
                    f"collection {self.collection!r} does not exist; ingest documents first "
                    f"(rags-expert ingest PATH --collection {self.collection}){self._missing_hint()}"
                )
            info = self.store.info(self.collection)
        recorded = info.metadata.get("embedding_model")
        size = info.dense_size
        emb = self.embeddings
        if recorded is None or size is None:
            raise EmbeddingMismatchError(
                f"collection {self.collection!r} was not created by rags-expert (no recorded embedding model "
                f"or no '{DENSE}' vector); use another collection name"
            )
        if recorded != emb.model_name or size != emb.dimension:
            raise EmbeddingMismatchError(
                f"collection {self.collection!r} holds vectors of {recorded} ({size}-d) but the configured model "
                f"is {emb.model_name} ({emb.dimension}-d): set embeddings.provider/embeddings.model to "
                f"match, or re-ingest into a new collection"
            )
        with self.lock:
            self.store.prepare(self.collection)
        self._checked = True

    def release(self) -> None:
        """Flush and close an embedded store now (the next call reopens it and reads what is on disk)."""
        self.lock.release_now()

    # writes -------------------------------------------------------------------------------
    def upsert(self, points: list[models.PointStruct]) -> None:
        """Upsert points (idempotent: ids are deterministic)."""
        if points:
            with self.lock:
                self.store.upsert(self.collection, points)

    def delete(self, flt: models.Filter) -> None:
        """Delete the points matching a filter."""
        with self.lock:
            self.store.delete(self.collection, flt)

    def set_payload(self, ids: list[str], payload: dict[str, Any]) -> None:
        """Set payload keys on the given points."""
        if ids:
            with self.lock:
                self.store.set_payload(self.collection, ids, payload)

    def retrieve_payloads(self, ids: list[str], fields: list[str]) -> list[tuple[str, dict]]:
        """(id, payload subset) of those of ``ids`` that are stored."""
        with self.lock:
            return self.store.retrieve(self.collection, ids, fields)

    def scroll_payloads(
        self, fields: list[str], flt: models.Filter | None = None, limit: int | None = None
    ) -> list[tuple[str, dict]]:
        """(id, payload subset) of every point matching ``flt`` (the first ``limit`` in id order, when given)."""
        out: list[tuple[str, dict]] = []
        offset = None
        while True:
            size = 1024 if limit is None else min(1024, limit - len(out))
            with self.lock:
                page, offset = self.store.scroll(self.collection, fields, flt, size, offset)
            out.extend(page)
            if offset is None or (limit is not None and len(out) >= limit):
                return out

    def count(self) -> int:
        """Number of points in the collection."""
        with self.lock:
            return self.store.count(self.collection)

    # search -------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        top_k: int,
        mode: RetrievalMode,
        flt: models.Filter | None = None,
    ) -> list[Hit]:
        """Top-k hits for a query by dense, sparse or hybrid (fused) search in one query.

        A hybrid query in a language of ``retrieval.mode_by_language`` is searched in that language's mode.
        """
        self.check_model()
        by_language = self.settings.retrieval.mode_by_language
        if mode == "hybrid" and by_language and (language := detect_language(query)) is not None:
            mode = by_language.get(language, mode)
        sparse_q = sparse.query_vector(query)
        if mode == "sparse" and not sparse_q.indices:
            return []
        dense_q = query_vector(self.embeddings, query) if mode != "sparse" else None
        if mode == "hybrid" and not sparse_q.indices:
            mode = "dense"
        return self.search_vectors(dense_q, sparse_q, top_k, mode, flt)

    def search_vectors(
        self,
        dense_q: list[float] | None,
        sparse_q: sparse.SparseVector | models.SparseVector | None,
        top_k: int,
        mode: RetrievalMode,
        flt: models.Filter | None = None,
    ) -> list[Hit]:
        """Search with precomputed query vectors (fusion parameters from the settings)."""
        s = self.settings.retrieval
        q = VectorQuery(
            mode=mode,
            limit=top_k,
            dense=dense_q,
            sparse=sparse_q,
            flt=flt,
            prefetch_limit=max(top_k * s.prefetch_factor, top_k),
            fusion=s.fusion,
            rrf_k=s.rrf_k,
            weights=(s.dense_weight, s.sparse_weight),
        )
        with self.lock:
            return self.store.query(self.collection, q)


def hit_to_document(hit: Hit) -> Document:
    """A LangChain Document with the metadata contract: title, source, page, score, chunk_id, tags."""
    payload = dict(hit.payload)
    content = payload.pop("content", "")
    meta = {k: v for k, v in payload.items()}
    meta.update(
        title=payload.get("title") or "",
        source=payload.get("source") or "",
        page=payload.get("page"),
        score=hit.score,
        chunk_id=payload.get("chunk_id") or hit.id,
        tags=list(payload.get("tags") or []),
    )
    return Document(page_content=content, metadata=meta, id=hit.id)


class QdrantRetriever(ScopedRetriever):
    """RagsExpert's default retriever: hybrid search over the Qdrant knowledge base.

    Per-request options (``top_k``, ``library_tags``, ``document_uids``,
    ``search_policy``) arrive as keyword arguments of ``invoke``/``ainvoke``;
    nothing request-specific is stored on the instance. ``library_tags=None`` uses the configured
    default tags (none: no filter); an empty list of tags or documents finds nothing.
    """

    kb: KnowledgeBase

    @classmethod
    def from_settings(
        cls, settings: KnowledgeBaseSettings, embeddings: NamedEmbeddings | None = None
    ) -> QdrantRetriever:
        """Build a retriever (the client is shared per data directory / URL)."""
        return cls(kb=KnowledgeBase(settings, embeddings), settings=settings)

    def _search(self, query: str, options: SearchOptions) -> list[Document]:
        """Search with the resolved options; nothing in scope: no search, no hits."""
        if options.scopes_nothing:
            return []
        mode = POLICY_TO_MODE.get(options.search_policy or "", self.settings.retrieval.mode)
        hits = self.kb.search(query, options.limit, mode, build_filter(options.library_tags, options.document_uids))
        return [hit_to_document(h) for h in hits]
