"""Lesson recall off the critical path (issue 27): it runs beside retrieval, skips an empty scope without
embedding anything, and its cost is in ``response_metadata["timings"]`` with every node's."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest
from helpers.documents import KeywordRetriever
from helpers.scripts import Script
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_core.messages import HumanMessage

import rags_expert.retrieval.embeddings as embeddings_module
from rags_expert import RagsExpert, RagsExpertSettings
from rags_expert.lessons import LessonMemory, scope_key
from rags_expert.retrieval.qdrant import close_client, get_client
from rags_expert.testing import ScriptedChatModel

LESSON = "Quote the exact construction year stated in the chunk instead of a century."
QUESTION = "When was Castle Varen built?"


class GatedEmbeddings(Embeddings):
    """Embeds a query only once retrieval has started (the test fails if the recall runs before it)."""

    def __init__(self, inner: Embeddings, retrieval_started: threading.Event) -> None:
        self.inner, self.retrieval_started = inner, retrieval_started

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        if not self.retrieval_started.wait(30):  # only reached when the recall blocks the retrieval
            raise TimeoutError("the lesson recall ran before retrieval started")
        return self.inner.embed_query(text)


class SignallingRetriever(KeywordRetriever):
    """A keyword retriever that says when a search has started."""

    started: Any = None

    def _get_relevant_documents(self, query: str, *, run_manager: Any, **kwargs: Any) -> list[Document]:
        self.started.set()
        return super()._get_relevant_documents(query, run_manager=run_manager, **kwargs)


@pytest.fixture
def settings(tmp_path) -> RagsExpertSettings:
    settings = RagsExpertSettings(store={"data_dir": str(tmp_path / "qdrant")}, lessons={"enabled": True})
    yield settings
    close_client(settings.store)


def _memory(settings: RagsExpertSettings, embeddings: Embeddings) -> LessonMemory:
    client, lock = get_client(settings.store)
    return LessonMemory(client, embeddings, settings.lessons, lock=lock, model_name="deterministic-32")


def _script(prompts: list[str]) -> ScriptedChatModel:
    script = Script(
        relevance=lambda q, c: "yes" if "1412" in c else "no",
        generate=lambda t: prompts.append(t) or "Castle Varen was built in 1412 [1].",
    )
    return ScriptedChatModel(responder=script)


async def _ask(graph: Any, question: str, thread: str) -> tuple[Any, list[dict[str, Any]]]:
    events, final = [], None
    async for mode, chunk in graph.astream(
        {"messages": [HumanMessage(question)]},
        {"configurable": {"thread_id": thread}},
        stream_mode=["custom", "values"],
    ):
        if mode == "custom":
            events.append(chunk)
        else:
            final = chunk["messages"][-1]
    return final, events


@pytest.mark.parametrize("draft", [True, False], ids=["taken by the draft", "taken by generate"])
async def test_lesson_recall_runs_beside_retrieval(settings, castle_docs, draft):
    fake = DeterministicFakeEmbedding(size=32)
    scope = scope_key("rag", settings.lessons)  # a request without library tags
    await _memory(settings, fake).store(LESSON, QUESTION, 0.0, scope)  # stored before the agent runs
    retrieval_started = threading.Event()
    prompts: list[str] = []
    agent = await RagsExpert(
        settings.model_copy(update={"speculative_draft": draft}),
        chat_model=_script(prompts),
        retriever=SignallingRetriever(docs=castle_docs, calls=[], started=retrieval_started),
        lesson_memory=_memory(settings, GatedEmbeddings(fake, retrieval_started)),
    ).async_init()

    final, events = await _ask(agent.get_compiled_graph(), QUESTION, "t")

    # the recall's embedding waited for the search to start, and its lesson still reached the answer prompt
    assert final.response_metadata["outcome"] == "success"
    assert LESSON in prompts[0]
    assert [e["lessons"] for e in events if e["event"] == "lesson_recalled"] == [[LESSON]]
    recall = final.response_metadata["timings"]["lesson_recall"]
    assert recall["skipped"] is False and recall["runs"] == 1


async def test_an_empty_store_is_not_embedded_and_the_model_is_never_loaded(settings, castle_docs, monkeypatch):
    loads = []
    build = embeddings_module.build_embeddings
    monkeypatch.setattr(embeddings_module, "build_embeddings", lambda s: loads.append(s) or build(s))
    prompts: list[str] = []
    agent = await RagsExpert(
        settings, chat_model=_script(prompts), retriever=KeywordRetriever(docs=castle_docs, calls=[])
    ).async_init()
    graph = agent.get_compiled_graph()

    final, events = await _ask(graph, QUESTION, "t")

    assert final.response_metadata["outcome"] == "success"
    assert agent.lesson_memory is not None and loads == []  # the host's retriever, no lesson: no e5 model
    assert [e["lessons"] for e in events if e["event"] == "lesson_recalled"] == [[]]
    assert final.response_metadata["timings"]["lesson_recall"]["skipped"] is True
    assert "<lessons>" not in prompts[0]


async def test_a_lesson_of_another_scope_does_not_make_a_scope_non_empty(settings):
    memory = _memory(settings, DeterministicFakeEmbedding(size=32))
    assert not memory.has_lessons("rag")  # no collection yet
    await memory.store(LESSON, QUESTION, 0.0, "kg")
    assert memory.has_lessons("kg") and not memory.has_lessons("rag")
    assert await memory.recall(QUESTION, "rag") == []


async def test_timings_are_reported_per_node_and_restart_with_each_question(castle_docs):
    agent = await RagsExpert(
        {"max_generations": 2},
        chat_model=_script([]),
        retriever=KeywordRetriever(docs=castle_docs, calls=[]),
    ).async_init()
    graph = agent.get_compiled_graph()
    for thread_question in (QUESTION, "When was Castle Varen built, again?"):  # the same thread twice
        final, _ = await _ask(graph, thread_question, "same")
        timings = final.response_metadata["timings"]
        nodes = timings["by_node"]
        assert list(nodes) == ["prepare", "retrieve", "grade_documents", "generate", "grade_generation"]
        assert all(n["runs"] == 1 and n["wall_s"] >= 0 and n["cpu_s"] >= 0 for n in nodes.values())
        assert timings["wall_s"] == pytest.approx(sum(n["wall_s"] for n in nodes.values()), abs=1e-5)
        assert timings["cpu_s"] == pytest.approx(sum(n["cpu_s"] for n in nodes.values()), abs=1e-5)
        assert "lesson_recall" not in timings  # lessons off (the tests' environment)


async def test_a_failed_question_reports_its_timings_too(castle_docs):
    script = Script(relevance=lambda q, c: "no")
    agent = await RagsExpert(
        {"max_rephrases": 1},
        chat_model=ScriptedChatModel(responder=script),
        retriever=KeywordRetriever(docs=castle_docs, calls=[]),
    ).async_init()
    final, _ = await _ask(agent.get_compiled_graph(), QUESTION, "t")
    meta = final.response_metadata
    assert meta["outcome"] == "failure"
    assert (
        meta["timings"]["by_node"]["retrieve"]["runs"] == 2
        and meta["timings"]["by_node"]["rephrase_query"]["runs"] == 1
    )


async def test_a_scope_found_empty_sees_a_lesson_this_process_stores_at_once(settings):
    memory = _memory(settings, DeterministicFakeEmbedding(size=32))
    assert not memory.has_lessons("rag") and memory.known_empty("rag")
    await memory.store(LESSON, QUESTION, 0.0, "rag")
    assert [lesson.text for lesson in await memory.recall(QUESTION, "rag")] == [LESSON]


@pytest.mark.parametrize("recheck", [30.0, 0.0])
async def test_a_lesson_another_memory_stores_is_seen_after_recheck_empty_s(settings, recheck):
    fake = DeterministicFakeEmbedding(size=32)
    lessons = settings.lessons.model_copy(update={"recheck_empty_s": recheck})
    reader = _memory(settings.model_copy(update={"lessons": lessons}), fake)
    assert await reader.recall(QUESTION, "rag") == []
    await _memory(settings, fake).store(LESSON, QUESTION, 0.0, "rag")  # another process, as far as reader knows
    recalled = [lesson.text for lesson in await reader.recall(QUESTION, "rag")]
    assert recalled == ([] if recheck else [LESSON])


async def test_the_search_and_the_recall_embed_the_question_once(tmp_path, monkeypatch):
    from rags_expert.retrieval.embeddings import WordLlamaEmbeddings
    from rags_expert.retrieval.ingest import Ingestor
    from rags_expert.retrieval.qdrant import KnowledgeBase

    settings = RagsExpertSettings(
        store={"data_dir": str(tmp_path / "data")}, embeddings={"provider": "wordllama"}, lessons={"enabled": True}
    )
    try:
        docs = tmp_path / "docs"
        docs.mkdir()
        (docs / "varen.md").write_text("# Varen\nCastle Varen was built in 1412 by Duke Albrecht on the river Mura.")
        Ingestor(KnowledgeBase(settings)).run([docs])
        await LessonMemory.from_settings(settings).store(LESSON, QUESTION, 0.0, scope_key("rag", settings.lessons))
        embedded: list[str] = []
        embed = WordLlamaEmbeddings.embed_query
        monkeypatch.setattr(WordLlamaEmbeddings, "embed_query", lambda self, t: embedded.append(t) or embed(self, t))
        question = f"When was Castle Varen built? (asked in {uuid.uuid4().hex})"  # never embedded before
        agent = await RagsExpert(settings, chat_model=_script([])).async_init()  # the knowledge base's retriever

        final, _ = await _ask(agent.get_compiled_graph(), question, "t")

        assert final.response_metadata["outcome"] == "success"
        assert final.response_metadata["timings"]["lesson_recall"]["skipped"] is False  # it did search the lessons
        assert embedded.count(question) == 1
    finally:
        close_client(settings.store)
