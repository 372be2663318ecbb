"""Usage per answer (calls and tokens per node, from the provider or estimated) and the per-question budget.

The provider's figures are checked with LangChain's real ``ChatOpenAI`` over HTTP to ``tests/helpers/openai_server.py``,
whose every reply carries a ``usage`` block (also streamed, when the request asks for it); the estimate with
the scripted model, which sends none.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import pytest
from helpers.documents import KeywordRetriever, make_docs
from helpers.openai_server import OpenAIServer, RecordedRequest, _as_reply, _usage, castle_script
from helpers.scripts import MODEL_CHECKS, Script, kind_of
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from rags_expert import RagsExpert
from rags_expert.cli.ask import exit_code
from rags_expert.llm.chat import build_chat_model
from rags_expert.llm.usage import CHARS_PER_TOKEN, RESET, add_usage, reply_tokens
from rags_expert.settings import RagsExpertSettings
from rags_expert.testing import ScriptedChatModel

QUESTION = "When was Castle Varen built?"
NODE_OF_KIND = {
    "relevance": "grade_documents",
    "grounded": "grade_generation",
    "useful": "grade_generation",
    "answer": "generate",
    "rephrase": "rephrase_query",
    "condense": "prepare",
    "hop": "grade_documents",  # the follow-up query is planned after grading (rags_expert.rag.retrieve.hops)
}


def castle_docs() -> list:
    return make_docs(
        {
            "castle": "Castle Varen was built in 1412 by Duke Albrecht on the river Mura.",
            "bridge": "The Mura bridge was completed in 1890 and rebuilt in 1951.",
            "cheese": "Mura valley cheese is aged for nine months in limestone cellars.",
            "duke": "Duke Albrecht ruled from 1398 to 1431 and founded the town of Varen.",
        }
    )


def relevant_if_1412(question: str, chunk: str) -> str:
    return "yes" if "1412" in chunk else "no"


async def scripted_agent(script: Any, **settings: Any) -> tuple[RagsExpert, ScriptedChatModel]:
    model = ScriptedChatModel(responder=script)
    base = {"llm": {"max_retries": 0}, **MODEL_CHECKS}  # the checks' calls are part of what is counted
    agent = await RagsExpert(
        {**base, **settings}, chat_model=model, retriever=KeywordRetriever(docs=castle_docs(), calls=[])
    ).async_init()
    return agent, model


async def ask(agent: RagsExpert, question: str = QUESTION, thread: str = "t", **kwargs: Any) -> AIMessage:
    out = await agent.get_compiled_graph().ainvoke(
        {"messages": [HumanMessage(question)]}, {"configurable": {"thread_id": thread}}, **kwargs
    )
    return out["messages"][-1]


def server_usage(requests: list[RecordedRequest]) -> dict[str, dict[str, int]]:
    """What the server reported per node: its ``usage`` block of every request, summed by the node that asked."""
    out: dict[str, dict[str, int]] = {}
    for r in requests:
        assert r.reply is not None
        figures = _usage(r.reply, r.body)
        entry = out.setdefault(NODE_OF_KIND[r.kind], {"calls": 0, "input_tokens": 0, "output_tokens": 0})
        entry["calls"] += 1
        entry["input_tokens"] += figures["prompt_tokens"]
        entry["output_tokens"] += figures["completion_tokens"]
    return out


def assert_consistent(meta: dict[str, Any]) -> None:
    """Totals are the sums over the nodes, and ``calls`` is the question's ``llm_calls``."""
    usage = meta["usage"]
    nodes = usage["by_node"].values()
    assert usage["calls"] == meta["llm_calls"] == sum(u["calls"] for u in nodes)
    assert usage["input_tokens"] == sum(u["input_tokens"] for u in nodes)
    assert usage["output_tokens"] == sum(u["output_tokens"] for u in nodes)
    assert usage["estimated"] == any(u["estimated"] for u in nodes)


# --- usage figures ------------------------------------------------------------------------------------


async def http_agent(server: OpenAIServer, **over: Any) -> RagsExpert:
    llm = {"base_url": server.base_url, "api_key": "sk-test", "max_retries": 0, **over.pop("llm", {})}
    settings = RagsExpertSettings(llm=llm, max_rephrases=1, max_generations=2, **{**MODEL_CHECKS, **over})
    agent = RagsExpert(
        settings, chat_model=build_chat_model(settings.llm), retriever=KeywordRetriever(docs=castle_docs())
    )
    return await agent.async_init()


async def test_usage_is_the_providers_per_node_over_real_http():
    with OpenAIServer(castle_script) as server:
        msg = await ask(await http_agent(server))
    meta = msg.response_metadata
    assert meta["outcome"] == "success"
    assert_consistent(meta)
    by_node = {node: {k: v for k, v in u.items() if k != "estimated"} for node, u in meta["usage"]["by_node"].items()}
    assert by_node == server_usage(server.requests)  # the four concurrent grades all counted
    assert set(by_node) == {"grade_documents", "generate", "grade_generation"}
    assert meta["usage"]["calls"] == len(server.requests) == 7
    assert meta["usage"]["estimated"] is False


async def test_a_follow_up_counts_its_condense_call_and_starts_a_new_record():
    with OpenAIServer(castle_script) as server:
        agent = await http_agent(server)
        first = await ask(agent, thread="f")
        server.reset()
        second = await ask(agent, "And who built it?", thread="f")  # history: the condense call in prepare
    assert first.response_metadata["usage"]["calls"] == 7
    meta = second.response_metadata
    assert_consistent(meta)
    assert meta["usage"]["by_node"]["prepare"]["calls"] == 1
    by_node = {node: {k: v for k, v in u.items() if k != "estimated"} for node, u in meta["usage"]["by_node"].items()}
    assert by_node == server_usage(server.requests)  # the first question's figures are gone


@pytest.mark.parametrize("stream_usage", [True, False])
async def test_streamed_calls_carry_usage_when_asked_else_are_estimated(stream_usage):
    with OpenAIServer(castle_script) as server:
        graph = (await http_agent(server, llm={"stream_usage": stream_usage})).get_compiled_graph()
        final = None
        async for mode, payload in graph.astream(
            {"messages": [("user", QUESTION)]}, {"configurable": {"thread_id": "s"}}, stream_mode=["messages", "values"]
        ):
            if mode == "values" and payload.get("messages"):
                final = payload["messages"][-1]
    assert all(r.body.get("stream") is True for r in server.requests)
    assert all(bool(r.body.get("stream_options")) is stream_usage for r in server.requests)
    meta = final.response_metadata
    assert_consistent(meta)
    assert meta["usage"]["estimated"] is not stream_usage
    if stream_usage:
        by_node = {n: {k: v for k, v in u.items() if k != "estimated"} for n, u in meta["usage"]["by_node"].items()}
        assert by_node == server_usage(server.requests)


async def test_without_provider_usage_the_tokens_are_estimated_and_marked():
    script = Script(relevance=relevant_if_1412, generate=lambda t: "Castle Varen was built in 1412 [1].")
    agent, model = await scripted_agent(script)
    meta = (await ask(agent)).response_metadata
    assert meta["outcome"] == "success"
    assert_consistent(meta)
    usage = meta["usage"]
    assert usage["estimated"] is True and all(u["estimated"] for u in usage["by_node"].values())
    assert usage["calls"] == len(model.calls) == 7
    # the answer's figures: its prompt and reply text at CHARS_PER_TOKEN characters a token
    generate = usage["by_node"]["generate"]
    assert generate["output_tokens"] == math.ceil(len("Castle Varen was built in 1412 [1].") / CHARS_PER_TOKEN)
    prompt = next(text for text, _ in model.calls if kind_of(text) == "generate")
    assert abs(generate["input_tokens"] - len(prompt) / CHARS_PER_TOKEN) <= 2  # the scripted model joins with \n\n


async def test_a_reply_with_usage_fields_is_not_estimated():
    def script(text: str, kwargs: dict[str, Any]) -> Any:
        reply = Script(relevance=relevant_if_1412, generate=lambda t: "Castle Varen was built in 1412 [1].")(
            text, kwargs
        )
        usage = {"input_tokens": 100, "output_tokens": 7, "total_tokens": 107}
        return AIMessage(reply, usage_metadata=usage) if kind_of(text) == "generate" else reply

    agent, _ = await scripted_agent(script)
    usage = (await ask(agent)).response_metadata["usage"]
    assert usage["by_node"]["generate"] == {"calls": 1, "input_tokens": 100, "output_tokens": 7, "estimated": False}
    assert usage["by_node"]["grade_documents"]["estimated"] is True and usage["estimated"] is True


def test_reply_tokens_reads_structured_output_raw_messages_and_estimates_the_rest():
    raw = AIMessage("", usage_metadata={"input_tokens": 12, "output_tokens": 3, "total_tokens": 15})
    assert reply_tokens({"raw": raw, "parsed": None}, []) == (12, 3, False)
    messages = [SystemMessage("a" * 8), HumanMessage("b" * 9)]
    assert reply_tokens(AIMessage("c" * 5), messages) == (5, 2, True)
    assert reply_tokens("plain", "x" * 40) == (10, 2, True)


def test_the_usage_reducer_adds_per_node_and_restarts_on_a_new_question():
    a = {"calls": 1, "input_tokens": 10, "output_tokens": 2, "estimated": False}
    b = {"calls": 2, "input_tokens": 5, "output_tokens": 1, "estimated": True}
    total = add_usage({}, {"generate": a})
    total = add_usage(total, {"generate": b, "reflect": a})
    assert total == {
        "generate": {"calls": 3, "input_tokens": 15, "output_tokens": 3, "estimated": True},
        "reflect": a,
    }
    assert add_usage(total, {RESET: True}) == {}
    assert add_usage(total, {RESET: True, "prepare": a}) == {"prepare": a}


# --- the budget --------------------------------------------------------------------------------------


async def test_a_call_budget_ends_the_run_in_an_honest_failure_naming_it():
    script = Script(relevance=relevant_if_1412, generate=lambda t: "Castle Varen was built in 1412 [1].")
    agent, model = await scripted_agent(script, budget={"max_calls": 5})
    msg = await ask(agent)
    meta = msg.response_metadata
    # 4 grades (4 < 5: go on), 1 answer: 5 calls, so the answer is never checked
    assert Counter(script.seen) == {"relevance": 4, "generate": 1}
    assert meta["outcome"] == "failure" and meta["reason"] == "budget_exceeded"
    assert "the LLM-call budget of 5 calls" in msg.content and QUESTION in msg.content
    assert meta["budget"] == {"name": "max_calls", "limit": 5, "used": 5}
    assert meta["llm_calls"] == len(model.calls) == 5
    assert_consistent(meta)
    assert exit_code(meta) == 2  # not an honest "not in the knowledge base"


async def test_a_node_is_not_split_so_a_budget_may_be_overshot_by_one_nodes_calls():
    script = Script(relevance=relevant_if_1412)
    agent, model = await scripted_agent(script, budget={"max_calls": 2})
    meta = (await ask(agent)).response_metadata
    assert meta["reason"] == "budget_exceeded" and meta["budget"]["used"] == len(model.calls) == 4
    assert len(model.calls) <= agent.settings.budgeted_call_bound(with_history=False)


async def test_a_token_budget_counts_the_providers_tokens():
    with OpenAIServer(castle_script) as server:
        agent = await http_agent(server, budget={"max_tokens": 30})
        msg = await ask(agent)
    meta = msg.response_metadata
    # each grade is 10 prompt tokens: after the 4 concurrent grades the budget is used up, nothing more is asked
    assert [r.kind for r in server.requests] == ["relevance"] * 4
    assert meta["reason"] == "budget_exceeded" and meta["budget"]["name"] == "max_tokens"
    used = sum(_usage(r.reply, r.body)["total_tokens"] for r in server.requests if r.reply)
    assert meta["budget"] == {"name": "max_tokens", "limit": 30, "used": used}
    assert "the token budget of 30 tokens" in msg.content
    assert meta["usage"]["input_tokens"] + meta["usage"]["output_tokens"] == used


@pytest.mark.parametrize(
    "reported",
    [
        {"prompt_tokens": -1_300_000, "completion_tokens": 0, "total_tokens": -1_300_000},
        {"prompt_tokens": 10, "completion_tokens": -1_300_000, "total_tokens": -1_299_990},
        {"prompt_tokens": 10**40, "completion_tokens": 1, "total_tokens": 10**40},
    ],
    ids=["negative-input", "negative-output", "absurd"],
)
async def test_a_provider_reporting_impossible_token_counts_cannot_slip_past_the_token_budget(reported):
    def lying(body: dict[str, Any]) -> Any:
        reply = _as_reply(castle_script(body), body)
        reply.usage = reported
        return reply

    with OpenAIServer(lying) as server:
        agent = await http_agent(server, budget={"max_tokens": 30})
        msg = await ask(agent)
    meta = msg.response_metadata
    # the impossible figures are replaced by the estimate: the four grades' prompts use up the budget
    assert [r.kind for r in server.requests] == ["relevance"] * 4
    assert meta["reason"] == "budget_exceeded" and meta["budget"]["name"] == "max_tokens"
    assert meta["usage"]["estimated"] is True
    assert meta["budget"]["used"] == meta["usage"]["input_tokens"] + meta["usage"]["output_tokens"] > 30
    assert 0 < meta["usage"]["input_tokens"] < 10**8
    assert_consistent(meta)


async def test_an_answer_accepted_on_the_last_call_of_the_budget_still_succeeds():
    script = Script(relevance=relevant_if_1412, generate=lambda t: "Castle Varen was built in 1412 [1].")
    agent, model = await scripted_agent(script, budget={"max_calls": 7})
    meta = (await ask(agent)).response_metadata
    assert meta["outcome"] == "success" and meta["llm_calls"] == len(model.calls) == 7


async def test_a_budget_not_reached_changes_nothing():
    script = Script(relevance=relevant_if_1412, grounded=lambda t: "no")  # every answer rejected: the full run
    free_agent, free_model = await scripted_agent(script)
    free = await ask(free_agent)
    script.seen.clear()
    agent, model = await scripted_agent(script, budget={"max_calls": 1000, "max_tokens": 10**9})
    msg = await ask(agent)
    assert msg.content == free.content and len(model.calls) == len(free_model.calls)
    timed = {"timings"}  # seconds differ from run to run; the nodes that ran do not
    assert {k: v for k, v in msg.response_metadata.items() if k not in timed} == {
        k: v for k, v in free.response_metadata.items() if k not in timed
    }  # the same calls, the same (estimated) tokens
    assert msg.response_metadata["timings"]["by_node"].keys() == free.response_metadata["timings"]["by_node"].keys()
    assert msg.response_metadata["reason"] == "not_grounded"


async def test_a_budget_stop_still_quotes_the_sources_where_the_extractive_fallback_is_on():
    script = Script(relevance=relevant_if_1412, grounded=lambda t: "no")  # the answer is rejected
    settings = {"evidence": {"extractive_fallback": True, "use_embeddings": False}, "budget": {"max_calls": 7}}
    agent, model = await scripted_agent(script, **settings)
    msg = await ask(agent)
    meta = msg.response_metadata
    assert meta["outcome"] == "success" and meta["answer_kind"] == "extractive"  # no LLM call needed
    assert "1412" in msg.content and len(model.calls) == 7


async def test_a_thread_gets_a_fresh_budget_for_each_question():
    script = Script(relevance=relevant_if_1412, generate=lambda t: "Castle Varen was built in 1412 [1].")
    agent, model = await scripted_agent(script, budget={"max_calls": 7}, condense_followups=False)
    assert (await ask(agent, thread="b")).response_metadata["outcome"] == "success"
    second = await ask(agent, "When was Castle Varen built, again?", thread="b")
    assert second.response_metadata["outcome"] == "success"
    assert second.response_metadata["usage"]["calls"] == 7 and len(model.calls) == 14


def test_streamed_usage_is_asked_of_openai_by_default_and_of_other_endpoints_when_set(monkeypatch):
    from rags_expert.settings import LLMSettings

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert build_chat_model(LLMSettings(api_key="sk-test")).stream_usage is True
    assert build_chat_model(LLMSettings(api_key="sk-test", base_url="http://127.0.0.1:1/v1")).stream_usage is False
    local = LLMSettings(api_key="sk-test", base_url="http://127.0.0.1:1/v1", stream_usage=True)
    assert build_chat_model(local).stream_usage is True
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    assert build_chat_model(LLMSettings(api_key="sk-test")).stream_usage is False
