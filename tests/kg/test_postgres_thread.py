"""The KG agent's threads in PostgreSQL (checkpointer.url): a follow-up asked of another agent instance (another
replica's) is condensed from the shared history. Real FalkorDB, real PostgreSQL (tests/helpers/pg_server.py)."""

from __future__ import annotations

import pytest
from helpers.kg import SCHEMA_FILE, needs_shared, session_loop

from rags_expert.kg import KGQueryExpert

from .test_thread import COUNT, GENES, Q1, Q2, Q2_STANDALONE, Script, ask

pytestmark = [needs_shared, session_loop]


async def replica(falkordb, script: Script, url: str) -> KGQueryExpert:
    settings = {
        "kg": {"schema_file": str(SCHEMA_FILE), "schema_name": "gene_kg", "max_steps": 2},
        "llm": {"max_retries": 0},
        "lessons": {"enabled": False},
        "checkpointer": {"url": url},
    }
    return await KGQueryExpert(settings, chat_model=script.model, backend=falkordb.for_graph("gene_kg")).async_init()


async def test_a_follow_up_on_another_replica_is_condensed_from_the_shared_history(falkordb, postgres_url):
    script = Script(queries={Q1: [GENES], Q2_STANDALONE: [COUNT]}, scores={Q1: [9], Q2_STANDALONE: [9]},
                    standalone={Q2: Q2_STANDALONE})  # fmt: skip
    one, two = await replica(falkordb, script, postgres_url), await replica(falkordb, script, postgres_url)
    try:
        assert one._default_checkpointer is not two._default_checkpointer  # nothing shared in memory
        first = await ask(one.get_compiled_graph(), "kg-t1", Q1)
        assert first["messages"][-1].response_metadata["query"] == GENES
        second = await ask(two.get_compiled_graph(), "kg-t1", Q2)
    finally:
        await one.aclose()
        await two.aclose()
    condense = script.prompts("StandaloneQuestion")
    assert len(condense) == 1 and f"User: {Q1}" in condense[0] and "COL1A1" in condense[0]
    assert second["question"] == Q2_STANDALONE
    assert second["messages"][-1].response_metadata["rows"] == [{"taxon": 9606, "genes": 5}]
    assert [m.content for m in second["messages"][::2]] == [Q1, Q2]


@pytest.mark.slow
async def test_a_database_that_is_down_ends_the_question_in_an_honest_failure(falkordb, own_postgres):
    """The thread cannot be read: ainvoke ends in the KG agent's failure message naming the checkpointer."""
    url = own_postgres.create_database("kg_down")
    script = Script(queries={Q1: [GENES]}, scores={Q1: [9]})
    agent = await replica(falkordb, script, url)
    try:
        await ask(agent.get_compiled_graph(), "kg-t1", Q1)
        own_postgres.halt()
        try:
            down = await ask(agent.get_compiled_graph(), "kg-t1", Q1)
        finally:
            own_postgres.resume()
        after = await ask(agent.get_compiled_graph(), "kg-t1", Q1)
    finally:
        await agent.aclose()
    final = down["messages"][-1]
    meta = final.response_metadata
    assert meta["outcome"] == "failure" and meta["exit_reason"] == "checkpointer_error"
    assert meta["error_class"] == "OperationalError" and own_postgres.password not in meta["error"]
    assert final.content == (
        f'I could not answer "{Q1}" because the conversation store (the PostgreSQL checkpointer) failed '
        "(OperationalError). Please try again later."
    )
    assert [m.content for m in after["messages"][::2]] == [Q1, Q1]  # the failed turn was never stored
