"""LangGraph idioms of the RAG graph, met through ``ainvoke``: per-request options as the run's
context (or ``configurable``) validated once per question, ``llm_calls`` counted by a reducer, and
the conversation as the only output."""

from __future__ import annotations

from helpers.documents import KeywordRetriever
from helpers.scripts import Script
from langchain_core.messages import HumanMessage
from langgraph.graph import START, StateGraph

from rags_expert import RagsExpert
from rags_expert.rag import nodes
from rags_expert.rag.options import RequestContext, RequestOptions
from rags_expert.rag.state import RagState, new_count
from rags_expert.testing import ScriptedChatModel

QUESTION = "When was Castle Varen built?"


def castle_relevant(question: str, chunk: str) -> str:
    return "yes" if "1412" in chunk else "no"


async def _agent(script: Script, docs, **settings) -> tuple[RagsExpert, ScriptedChatModel, KeywordRetriever]:
    model = ScriptedChatModel(responder=script)
    retriever = KeywordRetriever(docs=docs, calls=[])
    agent = await RagsExpert(
        {"llm": {"max_retries": 0}, **settings}, chat_model=model, retriever=retriever
    ).async_init()
    return agent, model, retriever


async def test_options_passed_as_context_reach_the_retriever(castle_docs):
    agent, _, retriever = await _agent(
        Script(relevance=castle_relevant, generate=lambda t: "In 1412 [1]."), castle_docs
    )
    out = await agent.get_compiled_graph().ainvoke(
        {"messages": [HumanMessage(QUESTION)]},
        {"configurable": {"thread_id": "c", "top_k": 1}},
        context={"top_k": "2", "library_tags": "beta"},
    )
    # the context wins over configurable; top_k coerced and capped, one tag accepted as a string
    assert (retriever.calls[0]["top_k"], retriever.calls[0]["library_tags"]) == (2, ["beta"])
    assert out["messages"][-1].response_metadata["reason"] == "no_relevant_documents"  # no chunk is tagged beta


async def test_a_context_object_is_accepted(castle_docs):
    agent, _, retriever = await _agent(
        Script(relevance=castle_relevant, generate=lambda t: "In 1412 [1]."), castle_docs
    )
    await agent.get_compiled_graph().ainvoke(
        {"messages": [HumanMessage(QUESTION)]},
        {"configurable": {"thread_id": "o"}},
        context=RequestOptions(top_k=3, document_uids=["d1"]),
    )
    assert (retriever.calls[0]["top_k"], retriever.calls[0]["document_uids"]) == (3, ["d1"])


async def test_an_invalid_context_option_is_an_honest_failure_before_any_call(castle_docs):
    agent, model, retriever = await _agent(Script(), castle_docs)
    out = await agent.get_compiled_graph().ainvoke(
        {"messages": [HumanMessage(QUESTION)]},
        {"configurable": {"thread_id": "bad"}},
        context={"top_k": 0},
    )
    msg = out["messages"][-1]
    assert (msg.response_metadata["outcome"], msg.response_metadata["reason"]) == ("failure", "invalid_request")
    assert "context.top_k" in msg.content and model.calls == [] and retriever.calls == []


async def test_options_are_validated_once_per_question_not_per_round(castle_docs, monkeypatch):
    reads = []
    real = nodes.read_request
    monkeypatch.setattr(nodes, "read_request", lambda context, config: reads.append(1) or real(context, config))
    script = Script(relevance=lambda q, c: "no", rephrase=lambda t: '{"query": "castle founding year"}')
    agent, _, retriever = await _agent(script, castle_docs, max_rephrases=2)
    out = await agent.get_compiled_graph().ainvoke(
        {"messages": [HumanMessage(QUESTION)]}, {"configurable": {"thread_id": "once", "top_k": 2}}
    )
    assert out["messages"][-1].response_metadata["reason"] == "no_relevant_documents"
    assert len(retriever.calls) == 3 and all(c["top_k"] == 2 for c in retriever.calls)
    assert len(reads) == 1


async def test_each_question_counts_its_own_calls_and_hosts_get_only_the_conversation(castle_docs):
    script = Script(
        relevance=castle_relevant,
        generate=lambda t: "In 1412 [1].",
        condense=lambda t: '{"question": "When was Castle Varen built?"}',
    )
    agent, model, _ = await _agent(script, castle_docs)
    graph, config = agent.get_compiled_graph(), {"configurable": {"thread_id": "two"}}
    first = await graph.ainvoke({"messages": [HumanMessage(QUESTION)]}, config)
    made = len(model.calls)
    second = await graph.ainvoke({"messages": [HumanMessage("And when exactly?")]}, config)
    assert first["messages"][-1].response_metadata["llm_calls"] == made
    assert second["messages"][-1].response_metadata["llm_calls"] == len(model.calls) - made  # condense included
    assert set(first) == set(second) == {"messages"} and len(second["messages"]) == 4


async def _count_after(*writes: object) -> int:
    """``llm_calls`` of a RAG state starting at 5 after nodes that write ``writes``, one after the other."""
    builder = StateGraph(RagState)
    previous = START
    for n, write in enumerate(writes):
        builder.add_node(f"node{n}", lambda state, write=write: {"llm_calls": write})
        builder.add_edge(previous, f"node{n}")
        previous = f"node{n}"
    return int((await builder.compile().ainvoke({"messages": [], "llm_calls": 5}))["llm_calls"])


async def test_the_call_counter_adds_and_restarts():
    """The ``llm_calls`` channel adds the calls nodes report; a ``new_count`` write restarts it."""
    assert await _count_after(2) == 7
    assert await _count_after(2, new_count()) == 0
    assert await _count_after(2, new_count(1), 3) == 4


def test_the_context_schema_names_every_option():
    declared = set(RequestContext.__annotations__)
    assert declared == set(RequestOptions.model_fields)


async def test_a_host_retriever_gets_only_the_options_it_declares(castle_docs):
    class TopKOnly(KeywordRetriever):
        def _get_relevant_documents(self, query, *, run_manager, top_k=None):
            return super()._get_relevant_documents(query, run_manager=run_manager, top_k=top_k)

    model = ScriptedChatModel(responder=Script(relevance=castle_relevant, generate=lambda t: "In 1412 [1]."))
    retriever = TopKOnly(docs=castle_docs, calls=[])
    agent = await RagsExpert({"llm": {"max_retries": 0}}, chat_model=model, retriever=retriever).async_init()
    out = await agent.get_compiled_graph().ainvoke(
        {"messages": [HumanMessage(QUESTION)]},
        {"configurable": {"thread_id": "h"}},
        context={"top_k": 2, "document_uids": ["d1"], "search_policy": "strict"},
    )
    assert retriever.calls == [{"query": QUESTION, "top_k": 2, "library_tags": None}]
    assert out["messages"][-1].response_metadata["outcome"] == "success"
