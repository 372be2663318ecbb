"""A BioChatter-style ReflexionAgent subclass, written only against the seed's hook names, runs on our base.

The toy task is arithmetic: the responders propose an expression (as a ``Calculate`` tool
call, with a score in the revision), ``_tool_function`` evaluates it, and
``_should_continue`` ends the loop once a revision scores above 7 – the seed's rules.
"""

from __future__ import annotations

import json
import operator
import re
from typing import Any

import pytest
from helpers.kg import needs_shared, session_loop
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableLambda
from langgraph.graph import END

from rags_expert.kg.reflexion.base import ReflexionAgent
from rags_expert.testing import ScriptedChatModel

EXECUTE_TOOL_NODE = "execute_tool"
OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul}
PROMPT = "Answer with one integer expression."


def calc_call(expression: str, score: int | None = None, call_id: str = "c") -> AIMessage:
    """A scripted responder reply: a Calculate tool call (a revision also carries a score)."""
    args: dict[str, Any] = {"answer": expression, "reflection": f"trying {expression}"}
    if score is not None:
        args["score"] = str(score)
    return AIMessage("", tool_calls=[{"name": "Calculate", "args": args, "id": call_id, "type": "tool_call"}])


class ResponderWithRetries:
    """The seed's responder shape: ``respond(messages)`` returns the next AIMessage (sync)."""

    def __init__(self, runnable: Any, prompt: str | None) -> None:
        self.runnable, self.prompt = runnable, prompt

    def respond(self, state: list[BaseMessage]) -> BaseMessage:
        return self.runnable.invoke([SystemMessage(self.prompt or ""), *state])


class CalculatorReflexionAgent(ReflexionAgent):
    """Implements exactly the seed's abstract methods (and ``_should_continue``), none of ours."""

    def __init__(self, chat: ScriptedChatModel, max_steps: int = 5, stop_score: int = 7) -> None:
        super().__init__(max_steps)
        self.chat, self.stop_score = chat, stop_score
        self.factory_prompts: list[tuple[str, str | None]] = []
        self.step_logs: list[tuple[int, str, str]] = []
        self.tool_inputs: list[int] = []
        self.continue_calls = 0
        self.final_logged: Any = None

    def _create_initial_responder(self, prompt: str | None = None) -> ResponderWithRetries:
        self.factory_prompts.append(("initial", prompt))
        return ResponderWithRetries(self.chat.bind_tools([{"name": "Calculate"}]), prompt)

    def _create_revise_responder(self, prompt: str | None = None) -> Any:
        self.factory_prompts.append(("revise", prompt))
        # a plain Runnable taking the message list also works as a responder
        return RunnableLambda(lambda messages: [SystemMessage(prompt or ""), *messages]) | self.chat

    def _tool_function(self, state: list[BaseMessage]) -> ToolMessage:
        self.tool_inputs.append(len(state))
        call = state[-1].tool_calls[0]
        left, op, right = re.fullmatch(r"\s*(\d+)\s*([-+*])\s*(\d+)\s*", call["args"]["answer"]).groups()
        value = OPS[op](int(left), int(right))
        return ToolMessage(json.dumps({"result": value}), tool_call_id=call["id"])

    def _should_continue(self, state: list[BaseMessage]) -> str:
        self.continue_calls += 1
        score = int(state[-1].tool_calls[0]["args"].get("score", 0)) if state[-1].tool_calls else 0
        return END if score > self.stop_score else EXECUTE_TOOL_NODE

    def _log_step_message(self, step: int, node: str, output: BaseMessage) -> None:
        self.step_logs.append((step, node, type(output).__name__))

    def _log_final_result(self, output: Any) -> None:
        self.final_logged = output

    def _parse_final_result(self, output: BaseMessage) -> dict[str, Any]:
        return {"answer": output.tool_calls[0]["args"]["answer"], "score": output.tool_calls[0]["args"]["score"]}


def scripted_run() -> ScriptedChatModel:
    """Draft 6+7 (wrong), revise to 6*7 with score 3, then confirm 6*7 with score 9."""
    return ScriptedChatModel(
        responses=[calc_call("6+7", call_id="c1"), calc_call("6*7", 3, "c2"), calc_call("6*7", 9, "c3")]
    )


@session_loop
async def test_seed_named_subclass_runs_through_execute_with_the_prompt():
    chat = scripted_run()
    agent = CalculatorReflexionAgent(chat)
    result = await agent.execute("What is six times seven?", PROMPT)

    assert result == {"answer": "6*7", "score": "9"}
    assert agent.final_logged == result
    assert agent.factory_prompts == [("initial", PROMPT), ("revise", PROMPT), ("revise", PROMPT)]
    assert all(PROMPT in text for text, _ in chat.calls) and len(chat.calls) == 3
    # the tool saw the question, the draft, then two more messages per loop
    assert agent.tool_inputs == [2, 4]
    nodes = [node for _, node, _ in agent.step_logs]
    assert nodes == ["draft", "execute_tool", "revise", "execute_tool", "revise"]
    assert agent.step_logs[1][2] == "ToolMessage" and agent.step_logs[2][2] == "AIMessage"
    assert agent.continue_calls >= 2


@session_loop
async def test_seed_named_subclass_runs_through_the_compiled_graph():
    agent = CalculatorReflexionAgent(scripted_run())
    state = await agent.graph.ainvoke(
        {"messages": [HumanMessage("What is six times seven?")], "prompt": PROMPT},
        config={"recursion_limit": agent.recursion_limit()},
    )
    assert state["exit_reason"] == "done" and state["steps"] == 2
    assert state["messages"][-1].content == str({"answer": "6*7", "score": "9"})
    assert [m.type for m in state["memory"]] == ["human", "ai", "tool", "ai", "tool", "ai"]
    assert json.loads(state["memory"][4].content) == {"result": 42}
    assert [r["node"] for r in state["log"]] == ["draft", "execute_tool", "revise", "execute_tool", "revise"]


@session_loop
async def test_loop_stops_when_should_continue_says_end_on_the_first_revision():
    chat = ScriptedChatModel(responses=[calc_call("6*7", call_id="c1"), calc_call("6*7", 10, "c2")])
    agent = CalculatorReflexionAgent(chat)
    state = await agent.graph.ainvoke({"messages": [HumanMessage("6 times 7?")]})
    assert state["exit_reason"] == "done" and state["steps"] == 1 and len(chat.calls) == 2
    assert agent.factory_prompts == [("initial", None), ("revise", None)]  # no prompt given: None, as in the seed


@session_loop
async def test_loop_never_told_to_stop_ends_at_the_base_step_limit():
    chat = ScriptedChatModel(responder=lambda text, kwargs: calc_call("1+1", 2))
    agent = CalculatorReflexionAgent(chat, max_steps=3)
    result = await agent.execute("one plus one, poorly")
    assert result == {"answer": "1+1", "score": "2"}
    assert agent.tool_inputs == [2, 4, 6] and agent.continue_calls >= 3
    assert len(chat.calls) == 4  # a draft and three revisions; _should_continue never said END


def test_a_subclass_missing_a_required_hook_under_both_names_is_refused():
    class ToolOnly(ReflexionAgent):
        def _tool_function(self, state: list[BaseMessage]) -> ToolMessage:
            return ToolMessage("x", tool_call_id="x")

    with pytest.raises(TypeError) as info:
        ToolOnly(3)
    message = str(info.value)
    for pair in (
        "draft() or _create_initial_responder()",
        "revise() or _create_revise_responder()",
        "parse_final_result() or _parse_final_result()",
    ):
        assert pair in message
    assert "_tool_function" not in message


@needs_shared
@session_loop
async def test_kg_agent_execute_takes_the_seeds_prompt_as_its_schema_text():
    from helpers.kg import SCHEMA_FILE, scripted

    from rags_expert.kg import KGQueryReflexionAgent, QueryResult
    from rags_expert.settings import KGExpertSettings

    class OneRowDB:
        """Returns one gene for any query and records what it ran."""

        def __init__(self) -> None:
            self.ran: list[str] = []

        async def start(self) -> None: ...

        async def run_read(self, query: str, *, timeout: float, max_rows: int) -> QueryResult:
            self.ran.append(query)
            return QueryResult(["g.name"], [{"g.name": "TP53"}])

    own_schema = "Node types: Protein {uniprot}. Only Protein exists in this graph. CUSTOM-INSTRUCTION-7"
    model = scripted(
        ["MATCH (p:Protein) RETURN p.uniprot", "MATCH (p:Protein) RETURN p.uniprot LIMIT 5"], scores=[3, 9]
    )
    settings = KGExpertSettings(kg={"narrow_schema": True, "stop_on_nonempty": False, "max_steps": 3})
    db = OneRowDB()
    agent = KGQueryReflexionAgent(model, db, SCHEMA_FILE, schema_name="gene_kg", settings=settings)
    result = await agent.execute("Which proteins are there?", own_schema)

    assert result.exit_reason == "score" and result.steps == 2 and len(db.ran) == 2
    writers = [text for text, kwargs in model.calls if kwargs["tools"][0] in ("DraftQuery", "RevisedQuery")]
    assert len(writers) == 2  # no SchemaSelection call: the caller's prompt replaces narrowing
    for text in writers:
        assert own_schema in text and "GENE_EXPRESSED_IN_CELL_TYPE" not in text
