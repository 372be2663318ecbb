"""What one KG question produces: the state it runs on, one log record per node, and the result.

:class:`KGQueryResult` is built from the final state by :func:`build_result` with the
attempt :func:`rags_expert.kg.execution._policy.choose_attempt` picks; :func:`step_record` is the
log record of one node run (kept in ``state['log']`` and ``KGQueryResult.log``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from langchain_core.messages import AIMessage

from rags_expert.kg.execution._policy import choose_attempt
from rags_expert.kg.state import STATE_DEFAULTS, ReflexionState, question_of, state_value
from rags_expert.outcomes import REASON_KEY, FailureReason, Outcome


@dataclass
class KGQueryResult:
    """Outcome of one question: the executed query chosen, its rows and score, and how the loop went."""

    question: str
    query: str | None  # the query that was executed and produced ``rows`` (None if none ran)
    rows: list[dict[str, Any]]
    columns: list[str]
    score: float | None
    steps: int  # queries executed (or attempted)
    reflections: list[str]
    log: list[dict[str, Any]]
    exit_reason: str  # score | non_empty | max_steps | llm_error | empty_question | question_too_long | backend_error
    # | checkpointer_error
    error: str | None = None  # a model failure, when exit_reason is llm_error
    truncated: bool = False
    attempts: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when a query ran and returned rows."""
        return self.query is not None and bool(self.rows) and self.error is None

    def end(self) -> dict[str, Any]:
        """How the run ended, as its final message's metadata says it (``outcome``, ``reason``, ``error``): what
        :func:`rags_expert.outcomes.exit_code` reads."""
        end = {"outcome": (Outcome.SUCCESS if self.ok else Outcome.FAILURE).value, REASON_KEY: self.exit_reason}
        return end | ({"error": self.error} if self.error else {})

    def to_dict(self) -> dict[str, Any]:
        """The result as plain JSON-ready data."""
        return dataclasses.asdict(self)

    @classmethod
    def failed(cls, question: str, exit_reason: str, error: str) -> KGQueryResult:
        """A result for a run that could not start (e.g. ``backend_error``)."""
        return cls(question, None, [], [], None, 0, [], [], exit_reason, error=error)


class KGState(ReflexionState, total=False):
    """Reflexion state plus the per-question schema prompt and one record per executed query."""

    schema_prompt: str
    attempts: list[dict[str, Any]]


KG_STATE_DEFAULTS: Mapping[str, Any] = MappingProxyType({**STATE_DEFAULTS, "schema_prompt": "", "attempts": []})
"""The reflexion defaults plus :class:`KGState`'s own keys (no schema prompt chosen, no attempt yet)."""


def kg_value(state: Mapping[str, Any], key: str) -> Any:
    """:func:`~rags_expert.kg.state.state_value` over :data:`KG_STATE_DEFAULTS`."""
    return state_value(state, key, KG_STATE_DEFAULTS)


def reflections_of(state: KGState) -> list[str]:
    """The critiques of every draft and revision, in order."""
    return [
        str(m.content) for m in kg_value(state, "memory") if isinstance(m, AIMessage) and m.tool_calls and m.content
    ]


DATABASE_FAULTS = frozenset({"connection", "auth", "unavailable"})
"""Query error kinds that are the database's fault, not the query's."""


def build_result(state: KGState, reason: str) -> KGQueryResult:
    """The result of the run whose final state is ``state`` and exit reason ``reason``; ``backend_error`` instead
    when no model failed and every query failed to reach the database (an error, not an honest "no rows")."""
    attempts = kg_value(state, "attempts")
    chosen = choose_attempt(attempts, reason) or {}
    if not kg_value(state, "error") and attempts and all(a.get("error_kind") in DATABASE_FAULTS for a in attempts):
        reason = FailureReason.BACKEND_ERROR.value
    return KGQueryResult(
        question=question_of(state),
        query=chosen.get("query"),
        rows=chosen.get("rows", []),
        columns=chosen.get("columns", []),
        score=chosen.get("score"),
        steps=kg_value(state, "steps"),
        reflections=reflections_of(state),
        log=kg_value(state, "log"),
        exit_reason=reason,
        error=kg_value(state, "error") or None,
        truncated=bool(chosen.get("truncated")),
        attempts=attempts,
    )


def step_record(node: str, update: dict[str, Any]) -> dict[str, Any]:
    """The log record of one node run: the next query and critique, the outcome, the score."""
    record: dict[str, Any] = {}
    if node in ("draft", "revise"):
        message = (update.get("memory") or [None])[-1]
        calls = getattr(message, "tool_calls", None) or []
        if calls:
            record["next_query"] = calls[0]["args"].get("query", "")
        if message is not None and message.content:
            record["reflection"] = str(message.content)
    attempts = update.get("attempts") or []
    if node in ("execute_tool", "revise") and attempts:
        a = attempts[-1]
        record.update(query=a["query"], rows=len(a["rows"]), error=a["error"], error_kind=a["error_kind"])
        if node == "revise":
            record.update(score=a["score"], score_reason=a["score_reason"])
    return record
