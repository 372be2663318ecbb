"""The reflexion state's defaults table, its one accessor, and the routers' Literal types."""

from __future__ import annotations

import typing

import pytest

from rags_expert.kg.execution.result import KG_STATE_DEFAULTS, KGState, kg_value
from rags_expert.kg.reflexion import STATE_DEFAULTS, ReflexionAgent, ReflexionState, state_value


def test_every_state_key_has_a_default():
    assert set(STATE_DEFAULTS) == set(ReflexionState.__annotations__)
    assert set(KG_STATE_DEFAULTS) == set(typing.get_type_hints(KGState))


def test_steps_counts_executions_so_far_and_starts_at_0():
    assert state_value({}, "steps") == 0
    assert kg_value({}, "steps") == 0
    assert state_value({"steps": 3}, "steps") == 3


def test_a_missing_or_none_key_reads_as_its_default_and_a_list_default_is_fresh():
    first = state_value({}, "log")
    first.append({"node": "draft"})
    assert state_value({}, "log") == []
    assert state_value({"error": None}, "error") == ""
    assert kg_value({"attempts": None}, "attempts") == []


def test_an_unknown_key_fails_loudly():
    with pytest.raises(KeyError, match="stpes"):
        state_value({"stpes": 1}, "stpes")
    with pytest.raises(KeyError):
        state_value({}, "attempts")  # a KG key: read it through kg_value


def test_reset_state_starts_every_per_question_key_at_its_default():
    fresh = ReflexionAgent.reset_state(object.__new__(ReflexionAgent))
    assert {k: v for k, v in fresh.items() if k != "memory"} == {
        k: STATE_DEFAULTS[k] for k in ("question", "steps", "log", "error", "exit_reason")
    }


@pytest.mark.parametrize(
    ("router", "targets"),
    [
        ("_after_prepare", {"draft", "finalize"}),
        ("_after_draft", {"execute_tool", "finalize"}),
        ("should_continue", {"execute_tool", "finalize"}),
    ],
)
def test_the_routers_return_literal_node_names(router, targets):
    returned = typing.get_type_hints(getattr(ReflexionAgent, router))["return"]
    assert typing.get_origin(returned) is typing.Literal
    assert set(typing.get_args(returned)) == targets
