"""Property: whatever the model replies (verdicts, garbage, malformed tool calls, errors), with or without the
speculative draft, batch grading, knowledge refinement (by the evidence or by the model), a fallback source (empty or not), and
multi-hop (up to 3 searches, either profile), and whatever the question's budget, every run ends in a finalize node within the documented LLM-call bound (the budgeted one
when there is a call budget) and node bound, never with more than ``max_hops - 1`` follow-up searches, and a budget stop names a budget the question has really used up."""

from __future__ import annotations

import asyncio

import pytest
from helpers.documents import KeywordRetriever, make_docs
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage

from rags_expert import RagsExpert
from rags_expert.citations import cited_numbers
from rags_expert.rag.graph import max_node_steps
from rags_expert.testing import ScriptedChatModel


class RateLimitError(Exception):
    status_code = 429


class BadRequestError(Exception):
    status_code = 400


REPLIES = st.one_of(
    st.sampled_from(
        [
            "yes",
            "no",
            "Yes.",
            "NO",
            '{"relevant": true}',
            '{"grounded": false}',
            '{"useful": true}',
            '```json\n{"query": "x"}\n```',
            "score: 8/10",
            "",
            "I am not sure.",
            "The answer is [1].",
            "Answer without citations.",
            "[7] [1, 99]",
            '{"needed": [2]}',
            "[]",
            '{"follow_up": "castle builder"}',
            '{"follow_up": "none"}',
        ]
    ),
    st.text(max_size=40),
    st.builds(
        lambda a: AIMessage(
            content="", invalid_tool_calls=[{"name": "RelevanceGrade", "args": a, "id": "1", "error": "bad"}]
        ),
        st.text(max_size=20),
    ),
    st.builds(
        lambda b: AIMessage(
            content="", tool_calls=[{"name": "X", "args": {"relevant": b, "grounded": b, "useful": b}, "id": "1"}]
        ),
        st.booleans(),
    ),
    st.sampled_from([RateLimitError("429"), BadRequestError("400"), TimeoutError("slow"), ValueError("boom")]),
)


@pytest.mark.slow
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    replies=st.lists(REPLIES, max_size=60),
    top_k=st.integers(1, 4),
    max_rephrases=st.integers(0, 3),
    max_generations=st.integers(1, 3),
    max_retries=st.integers(0, 1),
    with_history=st.booleans(),
    default_relevant=st.booleans(),
    max_calls=st.none() | st.integers(1, 30),
    max_tokens=st.none() | st.integers(1, 4000),
    speculative=st.booleans(),
    batch=st.booleans(),
    fallback=st.sampled_from([None, "empty", "docs"]),
    refine=st.sampled_from(["off", "evidence", "llm"]),
    max_hops=st.integers(1, 3),
    small=st.booleans(),
)
def test_every_run_finalizes_within_the_llm_call_bound(
    replies,
    top_k,
    max_rephrases,
    max_generations,
    max_retries,
    with_history,
    default_relevant,
    max_calls,
    max_tokens,
    speculative,
    batch,
    fallback,
    refine,
    max_hops,
    small,
):
    queue = list(replies)

    def responder(text, kwargs):
        return queue.pop(0) if queue else "yes"

    model = ScriptedChatModel(responder=responder)
    docs = make_docs(
        {f"d{i}": f"The castle fact {i} comes from Mara Quill. It was built then. Nothing else." for i in range(6)}
    )
    second = (
        None
        if fallback is None
        else make_docs({f"f{i}": f"fallback fact {i}" for i in range(3 * (fallback == "docs"))})
    )
    settings_ = {
        "retrieval": {"top_k": top_k},
        "max_rephrases": max_rephrases,
        "max_generations": max_generations,
        "llm": {"max_retries": max_retries, "retry_base_delay": 0.0, "retry_max_delay": 0.0},
        "grading": {"default_relevant": default_relevant, "batch": batch},
        "speculative_draft": speculative,
        "budget": {"max_calls": max_calls, "max_tokens": max_tokens},
        "refinement": {"method": refine},
        "multihop": {"max_hops": max_hops},
        "evidence": {"profile": "small" if small else "standard", "use_embeddings": False},
    }

    async def go():
        agent = await RagsExpert(
            settings_,
            chat_model=model,
            retriever=KeywordRetriever(docs=docs, calls=[]),
            fallback_retriever=None if second is None else KeywordRetriever(docs=second, calls=[]),
        ).async_init()
        graph = agent.get_compiled_graph()
        messages = [HumanMessage("When was the castle built?")]
        if with_history:
            messages = [HumanMessage("Tell me about the castle."), AIMessage("It is old [1]."), *messages]
        last_node, n_relevant, consulted, steps = None, 0, False, []
        async for update in graph.astream(
            {"messages": messages}, {"configurable": {"thread_id": "p"}}, stream_mode="updates"
        ):
            last_node = next(iter(update))
            steps.append(last_node)
            consulted = consulted or last_node == "fallback_retrieve"
            if last_node == "grade_documents":  # the context the next answer is cited against
                n_relevant = len(update[last_node].get("relevant", []))
        state = await graph.aget_state({"configurable": {"thread_id": "p"}})
        return agent, last_node, state.values, n_relevant, consulted, steps

    agent, last_node, values, n_relevant, consulted, steps = asyncio.run(go())
    assert steps.count("hop_retrieve") <= max_hops - 1  # the hop cap
    event(f"hops: {steps.count('hop_retrieve')}")
    assert len(steps) <= max_node_steps(max_rephrases, max_generations, max_hops)
    assert not consulted or fallback is not None  # off unless there is a fallback source
    event(f"fallback source consulted: {consulted}")
    assert last_node in {"finalize_success", "finalize_failure"}
    final = values["messages"][-1]
    assert isinstance(final, AIMessage)
    assert final.response_metadata["outcome"] == ("success" if last_node == "finalize_success" else "failure")
    bound = agent.settings.budgeted_call_bound(with_history=with_history, fallback=fallback is not None)
    assert bound <= agent.llm_call_bound(with_history=with_history)
    assert values["llm_calls"] <= bound
    assert len(model.calls) <= bound * (1 + max_retries)
    if max_retries == 0:
        assert len(model.calls) == values["llm_calls"]  # the state's count is exact
    event(f"outcome: {final.response_metadata.get('reason', 'success')}")
    usage = final.response_metadata["usage"]
    assert usage["calls"] == values["llm_calls"] == sum(u["calls"] for u in usage["by_node"].values())
    assert usage["estimated"] == (usage["input_tokens"] + usage["output_tokens"] > 0)  # no usage fields: estimated
    if final.response_metadata.get("reason") == "budget_exceeded":
        spent = final.response_metadata["budget"]
        assert spent["used"] >= spent["limit"] == (max_calls if spent["name"] == "max_calls" else max_tokens)
        if spent["name"] == "max_tokens":
            assert spent["used"] == usage["input_tokens"] + usage["output_tokens"]
    # a partial answer was cited against at most len(docs) chunks; the accepted one against the last context
    assert {s["n"] for s in final.response_metadata["sources"]} <= set(cited_numbers(final.content, len(docs)))
    if final.response_metadata["outcome"] == "success":
        assert {s["n"] for s in final.response_metadata["sources"]} == set(cited_numbers(final.content, n_relevant))
