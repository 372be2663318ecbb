"""What the KG agent tells the model: the system prompt with the schema, draft and revise prompts, results.

Every text comes from a prompt file (``kg_system``, ``kg_draft``, ``kg_revise``,
``kg_narrow_schema``, ``lessons_block``); this module only fills them in. An executed
query is shown to the model by :meth:`KGPrompter.describe` (the error, ``EMPTY``, or a
row preview capped by ``kg.preview_rows``/``kg.preview_chars``), and earlier attempts
by :meth:`KGPrompter.history`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from rags_expert.lessons import lessons_block
from rags_expert.prompts import PromptStore
from rags_expert.settings import KGSettings

QUERY_LANGUAGE = "Cypher"
HISTORY_ATTEMPTS = 5  # earlier attempts shown in a revise prompt
HISTORY_ROWS = 3  # rows of each earlier attempt shown there


@dataclass(frozen=True)
class KGPrompter:
    """Renders the KG agent's prompts from a prompt store and the ``kg`` settings."""

    prompts: PromptStore
    kg: KGSettings

    def render(self, key: str, **variables: Any) -> str:
        """Prompt ``key`` filled in; ``query_language`` is supplied when the prompt uses it."""
        if "query_language" in self.prompts.variables(key):
            variables["query_language"] = QUERY_LANGUAGE
        return self.prompts.render(key, **variables)

    def system(self, schema_prompt: str) -> SystemMessage:
        """The system message: the role, the rules and the schema text shown for this question."""
        return SystemMessage(self.render("kg_system", schema=schema_prompt))

    def narrow_schema(self, question: str, schema_summary: str) -> list[BaseMessage]:
        """The request to pick the entities and relationships ``question`` needs."""
        return [HumanMessage(self.render("kg_narrow_schema", question=question, schema=schema_summary))]

    def draft(self, schema_prompt: str, question: str, lessons: list[str]) -> list[BaseMessage]:
        """System + draft prompt for the first query, with recalled lessons when there are any."""
        block = lessons_block(self.prompts, lessons)
        return [self.system(schema_prompt), HumanMessage(self.render("kg_draft", question=question, lessons=block))]

    def revise(self, schema_prompt: str, question: str, attempts: list[dict[str, Any]]) -> list[BaseMessage]:
        """System + revise prompt: the latest attempt with its score, and the earlier ones as history."""
        last = attempts[-1]
        prompt = self.render(
            "kg_revise",
            question=question,
            history=self.history(attempts[:-1]),
            query=last["query"] or "(none)",
            result=self.describe(last),
            score=f"{last['score']:g}",
            score_reason=last["score_reason"],
        )
        return [self.system(schema_prompt), HumanMessage(prompt)]

    def describe(self, attempt: dict[str, Any], rows_shown: int | None = None) -> str:
        """What the model is told about an executed query: the error, EMPTY, or a preview of the rows."""
        if attempt.get("error"):
            return f"ERROR ({attempt['error_kind']}): {attempt['error']}"
        rows = attempt.get("rows") or []
        if not rows:
            return "EMPTY: the query ran without error and returned 0 rows."
        shown = rows[: rows_shown or self.kg.preview_rows]
        more = " (more rows were cut at the row limit)" if attempt.get("truncated") else ""
        head = f"{len(rows)} row(s){more}; columns: {', '.join(attempt.get('columns') or [])}"
        body = "\n".join(json.dumps(r, ensure_ascii=False, default=str) for r in shown)
        if len(shown) < len(rows):
            body += f"\n... {len(rows) - len(shown)} more row(s)"
        text = f"{head}\n{body}"
        limit = self.kg.preview_chars
        return text if len(text) <= limit else text[:limit] + " ...[cut]"

    def brief(self, attempt: dict[str, Any]) -> str:
        """An attempt in two lines (query and a short result), as a lesson or history entry shows it."""
        return f"query: {attempt.get('query') or '(none)'}\nresult: {self.describe(attempt, rows_shown=HISTORY_ROWS)}"

    def history(self, attempts: list[dict[str, Any]]) -> str:
        """The last few attempts with their result, score and critique, oldest first ("(none)" for none)."""
        entries = []
        for a in attempts[-HISTORY_ATTEMPTS:]:
            score = "not scored" if a.get("score") is None else f"{a['score']:g}/10 {a.get('score_reason', '')}".strip()
            entries.append(
                f"Attempt {a['step']}:\n  query: {a.get('query') or '(none)'}\n"
                f"  result: {self.describe(a, rows_shown=HISTORY_ROWS)}\n  score: {score}\n"
                f"  critique: {a.get('reflection') or '(none)'}"
            )
        return "\n".join(entries) or "(none)"
