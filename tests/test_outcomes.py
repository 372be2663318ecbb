"""One vocabulary of outcomes: each failure reason is written once, in ``rags_expert.outcomes``."""

from __future__ import annotations

import ast
from pathlib import Path

from rags_expert.outcomes import NOT_FOUND_REASONS, FailureReason, exit_code

PACKAGE = Path(__file__).resolve().parents[1] / "rags_expert"


def _written_reasons(path: Path) -> list[str]:
    """``line: value`` of each string constant equal to a failure reason, except a prompt's name (the first
    argument of ``.render``/``.get``) and a mapping key (settings and flags share some words: ``max_steps``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    allowed = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("render", "get"):
            allowed.update(id(arg) for arg in node.args[:1])
        elif isinstance(node, ast.Dict):
            allowed.update(id(key) for key in node.keys if key is not None)
    reasons = {r.value for r in FailureReason}
    return [
        f"{node.lineno}: {node.value}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in reasons and id(node) not in allowed
    ]


def test_no_failure_reason_is_written_outside_the_outcomes_module():
    written = {
        str(path.relative_to(PACKAGE)): found
        for path in PACKAGE.rglob("*.py")
        if path.name != "outcomes.py" and (found := _written_reasons(path))
    }
    assert written == {}


def test_the_check_sees_a_reason_written_by_hand(tmp_path):
    module = tmp_path / "node.py"
    module.write_text('def fail():\n    return {"failure_reason": "llm_error"}\n', encoding="utf-8")
    assert _written_reasons(module) == ["2: llm_error"]


def test_a_reason_is_its_string_in_the_metadata_a_caller_reads():
    assert exit_code({"outcome": "failure", "reason": "not_useful"}) == 1
    assert exit_code({"outcome": "failure", "reason": FailureReason.BUDGET_EXCEEDED}) == 2
    assert exit_code({"outcome": "failure", "reason": "not_grounded", "error": "LLMCallError: 500"}) == 2
    assert {str(r) for r in NOT_FOUND_REASONS} == {"no_relevant_documents", "not_grounded", "not_useful"}
