"""Running one proposed query: the action as a tool call, the read-only run, the attempt record.

A draft or revision is stored in the loop's memory as an ``AIMessage`` whose text is
the critique and whose tool call ``run_cypher`` carries the query
(:func:`action_message`). ``execute_tool`` takes that query (:func:`latest_call`),
refuses it before execution when it has a write clause, runs it in the database's
read-only mode with ``kg.query_timeout`` and ``kg.max_rows``, and records the outcome
as an *attempt* (:func:`new_attempt`): a plain dict with ``step``, ``query``,
``columns``, ``rows``, ``truncated``, ``error``, ``error_kind``, ``score``,
``score_reason`` and ``reflection``. Every failure (no query, a refused write, a
database error, an unexpected client fault, redacted) is recorded, never raised.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage

from rags_expert.kg.backends import GraphBackend, GraphQueryError
from rags_expert.kg.execution.safety import write_clause_reason
from rags_expert.kg.replies import clean_query
from rags_expert.llm.chat import redact
from rags_expert.settings import KGSettings

TOOL_NAME = "run_cypher"
NO_QUERY = "no query was found in the reply; reply with JSON holding a Cypher query"


def call_id(step: int) -> str:
    """The tool-call id of the action executed at ``step``."""
    return f"{TOOL_NAME}_{step}"


def action_message(query: str, reflection: str, step: int) -> AIMessage:
    """The memory entry of a draft/revision: the critique as text, the query as a tool call."""
    return AIMessage(
        content=reflection,
        tool_calls=[{"name": TOOL_NAME, "args": {"query": query}, "id": call_id(step), "type": "tool_call"}],
    )


def latest_call(memory: Sequence[AnyMessage], step: int) -> tuple[str, str]:
    """(query, tool-call id) of the latest action in ``memory``; the query is "" when there is none."""
    last = next((m for m in reversed(memory) if isinstance(m, AIMessage)), None)
    calls = last.tool_calls if last is not None else []
    call: Mapping[str, Any] = calls[0] if calls else {}
    query = clean_query(str(call.get("args", {}).get("query", "") or ""))
    return query, call.get("id") or call_id(step)


def new_attempt(step: int, query: str) -> dict[str, Any]:
    """An attempt record before the query runs (see the module docstring)."""
    return {
        "step": step,
        "query": query,
        "columns": [],
        "rows": [],
        "truncated": False,
        "error": None,
        "error_kind": None,
        "score": None,
        "score_reason": "",
        "reflection": "",
    }


async def run_attempt(
    backend: GraphBackend, query: str, step: int, kg: KGSettings, secrets: Sequence[str] = ()
) -> dict[str, Any]:
    """Pre-check ``query`` for writes, run it read-only and return its attempt record."""
    attempt = new_attempt(step, query)
    if not query:
        attempt.update(error=NO_QUERY, error_kind="no_query")
    elif reason := write_clause_reason(query):
        attempt.update(error=f"refused before execution: {reason}", error_kind="write_rejected")
    else:
        try:
            result = await backend.run_read(query, timeout=kg.query_timeout, max_rows=kg.max_rows)
            attempt.update(columns=result.columns, rows=result.rows, truncated=result.truncated)
        except GraphQueryError as exc:
            attempt.update(error=exc.message, error_kind=exc.kind)
        except Exception as exc:  # noqa: BLE001 - an unexpected client fault still becomes a reflection
            attempt.update(error=redact(f"{type(exc).__name__}: {exc}", secrets)[:1000], error_kind="error")
    return attempt


def tool_message(attempt: dict[str, Any], content: str, tool_call_id: str) -> ToolMessage:
    """The tool message the model sees for ``attempt`` (``content`` describes the outcome)."""
    return ToolMessage(
        content=content, tool_call_id=tool_call_id, name=TOOL_NAME, status="error" if attempt["error"] else "success"
    )
