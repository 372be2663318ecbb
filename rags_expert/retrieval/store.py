"""The storage contract of the knowledge base and its qdrant-client implementation.

``KnowledgeBase`` (``qdrant.py``) talks to a *store*: the few collection
operations it needs, expressed with ``qdrant_client.models`` types (points,
filters) and query vectors (:class:`VectorQuery`). Two stores implement them:

* :class:`ClientStore` (here): qdrant-client, either Qdrant's embedded local
  mode (``store.engine = "local"``) or a Qdrant server (``store.url``);
* ``EdgeStore`` (``edge.py``): the embedded Qdrant Edge engine
  (``store.engine = "edge"``).

A collection has a named dense vector ``dense`` (cosine) and a sparse vector
``bm25`` with Qdrant's IDF modifier, and records the embedding model that
filled it in its metadata.

qdrant-client is imported where a client is used (:class:`ClientStore`'s methods), not here: a question on the
default engine (Qdrant Edge) does not load it (~0.6 s a process, issue 54).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from qdrant_client import QdrantClient, models

    from rags_expert.retrieval.sparse import SparseVector


class KnowledgeBaseError(RuntimeError):
    """The knowledge base cannot serve this request (missing collection, bad configuration, store in use)."""


DENSE = "dense"
SPARSE = "bm25"
PAYLOAD_INDEXES = ("tags", "source", "doc_id", "file_hash")


@dataclass
class Hit:
    """One search result: the point id, its (fused) score and payload."""

    id: str
    score: float
    payload: dict[str, Any]


@dataclass
class VectorQuery:
    """A dense, sparse or hybrid query with its vectors already computed."""

    mode: Literal["dense", "sparse", "hybrid"]
    limit: int
    dense: list[float] | None = None
    sparse: SparseVector | models.SparseVector | None = None
    flt: models.Filter | None = None
    prefetch_limit: int = 20
    fusion: Literal["rrf", "dbsf"] = "rrf"
    rrf_k: int = 60
    weights: tuple[float, float] = (1.0, 1.0)  # (dense, sparse), RRF only


@dataclass
class CollectionInfo:
    """What the knowledge base checks on an existing collection."""

    metadata: dict[str, Any]
    dense_size: int | None


class ClientStore:
    """A store over a ``QdrantClient`` (embedded local mode or a server); the caller holds the lock."""

    def __init__(self, client: QdrantClient, server: bool, local_wal: bool = True) -> None:
        self.client = client
        self.server = server
        self.local_wal = local_wal

    def exists(self, name: str) -> bool:
        """Whether the collection exists."""
        return self.client.collection_exists(name)

    def create(self, name: str, dimension: int, metadata: dict[str, Any]) -> None:
        """Create the collection (dense cosine + sparse IDF) with its metadata."""
        from qdrant_client import models

        self.client.create_collection(
            name,
            vectors_config={DENSE: models.VectorParams(size=dimension, distance=models.Distance.COSINE)},
            sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
            metadata=metadata,
        )
        if self.server:  # payload indexes matter on a server; local mode ignores them
            for field in PAYLOAD_INDEXES:
                self.client.create_payload_index(name, field, field_schema=models.PayloadSchemaType.KEYWORD)

    def prepare(self, name: str) -> None:
        """Local mode: WAL + synchronous=NORMAL on the collection's SQLite file (``store.local_wal``).

        qdrant-client persists every point in its own transaction; with the default rollback journal each
        costs an fsync (~17 ms here). This reaches into qdrant-client's local-mode internals, so it is
        best effort: if they change, nothing breaks, ingestion is only slower.
        """
        if self.server or not self.local_wal:
            return
        try:
            # local mode: _client is a QdrantLocal; its QdrantBase type declares no `collections`
            storage = self.client._client.collections[name].storage  # type: ignore[attr-defined]  # noqa: SLF001
            if storage is not None:
                storage.storage.execute("PRAGMA journal_mode=WAL")
                storage.storage.execute("PRAGMA synchronous=NORMAL")
        except (AttributeError, KeyError):
            pass

    def info(self, name: str) -> CollectionInfo:
        """Metadata and dense vector size of the collection."""
        cfg = self.client.get_collection(name).config
        vectors = cfg.params.vectors
        size = vectors[DENSE].size if isinstance(vectors, dict) and DENSE in vectors else None
        return CollectionInfo(dict(cfg.metadata or {}), size)

    def upsert(self, name: str, points: list[models.PointStruct]) -> None:
        """Upsert points and wait for them to be stored."""
        self.client.upsert(name, points=points, wait=True)

    def delete(self, name: str, flt: models.Filter) -> None:
        """Delete the points matching a filter."""
        from qdrant_client import models

        self.client.delete(name, points_selector=models.FilterSelector(filter=flt), wait=True)

    def set_payload(self, name: str, ids: list[str], payload: dict[str, Any]) -> None:
        """Set payload keys on the given points."""
        self.client.set_payload(name, payload=payload, points=list(ids), wait=True)  # list[PointId]: list is invariant

    def retrieve(self, name: str, ids: list[str], fields: list[str]) -> list[tuple[str, dict]]:
        """(id, payload subset) of the given points that exist."""
        pts = self.client.retrieve(name, ids=ids, with_payload=fields, with_vectors=False)
        return [(str(p.id), p.payload or {}) for p in pts]

    def scroll(
        self, name: str, fields: list[str], flt: models.Filter | None, limit: int, offset: Any
    ) -> tuple[list[tuple[str, dict]], Any]:
        """One page of (id, payload subset) and the next offset (None at the end)."""
        from qdrant_client import models

        recs, nxt = self.client.scroll(
            name,
            scroll_filter=flt,
            limit=limit,
            offset=offset,
            with_payload=models.PayloadSelectorInclude(include=fields),
            with_vectors=False,
        )
        return [(str(r.id), r.payload or {}) for r in recs], nxt

    def count(self, name: str) -> int:
        """Exact number of points."""
        return self.client.count(name, exact=True).count

    def query(self, name: str, q: VectorQuery) -> list[Hit]:
        """Run a dense, sparse or hybrid query (one Query API call)."""
        from qdrant_client import models

        kwargs: dict[str, Any] = {"limit": q.limit, "with_payload": True, "with_vectors": False}
        sparse = models.SparseVector(indices=list(q.sparse.indices), values=list(q.sparse.values)) if q.sparse else None
        if q.mode == "dense":
            kwargs.update(query=q.dense, using=DENSE, query_filter=q.flt)
        elif q.mode == "sparse":
            kwargs.update(query=sparse, using=SPARSE, query_filter=q.flt)
        else:
            kwargs["prefetch"] = [
                models.Prefetch(query=q.dense, using=DENSE, limit=q.prefetch_limit, filter=q.flt),
                models.Prefetch(query=sparse, using=SPARSE, limit=q.prefetch_limit, filter=q.flt),
            ]
            if q.fusion == "dbsf":
                kwargs["query"] = models.FusionQuery(fusion=models.Fusion.DBSF)
            else:
                kwargs["query"] = models.RrfQuery(rrf=models.Rrf(k=q.rrf_k, weights=list(q.weights)))
        res = self.client.query_points(name, **kwargs)
        return [Hit(str(p.id), float(p.score), p.payload or {}) for p in res.points]

    def close(self) -> None:
        """Close the client."""
        self.client.close()
