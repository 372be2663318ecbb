"""Several questions on one thread of the KG agent's compiled graph (a checkpointer, one thread_id).

Each run answers the thread's last human message, starts with fresh per-question state, makes a
follow-up standalone with the shared condense step, and ends with one user-facing AIMessage whose
response_metadata carries the executed query and its (typed) rows. Real FalkorDB, scripted model.
"""

from __future__ import annotations

import json
import re
from typing import Any

from helpers.kg import SCHEMA_FILE, needs_shared, session_loop
from langchain_core.messages import AIMessage, HumanMessage

from rags_expert.kg import KGQueryExpert
from rags_expert.testing import ScriptedChatModel

pytestmark = [needs_shared, session_loop]

FIBRO = "MATCH (g:Gene)-[:GENE_EXPRESSED_IN_CELL_TYPE]->(c:CellType) WHERE c.cell_type_name = 'fibroblast'"
GENES = f"{FIBRO} RETURN g.name ORDER BY g.name"
COUNT = f"{FIBRO} RETURN g.taxon AS taxon, count(g) AS genes"
NO_LABEL = "MATCH (x:NoSuchLabel) RETURN x.name"
STRICT = "MATCH (c:CellType) WHERE c.cell_type_name = 'Fibroblasts of the skin' RETURN c.cell_type_name"
RELAXED = "MATCH (c:CellType) WHERE toLower(c.cell_type_name) CONTAINS 'fibroblast' RETURN c.cell_type_name"

Q1 = "Which genes are expressed in fibroblasts?"
Q2 = "How many are there, and which taxon?"
Q2_STANDALONE = "How many genes are expressed in fibroblasts, and what is their taxon?"
Q3 = "Which genes cause malaria?"
Q4 = "Which cell types are fibroblasts?"


class Script:
    """A scripted model keyed by question: queries and scores per standalone question, condensed follow-ups."""

    def __init__(
        self,
        queries: dict[str, list[str]],
        scores: dict[str, list[float]],
        standalone: dict[str, str] | None = None,
        fail: tuple[str, ...] = (),
    ) -> None:
        self.queries = {q: list(v) for q, v in queries.items()}
        self.scores = {q: list(v) for q, v in scores.items()}
        self.standalone = standalone or {}
        self.fail = fail
        self.model = ScriptedChatModel(responder=self.respond)

    def _question(self, prompt: str, table: dict[str, Any]) -> str:
        found = [q for q in table if q in prompt]
        assert len(found) == 1, f"expected exactly one known question in the prompt, found {found}"
        return found[0]

    def respond(self, prompt: str, kwargs: dict[str, Any]) -> Any:
        tool = (kwargs.get("tools") or ["?"])[0]
        if tool in self.fail:
            return RuntimeError(f"{tool} is down")
        if tool == "StandaloneQuestion":
            latest = re.search(r"Latest message: (.*)", prompt).group(1).strip()
            return json.dumps({"question": self.standalone.get(latest, latest)})
        if tool in ("DraftQuery", "RevisedQuery"):
            queue = self.queries[self._question(prompt, self.queries)]
            return json.dumps({"query": queue.pop(0) if len(queue) > 1 else queue[0], "reflection": f"{tool} note"})
        if tool == "ScoreGrade":
            queue = self.scores[self._question(prompt, self.scores)]
            value = queue.pop(0) if len(queue) > 1 else queue[0]
            return json.dumps({"score": value, "reason": f"scripted {value}"})
        raise AssertionError(f"unexpected call for tool {tool}")

    def prompts(self, tool: str) -> list[str]:
        return [text for text, kw in self.model.calls if (kw.get("tools") or [None])[0] == tool]


async def expert(falkordb, script: Script, **kg: Any) -> KGQueryExpert:
    settings = {
        "kg": {"schema_file": str(SCHEMA_FILE), "schema_name": "gene_kg", "max_steps": 2, **kg},
        "llm": {"max_retries": 0},
        "lessons": {"enabled": False},
    }
    return await KGQueryExpert(settings, chat_model=script.model, backend=falkordb.for_graph("gene_kg")).async_init()


async def ask(graph, thread: str, text: str) -> dict[str, Any]:
    return await graph.ainvoke({"messages": [("user", text)]}, {"configurable": {"thread_id": thread}})


async def test_each_question_on_a_thread_answers_its_own_last_message(falkordb):
    script = Script(
        queries={Q1: [GENES], Q2_STANDALONE: [COUNT], Q3: [NO_LABEL], Q4: [STRICT, RELAXED]},
        scores={Q1: [9], Q2_STANDALONE: [9], Q3: [1], Q4: [1, 8]},
        standalone={Q2: Q2_STANDALONE},
    )
    graph = (await expert(falkordb, script)).get_compiled_graph()

    first = await ask(graph, "t1", Q1)
    answer = first["messages"][-1]
    meta = answer.response_metadata
    assert meta["outcome"] == "success" and meta["question"] == Q1 and meta["query"] == GENES
    assert meta["columns"] == ["g.name"] and [r["g.name"] for r in meta["rows"]] == [
        "COL1A1",
        "COL1A2",
        "TGFB1",
        "THY1",
        "VIM",
    ]
    assert (meta["score"], meta["steps"], meta["exit_reason"], meta["row_count"]) == (9, 1, "score", 5)
    assert "Found 5 results" in answer.content and "- COL1A1\n- COL1A2" in answer.content and GENES in answer.content
    assert "Stopping" not in answer.content
    assert script.prompts("StandaloneQuestion") == []  # a first question needs no condensing

    second = await ask(graph, "t1", Q2)
    condense = script.prompts("StandaloneQuestion")
    assert len(condense) == 1 and f"Latest message: {Q2}" in condense[0]
    assert f"User: {Q1}" in condense[0] and "COL1A1" in condense[0]  # the history holds the first answer
    assert second["question"] == Q2_STANDALONE
    assert Q2_STANDALONE in script.prompts("DraftQuery")[-1] and Q1 not in script.prompts("DraftQuery")[-1]
    meta = second["messages"][-1].response_metadata
    assert meta["query"] == COUNT and meta["columns"] == ["taxon", "genes"]
    assert meta["rows"] == [{"taxon": 9606, "genes": 5}]
    assert all(type(v) is int for v in meta["rows"][0].values())  # ints stay ints
    assert meta["steps"] == 1 and "taxon: 9606; genes: 5" in second["messages"][-1].content

    third = await ask(graph, "t1", Q3)  # two failed steps: honest failure at max_steps
    meta = third["messages"][-1].response_metadata
    assert (meta["outcome"], meta["exit_reason"], meta["steps"], meta["rows"]) == ("failure", "max_steps", 2, [])
    assert meta["query"] == NO_LABEL and meta["score"] == 1
    assert third["messages"][-1].content.startswith(f'I could not find an answer to "{Q3}"')
    assert "none returned any rows" in third["messages"][-1].content

    # 4 steps have run on this thread, more than kg.max_steps: the fourth question still gets its own 2
    fourth = await ask(graph, "t1", Q4)
    meta = fourth["messages"][-1].response_metadata
    assert (meta["outcome"], meta["exit_reason"], meta["steps"], meta["query"]) == ("success", "score", 2, RELAXED)
    assert meta["rows"] == [{"c.cell_type_name": "fibroblast"}]
    assert [a["query"] for a in fourth["attempts"]] == [STRICT, RELAXED]  # this question's attempts only
    assert [r["node"] for r in fourth["log"]] == ["draft", "execute_tool", "revise", "execute_tool", "revise"]
    assert len(script.prompts("StandaloneQuestion")) == 3

    # the conversation a host reads: question → answer, four times, no tool-call messages
    messages = fourth["messages"]
    assert [type(m) for m in messages] == [HumanMessage, AIMessage] * 4
    assert [m.content for m in messages[::2]] == [Q1, Q2, Q3, Q4]
    assert not any(m.tool_calls for m in messages[1::2])
    assert [m.response_metadata["question"] for m in messages[1::2]] == [Q1, Q2_STANDALONE, Q3, Q4]


async def test_answer_rows_caps_the_listing_and_the_metadata(falkordb):
    query = "MATCH (g:Gene) RETURN g.name AS gene, g.taxon AS taxon ORDER BY gene"
    script = Script(queries={"List genes": [query]}, scores={"List genes": [9]})
    graph = (await expert(falkordb, script, answer_rows=3)).get_compiled_graph()
    out = await ask(graph, "cap", "List genes")
    answer = out["messages"][-1]
    meta = answer.response_metadata
    assert meta["row_count"] == 14 and len(meta["rows"]) == 3 and not meta["truncated"]
    assert meta["rows"][0] == {"gene": "CFTR", "taxon": 9606} and type(meta["rows"][0]["taxon"]) is int
    assert "- gene: CFTR; taxon: 9606" in answer.content and "- … and 11 more" in answer.content
    assert "IGF1" not in answer.content.split("Query:")[0]  # the 4th row is not listed


async def test_honest_failures_and_the_thread_goes_on(falkordb):
    broken = "MATCH (g:Gene RETURN g.name"
    script = Script(queries={"Broken genes?": [broken], Q1: [GENES]}, scores={Q1: [9]})
    graph = (await expert(falkordb, script)).get_compiled_graph()

    out = await ask(graph, "f", "Broken genes?")  # no query ever ran
    answer = out["messages"][-1]
    meta = answer.response_metadata
    assert (meta["outcome"], meta["query"], meta["rows"], meta["score"], meta["steps"]) == (
        "failure",
        None,
        [],
        None,
        2,
    )
    assert meta["exit_reason"] == "max_steps"
    assert "none of the 2 queries I wrote could run (last error: syntax)" in answer.content

    out = await ask(graph, "f", "   ")  # an empty message: no model call, no query
    calls = len(script.model.calls)
    meta = out["messages"][-1].response_metadata
    assert (meta["outcome"], meta["exit_reason"], meta["steps"], meta["query"]) == (
        "failure",
        "empty_question",
        0,
        None,
    )
    assert out["messages"][-1].content == "Please ask a question: the message was empty."
    assert out["attempts"] == [] and out["log"] == []

    out = await ask(graph, "f", Q1)  # the thread still answers the next question
    assert len(script.model.calls) > calls
    assert out["messages"][-1].response_metadata["outcome"] == "success"
    assert out["messages"][-1].response_metadata["query"] == GENES


async def test_model_failures_end_in_an_honest_answer(falkordb):
    script = Script(queries={Q1: [GENES]}, scores={Q1: [9]}, fail=("DraftQuery",))
    graph = (await expert(falkordb, script)).get_compiled_graph()
    out = await ask(graph, "m", Q1)
    answer = out["messages"][-1]
    meta = answer.response_metadata
    assert (meta["outcome"], meta["exit_reason"], meta["steps"], meta["query"]) == ("failure", "llm_error", 0, None)
    assert meta["error_class"] == "RuntimeError" and "DraftQuery is down" in meta["error"]
    assert (
        answer.content == f'I could not answer "{Q1}" because the language model failed (RuntimeError). '
        "Please try again later."
    )

    script.fail = ("StandaloneQuestion",)  # a follow-up whose condense step fails
    drafts = len(script.prompts("DraftQuery"))
    out = await ask(graph, "m", Q2)
    meta = out["messages"][-1].response_metadata
    assert (meta["outcome"], meta["exit_reason"], meta["steps"], meta["question"]) == ("failure", "llm_error", 0, Q2)
    assert meta["error_class"] == "RuntimeError" and len(script.prompts("DraftQuery")) == drafts  # no draft

    script.fail = ()
    out = await ask(graph, "m", Q1)
    assert out["messages"][-1].response_metadata["outcome"] == "success"
    assert [type(m) for m in out["messages"]] == [HumanMessage, AIMessage] * 3


async def test_a_prompt_that_cannot_render_ends_in_an_honest_answer(falkordb):
    """A template that slipped past validation (a subclass's own store) fails inside draft: the run ends with a
    failure message naming the prompt problem, never an exception out of ainvoke, and the thread goes on."""
    script = Script(queries={Q1: [GENES]}, scores={Q1: [9]})
    flow = await expert(falkordb, script)
    store = flow.agent.ctx.prompts
    good = store._templates["kg_draft"]
    store._templates["kg_draft"] = good + " {question.upper}"  # attribute access: str.format raises
    graph = flow.get_compiled_graph()
    out = await ask(graph, "p", Q1)
    meta = out["messages"][-1].response_metadata
    assert (meta["outcome"], meta["exit_reason"], meta["query"]) == ("failure", "prompt_error", None)
    assert meta["error_class"] == "PromptError" and "kg_draft" in meta["error"]
    assert script.prompts("DraftQuery") == []  # the broken prompt never reached the model

    store._templates["kg_draft"] = good
    out = await ask(graph, "p", Q1)
    assert out["messages"][-1].response_metadata["outcome"] == "success"
