"""A model that writes the configured API key into its Cypher query cannot make the KG agent show it: the
model's reply is masked before the query runs, and the final message is redacted like the RAG agent's."""

from __future__ import annotations

import json

from helpers.kg import SCHEMA_FILE, needs_shared, scripted, session_loop

from rags_expert.kg import KGQueryReflexionAgent
from rags_expert.settings import KGExpertSettings

pytestmark = [needs_shared, session_loop]

API_KEY = "house-key-0123456789"  # not key-shaped: only the configured value can mask it
LEAKY = f"MATCH (g:Gene) RETURN g.name AS name, '{API_KEY}' AS leak ORDER BY g.name LIMIT 2"


async def test_the_final_message_never_shows_a_key_the_model_wrote_into_its_query(falkordb):
    settings = KGExpertSettings(llm={"max_retries": 0, "api_key": API_KEY})
    agent = KGQueryReflexionAgent(
        chat_model=scripted([LEAKY], scores=[9]),
        backend=falkordb.for_graph("gene_kg"),
        schema=SCHEMA_FILE,
        schema_name="gene_kg",
        settings=settings,
    )
    state = await agent.graph.ainvoke(agent.initial_state("Which genes are there?", None))
    final = state["messages"][-1]
    assert final.response_metadata["outcome"] == "success"
    assert [row["leak"] for row in final.response_metadata["rows"]] == ["***", "***"]
    assert API_KEY not in json.dumps([m.model_dump() for m in state["messages"]], default=str)
