"""The KG agent as an AgentFlow: loaded from a host's YAML list, served as a compiled graph."""

from __future__ import annotations

import json

import pytest

from rags_expert.hosts import discover_agent_classes, load_agents
from rags_expert.kg import KGQueryExpert
from rags_expert.testing import ScriptedChatModel

from .conftest import SCHEMA_FILE, needs_shared

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


async def test_hosts_load_the_kg_agent_from_yaml_and_run_its_graph(falkordb_reason):
    yaml_text = f"""
agents:
  - name: gene-kg
    class_path: rags_expert.kg.flow:KGQueryExpert
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
