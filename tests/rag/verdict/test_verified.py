"""The evidence's answer check (``evidence.verify_answers``): an answer that quotes what it cites is accepted
without the model's two checks; anything else is checked by the model exactly as before."""

from __future__ import annotations

import pytest
from helpers.documents import KeywordRetriever, make_docs
from helpers.scripts import MODEL_CHECKS, Script
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage

from rags_expert import RagsExpert
from rags_expert.evidence import EvidenceScorer
from rags_expert.rag.verdict.verified import evidence_accepts, quotes_its_sources
from rags_expert.settings import EvidenceSettings
from rags_expert.testing import ScriptedChatModel

VERIFY = {"evidence": {"verify_answers": True}}


async def ask(script: Script, question: str, docs, **settings):
    model = ScriptedChatModel(responder=script)
    retriever = KeywordRetriever(docs=docs, calls=[])
    agent = await RagsExpert(
        {"llm": {"max_retries": 0}, **settings}, chat_model=model, retriever=retriever
    ).async_init()
    graph = agent.get_compiled_graph(checkpointer=False)
    events: list[str] = []
    final = None
    async for mode, chunk in graph.astream({"messages": [HumanMessage(question)]}, stream_mode=["custom", "values"]):
        if mode == "custom":
            events.append(chunk["event"])
        else:
            final = chunk["messages"][-1]
    assert final is not None
    return final, events


def castle_relevant(question: str, chunk: str) -> str:
    return "yes" if "1412" in chunk else "no"


async def test_a_quoting_answer_is_accepted_without_the_two_checks(castle_docs):
    script = Script(relevance=castle_relevant, generate=lambda t: "Castle Varen was built in 1412 [1].")
    msg, events = await ask(script, "When was Castle Varen built?", castle_docs, **VERIFY)
    assert msg.response_metadata["outcome"] == "success"
    assert msg.content == "Castle Varen was built in 1412 [1]."
    assert script.count("grounded") == 0 and script.count("useful") == 0
    assert "answer_verified" in events
    assert msg.response_metadata["llm_calls"] == script.count("relevance") + script.count("generate")


async def test_on_by_default(castle_docs):
    script = Script(relevance=castle_relevant, generate=lambda t: "Castle Varen was built in 1412 [1].")
    msg, events = await ask(script, "When was Castle Varen built?", castle_docs)
    assert msg.response_metadata["outcome"] == "success" and "answer_verified" in events
    assert script.count("grounded") == 0 and script.count("useful") == 0


async def test_turned_off_the_model_checks_every_answer(castle_docs):
    script = Script(relevance=castle_relevant, generate=lambda t: "Castle Varen was built in 1412 [1].")
    msg, events = await ask(script, "When was Castle Varen built?", castle_docs, **MODEL_CHECKS)
    assert msg.response_metadata["outcome"] == "success"
    assert script.count("grounded") == 1 and script.count("useful") == 1
    assert "answer_verified" not in events


async def test_an_answer_adding_a_word_of_its_own_is_left_to_the_model(castle_docs):
    """'by the Hanseatic League' is in no chunk: the evidence does not accept, the model's 'no' stands."""
    answers = iter(
        ["Castle Varen was built in 1412 by the Hanseatic League [1].", "Castle Varen was built in 1412 [1]."]
    )
    script = Script(
        relevance=castle_relevant,
        generate=lambda t: next(answers),
        grounded=lambda t: "no" if "Hanseatic" in t else "yes",
    )
    msg, events = await ask(script, "When was Castle Varen built?", castle_docs, **VERIFY)
    assert msg.response_metadata["outcome"] == "success"
    assert msg.content == "Castle Varen was built in 1412 [1]."
    assert script.count("grounded") == 1  # the first answer only; the second quotes its chunk
    assert events.count("answer_rejected") == 1 and events.count("answer_verified") == 1


async def test_a_quote_that_does_not_answer_is_left_to_the_model():
    """Every word is in the chunk, but not what the question asks: the model decides (here: not useful)."""
    docs = make_docs(
        {
            "castle": "Castle Varen stands on the river Mura. Castle Varen was built in 1412 by Duke Albrecht.",
        }
    )
    script = Script(
        generate=lambda t: "Castle Varen stands on the river Mura [1].",
        useful=lambda t: "no",
    )
    msg, events = await ask(script, "When was Castle Varen built?", docs, **VERIFY, max_generations=1, max_rephrases=0)
    assert msg.response_metadata["outcome"] == "failure"
    assert script.count("useful") == 1
    assert "answer_verified" not in events


def test_every_sentence_must_cite_a_chunk_holding_it():
    docs = [
        Document("Castle Varen was built in 1412.", metadata={"title": "castle"}),
        Document("The bridge at Mura was rebuilt in 1650.", metadata={"title": "bridge"}),
    ]
    assert quotes_its_sources("Castle Varen was built in 1412 [1].", docs, 1.0)
    assert not quotes_its_sources("Castle Varen was built in 1412 [2].", docs, 1.0)  # cites the wrong chunk
    assert not quotes_its_sources("Castle Varen was built in 1412.", docs, 1.0)  # cites nothing
    assert not quotes_its_sources("Castle Varen was built in 1413 [1].", docs, 1.0)  # a number of its own
    assert not quotes_its_sources("Castle Varen was built in 1412 [1]. It was rebuilt in 1650 [1].", docs, 1.0)
    assert quotes_its_sources("Castle Varen was built in 1412 [1]. The bridge was rebuilt in 1650 [2].", docs, 1.0)


async def test_the_answer_must_be_what_the_best_sentence_says():
    docs = [
        Document(
            "The Tidewater Festival is held every August in the harbour town of Port Ellis. "
            "It was founded in 1986 by the fiddler Colm Ashby.",
            metadata={"title": "Tidewater Festival"},
        )
    ]
    scorer = EvidenceScorer(EvidenceSettings())
    question = "Where is the Tidewater Festival held?"
    assert await evidence_accepts(question, "Port Ellis [1].", docs, scorer)
    assert not await evidence_accepts(question, "Colm Ashby [1].", docs, scorer)  # in the chunk, not the answer
    assert not await evidence_accepts(question, "It was founded in 1986 [1].", docs, scorer)


@pytest.mark.parametrize(
    ("chunk", "question", "accepted", "left_to_the_model"),
    [
        (  # every word is in the sentence, but not the 34 of "34 metres tall"
            (
                "Zephyr lighthouse",
                "Its granite tower is 34 metres tall and its light can be seen from 22 nautical miles away.",
            ),
            "How tall is the Zephyr lighthouse?",
            "Its granite tower is 34 metres tall [1].",
            "tall and its light can be seen from 22 nautical miles away [1].",
        ),
        (  # the sentence names a mountain; the second answer names none
            ("Kestrel Observatory", "Kestrel Observatory stands on Mount Arden at an altitude of 2,410 metres."),
            "On which mountain is Kestrel Observatory?",
            "Kestrel Observatory stands on Mount Arden [1].",
            "Kestrel Observatory stands at an altitude of 2,410 metres [1].",
        ),
    ],
    ids=["measure-number", "category-name"],
)
async def test_the_answer_must_keep_what_the_question_asks_for(chunk, question, accepted, left_to_the_model):
    title, text = chunk
    docs = [Document(text, metadata={"title": title})]
    scorer = EvidenceScorer(EvidenceSettings())
    assert await evidence_accepts(question, accepted, docs, scorer)
    assert not await evidence_accepts(question, left_to_the_model, docs, scorer)
