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
   (:mod:`rags_expert.kg.execution._answer`).

Before the draft, ``prepare`` takes the last human message as the question and, on a
thread with earlier conversation, makes it standalone with the shared
``condense_question`` (see :mod:`rags_expert.kg.reflexion.base`).

``execute(question, prompt)`` takes the seed's ``prompt``: when given, it is the
schema/instruction text of the system prompt (as BioChatter's prompt engine
produces it) in place of this agent's schema and its narrowing.

This class only composes the concerns, each in its own module:

* :mod:`rags_expert.kg.reflexion._prompting` – what the model is told (system/draft/revise prompts, result previews);
* :mod:`rags_expert.kg.replies` – reply schemas and tolerant reading of a query from a reply;
* :mod:`rags_expert.kg.execution.run` – the action as a tool call, the read-only run, the attempt record;
* :mod:`rags_expert.kg.reflexion._scoring` – scoring an attempt and learning a lesson from a low score;
* :mod:`rags_expert.kg.execution._policy` – exit rules and the choice of the final query;
* :mod:`rags_expert.kg.execution.result` – the state, the step log records and :class:`KGQueryResult`;
* :mod:`rags_expert.kg.execution._answer` – the user-facing answer message.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.runnables import RunnableConfig

from rags_expert.conversation import followup_transcript
from rags_expert.kg.backends import GraphBackend, GraphQueryError
from rags_expert.kg.biocypher.schema import KGSchema, load_schema
from rags_expert.kg.execution._answer import answer_message
from rags_expert.kg.execution._policy import exit_rule
from rags_expert.kg.execution.result import KGQueryResult, KGState, build_result, kg_value, step_record
from rags_expert.kg.execution.run import (
    TOOL_NAME,
    action_message,
    latest_call,
    run_attempt,
    tool_message,
)
from rags_expert.kg.reflexion._prompting import QUERY_LANGUAGE, KGPrompter
from rags_expert.kg.reflexion._scoring import LESSON_SCOPE, learn_from_attempt, score_attempt
from rags_expert.kg.reflexion.base import ReflexionAgent
from rags_expert.kg.replies import (
    DraftQuery,
    RevisedQuery,
    SchemaSelection,
    clean_query,
    extract_cypher,
    read_query_reply,
    read_schema_selection,
)
from rags_expert.kg.state import question_of
from rags_expert.lessons import LessonMemory, recall_lessons
from rags_expert.llm.chat import LLMCallError, redact
from rags_expert.llm.grading import GradingContext, condense_question, structured_call
from rags_expert.outcomes import FailureReason
from rags_expert.secrets import redact_message
from rags_expert.settings import AgentSettings, KGExpertSettings, coerce_settings

__all__ = [  # the public names, importable from here as before the split
    "LESSON_SCOPE",
    "QUERY_LANGUAGE",
    "TOOL_NAME",
    "DraftQuery",
    "KGQueryReflexionAgent",
    "KGQueryResult",
    "KGState",
    "RevisedQuery",
    "SchemaSelection",
    "clean_query",
    "extract_cypher",
    "read_query_reply",
]

log = logging.getLogger(__name__)


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
        settings: AgentSettings | dict[str, Any] | None = None,
        ctx: GradingContext | None = None,
        lesson_memory: LessonMemory | None = None,
    ) -> None:
        self.settings = coerce_settings(settings, KGExpertSettings)
        self.kg = self.settings.kg
        super().__init__(self.kg.max_steps)
        self.max_question_chars = self.settings.max_question_chars
        self.model = chat_model
        self.backend = backend
        self.schema = load_schema(schema, schema_name)
        self.ctx = ctx or GradingContext.from_settings(self.settings)
        self.ctx.prompts.validate()
        self.prompter = KGPrompter(self.ctx.prompts, self.kg)
        # draft/revise replies carry a whole query: their own output cap, same timeout and retries.
        self._query_ctx = dataclasses.replace(
            self.ctx, settings=self.ctx.settings.model_copy(update={"max_tokens": self.kg.max_tokens})
        )
        self._secrets = self.settings.secrets()
        self.lessons = lesson_memory if self.settings.lessons.enabled else None

    def describe(self, attempt: dict[str, Any], rows_shown: int | None = None) -> str:
        """What the model is told about an executed query (see :meth:`KGPrompter.describe`)."""
        return self.prompter.describe(attempt, rows_shown)

    async def schema_for(self, question: str) -> KGSchema:
        """The schema shown for ``question``: all of it, or the part the model picks when ``kg.narrow_schema``."""
        if not self.kg.narrow_schema:
            return self.schema
        messages = self.prompter.narrow_schema(question, self.schema.summary())
        try:
            reply = await structured_call(self.model, SchemaSelection, messages, self.ctx)
        except LLMCallError as exc:
            log.warning("schema narrowing failed (%s); using the whole schema", exc)
            return self.schema
        return self.schema.subset(*read_schema_selection(reply, self.schema))

    # --- responders and tool ---

    async def draft(self, state: KGState) -> dict[str, Any]:
        """Choose the schema text for this question (the caller's ``prompt``, if any) and draft the first query."""
        question = question_of(state)
        schema_prompt = kg_value(state, "prompt") or (await self.schema_for(question)).prompt()
        lessons = await recall_lessons(self.lessons, question, LESSON_SCOPE)
        messages = self.prompter.draft(schema_prompt, question, lessons)
        query, reflection = read_query_reply(await structured_call(self.model, DraftQuery, messages, self._query_ctx))
        return {"schema_prompt": schema_prompt, "attempts": [], "memory": [action_message(query, reflection, 1)]}

    async def run_tool(self, state: KGState) -> dict[str, Any]:
        """Run the latest proposed query read-only and record the outcome as a tool message."""
        step = kg_value(state, "steps")
        query, call_id = latest_call(kg_value(state, "memory"), step)
        attempt = await run_attempt(self.backend, query, step, self.kg, self._secrets)
        message = tool_message(attempt, self.describe(attempt), call_id)
        return {"memory": [message], "attempts": [*kg_value(state, "attempts"), attempt]}

    async def revise(self, state: KGState) -> dict[str, Any]:
        """Score the latest outcome (learning from a low score); unless an exit rule now holds, revise the query."""
        question = question_of(state)
        attempts = [dict(a) for a in kg_value(state, "attempts")]
        last = attempts[-1]
        await score_attempt(self.model, self.ctx, self.prompter, question, last)
        await learn_from_attempt(self.lessons, self.model, self.ctx, self.prompter, question, last)
        if reason := self.exit_reason({**state, "attempts": attempts}):
            note = f"Score {last['score']:g}/10. {last['score_reason']} Stopping: {reason}.".strip()
            return {"attempts": attempts, "memory": [AIMessage(note)]}
        messages = self.prompter.revise(kg_value(state, "schema_prompt") or self.schema.prompt(), question, attempts)
        query, reflection = read_query_reply(await structured_call(self.model, RevisedQuery, messages, self._query_ctx))
        last["reflection"] = reflection
        return {"attempts": attempts, "memory": [action_message(query, reflection, kg_value(state, "steps") + 1)]}

    # --- per-question start, exit rule, logs, result ---

    def reset_state(self) -> dict[str, Any]:
        """The base's per-question fields plus this question's schema prompt and attempts."""
        return super().reset_state() | {key: kg_value({}, key) for key in ("schema_prompt", "attempts")}

    async def standalone_question(self, question: str, history: list[AnyMessage], config: RunnableConfig) -> str:
        """A follow-up rewritten with the shared ``condense_question`` (``condense_followups``, ``history_messages``)."""
        if not (text := followup_transcript(history, self.settings)):
            return question
        return await condense_question(self.model, question, text, self.ctx, config=config)

    def done_reason(self, state: KGState) -> str | None:
        """``score`` or ``non_empty`` on the latest scored attempt (see :mod:`rags_expert.kg.execution._policy`)."""
        return exit_rule(kg_value(state, "attempts"), self.kg)

    def log_step(self, step: int, node: str, update: dict[str, Any]) -> dict[str, Any]:
        """The node's log record (:func:`~rags_expert.kg.execution.result.step_record`), also logged at INFO, redacted."""
        record = step_record(node, update)
        log.info("kg step %d %s: %s", step, node, redact(json.dumps(record, default=str)[:500], self._secrets))
        return record

    def parse_final_result(self, state: KGState) -> KGQueryResult:
        """The result with the executed query :func:`~rags_expert.kg.execution._policy.choose_attempt` picks."""
        return build_result(state, self.exit_reason(state) or FailureReason.MAX_STEPS.value)

    def final_message(self, result: KGQueryResult) -> AIMessage:
        """The user-facing answer with the query, columns, rows, score, steps and exit reason as metadata."""
        message = answer_message(result, self.ctx.prompts, answer_rows=self.kg.answer_rows)
        return redact_message(message, self._secrets)  # as the RAG agent's: hosts show it as it is

    def log_final_result(self, result: KGQueryResult) -> None:
        """One INFO line: steps, exit reason, score, rows and the query."""
        log.info(
            "kg answer after %d step(s) (%s): score=%s rows=%d query=%s",
            result.steps,
            result.exit_reason,
            result.score,
            len(result.rows),
            result.query,
        )

    async def execute(self, question: str, prompt: str | None = None, **inputs: Any) -> KGQueryResult:
        """Answer ``question`` (``prompt``: schema text replacing the agent's); never raises for model or DB faults."""
        if not isinstance(question, str) or not question.strip():
            raise ValueError("the question is empty")
        try:
            await self.backend.start()
        except GraphQueryError as exc:
            return KGQueryResult.failed(question, FailureReason.BACKEND_ERROR.value, str(exc))
        return await super().execute(question.strip(), prompt, **inputs)
