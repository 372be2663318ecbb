"""The KG run's final message: what the user reads and the metadata a host reads."""

from __future__ import annotations

from rags_expert.kg.execution._answer import answer_message, error_class
from rags_expert.kg.execution.result import build_result
from rags_expert.outcomes import exit_code
from rags_expert.prompts import PromptStore


def _state(rows, kind=None, error=""):
    attempt = {
        "step": 1,
        "query": "MATCH (g:Gene) RETURN g.name",
        "rows": rows,
        "columns": ["g.name"],
        "error": "failed" if kind else None,
        "error_kind": kind,
        "score": None if kind else 9.0,
    }
    return {"messages": [], "question": "Which genes?", "attempts": [attempt], "steps": 1, "error": error}


def test_rows_are_the_answer_and_the_metadata_says_why_the_run_ended_under_both_keys():
    rows = [{"g.name": f"G{i}"} for i in range(5)]
    message = answer_message(build_result(_state(rows), "score"), PromptStore(), answer_rows=2)
    meta = message.response_metadata
    assert meta["outcome"] == "success" and meta["reason"] == meta["exit_reason"] == "score"
    assert meta["rows"] == rows[:2] and meta["row_count"] == 5 and meta["query"] == "MATCH (g:Gene) RETURN g.name"
    assert "G0" in message.content and "G4" not in message.content
    assert exit_code(meta) == 0


def test_a_dead_database_is_an_error_in_the_metadata_not_a_not_found():
    message = answer_message(build_result(_state([], kind="connection"), "max_steps"), PromptStore(), answer_rows=5)
    meta = message.response_metadata
    assert meta["outcome"] == "failure" and meta["reason"] == "backend_error" and exit_code(meta) == 2


def test_a_model_failure_names_its_class_without_its_message():
    error = "draft: RateLimitError after 3 attempt(s): secret details"
    result = build_result(_state([], error=error), "llm_error")
    message = answer_message(result, PromptStore(), answer_rows=5)
    meta = message.response_metadata
    assert "RateLimitError" in message.content and "secret details" not in message.content
    assert meta["error_class"] == error_class(error) == "RateLimitError"
    assert meta["reason"] == "llm_error" and exit_code(meta) == 2
