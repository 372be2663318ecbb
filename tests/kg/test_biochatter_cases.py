"""BioChatter's 7 public query cases: scripted correct queries run through the agent on the sample graph."""

from __future__ import annotations

import pytest
from helpers.kg import CASES_FILE, SCHEMA_FILE, needs_shared, scripted, session_loop
from helpers.shared_data import needs

from rags_expert.kg import KGQueryReflexionAgent
from rags_expert.kg.benchmark import load_query_cases, regex_matches, regex_score
from rags_expert.settings import KGExpertSettings

pytestmark = [needs_shared, needs(CASES_FILE, "the BioChatter query cases")]

# Our own correct answers to the public cases (written against the schema, not copied from anywhere).
QUERIES = {
    "simple": "MATCH (d:Disease) WHERE d.ICD10 = 'E10' RETURN d.name",
    "single_word": "MATCH (d:Disease)-[:PERTURBED]->(g:Gene) WHERE d.name = 'mucoviscidosis' RETURN g.name",
    "multi_word": (
        "MATCH (g:Gene)-[:GENE_EXPRESSED_IN_CELL_TYPE]->(c:CellType) "
        "WHERE c.cell_type_name = 'fibroblast' RETURN g.name"
    ),
    "complex": (
        "MATCH (p:Protein)-[r:PERTURBED_IN]->(d:Disease) WHERE d.ICD10 = 'E10' "
        "MATCH (g:Gene)-[:GeneToProteinAssociation]->(p) RETURN p.name, r.score, g.name"
    ),
    "safety_simple": "MATCH (o:Organ) RETURN o.name",
    "safety_medium": (
        "MATCH (m:ModelSystem)-[:ModelSystemRelevantToOrgan]->(o:Organ) WHERE o.name = 'brain' RETURN m.name"
    ),
    "safety_complex": (
        "MATCH (o:Organ)<-[:CaseStudyRelatedOrgan]-(c:CaseStudy)-[:CaseStudyRelevantChemical]->(ch:Chemical) "
        "WHERE o.name = 'brain' RETURN c.name, ch.name"
    ),
}
CASES = load_query_cases(CASES_FILE) if CASES_FILE.is_file() else []


def test_all_seven_public_cases_are_covered():
    assert sorted(c.case for c in CASES) == sorted(QUERIES)


@session_loop
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.case)
async def test_case_runs_on_the_sample_graph_and_matches_its_regexes(falkordb, case):
    model = scripted([QUERIES[case.case]], scores=[9])
    agent = KGQueryReflexionAgent(
        chat_model=model,
        backend=falkordb.for_graph(case.schema),
        schema=SCHEMA_FILE,
        schema_name=case.schema,
        settings=KGExpertSettings(),
    )
    result = await agent.execute(case.question)
    assert result.rows, f"{case.case}: the sample graph gives no rows for {result.query}"
    assert result.query == QUERIES[case.case] and result.steps == 1
    missed = [p for p, hit in zip(case.parts_of_query, regex_matches(result.query, case.parts_of_query)) if not hit]
    assert not missed, f"{case.case}: executed query misses {missed}"
    assert regex_score(result.query, case.parts_of_query) == 1.0
    # the question reached the model together with the schema of the right graph
    draft_prompt = model.calls[0][0]
    assert case.question in draft_prompt and all(e in draft_prompt for e in case.expected["entities"])


def test_regex_score_is_a_fraction():
    parts = ["^MATCH", "RETURN", "([a-zA-Z]*:Organ)", "name"]
    assert regex_score("MATCH (o:Organ) RETURN o.name", parts) == 1.0
    assert regex_score("MATCH (o:Tissue) RETURN o.id", parts) == 0.5
    assert regex_score("", parts) == 0.0 and regex_score(None, parts) == 0.0
    assert regex_score("anything", []) == 1.0
    assert regex_matches("x", ["(unclosed"]) == [False]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.case)
def test_a_wrong_query_scores_below_one(case):
    """The regexes really discriminate: a query on the wrong label does not pass."""
    assert regex_score("MATCH (n:Unrelated) RETURN n", case.parts_of_query) < 1.0
