"""The schema prompt engine: the three BioCypher shapes, labels, directions, narrowing without leaks."""

from __future__ import annotations

import json

import pytest
from helpers.kg import SCHEMA_FILE, needs_shared
from helpers.shared_data import SCHEMA_INFO_FILE, needs

from rags_expert.kg import KGQueryReflexionAgent, SchemaError, load_schema
from rags_expert.kg.biocypher.loader import plan_sample
from rags_expert.settings import KGExpertSettings
from rags_expert.testing import ScriptedChatModel

pytestmark = needs_shared


def test_schema_config_entries_become_labels_and_directed_patterns():
    gene = load_schema(SCHEMA_FILE, "gene_kg")
    labels = {e.label for e in gene.entities}
    assert labels == {"CellType", "Disease", "Gene", "Protein"}  # pathway is not in the graph
    prompt = gene.prompt()
    assert "(:Disease)-[:PERTURBED]->(:Gene)" in prompt and "(:Disease)-[:PERTURBED]->(:Protein)" in prompt
    assert "(:Gene)-[:GeneToProteinAssociation]->(:Protein)" in prompt
    assert "cell_type_name: str" in prompt and "INTERACTS_POST_TRANSLATIONAL" not in prompt
    safety = load_schema(SCHEMA_FILE, "safety_kg")
    assert "(:ModelSystem)-[:ModelSystemRelevantToOrgan]->(:Organ)" in safety.prompt()
    assert "`chemical group`: str" in safety.prompt()  # names with spaces are backticked


@needs(SCHEMA_INFO_FILE, "the BioChatter schema-info example")
def test_schema_info_and_dict_shapes():
    info = load_schema(SCHEMA_INFO_FILE)
    assert {e.label for e in info.entities} >= {"Protein", "Gene", "Disease", "CellType"}
    assert info.relationship("PERTURBED_IN").sources == ("Protein",)
    as_dict = load_schema({"organ": {"represented_as": "node", "properties": {"name": "str"}}})
    assert as_dict.prompt().startswith("Node labels") and as_dict.entity("Organ") is not None


@pytest.mark.parametrize(
    "source, message",
    [
        ("/nonexistent/schema.yaml", "not found"),
        ({"kg_schemas": {"a": {}, "b": {}}}, "several schemas"),
        ({"x": "not an entry"}, "no entities"),
        ([1, 2], "mapping"),
    ],
)
def test_bad_schemas_get_clear_errors(source, message):
    with pytest.raises(SchemaError, match=message):
        load_schema(source)


def test_sample_graph_follows_the_schemas():
    for name in ("gene_kg", "safety_kg"):
        plan = plan_sample(load_schema(SCHEMA_FILE, name))
        assert plan.node_count >= 15 and plan.edge_count >= 15
    bad = {"gene_kg": {"nodes": {"gene": [{"id": "g1", "colour": "red"}]}, "edges": {}}}
    with pytest.raises(SchemaError, match="colour"):
        plan_sample(load_schema(SCHEMA_FILE, "gene_kg"), data=bad)
    wrong_direction = {
        "gene_kg": {
            "nodes": {"gene": [{"id": "g"}], "disease": [{"id": "d"}]},
            "edges": {"gene to phenotype association": [["g", "d", {}]]},
        }
    }
    with pytest.raises(SchemaError, match="patterns"):
        plan_sample(load_schema(SCHEMA_FILE, "gene_kg"), data=wrong_direction)


async def test_narrowed_schema_is_per_question():
    """With narrow_schema, each question's prompt shows only what the model picked for it."""
    picks = iter(
        [
            {"entities": ["Gene", "CellType"], "relationships": ["GENE_EXPRESSED_IN_CELL_TYPE"]},
            {"entities": ["Disease"], "relationships": []},
        ]
    )

    def respond(prompt, kwargs):
        tool = kwargs["tools"][0]
        if tool == "SchemaSelection":
            return json.dumps(next(picks))
        if tool == "ScoreGrade":
            return '{"score": 0}'
        return '{"query": "MATCH (n:Nope) RETURN n"}'

    class NoDB:
        name = "none"

        async def start(self): ...
        async def close(self): ...
        async def execute_write(self, query, params=None): ...

        async def run_read(self, query, *, timeout, max_rows):
            from rags_expert.kg import QueryResult

            return QueryResult(["n"], [])

    model = ScriptedChatModel(responder=respond)
    settings = KGExpertSettings(kg={"narrow_schema": True, "max_steps": 1})
    agent = KGQueryReflexionAgent(model, NoDB(), SCHEMA_FILE, schema_name="gene_kg", settings=settings)
    await agent.execute("Which genes are expressed in fibroblasts?")
    await agent.execute("What is the name of the disease with ICD10 code E10?")
    drafts = [text for text, kwargs in model.calls if kwargs["tools"][0] == "DraftQuery"]
    assert "(:Gene)-[:GENE_EXPRESSED_IN_CELL_TYPE]->(:CellType)" in drafts[0] and ":Disease" not in drafts[0]
    assert ":Disease" in drafts[1] and ":Gene " not in drafts[1] and "GENE_EXPRESSED" not in drafts[1]
    assert len(agent.schema.entities) == 4  # the agent's own schema is untouched
