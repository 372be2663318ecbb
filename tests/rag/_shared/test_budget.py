"""The per-question budget between nodes: which budget is spent, and which routes it diverts."""

from __future__ import annotations

from typing import Literal

from rags_expert.rag._shared.budget import budget_text, budgeted, spent_budget
from rags_expert.rag.names import Node


def test_the_first_budget_used_up_is_named_calls_before_tokens():
    assert spent_budget({}) is None  # no budget
    assert spent_budget({"max_calls": 3, "llm_calls": 2}) is None
    assert spent_budget({"max_calls": 3, "llm_calls": 3, "max_tokens": 1}) == ("max_calls", 3, 3)
    usage = {"model": {"input_tokens": 60, "output_tokens": 40, "total_tokens": 100}}
    assert spent_budget({"max_tokens": 100, "usage": usage}) == ("max_tokens", 100, 100)
    assert spent_budget({"max_tokens": 101, "usage": usage}) is None


def test_the_budget_is_worded_with_its_unit():
    assert budget_text("max_calls", 1) == "the LLM-call budget of 1 call"
    assert budget_text("max_calls", 5) == "the LLM-call budget of 5 calls"
    assert budget_text("max_tokens", 2000) == "the token budget of 2000 tokens"


def _next(state) -> Literal[Node.GENERATE, Node.FINALIZE_SUCCESS]:
    return Node.FINALIZE_SUCCESS if state.get("done") else Node.GENERATE


def test_a_spent_budget_diverts_only_a_route_that_may_call_the_model():
    route, destinations = budgeted(_next)
    assert destinations == ["generate", "finalize_success", "budget_exceeded"]
    spent = {"max_calls": 1, "llm_calls": 1}
    assert route({}) == Node.GENERATE
    assert route(spent) == Node.BUDGET_EXCEEDED
    assert route({**spent, "done": True}) == Node.FINALIZE_SUCCESS  # an accepted answer is still accepted
