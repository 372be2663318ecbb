"""The fallback source (CRAG "incorrect"): searched once when nothing relevant was found, before giving up."""

from __future__ import annotations

from helpers.documents import KeywordRetriever, make_docs
from helpers.scripts import Script
from langchain_core.messages import HumanMessage

from rags_expert import RagsExpert
from rags_expert.rag.graph import max_node_steps
from rags_expert.settings import RagsExpertSettings
from rags_expert.testing import ScriptedChatModel

PRIMARY = make_docs(
    {
        "bridge": "The Mura bridge was completed in 1890 and rebuilt in 1951.",
        "cheese": "Mura valley cheese is aged for nine months in limestone cellars.",
    }
)
FALLBACK = make_docs({"lighthouse": "The Oskar lighthouse was lit for the first time in 1874."})
QUESTION = "When was the Oskar lighthouse first lit?"


def lighthouse_relevant(question: str, chunk: str) -> str:
    return "yes" if "lighthouse" in chunk else "no"


async def make_agent(script: Script, primary, second_docs, **settings):
    model = ScriptedChatModel(responder=script)
    retriever = KeywordRetriever(docs=primary, calls=[])
    second = KeywordRetriever(docs=second_docs, calls=[]) if second_docs is not None else None
    base = {"llm": {"max_retries": 0}, "max_rephrases": 1, "retrieval": {"top_k": 3}}
    agent = await RagsExpert(
        {**base, **settings}, chat_model=model, retriever=retriever, fallback_retriever=second
    ).async_init()
    return agent, model, retriever, second


async def ask(agent: RagsExpert, question: str = QUESTION, events: list | None = None, **configurable):
    config = {"configurable": {"thread_id": "t", **configurable}}
    out = None
    async for mode, chunk in agent.get_compiled_graph().astream(
        {"messages": [HumanMessage(question)]}, config, stream_mode=["custom", "values"]
    ):
        if mode == "custom" and events is not None:
            events.append(chunk)
        elif mode == "values":
            out = chunk
    assert out is not None
    return out["messages"][-1]


async def test_empty_primary_then_fallback_answers_with_its_origin():
    script = Script(relevance=lighthouse_relevant, generate=lambda t: "It was first lit in 1874 [1].")
    agent, model, primary, fallback = await make_agent(script, PRIMARY, FALLBACK)
    events: list[dict] = []
    msg = await ask(agent, events=events)
    meta = msg.response_metadata
    assert meta["outcome"] == "success" and msg.content == "It was first lit in 1874 [1]."
    assert [s["origin"] for s in meta["sources"]] == ["fallback"]
    assert "1874" in meta["sources"][0]["content"]
    assert len(primary.calls) == 2  # the question and one rephrasing (R = 1)
    assert [c["query"] for c in fallback.calls] == [QUESTION]  # once, with the question
    assert fallback.calls[0]["top_k"] == 3 and fallback.calls[0]["library_tags"] is None
    assert script.count("rephrase") == 1 and script.count("generate") == 1
    assert [e for e in events if e["event"] == "fallback_consulted"] == [{"event": "fallback_consulted", "chunks": 1}]
    # 2 primary chunks graded once (the rephrased search returns them again), 1 fallback chunk, 1 rephrasing,
    # 1 answer; it quotes the fallback chunk, so the evidence checks it (evidence.verify_answers) without a call
    assert "answer_verified" in [e["event"] for e in events]
    assert meta["llm_calls"] == len(model.calls) == 2 + 1 + 1 + 1
    assert meta["llm_calls"] <= agent.llm_call_bound(with_history=False)


async def test_both_empty_is_an_honest_not_found_after_one_fallback_search():
    script = Script(relevance=lambda q, c: "no")
    other = make_docs({"tide": "High tide in the harbour comes twice a day."})
    agent, model, primary, fallback = await make_agent(script, PRIMARY, other)
    msg = await ask(agent)
    meta = msg.response_metadata
    assert meta["outcome"] == "failure" and meta["reason"] == "no_relevant_documents"
    assert meta["sources"] == []
    assert len(fallback.calls) == 1 and len(primary.calls) == 2
    assert script.count("generate") == 0
    assert meta["llm_calls"] == len(model.calls) == 2 + 1 + 1  # primary grades, rephrasing, fallback grade
    assert meta["llm_calls"] <= agent.llm_call_bound(with_history=False)


async def test_an_empty_fallback_source_ends_in_the_honest_failure():
    agent, _, _, fallback = await make_agent(Script(relevance=lambda q, c: "no"), PRIMARY, [])
    msg = await ask(agent)
    assert msg.response_metadata["reason"] == "no_relevant_documents" and len(fallback.calls) == 1


async def test_off_by_default():
    settings = RagsExpertSettings()
    assert settings.fallback.collection is None
    assert (
        settings.llm_call_bound(with_history=False, fallback=True)
        == settings.llm_call_bound(with_history=False) + settings.retrieval.top_k
    )
    agent, _, primary, _ = await make_agent(Script(relevance=lambda q, c: "no"), PRIMARY, None)
    assert agent.fallback_retriever is None
    msg = await ask(agent)
    assert msg.response_metadata["reason"] == "no_relevant_documents" and len(primary.calls) == 2
    assert agent.llm_call_bound() == agent.settings.llm_call_bound()


async def test_not_consulted_when_the_primary_finds_something():
    script = Script(relevance=lambda q, c: "yes" if "bridge" in c else "no", generate=lambda t: "In 1890 [1].")
    agent, _, _, fallback = await make_agent(script, PRIMARY, FALLBACK)
    msg = await ask(agent, "When was the Mura bridge completed?")
    assert msg.response_metadata["outcome"] == "success"
    assert [s["origin"] for s in msg.response_metadata["sources"]] == ["primary"]
    assert fallback.calls == []


async def test_request_filters_reach_the_fallback_only_when_configured():
    tagged = make_docs({"lighthouse": FALLBACK[0].page_content}, tags=["coast"])
    script = Script(relevance=lighthouse_relevant)
    agent, _, _, fallback = await make_agent(script, PRIMARY, tagged)
    await ask(agent, library_tags=["inland"])
    assert fallback.calls[0]["library_tags"] is None
    agent, _, _, fallback = await make_agent(script, PRIMARY, tagged, fallback={"request_filters": True})
    await ask(agent, library_tags=["inland"])
    assert fallback.calls[0]["library_tags"] == ["inland"]


async def test_a_fallback_fault_ends_the_run_as_a_retrieval_error():
    class Broken(KeywordRetriever):
        def _get_relevant_documents(self, query, *, run_manager, **kwargs):
            raise ConnectionError("fallback service down")

    model = ScriptedChatModel(responder=Script(relevance=lambda q, c: "no"))
    agent = await RagsExpert(
        {"llm": {"max_retries": 0}, "max_rephrases": 0},
        chat_model=model,
        retriever=KeywordRetriever(docs=PRIMARY, calls=[]),
        fallback_retriever=Broken(docs=[], calls=[]),
    ).async_init()
    msg = await ask(agent)
    assert msg.response_metadata["reason"] == "retrieval_error"
    assert "fallback service down" in msg.response_metadata["error"]


async def test_the_fallback_round_writes_no_speculative_draft():
    script = Script(relevance=lighthouse_relevant, generate=lambda t: "It was first lit in 1874 [1].")
    agent, model, _, fallback = await make_agent(script, PRIMARY, FALLBACK, max_rephrases=0, speculative_draft=True)
    msg = await ask(agent)
    assert msg.response_metadata["outcome"] == "success" and len(fallback.calls) == 1
    # the first retrieval drafts (and discards) one answer; the fallback round only grades, then generates
    assert script.count("generate") == 2
    assert msg.response_metadata["llm_calls"] <= agent.llm_call_bound(with_history=False)


def test_node_bound_counts_the_fallback_round():
    # prepare, one retrieve/grade round, no rephrase, the fallback round, refine/generate/grade/reflect, 4 more
    # (the budget stop, the extractive fallback, the confirmation, one finalize)
    assert max_node_steps(0, 1) == 1 + 2 + 0 + 2 + 4 + 4
