"""The KG agent's final answer: the chosen query's rows in words, with the data as ``response_metadata``.

A host reading the conversation sees question → answer. The answer lists at most
``answer_rows`` rows (``kg_answer``), or says honestly why nothing usable came back:
no question (``empty_question``), a model or checkpointer failure (``failure_error``), no query
that ran (``kg_no_query``), or queries that ran but found nothing (``kg_no_rows``).
``response_metadata`` carries ``outcome`` (success|failure), ``question``, ``query``
(the executed one), ``columns``, ``rows`` (capped, JSON types as the database
returned them), ``row_count``, ``truncated``, ``score``, ``steps`` and ``exit_reason``
(plus ``error``/``error_class`` after a model or checkpointer failure: ``checkpointer_error``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage

from rags_expert.checkpoints import COMPONENT, FAULT_REASON
from rags_expert.outcomes import REASON_KEY, FailureReason
from rags_expert.prompts import PromptStore

if TYPE_CHECKING:
    from rags_expert.kg.execution.result import KGQueryResult


def _value(value: Any) -> str:
    """A cell as a user reads it: strings as they are, everything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def format_rows(rows: list[dict[str, Any]], columns: list[str], total: int) -> str:
    """Rows as a bullet list (one column: the values; several: ``column: value`` pairs), noting rows left out."""
    names = columns or (list(rows[0]) if rows else [])
    lines = []
    for row in rows:
        if len(names) == 1:
            lines.append(f"- {_value(row.get(names[0]))}")
        else:
            lines.append("- " + "; ".join(f"{name}: {_value(row.get(name))}" for name in names))
    if total > len(rows):
        lines.append(f"- … and {total - len(rows)} more")
    return "\n".join(lines)


def error_class(error: str) -> str:
    """The exception class of a reflexion error such as ``draft: RateLimitError after 3 attempt(s): ...``."""
    detail = error.split(": ", 1)[1] if ": " in error else error
    return detail.split(" ", 1)[0].rstrip(":") or "error"


def answer_text(result: KGQueryResult, prompts: PromptStore, shown: list[dict[str, Any]]) -> str:
    """What the user reads: the rows found, or an honest failure."""
    question = result.question
    if result.exit_reason == FailureReason.EMPTY_QUESTION:
        return prompts.render("empty_question")
    if result.exit_reason == FailureReason.QUESTION_TOO_LONG:
        return prompts.render("failure_too_long", detail=(result.error or "").split("QuestionTooLong: ", 1)[-1])
    if result.error:
        component = COMPONENT if result.exit_reason == FAULT_REASON else "the language model"
        return prompts.render("failure_error", question=question, component=component, error=error_class(result.error))
    if result.ok:
        total = len(result.rows)
        count = f"{total}{'+' if result.truncated else ''} result{'s' if total != 1 else ''}"
        return prompts.render(
            "kg_answer",
            question=question,
            count=count,
            query=result.query,
            rows=format_rows(shown, result.columns, total),
        )
    if result.query is not None:
        return prompts.render("kg_no_rows", question=question, steps=result.steps, query=result.query)
    last = result.attempts[-1] if result.attempts else {}
    return prompts.render(
        "kg_no_query", question=question, steps=result.steps, error=last.get("error_kind") or "no query"
    )


def answer_message(result: KGQueryResult, prompts: PromptStore, *, answer_rows: int) -> AIMessage:
    """The final AIMessage of one question (see the module docstring)."""
    shown = [dict(row) for row in result.rows[:answer_rows]]
    metadata: dict[str, Any] = {
        "outcome": result.end()["outcome"],
        "question": result.question,
        "query": result.query,
        "columns": list(result.columns),
        "rows": shown,
        "row_count": len(result.rows),
        "truncated": result.truncated,
        "score": result.score,
        "steps": result.steps,
        REASON_KEY: result.exit_reason,
        "exit_reason": result.exit_reason,  # the 0.1 key of the same value, removed in 0.3 (docs/changelog.md)
    }
    if result.error:
        metadata |= {"error": result.error, "error_class": error_class(result.error)}
    return AIMessage(answer_text(result, prompts, shown).strip(), response_metadata=metadata)
