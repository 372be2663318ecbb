"""The reflexion loop's routes on a real FalkorDB with a scripted model."""

from __future__ import annotations

import json

import pytest
from helpers.kg import SCHEMA_FILE, needs_shared, scripted, session_loop
from langchain_core.messages import AIMessage, ToolMessage

from rags_expert.kg import KGQueryReflexionAgent
from rags_expert.settings import KGExpertSettings
from rags_expert.testing import ScriptedChatModel

pytestmark = [needs_shared, session_loop]

GOOD = (
    "MATCH (g:Gene)-[:GENE_EXPRESSED_IN_CELL_TYPE]->(c:CellType) "
    "WHERE c.cell_type_name = 'fibroblast' RETURN g.name ORDER BY g.name"
)
FIBROBLAST_GENES = {"COL1A1", "COL1A2", "THY1", "TGFB1", "VIM"}


def make_agent(falkordb, model, **kg) -> KGQueryReflexionAgent:
    settings = KGExpertSettings(kg=kg, llm={"max_retries": 0})
    return KGQueryReflexionAgent(
        chat_model=model,
        backend=falkordb.for_graph("gene_kg"),
        schema=SCHEMA_FILE,
        schema_name="gene_kg",
        settings=settings,
    )


def prompts_for(model: ScriptedChatModel, tool: str) -> list[str]:
    return [text for text, kwargs in model.calls if (kwargs.get("tools") or [None])[0] == tool]


async def test_good_first_draft_stops_after_one_step(falkordb):
    model = scripted([GOOD], scores=[9])
    result = await make_agent(falkordb, model).execute("Which genes are expressed in fibroblasts?")
    assert result.query == GOOD
    assert {r["g.name"] for r in result.rows} == FIBROBLAST_GENES
    assert result.steps == 1 and result.score == 9 and result.exit_reason == "score"
    assert len(prompts_for(model, "RevisedQuery")) == 0  # a good result needs no revision call
    draft_prompt = prompts_for(model, "DraftQuery")[0]
    assert "(:Gene)-[:GENE_EXPRESSED_IN_CELL_TYPE]->(:CellType)" in draft_prompt
    assert [r["node"] for r in result.log] == ["draft", "execute_tool", "revise"]


async def test_failing_query_is_fixed_from_the_database_error(falkordb):
    broken = (
        "MATCH (g:Gene)-[:GENE_EXPRESSED_IN_CELL_TYPE]->(c:CellType WHERE c.cell_type_name = 'fibroblast' RETURN g.name"
    )
    model = scripted([broken, GOOD], scores=[9])  # the error is scored 0 without a model call
    result = await make_agent(falkordb, model).execute("Which genes are expressed in fibroblasts?")
    assert result.steps == 2 and result.query == GOOD and result.exit_reason == "score"
    assert {r["g.name"] for r in result.rows} == FIBROBLAST_GENES
    first = result.attempts[0]
    assert first["error_kind"] == "syntax" and first["score"] == 0
    revise_prompt = prompts_for(model, "RevisedQuery")[0]
    assert "ERROR (syntax)" in revise_prompt and first["error"][:40] in revise_prompt
    assert "(:Gene)-[:GENE_EXPRESSED_IN_CELL_TYPE]->(:CellType)" in revise_prompt  # the revise prompt keeps the schema
    assert len(prompts_for(model, "ScoreGrade")) == 1


async def test_unknown_label_empty_result_then_relaxed(falkordb):
    strict = "MATCH (c:CellType) WHERE c.cell_type_name = 'Fibroblasts of the skin' RETURN c.cell_type_name"
    relaxed = "MATCH (c:CellType) WHERE toLower(c.cell_type_name) CONTAINS 'fibroblast' RETURN c.cell_type_name"
    model = scripted([strict, relaxed], scores=[1, 8])
    result = await make_agent(falkordb, model).execute("Which cell types are fibroblasts?")
    assert result.steps == 2 and result.query == relaxed
    assert result.rows == [{"c.cell_type_name": "fibroblast"}]
    revise_prompt = prompts_for(model, "RevisedQuery")[0]
    assert "EMPTY: the query ran without error and returned 0 rows" in revise_prompt
    assert "relax the constraints" in revise_prompt


async def test_step_limit_reached_returns_honest_failure(falkordb):
    model = scripted(lambda prompt: "MATCH (x:NoSuchLabel) RETURN x.name", scores=1.0)
    result = await make_agent(falkordb, model, max_steps=3).execute("Which genes cause malaria?")
    assert result.exit_reason == "max_steps" and result.steps == 3
    assert result.rows == [] and not result.ok
    # no query returned rows: the best executed one is still reported, with its score
    assert result.query == "MATCH (x:NoSuchLabel) RETURN x.name" and result.score == 1.0
    assert len(result.reflections) == 3  # the draft's critique and two revisions
    assert len(prompts_for(model, "RevisedQuery")) == 2


async def test_nonempty_result_stops_even_with_low_score(falkordb):
    query = "MATCH (g:Gene) RETURN g.name"
    model = scripted([query], scores=[3])
    result = await make_agent(falkordb, model).execute("Which genes are expressed in fibroblasts?")
    assert result.exit_reason == "non_empty" and result.steps == 1 and result.score == 3
    model2 = scripted([query, GOOD], scores=[3, 9])
    result2 = await make_agent(falkordb, model2, stop_on_nonempty=False).execute(
        "Which genes are expressed in fibroblasts?"
    )
    assert result2.exit_reason == "score" and result2.steps == 2 and result2.query == GOOD


async def test_unparsable_reply_becomes_a_reflection(falkordb):
    replies = iter(["I am not sure what you mean.", json.dumps({"query": GOOD, "reflection": "now a real query"})])

    def respond(prompt, kwargs):
        if kwargs["tools"][0] == "ScoreGrade":
            return "score: 9/10"  # plain words, parsed tolerantly by the shared scorer
        return next(replies)

    model = ScriptedChatModel(responder=respond)
    result = await make_agent(falkordb, model).execute("Which genes are expressed in fibroblasts?")
    assert result.steps == 2 and result.query == GOOD and result.score == 9
    assert result.attempts[0]["error_kind"] == "no_query"
    assert "could not be read as a query" in result.reflections[0]
    assert "no query was found" in prompts_for(model, "RevisedQuery")[0]


async def test_query_in_a_code_fence_is_accepted(falkordb):
    def respond(prompt, kwargs):
        if kwargs["tools"][0] == "ScoreGrade":
            return '{"score": 8, "reason": "ok"}'
        return f"Here you go:\n```cypher\n{GOOD};\n```"

    result = await make_agent(falkordb, ScriptedChatModel(responder=respond)).execute("Fibroblast genes?")
    assert result.query == GOOD and result.steps == 1 and len(result.rows) == 5


async def test_llm_failure_ends_with_a_result_not_an_exception(falkordb):
    class Boom(Exception):
        pass

    model = ScriptedChatModel(responder=lambda prompt, kwargs: Boom("model exploded sk-secret123456"))
    result = await make_agent(falkordb, model).execute("Which genes are expressed in fibroblasts?")
    assert result.exit_reason == "llm_error" and result.query is None and result.steps == 0
    assert "Boom" in result.error and "sk-secret123456" not in result.error

    def fail_on_score(prompt, kwargs):
        if kwargs["tools"][0] == "ScoreGrade":
            return Boom("scorer down")
        return json.dumps({"query": GOOD})

    result = await make_agent(falkordb, ScriptedChatModel(responder=fail_on_score)).execute("Fibroblast genes?")
    assert result.exit_reason == "llm_error" and result.steps == 1 and "scorer down" in result.error
    assert result.query == GOOD and len(result.rows) == 5  # the executed query is still reported


async def test_query_timeout_becomes_a_reflection(falkordb):
    # 10**10 rows: far beyond the timeout on any machine, while the good query needs a fraction of it under load
    slow = "UNWIND range(1, 100000) AS x UNWIND range(1, 100000) AS y RETURN count(*)"
    model = scripted([slow, GOOD], scores=[9])
    result = await make_agent(falkordb, model, query_timeout=2.0).execute("Fibroblast genes?")
    assert result.attempts[0]["error_kind"] == "timeout"
    assert "ERROR (timeout)" in prompts_for(model, "RevisedQuery")[0]
    assert result.query == GOOD


async def test_max_rows_caps_the_result(falkordb):
    model = scripted(["MATCH (g:Gene) RETURN g.name"], scores=[9])
    result = await make_agent(falkordb, model, max_rows=4).execute("List genes")
    assert len(result.rows) == 4 and result.truncated


async def test_memory_is_the_loops_message_list_and_the_conversation_stays_clean(falkordb):
    agent = make_agent(falkordb, scripted(["MATCH (x:Nope) RETURN x", GOOD], scores=[0, 9]))
    state = await agent.graph.ainvoke(agent.initial_state("Fibroblast genes?"), {"recursion_limit": 20})
    kinds = [type(m).__name__ for m in state["memory"]]
    assert kinds == ["HumanMessage", "AIMessage", "ToolMessage", "AIMessage", "ToolMessage", "AIMessage"]
    tool_calls = [m.tool_calls[0]["id"] for m in state["memory"] if isinstance(m, AIMessage) and m.tool_calls]
    assert tool_calls == [m.tool_call_id for m in state["memory"] if isinstance(m, ToolMessage)]
    # the conversation a host shows: the question and one answer, no tool calls
    assert [type(m).__name__ for m in state["messages"]] == ["HumanMessage", "AIMessage"]
    answer = state["messages"][-1]
    assert not answer.tool_calls and answer.response_metadata["query"] == GOOD
    assert "COL1A1" in answer.content and GOOD in answer.content


async def test_graph_accepts_a_messages_only_input(falkordb):
    """A LangGraph host sends only messages; the question is the last human message."""
    agent = make_agent(falkordb, scripted([GOOD], scores=[9]))
    state = await agent.graph.ainvoke({"messages": [("user", "Fibroblast genes?")]}, {"recursion_limit": 20})
    assert state["question"] == "Fibroblast genes?" and len(state["attempts"][0]["rows"]) == 5


async def test_empty_question_is_a_clear_error(falkordb):
    with pytest.raises(ValueError, match="empty"):
        await make_agent(falkordb, scripted([GOOD])).execute("   ")
