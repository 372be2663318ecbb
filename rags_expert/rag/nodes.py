"""The nodes of the corrective-RAG graph: small async functions over the state.

Each node returns a partial state update. Nodes never raise: a model or retriever
fault that survives its retries is recorded in ``error`` and the routers send the
run to ``finalize_failure``. Dependencies (model, retriever, prompts, settings)
are immutable and held by :class:`RagNodes`; everything per-request lives in the
state: ``prepare`` validates the request's options once (:mod:`rags_expert.rag.options`)
and keeps them there. Each node returns the LLM calls it made; the ``llm_calls``
reducer adds them up.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import inspect
import logging
from dataclasses import dataclass
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from rags_expert import grading
from rags_expert.conversation import history_text, last_question
from rags_expert.events import emit
from rags_expert.lessons import (
    LessonMemory,
    learn_from_failure,
    lessons_block,
    recall_lessons,
    scope_key,
)
from rags_expert.llm import LLMCallError, call_model, message_text, redact
from rags_expert.prompts import PromptError, PromptStore
from rags_expert.rag.citations import (
    chunk_id,
    cited_numbers,
    cited_sources,
    format_context,
)
from rags_expert.rag.options import (
    InvalidRequestError,
    RequestContext,
    RequestOptions,
    read_request,
    scopes_nothing,
)
from rags_expert.rag.state import RagState, new_count
from rags_expert.settings import RagsExpertSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RagDeps:
    """What the nodes need; shared by all runs of one agent, never mutated.

    Prompts and the retry policy live in ``grading`` only (the answer call uses them too).
    """

    model: BaseChatModel
    retriever: BaseRetriever
    settings: RagsExpertSettings
    grading: grading.GradingContext
    lessons: LessonMemory | None = None

    @property
    def prompts(self) -> PromptStore:
        """The agent's prompt templates (those of ``grading``)."""
        return self.grading.prompts


LESSON_SCOPE = "rag"


def _per_question_reset(settings: RagsExpertSettings) -> dict[str, Any]:
    """The working state of a question not yet started (``llm_calls`` is reset by ``prepare`` alone)."""
    return {
        "question": "",
        "query": "",
        "queries": [],
        "documents": [],
        "relevant": [],
        "graded": {},
        "new_relevant": 0,
        "answer": "",
        "grounded": False,
        "useful": False,
        "feedback": "",
        "partial_answer": "",
        "partial_sources": [],
        "rephrases": 0,
        "generations": 0,
        "max_rephrases": settings.max_rephrases,
        "max_generations": settings.max_generations,
        "error": "",
        "failure_reason": "",
        "search": {},
        "lesson_scope": "",
        "lessons": [],
    }


def _cites_a_chunk(answer: str, relevant: list[Document]) -> bool:
    return bool(cited_numbers(answer, len(relevant)))


def _accepted(method: Any, options: dict[str, Any]) -> dict[str, Any]:
    params = inspect.signature(method).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return options
    return {k: v for k, v in options.items() if k in params}


async def _ainvoke_retriever(
    retriever: BaseRetriever, query: str, config: RunnableConfig, options: dict[str, Any]
) -> list[Document]:
    """Call any retriever with the per-request options it accepts (LangChain's default async
    path drops extra keyword arguments, so sync-only retrievers run in a thread)."""
    own_async = type(retriever)._aget_relevant_documents is not BaseRetriever._aget_relevant_documents
    if own_async:
        return await retriever.ainvoke(query, config, **_accepted(retriever._aget_relevant_documents, options))
    kwargs = _accepted(retriever._get_relevant_documents, options)
    if not kwargs:
        return await retriever.ainvoke(query, config)
    return await asyncio.to_thread(retriever.invoke, query, config, **kwargs)


class RagNodes:
    """The node functions, bound to one agent's dependencies."""

    def __init__(self, deps: RagDeps) -> None:
        self.deps = deps

    def _lesson_scope(self, request: RequestOptions) -> str:
        """The lesson scope of this request ("" when the lesson memory is off)."""
        if self.deps.lessons is None:
            return ""
        settings = self.deps.settings
        tags = request.library_tags if request.library_tags is not None else settings.retrieval.library_tags
        return scope_key(LESSON_SCOPE, settings.lessons, library_tags=tags, user_id=request.user_id)

    def _error(self, exc: BaseException) -> str:
        if isinstance(exc, LLMCallError):
            return str(exc)
        return redact(f"{type(exc).__name__}: {exc}", self.deps.settings.secrets())[:500]

    async def prepare(
        self, state: RagState, config: RunnableConfig, runtime: Runtime[RequestContext]
    ) -> dict[str, Any]:
        """Start a question: reset the working state and the call count, validate the request's options
        once, take the last user message, make a follow-up standalone, recall lessons."""
        update = _per_question_reset(self.deps.settings) | {"llm_calls": new_count()}
        question, history = last_question(state.get("messages", []))
        if not question:
            return update | {"failure_reason": "empty_question"}
        try:
            request = read_request(runtime.context, config)
        except InvalidRequestError as exc:
            return update | {
                "question": question,
                "error": f"InvalidRequest: {exc}",
                "failure_reason": "invalid_request",
            }
        update |= {
            "search": request.retriever_kwargs(self.deps.settings.retrieval.top_k),
            "lesson_scope": self._lesson_scope(request),
        }
        transcript = history_text(history, self.deps.settings.history_messages)
        if transcript and self.deps.settings.condense_followups:
            update["llm_calls"] = new_count(1)
            try:
                question = await grading.condense_question(
                    self.deps.model, question, transcript, self.deps.grading, config=config
                )
            except Exception as exc:  # noqa: BLE001 - LLMCallError, or a model that cannot even be called
                return update | {"question": question, "error": self._error(exc), "failure_reason": "llm_error"}
        scope = update["lesson_scope"]
        lessons = await recall_lessons(self.deps.lessons, question, scope) if scope else []
        return update | {"question": question, "query": question, "lessons": lessons}

    async def retrieve(self, state: RagState, config: RunnableConfig) -> dict[str, Any]:
        """Fetch chunks for the current query with the request's options (validated by ``prepare``)."""
        options = state["search"]
        query = state["query"]
        queries = [*state.get("queries", []), query]
        if scopes_nothing(options):  # nothing in scope: no search, and no rephrasing can find more
            return {"documents": [], "queries": queries, "max_rephrases": state.get("rephrases", 0)}
        try:
            docs = await _ainvoke_retriever(self.deps.retriever, query, config, options)
        except Exception as exc:  # noqa: BLE001 - a retriever fault ends the run honestly
            log.error("retrieval failed: %s", self._error(exc))
            return {"documents": [], "error": self._error(exc), "failure_reason": "retrieval_error"}
        return {"documents": list(docs)[: options["top_k"]], "queries": queries}

    async def grade_documents(self, state: RagState, config: RunnableConfig) -> dict[str, Any]:
        """Grade the new chunks concurrently (bounded); keep the relevant ones, never re-grade a chunk."""
        graded = dict(state.get("graded", {}))
        fresh: dict[str, Document] = {}
        for doc in state.get("documents", []):
            cid = chunk_id(doc)
            if cid not in graded and cid not in fresh:
                fresh[cid] = doc
        limit = asyncio.Semaphore(self.deps.grading.settings.concurrency)

        async def grade(doc: Document) -> grading.Verdict:
            async with limit:
                return await grading.grade_relevance(
                    self.deps.model, state["question"], doc.page_content, self.deps.grading, config=config
                )

        results = await asyncio.gather(*(grade(d) for d in fresh.values()), return_exceptions=True)
        update: dict[str, Any] = {"llm_calls": len(fresh)}
        relevant = list(state.get("relevant", []))
        added = 0
        for (cid, doc), result in zip(fresh.items(), results, strict=True):
            if isinstance(result, BaseException):
                return update | {"error": self._error(result), "failure_reason": "llm_error"}
            graded[cid] = result.value
            if result.value:
                relevant.append(doc)
                added += 1
        relevant = relevant[-self.deps.settings.max_context_chunks :]
        return update | {"graded": graded, "relevant": relevant, "new_relevant": added}

    async def rephrase_query(self, state: RagState, config: RunnableConfig) -> dict[str, Any]:
        """Rewrite the retrieval query (the question itself stays unchanged for grading and answering)."""
        update: dict[str, Any] = {"rephrases": state.get("rephrases", 0) + 1, "llm_calls": 1}
        try:
            query = await grading.rephrase_query(
                self.deps.model,
                state["question"],
                self.deps.grading,
                previous_queries=state.get("queries", []),
                feedback=state.get("feedback", ""),
                config=config,
            )
        except Exception as exc:  # noqa: BLE001 - LLMCallError, or a model that cannot even be called
            return update | {"error": self._error(exc), "failure_reason": "llm_error"}
        return update | {"query": query}

    async def generate(self, state: RagState, config: RunnableConfig) -> dict[str, Any]:
        """Answer from the relevant chunks only, citing them as [n]; the tokens stream to the host.

        A prompt that cannot be rendered ends the run in ``finalize_failure`` (``prompt_error``).
        """
        try:
            return await self._generate(state, config)
        except PromptError as exc:
            log.error("the answer prompt cannot be rendered: %s", exc)
            return {"error": self._error(exc), "failure_reason": "prompt_error"}

    async def _generate(self, state: RagState, config: RunnableConfig) -> dict[str, Any]:
        prompts = self.deps.prompts
        feedback = state.get("feedback", "")
        messages = [
            SystemMessage(prompts.render("answer_system", date=dt.date.today().isoformat())),
            HumanMessage(
                prompts.render(
                    "generate",
                    context=format_context(state["relevant"]),
                    question=state["question"],
                    feedback=prompts.render("regenerate_feedback", feedback=feedback) if feedback else "",
                    lessons=lessons_block(prompts, state.get("lessons")),
                )
            ),
        ]
        update: dict[str, Any] = {"generations": state.get("generations", 0) + 1, "llm_calls": 1}
        try:
            reply = await call_model(
                self.deps.model,
                messages,
                policy=self.deps.grading.retry,
                timeout=self.deps.settings.llm.timeout,
                config=config,
            )
        except LLMCallError as exc:
            return update | {"error": self._error(exc), "failure_reason": "llm_error"}
        return update | {"answer": message_text(reply).strip()}

    async def grade_generation(self, state: RagState, config: RunnableConfig) -> dict[str, Any]:
        """Check the answer is grounded in the chunks and useful for the question (two concurrent calls).

        An empty answer, or one that cites no chunk while ``require_citations`` is on, is rejected
        without asking the model.
        """
        answer = state.get("answer", "")
        if not answer or (self.deps.settings.require_citations and not _cites_a_chunk(answer, state["relevant"])):
            feedback = (
                "the answer was empty"
                if not answer
                else ("the answer cites no chunk; support every claim with the chunk number in brackets, like [1]")
            )
            emit("answer_rejected", generation=state.get("generations", 0), feedback=feedback)
            return {"grounded": False, "useful": False, "feedback": feedback, "failure_reason": "not_grounded"}
        context = format_context(state["relevant"])
        update: dict[str, Any] = {"llm_calls": 2}
        grounded, useful = await asyncio.gather(
            grading.grade_grounded(self.deps.model, context, answer, self.deps.grading, config=config),
            grading.grade_useful(self.deps.model, state["question"], answer, self.deps.grading, config=config),
            return_exceptions=True,
        )
        if isinstance(grounded, BaseException) or isinstance(useful, BaseException):
            failed = next(r for r in (grounded, useful) if isinstance(r, BaseException))
            return update | {"error": self._error(failed), "failure_reason": "llm_error"}
        update |= {"grounded": grounded.value, "useful": useful.value}
        if not (grounded.value and useful.value):
            emit(
                "answer_rejected",
                generation=state.get("generations", 0),
                feedback=grounded.reason or useful.reason or ("not grounded" if not grounded.value else "not useful"),
            )
        if not grounded.value:
            detail = grounded.reason or "it makes claims the chunks do not support"
            return update | {"feedback": f"not grounded: {detail}", "failure_reason": "not_grounded"}
        if not useful.value:
            # cited now: later rounds may trim the context and renumber its chunks
            partial, partial_sources = cited_sources(answer, state["relevant"])
            return update | {
                "feedback": f"does not answer the question: {useful.reason or 'information is missing'}",
                "failure_reason": "not_useful",
                "partial_answer": partial,
                "partial_sources": partial_sources,
            }
        return update | {"feedback": "", "failure_reason": ""}

    async def reflect(self, state: RagState, config: RunnableConfig) -> dict[str, Any]:
        """After a rejected answer, write one sentence of advice and store it in the lesson memory."""
        scope = state.get("lesson_scope", "")
        if self.deps.lessons is None or not scope:
            return {}
        await learn_from_failure(
            self.deps.lessons,
            self.deps.model,
            self.deps.grading,
            scope=scope,
            question=state["question"],
            attempt=state.get("answer", ""),
            feedback=state.get("feedback", ""),
            score=5.0 if state.get("grounded") else 0.0,
            config=config,
        )
        return {"llm_calls": 1}

    async def finalize_success(self, state: RagState) -> dict[str, Any]:
        """Emit the graded answer with exactly the cited chunks as sources, and clear the working state."""
        content, sources = cited_sources(state["answer"], state["relevant"])
        message = AIMessage(
            content=content,
            response_metadata={
                "outcome": "success",
                "sources": sources,
                "question": state["question"],
                "llm_calls": state.get("llm_calls", 0),
            },
        )
        return _per_question_reset(self.deps.settings) | {"messages": [message]}

    async def finalize_failure(self, state: RagState) -> dict[str, Any]:
        """Say honestly that no grounded answer was found (offering a grounded partial answer), never raise.

        A PromptError from any node is a fault of the prompt templates (``prompt_error``), not of the
        model; when a failure template itself cannot be rendered, the packaged one says so.
        """
        question = state.get("question", "")
        reason = state.get("failure_reason") or "no_relevant_documents"
        error = state.get("error", "")
        if error.startswith("PromptError:"):
            reason = "prompt_error"
        try:
            content, sources = self._failure_content(state, reason, error)
        except PromptError as exc:  # a broken failure template must not hide the failure
            reason, error, sources = "prompt_error", self._error(exc), []
            content = PromptStore().render(  # the packaged template
                "failure_error", question=question, component="the prompt templates", error="PromptError"
            )
        metadata: dict[str, Any] = {
            "outcome": "failure",
            "reason": reason,
            "sources": sources,
            "question": question,
            "llm_calls": state.get("llm_calls", 0),
        }
        if error:
            metadata["error"] = error
            metadata["error_class"] = _error_class(error)
        return _per_question_reset(self.deps.settings) | {"messages": [AIMessage(content, response_metadata=metadata)]}

    def _failure_content(self, state: RagState, reason: str, error: str) -> tuple[str, list[dict[str, Any]]]:
        """The failure message for ``reason`` and the sources it offers (those of a partial answer)."""
        prompts = self.deps.prompts
        question = state.get("question", "")
        error_class = _error_class(error)
        sources: list[dict[str, Any]] = []
        if reason == "empty_question":
            content = prompts.render("empty_question")
        elif reason == "invalid_request":
            content = prompts.render("failure_request", question=question, detail=error.split(":", 1)[1].strip())
        elif reason == "retrieval_error":
            detail = error.split(":", 1)[1].strip() if ":" in error else error
            content = prompts.render("failure_retrieval", question=question, error=error_class, detail=detail)
        elif error:
            component = "the prompt templates" if reason == "prompt_error" else "the language model"
            content = prompts.render("failure_error", question=question, component=component, error=error_class)
        else:
            partial = ""
            if state.get("partial_answer"):
                sources = list(state.get("partial_sources", []))
                partial = prompts.render("failure_partial", answer=state["partial_answer"])
            content = prompts.render("failure_not_found", question=question, partial=partial)
        return content, sources


def _error_class(error: str) -> str:
    """``"RateLimitError"`` from ``"RateLimitError: ..."``."""
    return error.split(" ", 1)[0].rstrip(":")
