"""One vocabulary of outcomes: each outcome, end reason and answer kind is written once, in ``rags_expert.outcomes``."""

from __future__ import annotations

import ast
from pathlib import Path

from rags_expert.outcomes import (
    NOT_FOUND_REASONS,
    REASON_KEY,
    AnswerKind,
    DraftFate,
    FailureReason,
    Outcome,
    OutcomeName,
    StopReason,
    exit_code,
)

PACKAGE = Path(__file__).resolve().parents[1] / "rags_expert"


VOCABULARY = [Outcome, FailureReason, StopReason, AnswerKind, DraftFate]
"""Every enum of the vocabulary: its strings are written only in ``rags_expert/outcomes.py``. ``score`` is also
the field of a reranker's, a grader's and a search hit's reply: :class:`StopReason` is checked in ``kg/`` (where
it is a reason) and the CLI and hosts that read the KG's metadata."""

STOP_REASON_SCOPE = ("kg", "cli", "hosts", "fred")


def _written_reasons(path: Path, vocabulary: list[type] = VOCABULARY) -> list[str]:
    """``line: value`` of each string constant equal to a value of :data:`VOCABULARY`, except a prompt's name or a
    key read (the first argument of ``.render``/``.get``), a mapping key or subscript (settings, flags and
    attempt records share some words: ``max_steps``, ``score``) and a LangChain ``ToolMessage``'s own ``status``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    allowed = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("render", "get"):
            allowed.update(id(arg) for arg in node.args[:1])
        elif isinstance(node, ast.Dict):
            allowed.update(id(key) for key in node.keys if key is not None)
        elif isinstance(node, ast.Subscript):
            allowed.add(id(node.slice))
        elif isinstance(node, ast.keyword) and node.arg == "status":
            allowed.update(id(n) for n in ast.walk(node.value))
    reasons = {member.value for enum in vocabulary for member in enum}
    return [
        f"{node.lineno}: {node.value}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in reasons and id(node) not in allowed
    ]


def test_no_outcome_reason_or_answer_kind_is_written_outside_the_outcomes_module():
    written = {
        str(path.relative_to(PACKAGE)): found
        for path in PACKAGE.rglob("*.py")
        if path.name != "outcomes.py"
        and (
            found := _written_reasons(
                path,
                VOCABULARY
                if path.relative_to(PACKAGE).parts[0] in STOP_REASON_SCOPE
                else [e for e in VOCABULARY if e is not StopReason],
            )
        )
    }
    assert written == {}


def test_the_check_sees_a_value_written_by_hand(tmp_path):
    module = tmp_path / "node.py"
    module.write_text(
        'def fail(meta):\n    return {"failure_reason": "llm_error", "answer_kind": "extractive"}\n'
        'def ok(meta):\n    return meta.get("outcome") == "success" or meta["score"] == "score"\n',
        encoding="utf-8",
    )
    assert _written_reasons(module) == ["2: llm_error", "2: extractive", "4: success", "4: score"]


def test_the_outcome_literal_lists_the_outcome_values():
    assert set(OutcomeName.__args__) == {o.value for o in Outcome}


def test_a_reason_is_its_string_in_the_metadata_a_caller_reads():
    assert exit_code({"outcome": "failure", "reason": "not_useful"}) == 1
    assert exit_code({"outcome": "failure", "reason": FailureReason.BUDGET_EXCEEDED}) == 2
    assert exit_code({"outcome": "failure", "reason": "not_grounded", "error": "LLMCallError: 500"}) == 2
    assert {str(r) for r in NOT_FOUND_REASONS} == {
        "no_relevant_documents",
        "not_grounded",
        "not_useful",
        "max_steps",
        "score",
        "non_empty",
    }


def test_one_exit_code_reads_both_agents_final_messages():
    """The KG's metadata has the RAG's key: no rows after the loop stopped is a not-found, a dead database an error."""
    assert exit_code({"outcome": "success", REASON_KEY: "score"}) == 0
    assert exit_code({"outcome": "failure", REASON_KEY: "max_steps"}) == 1
    assert exit_code({"outcome": "failure", REASON_KEY: "score"}) == 1
    assert exit_code({"outcome": "failure", REASON_KEY: "backend_error"}) == 2
    assert exit_code({"outcome": "failure", REASON_KEY: "llm_error", "error": "draft: RateLimitError"}) == 2


def test_there_is_one_exit_code_function_in_the_package():
    defined = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef) and node.name == "exit_code"
    ]
    assert defined == ["outcomes.py"]
