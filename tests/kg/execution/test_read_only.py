"""Writes are refused: by the pre-check with a reflection, and by the database itself when the pre-check is bypassed."""

from __future__ import annotations

import pytest
from helpers.kg import SCHEMA_FILE, needs_shared, scripted, session_loop

from rags_expert.kg import GraphQueryError, KGQueryReflexionAgent, write_clause_reason
from rags_expert.kg.execution import run as execution_module
from rags_expert.settings import KGExpertSettings

WRITES = [
    "CREATE (:Gene {name: 'EVIL'})",
    "MATCH (g:Gene) SET g.name = 'EVIL'",
    "MATCH (g:Gene) DETACH DELETE g",
    "MATCH (g:Gene) REMOVE g.name",
    "MERGE (g:Gene {name: 'EVIL'}) RETURN g",
    "MATCH (g:Gene) WITH g LIMIT 1 CREATE (g)-[:EVIL]->(:Evil) RETURN g",
]
GOOD = "MATCH (g:Gene) RETURN g.name"


async def gene_fingerprint(backend) -> list:
    result = await backend.run_read(
        "MATCH (n) OPTIONAL MATCH (n)-[r]->() RETURN count(DISTINCT n), count(r), collect(DISTINCT n.name)",
        timeout=5,
        max_rows=5,
    )
    return list(result.rows[0].values())


@pytest.mark.parametrize(
    "query",
    WRITES
    + [
        "LOAD CSV FROM 'file:///x.csv' AS row RETURN row",
        "CALL apoc.create.node(['X'], {}) YIELD node RETURN node",
        "MATCH (n) FOREACH (x IN [1] | SET n.y = x)",
        "CALL db.idx.fulltext.createNodeIndex('Gene', 'name')",
        "DROP INDEX ON :Gene(name)",
    ],
)
def test_precheck_flags_write_clauses(query):
    assert write_clause_reason(query)


@pytest.mark.parametrize(
    "query",
    [
        "MATCH (n:Gene) RETURN n.name",
        "MATCH (d:Disease) WHERE d.name = 'CREATE DELETE SET' RETURN d.created, d.settings",
        "MATCH (n:`SET`) RETURN n  // no DELETE here",
        "CALL db.labels() YIELD label RETURN label",
        "MATCH (n) RETURN n.offset, n.reset, n.dataset",
    ],
)
def test_precheck_lets_reads_through(query):
    assert write_clause_reason(query) is None


@needs_shared
@session_loop
@pytest.mark.parametrize("query", WRITES)
async def test_database_refuses_writes_without_the_precheck(falkordb, query):
    backend = falkordb.for_graph("gene_kg")
    before = await gene_fingerprint(backend)
    with pytest.raises(GraphQueryError) as info:
        await backend.run_read(query, timeout=5, max_rows=10)
    assert info.value.kind == "read_only"
    assert await gene_fingerprint(backend) == before


@needs_shared
@session_loop
async def test_agent_write_attempt_becomes_a_reflection(falkordb):
    backend = falkordb.for_graph("gene_kg")
    before = await gene_fingerprint(backend)
    model = scripted(["MATCH (g:Gene) DETACH DELETE g", GOOD], scores=[9])
    agent = KGQueryReflexionAgent(model, backend, SCHEMA_FILE, schema_name="gene_kg", settings=KGExpertSettings())
    result = await agent.execute("List the genes")
    assert result.attempts[0]["error_kind"] == "write_rejected"
    assert "write clause DETACH" in model.calls[1][0]  # the revise prompt tells the model why
    assert result.query == GOOD and result.rows
    assert await gene_fingerprint(backend) == before


@needs_shared
@session_loop
async def test_agent_write_attempt_refused_by_database_when_precheck_bypassed(falkordb, monkeypatch):
    monkeypatch.setattr(execution_module, "write_clause_reason", lambda query: None)
    backend = falkordb.for_graph("gene_kg")
    before = await gene_fingerprint(backend)
    model = scripted(["MATCH (g:Gene) SET g.name = 'EVIL' RETURN g.name", GOOD], scores=[9])
    agent = KGQueryReflexionAgent(model, backend, SCHEMA_FILE, schema_name="gene_kg", settings=KGExpertSettings())
    result = await agent.execute("List the genes")
    assert result.attempts[0]["error_kind"] == "read_only"
    assert "read-only" in model.calls[1][0]
    assert await gene_fingerprint(backend) == before
    assert "EVIL" not in str(result.rows)
