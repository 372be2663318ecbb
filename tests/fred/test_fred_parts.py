"""The host-neutral parts of the Fred v2 integration, tested without Fred (any Python).

The pod itself runs in tests/fred (Python 3.12, the 'fred' extra): tuning fields mapped onto settings and
prompts, progress words, a graph compiled to run inside another graph's node, the KG agent rebound per turn.
"""

from __future__ import annotations

import pytest
from helpers.documents import KeywordRetriever
from helpers.scripts import Script
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph

from rags_expert.fred.tuning import (
    KG_SETTINGS,
    RAG_SETTINGS,
    TuningError,
    apply_tuning,
    kg_prompt_keys,
    rag_prompt_keys,
    tunables,
)
from rags_expert.fred.turn import fault_text
from rags_expert.hosts.progress import KG_PROGRESS, RAG_PROGRESS
from rags_expert.prompts import PromptError, PromptStore
from rags_expert.rag import RagsExpert
from rags_expert.settings import KGExpertSettings, RagsExpertSettings
from rags_expert.testing import ScriptedChatModel


def rag_fields(settings: RagsExpertSettings | None = None):
    return tunables(settings or RagsExpertSettings(), rag_prompt_keys(PromptStore()), RAG_SETTINGS)


def test_setting_fields_are_described_by_the_settings_model():
    specs = {f.key: f.spec for f in rag_fields(RagsExpertSettings(retrieval={"top_k": 6}))}
    assert specs["settings.top_k"]["type"] == "integer"
    assert specs["settings.top_k"]["default"] == 6  # the agent's configured value, not the package default
    assert (specs["settings.top_k"]["min"], specs["settings.top_k"]["max"]) == (1, 100)
    assert "retrieval.top_k" in specs["settings.top_k"]["description"]
    assert specs["settings.profile"]["type"] == "select" and set(specs["settings.profile"]["enum"]) == {
        "compact",
        "standard",
        "small",
    }
    assert specs["settings.lessons"]["type"] == "boolean"
    assert specs["prompts.generate"] == {
        "type": "prompt",
        "title": "Prompt: generate",
        "default": PromptStore().get("generate"),
        "description": "The generate prompt template ({name} fields as in the packaged file).",
        "ui": {"group": "Prompts", "textarea": True, "multiline": True, "max_lines": 20, "advanced": True},
    }


def test_each_agent_offers_the_prompts_it_renders():
    store = PromptStore()
    rag, kg = set(rag_prompt_keys(store)), set(kg_prompt_keys(store))
    assert "generate" in rag and "grade_document" in rag and not any(k.startswith("kg_") for k in rag)
    assert {"kg_draft", "kg_score", "grader_system", "condense_question"} <= kg and "generate" not in kg


def test_tuning_values_become_settings_and_prompt_overrides():
    base = RagsExpertSettings(max_rephrases=1)
    custom = "Be brief.\n" + PromptStore().get("generate")
    tuned = apply_tuning(
        base,
        {"settings.top_k": 2, "settings.profile": "small", "prompts.generate": custom, "theirs.other": 1},
        rag_fields(base),
    )
    assert tuned.retrieval.top_k == 2 and tuned.evidence.profile == "small" and tuned.max_rephrases == 1
    assert tuned.prompts == {"generate": custom}
    assert base.retrieval.top_k == 4 and base.prompts == {}  # the agent's own settings are untouched


def test_blank_or_unchanged_tuning_changes_nothing():
    base = RagsExpertSettings()
    values = {"prompts.generate": PromptStore().get("generate"), "prompts.rephrase_query": "  ", "settings.top_k": None}
    assert apply_tuning(base, values, rag_fields(base)) is base


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"settings.top_k": -3}, "top_k=-3 is invalid: must be ≥ 1 (retrieval.top_k)"),
        ({"settings.top_k": 500}, "top_k=500 is invalid: must be ≤ 100 (retrieval.top_k)"),
        (
            {"settings.profile": "huge"},
            "profile=huge is invalid: must be one of 'standard', 'compact' or 'small' (evidence.profile)",
        ),
        (
            {"settings.max_rephrases": "many", "settings.top_k": 0},
            "top_k=0 is invalid: must be ≥ 1 (retrieval.top_k); max_rephrases=many is invalid: must be a whole number",
        ),
    ],
)
def test_an_invalid_tuning_value_names_the_field_the_value_and_the_bound(values, message):
    base = RagsExpertSettings()
    with pytest.raises(TuningError) as info:
        apply_tuning(base, values, rag_fields(base))
    assert str(info.value) == message
    # what the Fred agent answers with it (rags_expert.fred.agents: the turn's honest failure)
    assert fault_text(info.value, base.secrets()) == f"I could not answer: the agent failed (TuningError: {message})."


def test_an_invalid_kg_tuning_value_names_the_kg_field():
    base = KGExpertSettings()
    fields = tunables(base, kg_prompt_keys(PromptStore()), KG_SETTINGS)
    with pytest.raises(TuningError, match=r"^max_steps=0 is invalid: must be ≥ 1 \(kg.max_steps\)$"):
        apply_tuning(base, {"settings.max_steps": 0}, fields)


async def test_a_tuned_prompt_is_validated_when_the_agent_starts():
    base = RagsExpertSettings(lessons={"enabled": False})
    tuned = apply_tuning(base, {"prompts.generate": "Answer {nope}"}, rag_fields(base))
    agent = RagsExpert(tuned, chat_model=ScriptedChatModel(responses=[]), retriever=KeywordRetriever(docs=[]))
    with pytest.raises(PromptError, match=r"prompt 'generate'.*\{nope\}"):
        await agent.async_init()


def test_kg_fields_map_onto_kg_settings():
    base = KGExpertSettings()
    fields = tunables(base, kg_prompt_keys(PromptStore()), KG_SETTINGS)
    tuned = apply_tuning(base, {"settings.max_steps": 2, "settings.score_threshold": 6.5}, fields)
    assert (tuned.kg.max_steps, tuned.kg.score_threshold) == (2, 6.5)


def test_progress_words_for_both_graphs():
    assert RAG_PROGRESS.line({"name": "retrieve"}) == "searching the knowledge base"
    assert RAG_PROGRESS.line({"name": "grade_documents", "result": [("graded", 3), ("new_relevant", 2)]}) == (
        "2 new relevant chunk(s)"
    )
    rejected = {"name": "grade_generation", "result": {"grounded": False, "feedback": "not in the chunks"}}
    assert RAG_PROGRESS.line(rejected) == "draft rejected: not in the chunks"
    assert RAG_PROGRESS.line({"name": "refine_knowledge"}) == "keeping the relevant parts of the chunks"
    refined = {"name": "refine_knowledge", "result": {"strips": {"a": "x", "b": "y"}, "llm_calls": 0}}
    assert RAG_PROGRESS.line(refined) == "2 chunk(s) cut to their relevant parts"
    assert RAG_PROGRESS.line({"name": "prepare"}) is None
    assert KG_PROGRESS.line({"name": "draft"}) == "writing a Cypher query"
    ran = {"name": "execute_tool", "result": {"attempts": [{"rows": [{"a": 1}, {"a": 2}], "error": None}]}}
    assert KG_PROGRESS.line(ran) == "2 row(s)"
    failed = {"name": "execute_tool", "result": {"attempts": [{"rows": [], "error": "SyntaxError: bad\nmore"}]}}
    assert KG_PROGRESS.line(failed) == "the query failed: SyntaxError: bad"


async def test_a_standalone_graph_stays_out_of_the_outer_graphs_checkpoints(castle_docs):
    model = ScriptedChatModel(responder=Script(generate=lambda text: "Castle Varen was built in 1412 [1]."))
    agent = await RagsExpert(
        {"lessons": {"enabled": False}}, chat_model=model, retriever=KeywordRetriever(docs=castle_docs)
    ).async_init()
    inner = agent.get_standalone_graph()
    assert inner is agent.get_standalone_graph()  # compiled once

    async def host_node(state: MessagesState) -> dict:
        out = await inner.ainvoke({"messages": state["messages"]})
        return {"messages": [out["messages"][-1]]}

    saver = InMemorySaver()
    outer = StateGraph(MessagesState).add_node("host", host_node)
    outer = outer.add_edge(START, "host").add_edge("host", END).compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    out = await outer.ainvoke({"messages": [HumanMessage("When was Castle Varen built?")]}, config)
    assert out["messages"][-1].content == "Castle Varen was built in 1412 [1]."
    namespaces = {c.config["configurable"].get("checkpoint_ns", "") for c in saver.list(None)}
    assert namespaces == {""}  # only the host's own checkpoints: none of our graph's working state


def test_standalone_needs_async_init():
    from rags_expert.agentflow import NotInitializedError

    with pytest.raises(NotInitializedError):
        RagsExpert(
            chat_model=ScriptedChatModel(responses=[]), retriever=KeywordRetriever(docs=[])
        ).get_standalone_graph()
