"""KGQueryReflexionAgent: writes Cypher for a BioCypher graph, runs it read-only, scores, reflects, revises.

One run for one question:

1. **draft** – (optionally narrow the schema to what the question needs, then) ask
   the model for a query and a self-critique (``kg_system`` + ``kg_draft``).
2. **execute_tool** – pre-check the query for write clauses, then run it in the
   database's read-only mode with a time limit and a row cap. Errors (syntax,
   unknown labels, timeouts, refused writes) become the tool message.
3. **revise** – score the outcome with the shared scorer (``kg_score``; an error
   or a missing query scores 0 without a model call); unless an exit rule holds,
   ask for a revised query (``kg_revise``, which keeps the schema and shows
   every earlier attempt with its critique).
4. **should_continue** – stop on a score ≥ ``kg.score_threshold``, on rows when
   ``kg.stop_on_nonempty``, after ``kg.max_steps`` executed queries, or when a
   model call failed for good.
5. **finalize** – append the answer to the conversation: the chosen query's rows in
   words (at most ``kg.answer_rows``) with ``response_metadata`` holding the query,
   columns, rows, score, steps and exit reason, or an honest failure
   (:mod:`rags_expert.kg.answer`).

Before the draft, ``prepare`` takes the last human message as the question and, on a
thread with earlier conversation, makes it standalone with the shared
``condense_question`` (see :mod:`rags_expert.kg.reflexion`).

Structured replies go through :func:`rags_expert.grading.structured_call`; a
reply that does not parse is searched for a Cypher code block or statement, and
when none is found the next tool message tells the model so (a reflection, not
an exception).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from rags_expert.grading import GradingContext, StructuredReply, condense_question, score, structured_call
from rags_expert.lessons import LessonMemory, learn_from_failure, recall_lessons
from rags_expert.llm import LLMCallError, redact
from rags_expert.conversation import history_text
from rags_expert.parsing import extract_code_block
from rags_expert.settings import RagsExpertSettings, coerce_settings
from rags_expert.kg.answer import answer_message
from rags_expert.kg.backends import GraphBackend, GraphQueryError
from rags_expert.kg.reflexion import ReflexionAgent, ReflexionState, question_of
from rags_expert.kg.safety import write_clause_reason
from rags_expert.kg.schema import KGSchema, load_schema

log = logging.getLogger(__name__)

TOOL_NAME = "run_cypher"
LESSON_SCOPE = "kg"
QUERY_LANGUAGE = "Cypher"


# --- reply schemas ----------------------------------------------------------------------------------


class DraftQuery(BaseModel):
    """A Cypher query answering the question, with a one-sentence self-critique."""

    model_config = ConfigDict(populate_by_name=True)

    query: str = Field(
        validation_alias=AliasChoices("query", "cypher", "cypher_query", "revised_query", "answer"),
        description="one read-only Cypher query (MATCH ... RETURN)",
    )
    reflection: str = Field(
        "",
        validation_alias=AliasChoices("reflection", "critique", "reasoning", "explanation"),
        description="one sentence: what could be wrong with this query",
    )


class RevisedQuery(DraftQuery):
    """A revised Cypher query, with what was wrong and what changed."""


class SchemaSelection(BaseModel):
    """The entity labels and relationship types a question needs."""

    entities: list[str] = Field(default_factory=list, description="entity labels the query must match")
    relationships: list[str] = Field(default_factory=list, description="relationship types it must traverse")


# --- reading replies --------------------------------------------------------------------------------

_STATEMENT_START = re.compile(r"(?im)^\s*((?:OPTIONAL\s+)?MATCH|CALL|WITH|UNWIND)\b")


def clean_query(text: str) -> str:
    """Strip whitespace, wrapping quotes/backticks and a trailing semicolon."""
    query = text.strip()
    if len(query) >= 2 and query[0] == query[-1] and query[0] in "`'\"":
        query = query[1:-1].strip()
    return query.rstrip(";").strip()


def extract_cypher(text: str) -> str | None:
    """A Cypher statement in free text: a fenced block, else the lines from the first MATCH/CALL/WITH/UNWIND."""
    if block := extract_code_block(text, ("cypher", "sql", "neo4j", "opencypher")):
        return clean_query(block)
    m = _STATEMENT_START.search(text or "")
    if not m:
        return None
    body = text[m.start():].split("\n\n", 1)[0]
    return clean_query(body) or None


def read_query_reply(reply: StructuredReply) -> tuple[str, str]:
    """(query, reflection) from a structured reply; the query is "" when none can be found."""
    if reply.parsed is not None and reply.parsed.query.strip():
        return clean_query(reply.parsed.query), reply.parsed.reflection.strip()
    query = extract_cypher(reply.raw) or ""
    if query:
        return query, ""
    return "", f"The reply could not be read as a query: {reply.raw[:300]!r}"


# --- result -----------------------------------------------------------------------------------------


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
    exit_reason: str  # score | non_empty | max_steps | llm_error
    error: str | None = None  # a model failure, when exit_reason is llm_error
    truncated: bool = False
    attempts: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when a query ran and returned rows."""
        return self.query is not None and bool(self.rows) and self.error is None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class KGState(ReflexionState, total=False):
    """Reflexion state plus the per-question schema prompt and one record per executed query."""

    schema_prompt: str
    attempts: list[dict[str, Any]]


# --- the agent --------------------------------------------------------------------------------------


class KGQueryReflexionAgent(ReflexionAgent[KGQueryResult]):
    """Answer questions over a BioCypher knowledge graph with self-revised Cypher; see the module docstring."""

    state_schema = KGState

    def __init__(
        self,
        chat_model: BaseChatModel,
        backend: GraphBackend,
        schema: KGSchema | Mapping[str, Any] | str | Path,
        *,
        schema_name: str | None = None,
        settings: RagsExpertSettings | dict[str, Any] | None = None,
        ctx: GradingContext | None = None,
        lesson_memory: LessonMemory | None = None,
    ) -> None:
        self.settings = coerce_settings(settings)
        self.kg = self.settings.kg
        super().__init__(self.kg.max_steps)
        self.model = chat_model
        self.backend = backend
        self.schema = load_schema(schema, schema_name)
        self.ctx = ctx or GradingContext.from_settings(self.settings)
        self.ctx.prompts.validate()
        # draft/revise replies carry a whole query: their own output cap, same timeout and retries.
        self._query_ctx = dataclasses.replace(
            self.ctx, settings=self.ctx.settings.model_copy(update={"max_tokens": self.kg.max_tokens})
        )
        self._secrets = self.settings.secrets()
        self.lessons = lesson_memory if self.settings.lessons.enabled else None

    # --- prompts ---

    def _render(self, key: str, **variables: Any) -> str:
        return self.ctx.prompts.render(key, query_language=QUERY_LANGUAGE, **variables) if (
            "query_language" in self.ctx.prompts.variables(key)
        ) else self.ctx.prompts.render(key, **variables)

    def _system(self, state: KGState) -> SystemMessage:
        return SystemMessage(self._render("kg_system", schema=state.get("schema_prompt") or self.schema.prompt()))

    async def schema_for(self, question: str) -> KGSchema:
        """The schema shown for ``question``: all of it, or the part the model picks when ``kg.narrow_schema``."""
        if not self.kg.narrow_schema:
            return self.schema
        prompt = self.ctx.prompts.render("kg_narrow_schema", question=question, schema=self.schema.summary())
        try:
            reply = await structured_call(self.model, SchemaSelection, [HumanMessage(prompt)], self.ctx)
        except LLMCallError as exc:
            log.warning("schema narrowing failed (%s); using the whole schema", exc)
            return self.schema
        if reply.parsed is not None:
            entities, relationships = reply.parsed.entities, reply.parsed.relationships
        else:  # tolerant: any label or relationship type named in the text
            named = lambda label: re.search(rf"(?<![\w]){re.escape(label)}(?![\w])", reply.raw) is not None  # noqa: E731
            entities = [e.label for e in self.schema.entities if named(e.label)]
            relationships = [r.label for r in self.schema.relationships if named(r.label)]
        return self.schema.subset(entities, relationships)

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

    def _history(self, attempts: list[dict[str, Any]]) -> str:
        lines = []
        for a in attempts[-5:]:
            score = "not scored" if a.get("score") is None else f"{a['score']:g}/10 {a.get('score_reason', '')}".strip()
            lines.append(
                f"Attempt {a['step']}:\n  query: {a.get('query') or '(none)'}\n"
                f"  result: {self.describe(a, rows_shown=3)}\n  score: {score}\n"
                f"  critique: {a.get('reflection') or '(none)'}"
            )
        return "\n".join(lines) or "(none)"

    @staticmethod
    def _action(query: str, reflection: str, step: int) -> AIMessage:
        """The memory entry of a draft/revision: the critique as text, the query as a tool call."""
        return AIMessage(
            content=reflection,
            tool_calls=[{"name": TOOL_NAME, "args": {"query": query}, "id": f"{TOOL_NAME}_{step}", "type": "tool_call"}],
        )

    # --- responders and tool ---

    async def draft(self, state: KGState) -> dict[str, Any]:
        """Choose the schema for this question and draft the first query."""
        question = question_of(state)
        schema_prompt = (await self.schema_for(question)).prompt()
        state = {**state, "schema_prompt": schema_prompt}
        lessons = await recall_lessons(self.lessons, question, LESSON_SCOPE)
        block = self.ctx.prompts.render("lessons_block", lessons="\n".join(f"- {t}" for t in lessons)) if lessons else ""
        messages = [self._system(state), HumanMessage(self._render("kg_draft", question=question, lessons=block))]
        reply = await structured_call(self.model, DraftQuery, messages, self._query_ctx)
        query, reflection = read_query_reply(reply)
        return {"schema_prompt": schema_prompt, "attempts": [], "memory": [self._action(query, reflection, 1)]}

    async def run_tool(self, state: KGState) -> dict[str, Any]:
        """Pre-check the latest query for writes, run it read-only, record the outcome as a tool message."""
        step = state.get("steps", 1)
        last = next((m for m in reversed(state.get("memory", [])) if isinstance(m, AIMessage)), None)
        call = (last.tool_calls or [None])[0] if last is not None else None
        query = clean_query(str((call or {}).get("args", {}).get("query", "") or ""))
        attempt: dict[str, Any] = {
            "step": step, "query": query, "columns": [], "rows": [], "truncated": False,
            "error": None, "error_kind": None, "score": None, "score_reason": "", "reflection": "",
        }
        if not query:
            attempt.update(error="no query was found in the reply; reply with JSON holding a Cypher query",
                           error_kind="no_query")
        elif reason := write_clause_reason(query):
            attempt.update(error=f"refused before execution: {reason}", error_kind="write_rejected")
        else:
            try:
                result = await self.backend.run_read(query, timeout=self.kg.query_timeout, max_rows=self.kg.max_rows)
                attempt.update(columns=result.columns, rows=result.rows, truncated=result.truncated)
            except GraphQueryError as exc:
                attempt.update(error=exc.message, error_kind=exc.kind)
            except Exception as exc:  # an unexpected client fault still becomes a reflection
                attempt.update(error=redact(f"{type(exc).__name__}: {exc}", self._secrets)[:1000], error_kind="error")
        message = ToolMessage(
            content=self.describe(attempt),
            tool_call_id=(call or {}).get("id") or f"{TOOL_NAME}_{step}",
            name=TOOL_NAME,
            status="error" if attempt["error"] else "success",
        )
        return {"memory": [message], "attempts": [*state.get("attempts", []), attempt]}

    async def revise(self, state: KGState) -> dict[str, Any]:
        """Score the latest outcome; unless an exit rule now holds, ask for a revised query."""
        attempts = [dict(a) for a in state.get("attempts", [])]
        last = attempts[-1]
        if last["error"]:
            last.update(score=0.0, score_reason="the query did not run")
        else:
            graded = await score(
                self.model, self.ctx, prompt_key="kg_score",
                question=question_of(state), query=last["query"], result=self.describe(last),
            )
            last.update(score=graded.score, score_reason=graded.reason or ("" if graded.parsed else "unparsed score"))
        if last["score"] < self.kg.score_threshold:
            await learn_from_failure(
                self.lessons, self.model, self.ctx, scope=LESSON_SCOPE, question=question_of(state),
                attempt=f"query: {last['query'] or '(none)'}\nresult: {self.describe(last, rows_shown=3)}",
                feedback=last["score_reason"] or "low score", score=float(last["score"]),
            )
        scored = {**state, "attempts": attempts}
        if reason := self.exit_reason(scored):
            note = f"Score {last['score']:g}/10. {last['score_reason']} Stopping: {reason}.".strip()
            return {"attempts": attempts, "memory": [AIMessage(note)]}
        prompt = self._render(
            "kg_revise",
            question=question_of(state),
            history=self._history(attempts[:-1]),
            query=last["query"] or "(none)",
            result=self.describe(last),
            score=f"{last['score']:g}",
            score_reason=last["score_reason"],
        )
        reply = await structured_call(self.model, RevisedQuery, [self._system(state), HumanMessage(prompt)], self._query_ctx)
        query, reflection = read_query_reply(reply)
        last["reflection"] = reflection
        return {"attempts": attempts, "memory": [self._action(query, reflection, state.get("steps", 0) + 1)]}

    # --- per-question start, exit rule, logs, result ---

    def reset_state(self) -> dict[str, Any]:
        """The base's per-question fields plus this question's schema prompt and attempts."""
        return super().reset_state() | {"schema_prompt": "", "attempts": []}

    async def standalone_question(self, question: str, history: list[AnyMessage], config: RunnableConfig) -> str:
        """A follow-up rewritten with the shared ``condense_question`` (``condense_followups``, ``history_messages``)."""
        text = history_text(history, self.settings.history_messages)
        if not text or not self.settings.condense_followups:
            return question
        return await condense_question(self.model, question, text, self.ctx, config=config)

    def done_reason(self, state: KGState) -> str | None:
        attempts = state.get("attempts") or []
        if not attempts or attempts[-1].get("score") is None:
            return None
        last = attempts[-1]
        if last["score"] >= self.kg.score_threshold:
            return "score"
        if self.kg.stop_on_nonempty and last["rows"] and not last["error"]:
            return "non_empty"
        return None

    def log_step(self, step: int, node: str, update: dict[str, Any]) -> dict[str, Any]:
        record: dict[str, Any] = {}
        attempts = update.get("attempts") or []
        if node in ("draft", "revise"):
            message = (update.get("memory") or [None])[-1]
            calls = getattr(message, "tool_calls", None) or []
            if calls:
                record["next_query"] = calls[0]["args"].get("query", "")
            if message is not None and message.content:
                record["reflection"] = str(message.content)
        if node in ("execute_tool", "revise") and attempts:
            a = attempts[-1]
            record.update(query=a["query"], rows=len(a["rows"]), error=a["error"], error_kind=a["error_kind"])
            if node == "revise":
                record.update(score=a["score"], score_reason=a["score_reason"])
        log.info("kg step %d %s: %s", step, node, redact(json.dumps(record, default=str)[:500], self._secrets))
        return record

    def parse_final_result(self, state: KGState) -> KGQueryResult:
        attempts = state.get("attempts") or []
        reason = self.exit_reason(state) or "max_steps"
        ran = [a for a in attempts if not a["error"]]
        chosen = None
        if reason in ("score", "non_empty") and attempts and not attempts[-1]["error"]:
            chosen = attempts[-1]
        elif ran:  # the best executed query: rows first, then score, then the latest
            chosen = max(ran, key=lambda a: (bool(a["rows"]), a["score"] or 0.0, a["step"]))
        reflections = [
            str(m.content) for m in state.get("memory", [])
            if isinstance(m, AIMessage) and m.tool_calls and m.content
        ]
        return KGQueryResult(
            question=question_of(state),
            query=chosen["query"] if chosen else None,
            rows=chosen["rows"] if chosen else [],
            columns=chosen["columns"] if chosen else [],
            score=chosen["score"] if chosen else None,
            steps=state.get("steps", 0),
            reflections=reflections,
            log=state.get("log", []),
            exit_reason=reason,
            error=state.get("error") or None,
            truncated=bool(chosen and chosen["truncated"]),
            attempts=attempts,
        )

    def final_message(self, result: KGQueryResult) -> AIMessage:
        """The user-facing answer with the query, columns, rows, score, steps and exit reason as metadata."""
        return answer_message(result, self.ctx.prompts, answer_rows=self.kg.answer_rows)

    def log_final_result(self, result: KGQueryResult) -> None:
        log.info(
            "kg answer after %d step(s) (%s): score=%s rows=%d query=%s",
            result.steps, result.exit_reason, result.score, len(result.rows), result.query,
        )

    async def execute(self, question: str, **inputs: Any) -> KGQueryResult:
        """Answer ``question``; never raises for model or database faults (see :class:`KGQueryResult`)."""
        if not isinstance(question, str) or not question.strip():
            raise ValueError("the question is empty")
        try:
            await self.backend.start()
        except GraphQueryError as exc:
            return KGQueryResult(question, None, [], [], None, 0, [], [], "backend_error", error=str(exc))
        return await super().execute(question.strip(), **inputs)
