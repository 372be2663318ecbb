"""The nodes of the corrective-RAG graph: small async functions over the state.

Each node returns a partial state update. Nodes never raise: a model or retriever
fault that survives its retries is recorded in ``error`` (:mod:`rags_expert.failsafe`)
and the routers send the run to ``finalize_failure``. Dependencies (model, retriever, prompts, settings)
are immutable and held by :class:`RagNodes`; everything per-request lives in the
state: ``prepare`` validates the request's options once (:mod:`rags_expert.rag.options`)
and keeps them there. Each node returns the LLM calls it made; the ``llm_calls``
reducer adds them up. The agent's model profile (:mod:`rags_expert.rag.profiles`) decides
which checks the chat model makes and which the evidence (:mod:`rags_expert.evidence`) makes.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from rags_expert.citations import chunk_id, cited_sources
from rags_expert.conversation import followup_transcript, open_question
from rags_expert.events import emit
from rags_expert.evidence import EvidenceScorer
from rags_expert.failsafe import fails_as, failure, redacted_error
from rags_expert.lessons import LessonMemory, learn_from_failure, scope_key
from rags_expert.llm import grading
from rags_expert.llm.chat import LLMCallError, call_model, message_text
from rags_expert.outcomes import AnswerKind, FailureReason
from rags_expert.prompts import PromptError, PromptStore
from rags_expert.rag._shared.context import keep_context, refined_context
from rags_expert.rag._shared.extractive import quoted_answer
from rags_expert.rag.answer.final import failure_message, success_message
from rags_expert.rag.answer.prompt import answer_messages, confirm_messages
from rags_expert.rag.answer.speculation import DRAFT_TAG, settle_draft
from rags_expert.rag.authorization import AuthorizationError, Authorizer
from rags_expert.rag.grade.relevance import RelevanceJudge
from rags_expert.rag.options import (
    InvalidRequestError,
    RequestContext,
    RequestOptions,
    ainvoke_retriever,
    read_request,
)
from rags_expert.rag.profiles import ModelProfile, evidence_scorer, profile_for
from rags_expert.rag.retrieve._recall import LessonRecalls, with_lessons
from rags_expert.rag.retrieve.hops import grading_question
from rags_expert.rag.retrieve.reranking import RerankStage
from rags_expert.rag.state import RagState, fresh_question, new_count, value
from rags_expert.rag.verdict._decision import AnswerJudge
from rags_expert.rag.verdict.confirmed import UNCONFIRMED, confirmation
from rags_expert.rag.wrappers.guard import permitted_history
from rags_expert.retrieval.options import SearchOptions
from rags_expert.secrets import redact_message
from rags_expert.settings import RagsExpertSettings

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel


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
    fallback_retriever: BaseRetriever | None = None
    """The fallback source (:mod:`rags_expert.rag.retrieve.fallback_source`), consulted once when nothing is relevant."""
    authorizer: Authorizer | None = None
    """The host's answer-time permission check (:mod:`rags_expert.rag.wrappers.guard`); None: off."""
    evidence: EvidenceScorer = field(default=None)  # type: ignore[assignment]  # filled in __post_init__
    """Model-free evidence (lexical, plus the knowledge base's embeddings when the agent has them)."""
    rerank: RerankStage = field(default_factory=RerankStage)
    """The reranking stage between retrieval and grading (:mod:`rags_expert.rag.retrieve.reranking`; default: none)."""

    def __post_init__(self) -> None:
        if self.evidence is None:
            object.__setattr__(self, "evidence", evidence_scorer(self.settings.evidence))

    @property
    def profile(self) -> ModelProfile:
        """Which checks the chat model makes and which the evidence makes."""
        return profile_for(self.settings.evidence)

    @property
    def prompts(self) -> PromptStore:
        """The agent's prompt templates (those of ``grading``)."""
        return self.grading.prompts


LESSON_SCOPE = "rag"


class RagNodes:
    """The node functions, bound to one agent's dependencies."""

    def __init__(self, deps: RagDeps) -> None:
        self.deps = deps
        self._secrets = deps.settings.secrets()  # masked in the final message (redaction.redact_message)
        hops = deps.settings.multihop
        self.judge = RelevanceJudge(
            deps.model,
            deps.grading,
            deps.evidence,
            deps.settings.evidence,
            by_llm=deps.profile.relevance == "llm",
            by_rank=deps.profile.relevance == "retrieval",
            pair_coverage=hops.pair_coverage if hops.max_hops > 1 else None,
        )
        self.verdicts = AnswerJudge(
            deps.model, deps.grading, deps.evidence, deps.settings, deps.profile, self.redacted_error
        )
        self.recalls = LessonRecalls(
            deps.lessons, deps.authorizer
        )  # started by prepare, taken by the first answer call

    def _lesson_scope(self, request: RequestOptions) -> str:
        """The lesson scope of this request ("" when the lesson memory is off)."""
        if self.deps.lessons is None:
            return ""
        settings = self.deps.settings
        tags = request.default_tags(settings.retrieval)
        return scope_key(LESSON_SCOPE, settings.lessons, library_tags=tags, user_id=request.user_id)

    def redacted_error(self, exc: BaseException) -> str:
        """The (redacted) ``error`` text of a fault (:func:`~rags_expert.failsafe.redacted_error`)."""
        return redacted_error(exc, self.deps.settings.secrets())

    async def prepare(
        self, state: RagState, config: RunnableConfig, runtime: Runtime[RequestContext]
    ) -> dict[str, Any]:
        """Start a question: reset the working state and the call count, take the last user message, validate the
        request's options once, make a follow-up standalone, start recalling lessons (beside the retrieval:
        :mod:`rags_expert.rag.retrieve._recall`). Each step's fault ends the run (:func:`fails_as`)."""
        start = open_question(value(state, "messages"), config, self.deps.settings.max_question_chars)
        update = fresh_question(self.deps.settings) | {"llm_calls": new_count(), "question": start.question}
        if start.reason:  # a checkpointer fault, no question, or one too long (conversation.open_question)
            return update | {"error": start.error, "failure_reason": start.reason}
        update |= await self._options(update, config, runtime)
        if not update.get("error"):
            update |= await self._standalone(update, start.history, config)
        if update.get("error"):
            return update
        lessons = await self.recalls.begin(update["question"], update["lesson_scope"], update["user"])
        return update | {"query": update["question"]} | lessons

    @fails_as(FailureReason.INVALID_REQUEST, catch=(InvalidRequestError,))
    async def _options(
        self, state: dict[str, Any], config: RunnableConfig, runtime: Runtime[RequestContext]
    ) -> dict[str, Any]:
        """The request's options, validated once (:mod:`rags_expert.rag.options`), as the state keeps them."""
        request = read_request(runtime.context, config)
        return {
            "search": request.search(self.deps.settings.retrieval.top_k).kwargs(),
            "lesson_scope": self._lesson_scope(request),
            "fallback_source": self.deps.fallback_retriever is not None,
            "user": request.user_id,
        }

    @fails_as(FailureReason.AUTHORIZATION_ERROR, catch=(AuthorizationError,))
    async def _standalone(self, state: dict[str, Any], history: list[Any], config: RunnableConfig) -> dict[str, Any]:
        """A follow-up question made standalone against the turns the user may still read (assistant turns citing
        a revoked chunk are not condensed against); nothing when there is no earlier turn to read."""
        permitted = await permitted_history(self.deps.authorizer, state["user"], history)
        if transcript := followup_transcript(permitted, self.deps.settings):
            return await self._condense(state, transcript, config)
        return {}

    @fails_as(FailureReason.LLM_ERROR, charge=lambda state: {"llm_calls": new_count(1)})
    async def _condense(self, state: dict[str, Any], transcript: str, config: RunnableConfig) -> dict[str, Any]:
        """The question rewritten to stand alone (one model call, counted whether it succeeds or not)."""
        question = await grading.condense_question(
            self.deps.model, state["question"], transcript, self.deps.grading, config=config
        )
        return {"question": question}

    @fails_as(FailureReason.RETRIEVAL_ERROR, reset={"documents": []}, log_as="retrieval failed")
    async def retrieve(self, state: RagState, config: RunnableConfig) -> dict[str, Any]:
        """Fetch chunks for the current query with the request's options (validated by ``prepare``), reranked
        (:mod:`~rags_expert.rag.retrieve.reranking`); a retriever fault ends the run honestly."""
        options = SearchOptions.of(state["search"])
        query = state["query"]
        queries = [*value(state, "queries"), query]
        if options.scopes_nothing:  # nothing in scope: no search, and no rephrasing can find more
            return {"documents": [], "queries": queries, "max_rephrases": value(state, "rephrases")}
        docs = await ainvoke_retriever(self.deps.retriever, query, config, self.deps.rerank.fetch(options))
        return {"documents": await self.deps.rerank.apply(query, docs, options.limit), "queries": queries}

    async def grade_documents(self, state: RagState, config: RunnableConfig) -> dict[str, Any]:
        """Grade the new chunks (:mod:`rags_expert.rag.grade.relevance`), keep the relevant ones, never re-grade a
        chunk; on a question's first retrieval, write a speculative draft meanwhile (:mod:`~rags_expert.rag.answer.speculation`)."""
        graded = dict(value(state, "graded"))
        fresh: dict[str, Document] = {}
        for doc in value(state, "documents"):
            cid = chunk_id(doc)
            if cid not in graded and cid not in fresh:
                fresh[cid] = doc
        docs = list(fresh.values())
        drafting = self._speculates(state, docs)
        judging = self.judge.judge(grading_question(state), docs, config)
        recalled: dict[str, Any] = {}
        if drafting:
            judged, (recalled, draft) = await asyncio.gather(judging, self._draft(state, docs, config))
        else:
            judged, draft = await judging, ""
        update: dict[str, Any] = recalled | {"speculative": "", "llm_calls": int(drafting) + judged.llm_calls}
        if judged.error is not None:
            return update | failure(self.redacted_error(judged.error), FailureReason.LLM_ERROR)
        new = []
        for (cid, doc), verdict in zip(fresh.items(), judged.verdicts, strict=True):
            graded[cid] = verdict
            if verdict:
                new.append(doc)
        relevant = keep_context(value(state, "relevant"), new, self.deps.settings.max_context_chunks)
        update |= {"graded": graded, "relevant": relevant, "new_relevant": len(new)}
        if drafting:
            context = docs[: self.deps.settings.max_context_chunks]
            update |= settle_draft(draft, context, relevant, value(state, "generations"))
        return update

    def _speculates(self, state: RagState, docs: list[Document]) -> bool:
        """Whether to draft while grading: the setting, a profile that drafts, LLM grading, and a question's first
        retrieval."""
        return (
            self.deps.settings.speculative_draft
            and value(state, "draft")
            and self.judge.by_llm
            and bool(docs)
            and len(value(state, "queries")) == 1  # no rephrasing, no fallback: nothing relevant or drafted yet
        )

    async def _draft(
        self, state: RagState, docs: list[Document], config: RunnableConfig
    ) -> tuple[dict[str, Any], str | BaseException]:
        """The recalled lessons' update and the speculative draft over the retrieved chunks (tagged, so a host
        can tell it from an answer), or the failure of its call (a failed draft is only discarded)."""
        recalled = await self.recalls.take(state)  # the relevance grades are not kept waiting for it
        tags = [*(config or {}).get("tags", []), DRAFT_TAG]
        try:
            chunks = docs[: self.deps.settings.max_context_chunks]
            return recalled, await self._write_answer(with_lessons(state, recalled), chunks, {**config, "tags": tags})
        except Exception as exc:  # noqa: BLE001 - LLMCallError, or a model that cannot even be called
            return recalled, exc

    @fails_as(
        FailureReason.LLM_ERROR, charge=lambda state: {"rephrases": value(state, "rephrases") + 1, "llm_calls": 1}
    )
    async def rephrase_query(self, state: RagState, config: RunnableConfig) -> dict[str, Any]:
        """Rewrite the retrieval query (the question itself stays unchanged for grading and answering); any
        fault (LLMCallError, or a model that cannot even be called) ends the run."""
        query = await grading.rephrase_query(
            self.deps.model,
            state["question"],
            self.deps.grading,
            previous_queries=value(state, "queries"),
            feedback=value(state, "feedback"),
            config=config,
        )
        return {"query": query}

    @fails_as(FailureReason.PROMPT_ERROR, catch=(PromptError,), log_as="the answer prompt cannot be rendered")
    @fails_as(
        FailureReason.LLM_ERROR,
        catch=(LLMCallError,),
        charge=lambda state: {"generations": value(state, "generations") + 1, "llm_calls": 1},
    )
    async def generate(self, state: RagState, config: RunnableConfig) -> dict[str, Any]:
        """Answer from the relevant chunks only (their kept strips, after knowledge refinement), citing them as
        [n]; the tokens stream to the host.

        A failed answer call ends the run (``llm_error``, the call counted); a prompt that cannot be rendered
        ends it as ``prompt_error`` (no call made, none counted).
        """
        recalled = await self.recalls.take(state)  # lessons not taken by a draft yet
        context = refined_context(state["relevant"], value(state, "strips"))
        return recalled | {"answer": await self._write_answer(with_lessons(state, recalled), context, config)}

    async def _write_answer(self, state: RagState, chunks: list[Document], config: RunnableConfig) -> str:
        """One answer call over ``chunks`` (numbered from 1) with the profile's prompt; raises LLMCallError."""
        messages = answer_messages(
            self.deps.prompts,
            self.deps.profile,
            question=state["question"],
            relevant=chunks,
            feedback=value(state, "feedback"),
            lessons=value(state, "lessons"),
        )
        stop = list(self.deps.profile.answer_stop)
        reply = await call_model(
            self.deps.model.bind(stop=stop) if stop else self.deps.model,
            messages,
            policy=self.deps.grading.retry,
            timeout=self.deps.settings.llm.timeout,
            config=config,
        )
        return message_text(reply).strip()

    async def grade_generation(self, state: RagState, config: RunnableConfig) -> dict[str, Any]:
        """Accept the answer or say why not (:class:`~rags_expert.rag.verdict._decision.AnswerJudge`): citations
        added where it lacks them, then the evidence or the two LLM graders (grounded, useful)."""
        return await self.verdicts.grade(state, config)

    async def reflect(self, state: RagState, config: RunnableConfig) -> dict[str, Any]:
        """After a rejected answer, write one sentence of advice and store it in the lesson memory
        (not in the small profile: a weak model's advice is noise)."""
        scope = value(state, "lesson_scope")
        if self.deps.lessons is None or not scope or not self.deps.profile.write_lessons:
            return {}
        await learn_from_failure(
            self.deps.lessons,
            self.deps.model,
            self.deps.grading,
            scope=scope,
            question=state["question"],
            attempt=value(state, "answer"),
            feedback=value(state, "feedback"),
            score=5.0 if value(state, "grounded") else 0.0,
            config=config,
            uids=[chunk_id(doc) for doc in value(state, "relevant")],
        )
        return {"llm_calls": 1}

    @fails_as(FailureReason.PROMPT_ERROR, catch=(PromptError,))
    async def extract_answer(self, state: RagState) -> dict[str, Any]:
        """The extractive fallback: quote the best sentence of the relevant chunks that matches the question and
        holds an answer of its type, or a linked pair's two sentences, cited (:func:`~rags_expert.rag._shared.extractive.
        quoted_answer`); with none, leave the answer empty (the run ends in failure) and keep the closest units for
        the failure to offer (``evidence.closest_passages``)."""
        deps = self.deps
        quoted = await quoted_answer(
            state["question"], state["relevant"], deps.evidence, deps.prompts, self.judge.pair_coverage
        )
        if quoted is None:
            closest = await deps.evidence.closest(
                state["question"], state["relevant"], deps.settings.evidence.closest_passages
            )
            return {
                "answer_kind": "",
                "closest": [{"quote": m.sentence, "n": m.doc + 1} for m in closest],
                # relevant chunks but no unit that answers: not_useful, unless a rejected draft said why already
                "failure_reason": value(state, "failure_reason") or FailureReason.NOT_USEFUL.value,
            }
        emit("answer_extracted", chunk=quoted.chunk, score=round(quoted.score, 3))
        return {"answer": quoted.text, "answer_kind": AnswerKind.EXTRACTIVE.value, "failure_reason": ""}

    @fails_as(FailureReason.PROMPT_ERROR, catch=(PromptError,), log_as="the confirmation prompt cannot be rendered")
    @fails_as(FailureReason.LLM_ERROR, catch=(LLMCallError,), charge=lambda state: {"llm_calls": 1})
    async def confirm_answer(self, state: RagState, config: RunnableConfig) -> dict[str, Any]:
        """Ask the model whether the chunks it answered from state the answer the run would give, as a proposed
        answer after the answer call's own chunks and question (the server's prompt cache reads only what follows
        them: :func:`~rags_expert.rag.answer.prompt.confirm_messages`); unless the calibrated
        probability that it is right reaches ``evidence.min_confirm``, the run ends in the honest failure
        (:mod:`~rags_expert.rag.verdict.confirmed`). A failed call ends the run too (``llm_error``)."""
        deps = self.deps
        given, _ = cited_sources(value(state, "answer"), state["relevant"])  # as the user would read it
        messages = confirm_messages(
            deps.prompts,
            deps.profile,
            question=state["question"],
            relevant=refined_context(state["relevant"], value(state, "strips")),
            answer=given,
            lessons=value(state, "lessons"),
        )
        yes = await grading.yes_probability(deps.model, messages, deps.grading, config=config)
        kind = value(state, "answer_kind") or AnswerKind.GENERATED.value
        confirmed = confirmation(kind, yes.value, deps.settings.evidence.min_confirm)
        emit("answer_confirmation", kind=kind, yes=round(yes.value, 3), confidence=round(confirmed.confidence, 3))
        asked = {"yes": round(yes.value, 4), "confidence": round(confirmed.confidence, 4)}
        update: dict[str, Any] = {"confirmation": asked, "llm_calls": 1}
        if confirmed.confirmed:
            return update
        emit("answer_rejected", generation=value(state, "generations"), feedback=UNCONFIRMED)
        return update | {"feedback": UNCONFIRMED, "failure_reason": FailureReason.NOT_GROUNDED.value}

    async def finalize_success(self, state: RagState) -> dict[str, Any]:
        """Emit the checked answer with exactly the cited chunks as sources, and clear the working state."""
        self.recalls.discard(state)
        return fresh_question(self.deps.settings) | {
            "messages": [
                redact_message(success_message(state, self.deps.settings.evidence.span_min_support), self._secrets)
            ]
        }

    async def finalize_failure(self, state: RagState) -> dict[str, Any]:
        """Say honestly that no grounded answer was found (offering a grounded partial answer), never raise."""
        self.recalls.discard(state)
        message = failure_message(self.deps.prompts, state, self.redacted_error)
        return fresh_question(self.deps.settings) | {"messages": [redact_message(message, self._secrets)]}
