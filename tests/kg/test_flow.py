"""The KG agent as an AgentFlow: loaded from a host's YAML list, served as a compiled graph."""

from __future__ import annotations

import json

import pytest
from helpers.kg import SCHEMA_FILE, needs_shared

from rags_expert.hosts.loading import discover_agent_classes, load_agents
from rags_expert.kg import KGQueryExpert
from rags_expert.settings import KGExpertSettings
from rags_expert.testing import ScriptedChatModel

pytestmark = [needs_shared]

QUERY = (
    "MATCH (g:Gene)-[:GENE_EXPRESSED_IN_CELL_TYPE]->(c:CellType) "
    "WHERE c.cell_type_name = 'fibroblast' RETURN g.name ORDER BY g.name"
)


def model() -> ScriptedChatModel:
    def respond(prompt, kwargs):
        tool = (kwargs.get("tools") or ["?"])[0]
        if tool == "ScoreGrade":
            return json.dumps({"score": 9, "reason": "lists the genes"})
        return json.dumps({"query": QUERY, "reflection": "exact cell type name"})

    return ScriptedChatModel(responder=respond)


@pytest.mark.slow  # starts an embedded FalkorDB process
async def test_hosts_load_the_kg_agent_from_yaml_and_run_its_graph(falkordb_reason):
    yaml_text = f"""
agents:
  - name: gene-kg
    class_path: rags_expert.kg.agent:KGQueryExpert
    settings:
      kg: {{schema_file: "{SCHEMA_FILE}", schema_name: gene_kg, load_sample: true}}
"""
    agents = await load_agents(yaml_text, chat_model=model())
    agent = agents["gene-kg"]
    try:
        assert isinstance(agent, KGQueryExpert) and agent.metadata["tag"] == "kg"
        out = await agent.get_compiled_graph().ainvoke(
            {"messages": [("user", "Which genes are expressed in fibroblasts?")]}, {"configurable": {"thread_id": "k"}}
        )
        last = out["attempts"][-1]
        assert last["query"] == QUERY and last["score"] == 9
        assert {row["g.name"] for row in last["rows"]} >= {"COL1A1", "VIM"}
    finally:
        await agent.aclose()


async def test_a_missing_schema_is_a_clear_error():
    with pytest.raises(ValueError, match="needs a schema"):
        await KGQueryExpert(chat_model=model()).async_init()


def test_entry_point_advertises_the_kg_agent():
    assert discover_agent_classes().get("kg-query-expert") is KGQueryExpert


@pytest.mark.slow  # starts an embedded FalkorDB process
async def test_an_opened_agent_is_rebound_to_a_new_model_per_turn(falkordb_reason):
    """What a host with a model per turn (Fred v2) does: open the database once, rebind each turn."""
    opened = KGQueryExpert(
        {
            "lessons": {"enabled": False},
            "kg": {"schema_file": str(SCHEMA_FILE), "schema_name": "gene_kg", "load_sample": True},
        }
    )
    with pytest.raises(RuntimeError, match="open"):
        opened.rebound(model())
    schema = await opened.open()
    try:
        assert await opened.open() is schema  # once
        for turn in range(2):
            chat = model()
            expert = opened.rebound(chat, KGExpertSettings(lessons={"enabled": False}, kg={"max_steps": 2}))
            assert expert.backend is opened.backend and expert.settings.kg.max_steps == 2
            out = await expert.get_standalone_graph().ainvoke(
                {"messages": [("user", "Which genes are expressed in fibroblasts?")]}
            )
            assert {row["g.name"] for row in out["attempts"][-1]["rows"]} >= {"COL1A1", "VIM"}, turn
            assert chat.calls  # this turn's model answered
    finally:
        await opened.aclose()
