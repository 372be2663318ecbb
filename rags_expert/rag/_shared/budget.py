"""The per-question budget (``budget.max_calls`` / ``budget.max_tokens``), checked between nodes.

:func:`budgeted` wraps a router of the graph: when its state has used up a budget (as many calls as
``max_calls``, or as many tokens as ``max_tokens``) and the router would go on to a node that may call the model,
the run goes to the ``budget_exceeded`` node instead, which records the reason; from there the run gives up as
it does when its caps run out (the extractive fallback where it is on, else the honest failure naming the
budget). Routes that end the run or never call the model are left alone, so an accepted answer is still
accepted. A node's calls are not split: the last node started may overshoot a budget by its own calls. Both
the check and the routers are pure functions of the state (the budget is copied into it by ``prepare``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, get_args, get_type_hints

from rags_expert.llm.usage import total_tokens
from rags_expert.outcomes import FailureReason
from rags_expert.rag.names import Node
from rags_expert.rag.state import RagState, value

NO_MODEL_CALL = frozenset(
    {Node.EXTRACT_ANSWER, Node.ANSWER_HOP, Node.FINALIZE_SUCCESS, Node.FINALIZE_FAILURE, Node.BUDGET_EXCEEDED}
)
"""Destinations that never call the model: a budget never diverts a route to them."""


def spent_budget(state: RagState) -> tuple[str, int, int] | None:
    """``(name, limit, used)`` of the first budget the question has used up (``max_calls``, then
    ``max_tokens``); None while both last or there are none."""
    max_calls, max_tokens = value(state, "max_calls"), value(state, "max_tokens")
    calls = value(state, "llm_calls")
    if max_calls is not None and calls >= max_calls:
        return "max_calls", max_calls, calls
    if max_tokens is not None and (tokens := total_tokens(value(state, "usage"))) >= max_tokens:
        return "max_tokens", max_tokens, tokens
    return None


def budget_text(name: str, limit: int) -> str:
    """The budget as the failure message names it: "the LLM-call budget of 5 calls"."""
    if name == "max_calls":
        return f"the LLM-call budget of {limit} call{'s' if limit != 1 else ''}"
    return f"the token budget of {limit} token{'s' if limit != 1 else ''}"


Router = Callable[[RagState], str]
Routes = tuple[Router, list[str]]
"""A router and its destinations: the arguments of ``add_conditional_edges`` after the node."""


def routes(router: Router) -> Routes:
    """``router`` and its destinations (its ``Literal`` return type, as plain strings)."""
    return router, [str(destination) for destination in get_args(get_type_hints(router)["return"])]


def budgeted(router: Router) -> Routes:
    """``router`` with the budget check, and its destinations (the router's ``Literal`` return type plus the
    budget node) for ``add_conditional_edges``."""
    destinations = routes(router)[1]

    def route(state: RagState) -> str:
        destination = router(state)
        if destination not in NO_MODEL_CALL and spent_budget(state) is not None:
            return Node.BUDGET_EXCEEDED
        return destination

    route.__name__ = router.__name__
    route.__doc__ = router.__doc__
    return route, [*destinations, Node.BUDGET_EXCEEDED.value]


async def budget_exceeded(state: RagState) -> dict[str, Any]:
    """The run has used up a budget: record why it ends (a later extractive quote may still answer)."""
    return {"failure_reason": FailureReason.BUDGET_EXCEEDED.value}
