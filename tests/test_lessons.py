"""Reflexion lesson memory on the real embedded Qdrant with the default bundled embedding model."""

from __future__ import annotations

import pytest
from helpers.documents import KeywordRetriever
from helpers.scripts import MODEL_CHECKS, Script
from langchain_core.messages import HumanMessage

from rags_expert import RagsExpert, RagsExpertSettings
from rags_expert.lessons import LessonMemory
from rags_expert.retrieval.qdrant import close_client
from rags_expert.testing import ScriptedChatModel

BIRTH_LESSON = "When comparing two people's birth dates, retrieve each person separately before comparing."
YEAR_LESSON = "Quote the exact construction year stated in the chunk instead of a century."


@pytest.fixture
def settings(tmp_path) -> RagsExpertSettings:
    return RagsExpertSettings(
        **MODEL_CHECKS,  # a lesson is learnt from the scripted grader rejecting an answer the evidence would accept
        store={"data_dir": str(tmp_path / "qdrant")},
        lessons={"enabled": True},
    )


@pytest.fixture
def memory(settings):
    mem = LessonMemory.from_settings(settings)
    yield mem
    close_client(settings.store)


async def test_selective_recall_returns_only_similar_lessons(memory):
    await memory.store(BIRTH_LESSON, "Who was born first, Ada Lovelace or Charles Babbage?", 0.0, "rag")
    await memory.store(YEAR_LESSON, "When was Castle Varen built?", 5.0, "rag")
    recalled = await memory.recall("When was the Eiffel Tower built?", "rag")
    assert [lesson.text for lesson in recalled] == [YEAR_LESSON]
    assert recalled[0].question == "When was Castle Varen built?"
    assert await memory.recall("What is the capital of Peru?", "rag") == []  # nothing relevant: nothing recalled


async def test_near_duplicates_are_merged(memory):
    first, merged1 = await memory.store(BIRTH_LESSON, "Who was born first, Ada or Charles?", 0.0, "rag")
    again, merged2 = await memory.store(
        BIRTH_LESSON.replace("before comparing", "before you compare them"),
        "Which of Mozart and Haydn was born first?",
        0.0,
        "rag",
    )
    assert (merged1, merged2) == (False, True) and again == first
    assert memory.count("rag") == 1
    lesson = (await memory.recall("Who was born first, Ada or Charles?", "rag"))[0]
    assert lesson.times == 2


async def test_scopes_do_not_mix(memory):
    await memory.store(YEAR_LESSON, "When was Castle Varen built?", 0.0, "kg")
    assert await memory.recall("When was Castle Varen built?", "rag") == []
    assert len(await memory.recall("When was Castle Varen built?", "kg")) == 1


async def test_lessons_persist_across_sessions(settings):
    mem = LessonMemory.from_settings(settings)
    await mem.store(YEAR_LESSON, "When was Castle Varen built?", 0.0, "rag")
    close_client(settings.store)  # the session ends: the embedded database is closed
    reopened = LessonMemory.from_settings(settings)
    try:
        assert [lesson.text for lesson in await reopened.recall("When was Castle Varen built?", "rag")] == [YEAR_LESSON]
    finally:
        close_client(settings.store)


async def test_a_data_folder_without_lessons_is_answered_without_opening_it(settings):
    """Issue 54: the lesson check of a question on a data folder that never stored a lesson opens nothing (no
    qdrant-client, no folder lock); once one is stored, it is found, in this process and the next."""
    mem = LessonMemory.from_settings(settings)
    try:
        assert not mem.has_lessons("rag") and mem.count() == 0
        assert not mem.client.is_open() and not (settings.store.data_dir / "collection").exists()
        await mem.store(YEAR_LESSON, "When was Castle Varen built?", 0.0, "rag")
        assert LessonMemory.from_settings(settings).has_lessons("rag")  # the same client, open
        close_client(settings.store)
        reopened = LessonMemory.from_settings(settings)
        assert reopened.has_lessons("rag") and not reopened.has_lessons("kg") and reopened.client.is_open()
    finally:
        close_client(settings.store)


async def test_rag_graph_learns_from_a_rejected_answer_and_recalls_it(settings, castle_docs):
    generate_prompts = []
    grounded = iter(["no", "yes", "yes"])
    script = Script(
        relevance=lambda q, c: "yes" if "1412" in c else "no",
        grounded=lambda t: (
            '{"grounded": %s, "unsupported": "the century"}' % ("true" if next(grounded) == "yes" else "false")
        ),
        generate=lambda t: generate_prompts.append(t) or "Castle Varen was built in 1412 [1].",
    )

    def responder(text, kwargs):
        if '{"lesson":' in text:
            return '{"lesson": "%s"}' % YEAR_LESSON
        return script(text, kwargs)

    model = ScriptedChatModel(responder=responder)
    agent = await RagsExpert(
        settings, chat_model=model, retriever=KeywordRetriever(docs=castle_docs, calls=[])
    ).async_init()
    graph = agent.get_compiled_graph()
    events, nodes = [], []
    try:
        async for mode, chunk in graph.astream(
            {"messages": [HumanMessage("When was Castle Varen built?")]},
            {"configurable": {"thread_id": "a"}},
            stream_mode=["custom", "updates"],
        ):
            if mode == "custom":
                events.append(chunk)
            else:
                nodes.extend(chunk)
        assert "reflect" in nodes and nodes[-1] == "finalize_success"
        kinds = [e["event"] for e in events]
        assert kinds == ["lesson_recalled", "answer_rejected", "lesson_produced", "lesson_stored"]
        assert events[0]["lessons"] == [] and events[2]["lesson"] == YEAR_LESSON
        assert "<lessons>" not in generate_prompts[0]

        # a later, similar question (another thread) gets the lesson in its answer prompt
        out = await graph.ainvoke(
            {"messages": [HumanMessage("When was the Eiffel Tower built?")]}, {"configurable": {"thread_id": "b"}}
        )
        assert YEAR_LESSON in generate_prompts[-1]
        assert out["messages"][-1].response_metadata["llm_calls"] <= agent.llm_call_bound(with_history=False)
    finally:
        close_client(settings.store)


async def test_disabled_memory_makes_no_reflection_call(tmp_path, castle_docs):
    script = Script(relevance=lambda q, c: "yes" if "1412" in c else "no", grounded=lambda t: "no")
    model = ScriptedChatModel(responder=script)
    agent = await RagsExpert(
        {"lessons": {"enabled": False}, "max_generations": 2},
        chat_model=model,
        retriever=KeywordRetriever(docs=castle_docs, calls=[]),
    ).async_init()
    out = await agent.get_compiled_graph().ainvoke(
        {"messages": [HumanMessage("When was Castle Varen built?")]}, {"configurable": {"thread_id": "x"}}
    )
    assert agent.lesson_memory is None
    assert all('{"lesson":' not in text for text, _ in model.calls)
    assert out["messages"][-1].response_metadata["llm_calls"] == len(model.calls)
