"""The lesson store shared by the RAG and KG graphs (the stages that use it: :mod:`rags_expert.lessons.stages`).

When an attempt fails, a reflector call (:func:`rags_expert.llm.grading.reflect`)
writes one sentence of advice. :class:`LessonMemory` stores it in a Qdrant
collection (the same embedded or server Qdrant as the knowledge base) with the
failing question and score as payload, merging near-duplicates; before each
attempt it recalls the top-k lessons most similar to the current question above a
similarity floor (selective recall), and nothing when nothing is relevant.
Lessons persist across sessions.

Scope: every lesson carries a scope key (:func:`scope_key`): the agent ("rag",
"kg") plus, per ``lessons.scope_by``, the request's library tags and/or user, so
advice learnt from one library's or user's questions is never recalled for
another's. Caps: at most ``lessons.max_per_scope`` lessons per scope (the least
recently updated are evicted) and none older than ``lessons.max_age_days``.
Recalled lessons are neutralised (:func:`rags_expert.prompts.neutralise`) so they
stay data inside the ``<lessons>`` frame of the prompt.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings

from rags_expert.prompts import PromptStore, neutralise
from rags_expert.retrieval.embeddings import embedding_input, query_vector
from rags_expert.settings import AgentSettings, LessonSettings

if TYPE_CHECKING:  # qdrant-client is imported where the lessons are read or written, not with the agent
    from qdrant_client import QdrantClient, models

log = logging.getLogger(__name__)

QUESTION = "question"  # named vector: the failing question (recall searches it)
LESSON = "lesson"  # named vector: the advice itself (near-duplicate detection)
_NAMESPACE = uuid.UUID("6f1c1b0e-4a47-4d7e-9a51-2f0c3b8e5d10")
EventSink = Callable[[dict[str, Any]], None]
Clock = Callable[[], dt.datetime]


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def scope_key(
    kind: str,
    settings: LessonSettings,
    *,
    library_tags: list[str] | None = None,
    user_id: str | None = None,
) -> str:
    """The scope a request's lessons are stored and recalled under.

    ``kind`` alone ("rag", "kg") when ``settings.scope_by`` is empty; otherwise a JSON key of the
    kind and the parts named there: the sorted, de-duplicated library tags (``[]`` = the whole
    library) and the user id ("" = anonymous requests).
    """
    if not settings.scope_by:
        return kind
    key: dict[str, Any] = {"kind": kind}
    if "library_tags" in settings.scope_by:
        key["library_tags"] = sorted(set(library_tags or []))
    if "user" in settings.scope_by:
        key["user"] = user_id or ""
    return json.dumps(key, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class Lesson:
    """A recalled lesson and how similar its failing question was to the current one."""

    text: str
    similarity: float
    question: str
    times: int
    uids: tuple[str, ...] | None = None
    """The chunks the failed attempt read (authorization filters recall by them); None: not recorded."""


def _normalise(text: str) -> str:
    return " ".join(text.lower().split())


class LessonMemory:
    """Store and recall one-sentence lessons in a Qdrant collection (see the module docstring)."""

    def __init__(
        self,
        client: QdrantClient,
        embeddings: Embeddings | Callable[[], Embeddings],
        settings: LessonSettings,
        *,
        lock: AbstractContextManager[Any] | None = None,
        model_name: str = "",
        clock: Clock = _utcnow,
    ) -> None:
        """``embeddings``: the model, or a function that loads it (called on the first recall or store that
        needs a vector, so an empty store never loads it)."""
        self.client = client
        self._embeddings = embeddings if isinstance(embeddings, Embeddings) else None
        self._load = embeddings if not isinstance(embeddings, Embeddings) else None
        self._load_lock = threading.Lock()
        self.settings = settings
        self.lock = lock or threading.RLock()
        self.clock = clock
        self._model_name = model_name
        self._ready = False
        self._empty_until: dict[str, float] = {}  # scope -> monotonic time until which it is taken as empty

    @property
    def embeddings(self) -> Embeddings:
        """The embedding model (loaded on first use)."""
        if self._embeddings is None:
            with self._load_lock:
                if self._embeddings is None:
                    assert self._load is not None
                    self._embeddings = self._load()
        return self._embeddings

    @property
    def model_name(self) -> str:
        """The embedding model's name, recorded in the collection's metadata."""
        emb = self.embeddings
        return self._model_name or getattr(emb, "model_name", type(emb).__name__)

    @classmethod
    def from_settings(cls, settings: AgentSettings) -> LessonMemory:
        """The lesson memory on the knowledge base's Qdrant (shared client) and embedding model (loaded when
        first needed: never while the store holds no lesson for the question's scope)."""
        from rags_expert.retrieval.embeddings import build_embeddings
        from rags_expert.retrieval.qdrant import get_client

        client, lock = get_client(settings.store)
        return cls(client, lambda: build_embeddings(settings.embeddings), settings.lessons, lock=lock)

    # --- collection --------------------------------------------------------------------------

    def _ensure_collection(self, dimension: int) -> None:
        if self._ready:
            return
        from qdrant_client import models

        name = self.settings.collection
        with self.lock:
            if not self.client.collection_exists(name):
                params = models.VectorParams(size=dimension, distance=models.Distance.COSINE)
                self.client.create_collection(
                    name,
                    vectors_config={QUESTION: params, LESSON: params},
                    metadata={"embedding_model": self.model_name, "dimension": dimension},
                )
            else:
                info = self.client.get_collection(name)
                size = info.config.params.vectors[QUESTION].size  # type: ignore[index]
                recorded = (info.config.metadata or {}).get("embedding_model")
                if size != dimension or (recorded and recorded != self.model_name):
                    raise ValueError(
                        f"lesson collection {name!r} was written with {recorded or 'another model'} "
                        f"({size}-d); the configured model is {self.model_name} ({dimension}-d). "
                        "Use another lessons.collection or the original embedding model."
                    )
        self._ready = True

    # --- the two operations ------------------------------------------------------------------

    def known_empty(self, scope: str) -> bool:
        """Whether ``scope`` was found empty within the last ``lessons.recheck_empty_s`` (no store access)."""
        return self._empty_until.get(scope, 0.0) > time.monotonic()

    def has_lessons(self, scope: str) -> bool:
        """Whether ``scope`` holds a lesson young enough to recall: one count, no embedding (none while
        :meth:`known_empty`)."""
        if self.known_empty(scope):
            return False
        with self.lock:  # counted and marked under the lock store_sync holds: a lesson stored meanwhile is seen
            name = self.settings.collection
            found = self.client.collection_exists(name) and (
                self.client.count(name, count_filter=self._recall_filter(scope), exact=True).count > 0
            )
            if not found and self.settings.recheck_empty_s:
                now = time.monotonic()
                if len(self._empty_until) > 4096:  # many scopes (users): forget the expired ones
                    self._empty_until = {k: t for k, t in self._empty_until.items() if t > now}
                self._empty_until[scope] = now + self.settings.recheck_empty_s
        return found

    def recall_sync(self, question: str, scope: str) -> list[Lesson]:
        """The top-k lessons whose failing question is similar to ``question`` (above the floor); [] at once,
        without embedding the question, when the scope holds none (:meth:`has_lessons`)."""
        return self.search_sync(question, scope) if self.has_lessons(scope) else []

    def search_sync(self, question: str, scope: str) -> list[Lesson]:
        """:meth:`recall_sync` without the emptiness check: embeds the question and searches."""
        vector = query_vector(self.embeddings, question)
        self._ensure_collection(len(vector))
        with self.lock:
            hits = self.client.query_points(
                self.settings.collection,
                query=vector,
                using=QUESTION,
                limit=self.settings.top_k,
                score_threshold=self.settings.min_similarity,
                query_filter=self._recall_filter(scope),
                with_payload=True,
            ).points
        return [
            Lesson(
                h.payload["lesson"],
                float(h.score),
                h.payload.get("question", ""),
                int(h.payload.get("times", 1)),
                None if h.payload.get("uids") is None else tuple(h.payload["uids"]),
            )
            for h in hits
            if h.payload
        ]

    def store_sync(
        self, lesson: str, question: str, score: float, scope: str, uids: Sequence[str] = ()
    ) -> tuple[str, bool]:
        """Store a lesson keyed by its failing question, with the chunk ``uids`` it came from; merge into a
        near-duplicate (the uids of both kept). Returns (id, merged)."""
        lesson = " ".join(lesson.split())[: self.settings.max_chars]
        # symmetric matching (question to question, advice to advice): both sides embedded as queries
        text_vec = self.embeddings.embed_query(embedding_input(self.embeddings, lesson))
        question_vec = query_vector(self.embeddings, question)
        self._ensure_collection(len(question_vec))
        at = self.clock()
        now, stamp = at.isoformat(), at.timestamp()
        with self.lock:
            duplicate = self._near_duplicate(lesson, text_vec, scope)
            if duplicate is not None:
                payload = dict(duplicate.payload or {})
                payload["times"] = int(payload.get("times", 1)) + 1
                payload["last_score"] = score
                payload["updated_at"] = now
                payload["updated_ts"] = stamp
                payload["questions"] = (payload.get("questions", []) + [question])[-5:]
                payload["uids"] = sorted({*(payload.get("uids") or []), *uids})
                self.client.set_payload(self.settings.collection, payload=payload, points=[duplicate.id])
                self._empty_until.pop(scope, None)
                return str(duplicate.id), True
            point_id = str(uuid.uuid5(_NAMESPACE, f"{scope}\x00{_normalise(lesson)}"))
            payload = {
                "lesson": lesson,
                "question": question,
                "questions": [question],
                "score": score,
                "last_score": score,
                "scope": scope,
                "uids": sorted(set(uids)),
                "times": 1,
                "created_at": now,
                "updated_at": now,
                "updated_ts": stamp,
            }
            from qdrant_client import models

            self.client.upsert(
                self.settings.collection,
                points=[
                    models.PointStruct(id=point_id, vector={QUESTION: question_vec, LESSON: text_vec}, payload=payload)
                ],
            )
            self._evict(scope)
            self._empty_until.pop(scope, None)  # under the lock: no emptiness check counted before this upsert
        return point_id, False

    # --- caps -------------------------------------------------------------------------------

    def _cutoff(self) -> float | None:
        """The oldest ``updated_ts`` still alive (None: no age limit)."""
        days = self.settings.max_age_days
        return (self.clock() - dt.timedelta(days=days)).timestamp() if days else None

    def _recall_filter(self, scope: str) -> models.Filter:
        """Lessons of this scope, updated within ``max_age_days``."""
        from qdrant_client import models

        flt = _scope_filter(scope)
        if (cutoff := self._cutoff()) is not None:
            flt.must.append(models.FieldCondition(key="updated_ts", range=models.Range(gte=cutoff)))  # type: ignore[union-attr]
        return flt

    def _evict(self, scope: str) -> None:
        """Delete expired lessons (any scope) and the least recently updated beyond ``max_per_scope``."""
        from qdrant_client import models

        name = self.settings.collection
        if (cutoff := self._cutoff()) is not None:
            expired = models.Filter(
                should=[
                    models.FieldCondition(key="updated_ts", range=models.Range(lt=cutoff)),
                    models.IsEmptyCondition(is_empty=models.PayloadField(key="updated_ts")),
                ]
            )
            self.client.delete(name, points_selector=models.FilterSelector(filter=expired), wait=True)
        excess = (
            self.client.count(name, count_filter=_scope_filter(scope), exact=True).count - self.settings.max_per_scope
        )
        if excess <= 0:
            return
        points, offset = [], None
        while True:
            page, offset = self.client.scroll(
                name,
                scroll_filter=_scope_filter(scope),
                limit=1024,
                offset=offset,
                with_payload=["updated_ts"],
                with_vectors=False,
            )
            points.extend(page)
            if offset is None:
                break
        points.sort(key=lambda p: float((p.payload or {}).get("updated_ts") or 0.0))
        oldest = [p.id for p in points[:excess]]
        self.client.delete(name, points_selector=models.PointIdsList(points=oldest), wait=True)

    def _near_duplicate(self, lesson: str, text_vec: list[float], scope: str) -> models.ScoredPoint | None:
        """The most similar existing lesson of this scope, if its advice is (nearly) the same."""
        hits = self.client.query_points(
            self.settings.collection,
            query=text_vec,
            using=LESSON,
            limit=1,
            score_threshold=self.settings.merge_similarity,
            query_filter=_scope_filter(scope),
            with_payload=True,
        ).points
        return hits[0] if hits else None

    def count(self, scope: str | None = None) -> int:
        """Lessons stored (in one scope, or all)."""
        with self.lock:  # every call under the lock: the lease opens and releases the folder around it
            if not self.client.collection_exists(self.settings.collection):
                return 0
            return self.client.count(
                self.settings.collection, count_filter=_scope_filter(scope) if scope else None, exact=True
            ).count

    async def recall(self, question: str, scope: str) -> list[Lesson]:
        """Async :meth:`recall_sync` (embedding and local Qdrant run in a thread)."""
        return await asyncio.to_thread(self.recall_sync, question, scope)

    async def store(
        self, lesson: str, question: str, score: float, scope: str, uids: Sequence[str] = ()
    ) -> tuple[str, bool]:
        """Async :meth:`store_sync`."""
        return await asyncio.to_thread(self.store_sync, lesson, question, score, scope, uids)


def _scope_filter(scope: str) -> models.Filter:
    from qdrant_client import models

    return models.Filter(must=[models.FieldCondition(key="scope", match=models.MatchValue(value=scope))])


def format_lessons(lessons: list[str]) -> str:
    """Recalled lessons as a neutralised bullet list for the ``lessons_block`` prompt ("" when none)."""
    return "\n".join(f"- {neutralise(text)}" for text in lessons)


def lessons_block(prompts: PromptStore, lessons: list[str] | None) -> str:
    """The ``lessons_block`` prompt framing recalled lessons as data, or "" when there are none (both graphs)."""
    return prompts.render("lessons_block", lessons=format_lessons(lessons)) if lessons else ""
