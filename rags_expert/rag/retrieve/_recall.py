"""Lesson recall beside retrieval: started by ``prepare``, awaited only where the lessons are used.

The lessons of a question are read by the answer prompt alone (the speculative draft in ``grade_documents``,
or ``generate``). So ``prepare`` starts the recall as a task of the run's event loop (:meth:`LessonRecalls.start`)
and returns at once; retrieval and the relevance grades go on meanwhile, and the first node that writes an
answer takes the lessons (:meth:`LessonRecalls.take`: by then the recall is usually done). The recall itself:

* skips at once when the scope holds no lesson (:meth:`~rags_expert.lessons.LessonMemory.has_lessons`, one
  count: the question is not embedded and the embedding model is not even loaded), and runs nothing at all
  while the scope is known to be empty (``lessons.recheck_empty_s``);
* otherwise embeds the question through :func:`~rags_expert.retrieval.embeddings.query_vector`, which the
  knowledge base's search uses too: the vector is computed once for both, even at the same moment.

Only a key of the pending recall is kept in the state (a task is no state: the state may be checkpointed).
Where the task is not found (the run went on in another process or event loop after a checkpoint, or it
waited longer than :data:`MAX_PENDING_S`), ``take`` recalls there and then: the same lessons, later. The
finalize nodes drop a recall no answer took. Its cost is in ``timings["lesson_recall"]``
(:mod:`rags_expert.rag._shared.timings`), its outcome in the ``lesson_recalled`` event, emitted by the node that
took it.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, cast

from rags_expert.lessons import Lesson, LessonMemory, readable_lessons, recalled_texts
from rags_expert.rag._shared.timings import recall_entry
from rags_expert.rag.authorization import Authorizer
from rags_expert.rag.state import RagState, value

MAX_PENDING_S = 600.0
"""A recall not taken within this many seconds is dropped when the next one starts (its run was abandoned);
a run that still needs it recalls again."""


@dataclass
class Recalled:
    """What a recall found, and what it cost."""

    lessons: list[Lesson] | BaseException
    cpu_s: float
    skipped: bool
    started: float = 0.0
    done: float = field(default_factory=time.perf_counter)


def _recall_in_thread(memory: LessonMemory, question: str, scope: str, started: float) -> Recalled:
    """The blocking recall (a worker thread): skip an empty scope, else embed and search."""
    cpu = time.thread_time()
    try:
        skipped = not memory.has_lessons(scope)
        found: list[Lesson] | BaseException = [] if skipped else memory.search_sync(question, scope)
    except Exception as exc:  # noqa: BLE001 - memory is an aid; its failure must not fail the attempt
        found, skipped = exc, False
    return Recalled(found, time.thread_time() - cpu, skipped, started)


async def _recall(memory: LessonMemory, question: str, scope: str) -> Recalled:
    return await asyncio.to_thread(_recall_in_thread, memory, question, scope, time.perf_counter())


class LessonRecalls:
    """The recalls of one agent's runs that are under way, by key (one per question)."""

    def __init__(self, memory: LessonMemory | None, authorizer: Authorizer | None = None) -> None:
        self.memory = memory
        self.authorizer = authorizer  # lessons recalled only when the user may read every chunk they came from
        self._pending: dict[str, tuple[asyncio.Task[Recalled] | None, float]] = {}
        self._lock = threading.Lock()  # one agent may serve runs on several event loops (threads)

    def start(self, question: str, scope: str) -> str:
        """Start recalling lessons for ``question`` in ``scope`` on the running loop; the key to take them
        with ("" when the memory is off or the request has no scope)."""
        if self.memory is None or not scope:
            return ""
        key = uuid.uuid4().hex
        task = None  # known to be empty: nothing to run
        if not self.memory.known_empty(scope):
            task = asyncio.get_running_loop().create_task(_recall(self.memory, question, scope))
        now = time.monotonic()
        with self._lock:
            for old in [k for k, (_, at) in self._pending.items() if now - at > MAX_PENDING_S]:
                self._drop(old)
            self._pending[key] = (task, now)
        return key

    def _drop(self, key: str) -> None:
        """Forget a recall (under the lock); cancel it when it is not done (on its own loop)."""
        task, _ = self._pending.pop(key, (None, 0.0))
        if task is not None and not task.done():
            task.get_loop().call_soon_threadsafe(task.cancel)

    def discard(self, state: RagState) -> None:
        """Drop the question's recall if no answer took it (the finalize nodes)."""
        if key := value(state, "lesson_recall"):
            with self._lock:
                self._drop(key)

    async def take(self, state: RagState) -> dict[str, Any]:
        """The state update with the question's recalled lessons once they are there (``lessons``, the
        recall's ``timings``, the key cleared); {} when no recall is pending. Emits ``lesson_recalled``."""
        key = value(state, "lesson_recall")
        if not key or self.memory is None:
            return {}
        waiting = time.perf_counter()
        with self._lock:
            task, _ = self._pending.pop(key, (False, 0.0))
        if task is None:  # the scope was known to be empty
            recalled = Recalled([], 0.0, True, started=waiting, done=waiting)
        elif isinstance(task, asyncio.Task) and task.get_loop() is asyncio.get_running_loop():
            recalled = await task
        else:  # started elsewhere (another loop or process), or dropped: recall here
            recalled = await _recall(self.memory, state["question"], state["lesson_scope"])
        waited = time.perf_counter() - waiting
        return {
            "lessons": recalled_texts(
                await self._readable(recalled.lessons, value(state, "user")), state["question"], state["lesson_scope"]
            ),
            "lesson_recall": "",
            "timings": recall_entry(recalled.done - recalled.started, recalled.cpu_s, waited, recalled.skipped),
        }

    async def begin(self, question: str, scope: str, user: str | None) -> dict[str, Any]:
        """``prepare``'s update for the question's lessons: a recall started beside the retrieval
        (``lesson_recall``), or, with authorization on, the lessons themselves (:meth:`recall_now`)."""
        if self.authorizer is not None:
            return {"lessons": await self.recall_now(question, scope, user)}
        return {"lesson_recall": self.start(question, scope)}

    async def recall_now(self, question: str, scope: str, user: str | None) -> list[str]:
        """The lessons recalled and checked at once (``prepare``, with authorization on): their sources' check then
        comes before the retrieval's, never after the check of chunks an answer call uses (which would make a
        chunk revoked in between look allowed to that call). Emits ``lesson_recalled``."""
        if self.memory is None or not scope:
            return []
        recalled = await _recall(self.memory, question, scope)
        return recalled_texts(await self._readable(recalled.lessons, user), question, scope)

    async def _readable(self, lessons: list[Lesson] | BaseException, user: str | None) -> list[Lesson] | BaseException:
        """The lessons the request's user may read all the sources of (:func:`~rags_expert.lessons.readable_lessons`);
        a fault of the check is the recall's fault: no lessons (fail closed)."""
        if self.authorizer is None or isinstance(lessons, BaseException):
            return lessons
        try:
            return await readable_lessons(lessons, functools.partial(self.authorizer.allowed, user))
        except Exception as exc:  # noqa: BLE001 - lessons are an aid; the check failing hides them all
            return exc


def with_lessons(state: RagState, recalled: dict[str, Any]) -> RagState:
    """``state`` as the node that took the recall sees it (its update applied)."""
    return cast(RagState, {**state, **recalled})
