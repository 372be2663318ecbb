"""The KG agent shares the lesson memory module: low scores teach lessons that later drafts recall."""

from __future__ import annotations

import json

from helpers.kg import SCHEMA_FILE, needs_shared, session_loop

from rags_expert.kg import KGQueryReflexionAgent
from rags_expert.lessons import LessonMemory
from rags_expert.retrieval.qdrant import close_client
from rags_expert.settings import KGExpertSettings
from rags_expert.testing import ScriptedChatModel

pytestmark = [needs_shared, session_loop]

EMPTY = (
    "MATCH (g:Gene)-[:GENE_EXPRESSED_IN_CELL_TYPE]->(c:CellType) WHERE c.cell_type_name = 'Fibroblasts' RETURN g.name"
)
GOOD = (
    "MATCH (g:Gene)-[:GENE_EXPRESSED_IN_CELL_TYPE]->(c:CellType) "
    "WHERE toLower(c.cell_type_name) CONTAINS 'fibroblast' RETURN g.name"
)
LESSON = "Match cell type names case-insensitively with toLower(...) CONTAINS instead of exact equality."


def model_for(queries: list[str], scores: list[float]) -> ScriptedChatModel:
    def respond(prompt, kwargs):
        tool = (kwargs.get("tools") or ["?"])[0]
        if tool == "ScoreGrade":
            return json.dumps({"score": scores.pop(0), "reason": "scripted"})
        if tool == "LessonText":
            return json.dumps({"lesson": LESSON})
        return json.dumps({"query": queries.pop(0), "reflection": "r"})

    return ScriptedChatModel(responder=respond)


async def test_low_score_stores_a_kg_lesson_that_a_similar_question_recalls(falkordb, tmp_path):
    settings = KGExpertSettings(
        store={"data_dir": str(tmp_path)},
        lessons={"enabled": True},
        kg={"stop_on_nonempty": False},
        llm={"max_retries": 0},
    )
    memory = LessonMemory.from_settings(settings)
    try:
        model = model_for([EMPTY, GOOD], [2, 9])
        agent = KGQueryReflexionAgent(
            model,
            falkordb.for_graph("gene_kg"),
            SCHEMA_FILE,
            schema_name="gene_kg",
            settings=settings,
            lesson_memory=memory,
        )
        first = await agent.execute("Which genes are expressed in fibroblasts?")
        assert first.query == GOOD and first.steps == 2
        assert memory.count("kg") == 1 and memory.count("rag") == 0
        reflect_prompts = [t for t, kw in model.calls if (kw.get("tools") or [""])[0] == "LessonText"]
        assert len(reflect_prompts) == 1 and "EMPTY" in reflect_prompts[0]  # only the low-scored attempt

        model2 = model_for([GOOD], [9])
        agent2 = KGQueryReflexionAgent(
            model2,
            falkordb.for_graph("gene_kg"),
            SCHEMA_FILE,
            schema_name="gene_kg",
            settings=settings,
            lesson_memory=memory,
        )
        await agent2.execute("Which genes are expressed in fibroblast cells?")
        draft = next(t for t, kw in model2.calls if (kw.get("tools") or [""])[0] == "DraftQuery")
        assert LESSON in draft
    finally:
        close_client(settings.store)
