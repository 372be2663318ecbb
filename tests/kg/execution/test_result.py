"""The KG run's result from its final state, and how it ended in the outcome vocabulary."""

from __future__ import annotations

import json

from rags_expert.kg.execution.result import build_result
from rags_expert.outcomes import exit_code


def _state(*kinds, rows=(), error=""):
    attempts = [
        {
            "step": i + 1,
            "query": "MATCH (g:Gene) RETURN g.name",
            "rows": list(rows) if kind is None else [],
            "columns": ["g.name"],
            "error": "failed" if kind else None,
            "error_kind": kind,
            "score": None if kind else 8.0,
        }
        for i, kind in enumerate(kinds)
    ]
    return {"messages": [], "question": "Which genes?", "attempts": attempts, "steps": len(attempts), "error": error}


def test_rows_found_end_in_success_with_the_stop_reason():
    result = build_result(_state(None, rows=[{"g.name": "TP53"}]), "score")
    assert result.ok and result.rows == [{"g.name": "TP53"}]
    assert result.end() == {"outcome": "success", "reason": "score"}
    assert exit_code(result.end()) == 0
    json.dumps(result.to_dict())  # plain data


def test_every_query_failing_on_the_database_ends_with_backend_error():
    result = build_result(_state("connection", "unavailable"), "max_steps")
    assert result.exit_reason == "backend_error" and exit_code(result.end()) == 2


def test_a_wrong_query_beside_a_dead_database_is_an_honest_no_rows():
    result = build_result(_state("connection", "syntax"), "max_steps")
    assert result.exit_reason == "max_steps" and exit_code(result.end()) == 1


def test_a_model_failure_keeps_its_reason_and_error():
    result = build_result(_state("connection", error="draft: RateLimitError"), "llm_error")
    assert result.exit_reason == "llm_error"
    assert result.end() == {"outcome": "failure", "reason": "llm_error", "error": "draft: RateLimitError"}
    assert exit_code(result.end()) == 2
