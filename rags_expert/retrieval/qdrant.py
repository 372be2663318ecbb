"""The Qdrant knowledge base: shared clients, the collection contract, hybrid search, and the retriever.

One code path serves Qdrant's embedded local mode (a data directory, the
default) and a Qdrant server or cluster (``url`` + ``api_key``). A collection
has a named dense vector ``dense`` (cosine) and a sparse vector ``bm25`` with
Qdrant's IDF modifier; hybrid search fuses both with (weighted) reciprocal-rank
fusion in a single Query API call. The collection's metadata records the
embedding model and dimension; a different model is refused.
"""

from __future__ import annotations

import asyncio
import atexit
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict
from qdrant_client import QdrantClient, models

from rags_expert.retrieval import sparse
from rags_expert.retrieval.embeddings import NamedEmbeddings, build_embeddings
from rags_expert.settings import RetrievalMode, RetrievalSettings

DENSE = "dense"
SPARSE = "bm25"
SPARSE_SCHEME = "bm25-crc32-v1"
POLICY_TO_MODE: dict[str, RetrievalMode] = {"semantic": "dense", "hybrid": "hybrid", "strict": "sparse"}


class KnowledgeBaseError(RuntimeError):
    """The knowledge base cannot serve this request (missing collection, bad configuration)."""


class EmbeddingMismatchError(KnowledgeBaseError):
    """The collection was filled by another embedding model than the one configured."""


# --- shared clients ---------------------------------------------------------------------------

_CLIENTS: dict[tuple[str, ...], tuple[QdrantClient, threading.RLock]] = {}
_CLIENTS_LOCK = threading.Lock()


def get_client(settings: RetrievalSettings) -> tuple[QdrantClient, threading.RLock]:
    """The process-wide client (and its lock) for these settings.

    Qdrant's local mode allows one client per data directory per process, so an
    agent and the CLI in one process must share it; its Python engine is not
    thread-safe either, hence the lock that every call through ``KnowledgeBase`` takes.
    """
    if settings.url:
        secret = settings.api_key.get_secret_value() if settings.api_key else ""
        key: tuple[str, ...] = ("url", settings.url, str(hash(secret)))
    else:
        key = ("path", str(Path(settings.data_dir).expanduser().resolve()))
    with _CLIENTS_LOCK:
        if key not in _CLIENTS:
            if settings.url:
                client = QdrantClient(
                    url=settings.url,
                    api_key=settings.api_key.get_secret_value() if settings.api_key else None,
                    timeout=int(settings.timeout),
                )
            else:
                path = Path(key[1])
                path.mkdir(parents=True, exist_ok=True)
                client = QdrantClient(path=str(path))
            _CLIENTS[key] = (client, threading.RLock())
        return _CLIENTS[key]


def close_client(settings: RetrievalSettings) -> None:
    """Close and forget the shared client for these settings (tests and the CLI use it)."""
    key = (
        ("url", settings.url, str(hash(settings.api_key.get_secret_value() if settings.api_key else "")))
        if settings.url
        else ("path", str(Path(settings.data_dir).expanduser().resolve()))
    )
    with _CLIENTS_LOCK:
        entry = _CLIENTS.pop(key, None)
    if entry:
        entry[0].close()


@atexit.register
def _close_all() -> None:
    """Close every shared client before interpreter shutdown (local mode flushes and unlocks its directory)."""
    with _CLIENTS_LOCK:
        entries = list(_CLIENTS.values())
        _CLIENTS.clear()
    for client, _ in entries:
        try:
            client.close()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass


# --- the knowledge base -----------------------------------------------------------------------


@dataclass
class Hit:
    """One search result: the point id, its fused score and payload."""

    id: str
    score: float
    payload: dict[str, Any]


def build_filter(library_tags: list[str] | None, document_uids: list[str] | None) -> models.Filter | None:
    """Payload filter: any of the tags, and any of the document ids (``doc_id`` or ``source``)."""
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
    """A Qdrant collection plus the embedding model that fills and queries it."""

    def __init__(self, settings: RetrievalSettings, embeddings: NamedEmbeddings | None = None) -> None:
        self.settings = settings
        self.collection = settings.collection
        self.client, self.lock = get_client(settings)
        self._embeddings = embeddings
        self._checked = False

    @property
    def embeddings(self) -> NamedEmbeddings:
        """The embedding model (loaded on first use)."""
        if self._embeddings is None:
            self._embeddings = build_embeddings(self.settings)
        return self._embeddings

    # collection contract ------------------------------------------------------------------
    def exists(self) -> bool:
        """Whether the collection exists."""
        with self.lock:
            return self.client.collection_exists(self.collection)

    def ensure_collection(self) -> None:
        """Create the collection for the configured model, or check that an existing one matches it."""
        with self.lock:
            if not self.client.collection_exists(self.collection):
                emb = self.embeddings
                self.client.create_collection(
                    self.collection,
                    vectors_config={DENSE: models.VectorParams(size=emb.dimension, distance=models.Distance.COSINE)},
                    sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
                    metadata={"embedding_model": emb.model_name, "dimension": emb.dimension, "sparse": SPARSE_SCHEME},
                )
                if self.settings.url:  # payload indexes matter on a server; local mode ignores them
                    for field, schema in (("tags", "keyword"), ("source", "keyword"), ("doc_id", "keyword")):
                        self.client.create_payload_index(self.collection, field, field_schema=schema)
                self._tune_local_storage()
                self._checked = True
        self.check_model()

    def _tune_local_storage(self) -> None:
        """Local mode: WAL + synchronous=NORMAL on the collection's SQLite file (see ``local_wal``).

        qdrant-client persists every point in its own transaction; with the default rollback journal each
        costs an fsync (~17 ms here). This reaches into qdrant-client's local-mode internals, so it is
        best effort: if they change, nothing breaks, ingestion is only slower.
        """
        if self.settings.url or not self.settings.local_wal:
            return
        try:
            storage = self.client._client.collections[self.collection].storage  # noqa: SLF001
            if storage is not None:
                storage.storage.execute("PRAGMA journal_mode=WAL")
                storage.storage.execute("PRAGMA synchronous=NORMAL")
        except (AttributeError, KeyError):
            pass

    def check_model(self) -> None:
        """Raise :class:`EmbeddingMismatchError` unless the collection was built with the configured model."""
        if self._checked:
            return
        with self.lock:
            if not self.client.collection_exists(self.collection):
                raise KnowledgeBaseError(
                    f"collection {self.collection!r} does not exist; ingest documents first "
                    f"(rags-expert ingest PATH --collection {self.collection})"
                )
            info = self.client.get_collection(self.collection)
        meta = info.config.metadata or {}
        recorded = meta.get("embedding_model")
        vectors = info.config.params.vectors
        size = vectors[DENSE].size if isinstance(vectors, dict) and DENSE in vectors else None
        emb = self.embeddings
        if recorded is None or size is None:
            raise EmbeddingMismatchError(
                f"collection {self.collection!r} was not created by rags-expert (no recorded embedding model "
                f"or no '{DENSE}' vector); use another collection name"
            )
        if recorded != emb.model_name or size != emb.dimension:
            raise EmbeddingMismatchError(
                f"collection {self.collection!r} holds vectors of {recorded} ({size}-d) but the configured model "
                f"is {emb.model_name} ({emb.dimension}-d): set retrieval.embedding_provider/embedding_model to "
                f"match, or re-ingest into a new collection"
            )
        with self.lock:
            self._tune_local_storage()
        self._checked = True

    # writes -------------------------------------------------------------------------------
    def upsert(self, points: list[models.PointStruct]) -> None:
        """Upsert points (idempotent: ids are deterministic)."""
        if points:
            with self.lock:
                self.client.upsert(self.collection, points=points, wait=True)

    def delete(self, flt: models.Filter) -> None:
        """Delete the points matching a filter."""
        with self.lock:
            self.client.delete(self.collection, points_selector=models.FilterSelector(filter=flt), wait=True)

    def scroll_payloads(self, fields: list[str], flt: models.Filter | None = None) -> list[tuple[str, dict]]:
        """(id, payload subset) of every point matching ``flt``."""
        out: list[tuple[str, dict]] = []
        offset = None
        while True:
            with self.lock:
                recs, offset = self.client.scroll(
                    self.collection, scroll_filter=flt, limit=1024, offset=offset,
                    with_payload=models.PayloadSelectorInclude(include=fields), with_vectors=False,
                )
            out.extend((str(r.id), r.payload or {}) for r in recs)
            if offset is None:
                return out

    def count(self) -> int:
        """Number of points in the collection."""
        with self.lock:
            return self.client.count(self.collection, exact=True).count

    # search -------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        top_k: int,
        mode: RetrievalMode,
        flt: models.Filter | None = None,
    ) -> list[Hit]:
        """Top-k hits for a query by dense, sparse or hybrid (weighted RRF) search in one Query API call."""
        self.check_model()
        s = self.settings
        sparse_q = sparse.query_vector(query)
        if mode == "sparse" and not sparse_q.indices:
            return []
        dense_q = self.embeddings.embed_query(query) if mode != "sparse" else None
        if mode == "hybrid" and not sparse_q.indices:
            mode = "dense"
        kwargs: dict[str, Any] = {"limit": top_k, "with_payload": True, "with_vectors": False}
        if mode == "dense":
            kwargs.update(query=dense_q, using=DENSE, query_filter=flt)
        elif mode == "sparse":
            kwargs.update(query=sparse_q, using=SPARSE, query_filter=flt)
        else:
            limit = max(top_k * s.prefetch_factor, top_k)
            kwargs["prefetch"] = [
                models.Prefetch(query=dense_q, using=DENSE, limit=limit, filter=flt),
                models.Prefetch(query=sparse_q, using=SPARSE, limit=limit, filter=flt),
            ]
            kwargs["query"] = models.RrfQuery(rrf=models.Rrf(k=s.rrf_k, weights=[s.dense_weight, s.sparse_weight]))
        with self.lock:
            res = self.client.query_points(self.collection, **kwargs)
        return [Hit(str(p.id), float(p.score), p.payload or {}) for p in res.points]


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


class QdrantRetriever(BaseRetriever):
    """RagsExpert's default retriever: hybrid search over the Qdrant knowledge base.

    Per-request options (``top_k``, ``library_tags``, ``document_uids``,
    ``search_policy``) arrive as keyword arguments of ``invoke``/``ainvoke``;
    nothing request-specific is stored on the instance.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    kb: KnowledgeBase
    settings: RetrievalSettings

    @classmethod
    def from_settings(cls, settings: RetrievalSettings, embeddings: NamedEmbeddings | None = None) -> QdrantRetriever:
        """Build a retriever (the client is shared per data directory / URL)."""
        return cls(kb=KnowledgeBase(settings, embeddings), settings=settings)

    def _search(
        self,
        query: str,
        top_k: int | None,
        library_tags: list[str] | None,
        document_uids: list[str] | None,
        search_policy: str | None,
    ) -> list[Document]:
        """Resolve per-request options against the settings and search."""
        k = int(top_k or self.settings.top_k)
        mode = POLICY_TO_MODE.get(search_policy or "", self.settings.mode)
        tags = library_tags if library_tags is not None else (self.settings.library_tags or None)
        hits = self.kb.search(query, k, mode, build_filter(tags, document_uids))
        return [hit_to_document(h) for h in hits]

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        top_k: int | None = None,
        library_tags: list[str] | None = None,
        document_uids: list[str] | None = None,
        search_policy: str | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """Synchronous search."""
        return self._search(query, top_k, library_tags, document_uids, search_policy)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        top_k: int | None = None,
        library_tags: list[str] | None = None,
        document_uids: list[str] | None = None,
        search_policy: str | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        """Asynchronous search: embedding and Qdrant calls run in a worker thread, never on the event loop."""
        return await asyncio.to_thread(self._search, query, top_k, library_tags, document_uids, search_policy)
