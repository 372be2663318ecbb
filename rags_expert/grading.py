"""Shared grading, rephrasing and scoring over any LangChain chat model.

Used by the RAG graph (:mod:`rags_expert.rag.graph`) and by the KG-query reflexion
graph (:mod:`rags_expert.kg`): both import these functions, neither copies them.

Every call is one model request (plus transport retries, see
:func:`rags_expert.llm.call_model`) with a capped output length and its own
timeout. Structured output is asked for with the configured method (a forced
tool call, a JSON-schema response format, JSON mode or plain text), and the reply
is read tolerantly in this order: the tool call's arguments, JSON in the text,
then plain words (``"Yes."``, ``"score: 8/10"``). When nothing parses, the
documented default of :class:`~rags_expert.settings.GradingSettings` applies and
the result says ``parsed=False``. Parsing never raises; only a model fault that
survives its retries raises :class:`~rags_expert.llm.LLMCallError`.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.constants import TAG_NOSTREAM
from pydantic import BaseModel, Field

from rags_expert.llm import LLMCallError, RetryPolicy, bind_output_cap, call_model, message_text
from rags_expert.parsing import parse_free_text_field, parse_model, parse_score, parse_yes_no
from rags_expert.prompts import PromptStore, neutralise
from rags_expert.settings import AgentSettings, GradingSettings, RagsExpertSettings

M = TypeVar("M", bound=BaseModel)
log = logging.getLogger(__name__)


# --- output schemas --------------------------------------------------------------------------


class RelevanceGrade(BaseModel):
    """Whether a retrieved chunk helps answer the question."""

    relevant: bool = Field(description="true if the chunk contains information that helps answer the question")


class RelevantChunks(BaseModel):
    """Which of several numbered chunks help answer the question (one batch grading call)."""

    relevant: list[int] = Field(description="the numbers n of the chunks that help answer the question")


class GroundednessGrade(BaseModel):
    """Whether every claim of the answer is supported by the chunks."""

    grounded: bool = Field(description="true if every claim in the answer is supported by the chunks")
    unsupported: str = Field("", description="the claims that are not supported, if any")


class UsefulnessGrade(BaseModel):
    """Whether the answer resolves the question."""

    useful: bool = Field(description="true if the answer resolves the question")
    missing: str = Field("", description="what the answer still lacks, if anything")


class RephrasedQuery(BaseModel):
    """A search query rewritten for better retrieval."""

    query: str = Field(description="the rewritten search query")


class StandaloneQuestion(BaseModel):
    """A follow-up rewritten so that it stands alone."""

    question: str = Field(description="the standalone question")


class LessonText(BaseModel):
    """One sentence of advice written after a failed attempt."""

    lesson: str = Field(description="one concrete sentence of advice")


class ScoreGrade(BaseModel):
    """A 0-10 score with a one-sentence reason."""

    score: float = Field(ge=0, le=10, description="score from 0 (useless) to 10 (perfect)")
    reason: str = Field("", description="one sentence explaining the score")


# --- results ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """A yes/no judgement. ``parsed`` is False when the default was used."""

    value: bool
    parsed: bool
    raw: str
    reason: str = ""

    def __bool__(self) -> bool:
        return self.value


@dataclass(frozen=True)
class Score:
    """A 0-10 score. ``parsed`` is False when the default was used."""

    score: float
    reason: str
    parsed: bool
    raw: str


@dataclass(frozen=True)
class StructuredReply(Generic[M]):
    """A structured call's outcome: the validated object (or None) and the reply's raw text."""

    parsed: M | None
    raw: str


@dataclass(frozen=True)
class GradingContext:
    """What every shared call needs besides the model: settings, prompts, retry policy."""

    settings: GradingSettings
    prompts: PromptStore
    retry: RetryPolicy
    runnables: dict[tuple[int, str, str], tuple[BaseChatModel, Runnable]] = dataclasses.field(
        default_factory=dict, compare=False, repr=False
    )
    """The structured-output runnables built so far, by (model, schema, method): binding a schema as a tool
    converts it to JSON schema, which took more client CPU than the rest of a grading call."""

    @classmethod
    def from_settings(cls, settings: AgentSettings | None = None, prompts: PromptStore | None = None) -> GradingContext:
        settings = settings or RagsExpertSettings()
        return cls(
            settings=settings.grading,
            prompts=prompts or PromptStore(settings.prompts, settings.prompt_dir),
            retry=RetryPolicy.from_settings(settings.llm, settings.secrets()),
        )

    def messages(self, key: str, *, trusted: tuple[str, ...] = (), **variables: Any) -> list[BaseMessage]:
        """System prompt plus the rendered template ``key`` as the user turn.

        Every variable is data and is neutralised (it cannot close the prompt's frames), except
        the ``trusted`` ones, which the caller built itself (e.g. an already framed context).
        """
        safe = {k: v if k in trusted or not isinstance(v, str) else neutralise(v) for k, v in variables.items()}
        return [
            SystemMessage(self.prompts.render("grader_system")),
            HumanMessage(self.prompts.render(key, **safe)),
        ]


# --- the one structured call -------------------------------------------------------------------


def _structured_runnable(
    model: BaseChatModel, schema: type[BaseModel], ctx: GradingContext, method: str | None = None
) -> Runnable:
    """``model`` set up to ask for ``schema`` by ``method`` (default: the configured one), output capped;
    built once per agent (the cache keeps the model, so its id cannot be reused while cached)."""
    method = method or ctx.settings.structured_output
    key = (id(model), f"{schema.__module__}.{schema.__qualname__}", method)
    cached = ctx.runnables.get(key)
    if cached is not None and cached[0] is model:
        return cached[1]
    runnable = _bind_structured(model, schema, ctx, method)
    ctx.runnables[key] = (model, runnable)
    return runnable


def _bind_structured(model: BaseChatModel, schema: type[BaseModel], ctx: GradingContext, method: str) -> Runnable:
    """``model`` asking for ``schema`` by ``method`` (a forced tool call, a response format, or plain text)."""
    runnable: Runnable = model
    body: dict[str, Any] = {}
    if method == "function_calling" and "extra_body" in getattr(type(model), "model_fields", {}):
        # an OpenAI-compatible client: the same forced tool call, sent as request-body fields. Through the
        # ``tools`` argument the openai SDK re-validates the constant tool definition on every request (a
        # recursive type-driven transform: most of a grading call's client CPU, bench/speed_cost.py)
        tool = convert_to_openai_tool(schema)
        body["tools"] = [tool]
        body["tool_choice"] = {"type": "function", "function": {"name": tool["function"]["name"]}}
    elif method == "function_calling":
        try:
            runnable = model.bind_tools([schema], tool_choice=schema.__name__)
        except Exception as exc:  # noqa: BLE001 - e.g. no tools, or tool_choice by name unsupported
            log.info(
                "structured output %r unavailable for %s (%s); asking in plain text",
                method,
                type(model).__name__,
                type(exc).__name__,
            )
    elif method == "json_schema":
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema()},
        }
    elif method == "json_mode":
        body["response_format"] = {"type": "json_object"}
    return bind_output_cap(model, runnable, ctx.settings.max_tokens, body)


_FORMAT_WORDS = re.compile(r"response_format|json_schema|json_object|tool_choice|\btools\b", re.I)


def format_rejected(exc: LLMCallError) -> bool:
    """Whether a failed call was the endpoint refusing the structured-output request itself.

    The error was not retried (it is the request's fault, see :func:`rags_expert.llm.is_transient`)
    and its text names the response format or the tools.
    """
    return exc.attempts == 1 and bool(_FORMAT_WORDS.search(str(exc)))


def _reply_payloads(reply: Any) -> list[Any]:
    """Candidate payloads of a reply, best first: tool-call args, malformed tool-call args, text."""
    payloads: list[Any] = []
    for call in getattr(reply, "tool_calls", None) or []:
        payloads.append(call.get("args"))
    for call in getattr(reply, "invalid_tool_calls", None) or []:
        payloads.append(call.get("args"))
    payloads.append(message_text(reply))
    return [p for p in payloads if p]


async def structured_call(
    model: BaseChatModel,
    schema: type[M],
    messages: Sequence[BaseMessage],
    ctx: GradingContext,
    *,
    config: RunnableConfig | None = None,
) -> StructuredReply[M]:
    """Ask ``model`` for a ``schema`` object; return it (or None) with the reply's raw text.

    One request with capped output tokens and the grading timeout; its tokens are
    kept out of the host's message stream. Raises only LLMCallError.
    """
    config = {**(config or {}), "tags": [*(config or {}).get("tags", []), TAG_NOSTREAM, "rags_expert:grading"]}
    method = ctx.settings.structured_output
    try:
        reply = await call_model(
            _structured_runnable(model, schema, ctx),
            list(messages),
            policy=ctx.retry,
            timeout=ctx.settings.timeout,
            config=config,
        )
    except LLMCallError as exc:
        if method == "text" or ctx.retry.max_retries < 1 or not format_rejected(exc):
            raise
        # The endpoint refused the structured-output request itself (e.g. llama-cpp-python: HTTP 500
        # "response_format.type should be 'text' or 'json_object'"): ask again for plain text. This
        # request takes the place of a retry, so the bound on requests (bound * (1 + max_retries)) holds.
        log.warning("the endpoint rejected structured output %r (%s); asking for plain text", method, exc.error_class)
        fallback_policy = dataclasses.replace(ctx.retry, max_retries=ctx.retry.max_retries - 1)
        reply = await call_model(
            _structured_runnable(model, schema, ctx, "text"),
            list(messages),
            policy=fallback_policy,
            timeout=ctx.settings.timeout,
            config=config,
        )
    payloads = _reply_payloads(reply)
    raw = " | ".join(p if isinstance(p, str) else str(p) for p in payloads)
    for payload in payloads:
        if (obj := parse_model(schema, payload)) is not None:
            return StructuredReply(obj, raw)
    return StructuredReply(None, raw)


def _verdict(reply: StructuredReply, field: str, reason_field: str | None, default: bool) -> Verdict:
    reason = getattr(reply.parsed, reason_field, "") if (reply.parsed and reason_field) else ""
    if reply.parsed is not None:
        return Verdict(bool(getattr(reply.parsed, field)), True, reply.raw, reason)
    loose = parse_yes_no(reply.raw)
    if loose is not None:
        return Verdict(loose, True, reply.raw)
    return Verdict(default, False, reply.raw)


def _text_field(reply: StructuredReply, field: str) -> str:
    """A rewriter's text: the parsed field, else the first meaningful line of the reply ("" if none)."""
    value = getattr(reply.parsed, field, "") if reply.parsed is not None else ""
    return " ".join((value or parse_free_text_field(reply.raw, field) or "").split())


# --- the shared operations ---------------------------------------------------------------------


async def grade_relevance(
    model: BaseChatModel, question: str, document: str, ctx: GradingContext, *, config: RunnableConfig | None = None
) -> Verdict:
    """Is ``document`` relevant to ``question``? (prompt ``grade_document``)"""
    reply = await structured_call(
        model, RelevanceGrade, ctx.messages("grade_document", question=question, document=document), ctx, config=config
    )
    return _verdict(reply, "relevant", None, ctx.settings.default_relevant)


async def grade_relevance_batch(
    model: BaseChatModel,
    question: str,
    chunks: str,
    n_chunks: int,
    ctx: GradingContext,
    *,
    config: RunnableConfig | None = None,
) -> list[bool] | None:
    """Which of ``n_chunks`` numbered ``chunks`` (framed by ``format_context``) are relevant, in one call
    (prompt ``grade_documents_batch``); None when the reply names no readable list.

    Numbers outside 1..n are ignored; a reply of bare numbers ("1, 3", "[2]", "[]") is read too.
    """
    messages = ctx.messages("grade_documents_batch", trusted=("chunks",), question=question, chunks=chunks)
    reply = await structured_call(model, RelevantChunks, messages, ctx, config=config)
    if reply.parsed is not None:
        numbers = set(reply.parsed.relevant)
    elif (reply.raw or "").strip() and re.fullmatch(r"\s*\[?[\s,;0-9]*\]?\s*", reply.raw):
        numbers = {int(n) for n in re.findall(r"[0-9]+", reply.raw)}
    else:
        return None
    return [n in numbers for n in range(1, n_chunks + 1)]


async def grade_grounded(
    model: BaseChatModel, documents: str, answer: str, ctx: GradingContext, *, config: RunnableConfig | None = None
) -> Verdict:
    """Is every claim of ``answer`` supported by ``documents``? (prompt ``grade_grounded``)

    ``documents`` is the context as :func:`rags_expert.rag.citations.format_context` frames it (already
    neutralised); ``answer`` is neutralised here.
    """
    messages = ctx.messages("grade_grounded", trusted=("documents",), documents=documents, answer=answer)
    reply = await structured_call(model, GroundednessGrade, messages, ctx, config=config)
    return _verdict(reply, "grounded", "unsupported", ctx.settings.default_grounded)


async def grade_useful(
    model: BaseChatModel, question: str, answer: str, ctx: GradingContext, *, config: RunnableConfig | None = None
) -> Verdict:
    """Does ``answer`` resolve ``question``? (prompt ``grade_useful``)"""
    reply = await structured_call(
        model, UsefulnessGrade, ctx.messages("grade_useful", question=question, answer=answer), ctx, config=config
    )
    return _verdict(reply, "useful", "missing", ctx.settings.default_useful)


async def rephrase_query(
    model: BaseChatModel,
    question: str,
    ctx: GradingContext,
    *,
    previous_queries: Sequence[str] = (),
    feedback: str = "",
    config: RunnableConfig | None = None,
) -> str:
    """A new search query for ``question``; falls back to the question itself when nothing parses."""
    tried = "\n".join(f"- {q}" for q in previous_queries) or "(none)"
    reply = await structured_call(
        model,
        RephrasedQuery,
        ctx.messages("rephrase_query", question=question, previous_queries=tried, feedback=feedback or "(none)"),
        ctx,
        config=config,
    )
    query = _text_field(reply, "query")
    return query[:500] if query else question


async def score(
    model: BaseChatModel,
    ctx: GradingContext,
    *,
    prompt_key: str = "score",
    config: RunnableConfig | None = None,
    **variables: Any,
) -> Score:
    """A 0-10 score from the template ``prompt_key`` filled with ``variables``."""
    reply = await structured_call(model, ScoreGrade, ctx.messages(prompt_key, **variables), ctx, config=config)
    if reply.parsed is not None:
        return Score(reply.parsed.score, reply.parsed.reason, True, reply.raw)
    loose = parse_score(reply.raw)
    if loose is not None:
        return Score(loose, "", True, reply.raw)
    return Score(ctx.settings.default_score, "", False, reply.raw)


async def condense_question(
    model: BaseChatModel, question: str, history: str, ctx: GradingContext, *, config: RunnableConfig | None = None
) -> str:
    """Make a follow-up standalone using the conversation ``history``; the question itself if nothing parses,
    or when the reply is the prompt's placeholder (``<the standalone question>``, echoed by SmolLM2-135M)."""
    reply = await structured_call(
        model,
        StandaloneQuestion,
        ctx.messages("condense_question", history=history, question=question),
        ctx,
        config=config,
    )
    text = _text_field(reply, "question")
    return text[:1000] if text and not re.fullmatch(r"<[^<>]*>", text.strip()) else question


async def reflect(
    model: BaseChatModel,
    ctx: GradingContext,
    *,
    task: str,
    attempt: str,
    feedback: str,
    config: RunnableConfig | None = None,
) -> str:
    """One sentence of advice after a failed attempt ("" when the model gives nothing usable)."""
    reply = await structured_call(
        model,
        LessonText,
        ctx.messages("reflect", task=task, attempt=attempt, feedback=feedback or "(unknown)"),
        ctx,
        config=config,
    )
    text = _text_field(reply, "lesson")
    return text if len(text) >= 12 else ""
