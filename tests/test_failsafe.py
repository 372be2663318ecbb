"""A RAG node never raises (rag.failsafe) and reads its working state from one table of defaults (rag.state)."""

from __future__ import annotations

import logging
from typing import Any, get_type_hints

import pytest
from helpers.documents import KeywordRetriever
from helpers.scripts import Script
from langchain_core.messages import HumanMessage

from rags_expert import RagsExpert
from rags_expert.failsafe import fails_as
from rags_expert.outcomes import FailureReason
from rags_expert.rag.state import DEFAULTS, PER_RUN, RagState, fresh_question, value
from rags_expert.settings import RagsExpertSettings
from rags_expert.testing import ScriptedChatModel

SECRET = "sk-failsafe-secret-123456"


async def _ask(script: Script, retriever: KeywordRetriever, **settings: Any):
    model = ScriptedChatModel(responder=script)
    agent = await RagsExpert(
        {"llm": {"max_retries": 0}, **settings}, chat_model=model, retriever=retriever
    ).async_init()
    out = await agent.get_compiled_graph().ainvoke(
        {"messages": [HumanMessage("When was Castle Varen built?")]}, {"configurable": {"thread_id": "f"}}
    )
    return out["messages"][-1], model


async def test_a_failed_rephrase_is_counted_and_ends_the_run_honestly(castle_docs):
    script = Script(relevance=lambda q, c: "no", rephrase=lambda text: ValueError("the endpoint refused"))
    msg, model = await _ask(script, KeywordRetriever(docs=castle_docs, calls=[]))
    meta = msg.response_metadata
    assert meta["outcome"] == "failure" and meta["reason"] == "llm_error" and meta["error_class"] == "ValueError"
    assert script.count("rephrase") == 1
    assert meta["llm_calls"] == len(model.calls)  # the failed rephrase is one of them
    assert meta["usage"]["by_node"]["rephrase_query"]["calls"] == 1


async def test_a_failed_answer_call_is_counted_and_ends_the_run_honestly(castle_docs):
    script = Script(generate=lambda text: ValueError("no answer today"))
    msg, model = await _ask(script, KeywordRetriever(docs=castle_docs, calls=[]))
    meta = msg.response_metadata
    assert meta["outcome"] == "failure" and meta["reason"] == "llm_error" and meta["error_class"] == "ValueError"
    assert meta["llm_calls"] == len(model.calls) and meta["usage"]["by_node"]["generate"]["calls"] == 1


async def test_a_retriever_fault_is_logged_and_reported_without_its_secret(caplog, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)

    class Leaky(KeywordRetriever):
        def _get_relevant_documents(self, query, *, run_manager, **kwargs):
            raise ConnectionError(f"http://admin:{SECRET}@qdrant:6333 refused (api-key {SECRET})")

    with caplog.at_level(logging.ERROR, logger="rags_expert"):
        msg, _ = await _ask(Script(), Leaky(docs=[], calls=[]))
    assert msg.response_metadata["reason"] == "retrieval_error"
    assert msg.response_metadata["error_class"] == "ConnectionError"
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["retrieval failed"]
    assert SECRET not in caplog.text and SECRET not in msg.content and SECRET not in str(msg.response_metadata)


class _Node:
    """A node owner as the graph's: it has ``redacted_error``."""

    def redacted_error(self, exc: BaseException) -> str:
        return f"{type(exc).__name__}: {exc}"

    @fails_as(
        FailureReason.LLM_ERROR,
        catch=(LookupError,),
        charge=lambda s: {"tries": value(s, "rephrases") + 1},
        reset={"x": 0},
    )
    async def node(self, state: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
        if isinstance(fault := config.get("fault"), BaseException):
            raise fault
        return {"x": 1}


async def test_the_wrapper_charges_both_paths_and_resets_only_on_a_fault():
    owner, state = _Node(), {"rephrases": 2}
    assert await owner.node(state, {}) == {"tries": 3, "x": 1}
    assert await owner.node(state, {"fault": KeyError("k")}) == {
        "tries": 3,
        "x": 0,
        "error": "KeyError: 'k'",
        "failure_reason": "llm_error",
    }


async def test_a_fault_the_wrapper_does_not_catch_reaches_the_outer_one():
    with pytest.raises(ValueError, match="other"):
        await _Node().node({}, {"fault": ValueError("other")})


def test_every_state_key_has_one_default_and_a_fresh_question_resets_all_but_the_run_counts():
    keys = set(get_type_hints(RagState)) - {"messages"}
    assert set(DEFAULTS) - {"messages"} == keys
    fresh = fresh_question(RagsExpertSettings())
    assert set(fresh) == keys - set(PER_RUN)
    assert fresh["max_generations"] >= 1  # from the settings, not the table's 0


def test_a_missing_key_reads_as_a_fresh_copy_of_its_default():
    relevant = value({}, "relevant")
    relevant.append("chunk")
    assert value({}, "relevant") == [] and value({"relevant": ["a"]}, "relevant") == ["a"]
    assert value({"error": ""}, "error") == "" and value({}, "max_calls") is None
