"""Shared grading, rephrasing and scoring over any LangChain chat model.

Used by the RAG graph (:mod:`rags_expert.rag.graph`) and by the KG-query reflexion
graph (:mod:`rags_expert.kg`): both import these functions, neither copies them.

Every call is one model request (plus transport retries, see
:func:`rags_expert.llm.chat.call_model`) with a capped output length and its own
timeout. Structured output is asked for with the configured method (a forced
tool call, a JSON-schema response format, JSON mode or plain text), and the reply
is read tolerantly in this order: the tool call's arguments, JSON in the text,
then plain words (``"Yes."``, ``"score: 8/10"``). When nothing parses, the
documented default of :class:`~rags_expert.settings.GradingSettings` applies and
the result says ``parsed=False``. Parsing (in a worker thread: CPU, not the event loop) never raises; only a model fault that
survives its retries raises :class:`~rags_expert.llm.chat.LLMCallError`.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig
from langgraph.constants import TAG_NOSTREAM
from pydantic import BaseModel, Field

from rags_expert.llm.chat import bind_output_cap, call_model, message_text
from rags_expert.llm.parsing import parse_free_text_field, parse_score, parse_yes_no, read_off_loop
from rags_expert.llm.structured import GradingContext, StructuredReply, structured_call

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

log = logging.getLogger(__name__)


# --- output schemas --------------------------------------------------------------------------


class RelevanceGrade(BaseModel):
    """Whether a retrieved chunk helps answer the question."""

    relevant: bool = Field(description="true if the chunk contains information that helps answer the question")


class RelevantChunks(BaseModel):
    """Which of several numbered chunks help answer the question (one batch grading call)."""

    relevant: list[int] = Field(description="the numbers n of the chunks that help answer the question")


class NeededStrips(BaseModel):
    """Which numbered strips of a relevant chunk are needed to answer the question (knowledge refinement)."""

    needed: list[int] = Field(description="the numbers n of the strips needed to answer the question")


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
class YesProbability:
    """How likely a model's next word is "yes" rather than "no" (:func:`yes_probability`)."""

    value: float
    """P(yes) / (P(yes) + P(no)) over the first token's alternatives; from the written word when the endpoint sends
    no log-probabilities (1 or 0, 0.5 when it writes neither)."""
    read: Literal["logprobs", "text"]
    """Where ``value`` came from."""
    raw: str
    """The reply's text (its first token)."""


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
    return await read_off_loop(len(reply.raw), _verdict, reply, "relevant", None, ctx.settings.default_relevant)


async def grade_relevance_each(
    model: BaseChatModel,
    question: str,
    documents: list[str],
    ctx: GradingContext,
    *,
    config: RunnableConfig | None = None,
) -> list[Verdict]:
    """:func:`grade_relevance` for each of ``documents``, at most ``grading.concurrency`` calls at once (a
    single-slot server queues the rest anyway); the verdicts in the documents' order. Raises the first failure."""
    limit = asyncio.Semaphore(ctx.settings.concurrency)

    async def grade(document: str) -> Verdict:
        async with limit:
            return await grade_relevance(model, question, document, ctx, config=config)

    results = await asyncio.gather(*(grade(d) for d in documents), return_exceptions=True)
    if failed := next((r for r in results if isinstance(r, BaseException)), None):
        raise failed
    return [r for r in results if not isinstance(r, BaseException)]


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
    return await read_off_loop(len(reply.raw), _numbers_chosen, reply, "relevant", n_chunks)


async def select_strips(
    model: BaseChatModel,
    question: str,
    title: str,
    strips: str,
    n_strips: int,
    ctx: GradingContext,
    *,
    config: RunnableConfig | None = None,
) -> list[bool] | None:
    """Which of ``n_strips`` numbered ``strips`` (framed ``<strip n="1">``) of a chunk titled ``title`` are
    needed to answer ``question``, in one call (prompt ``refine_strips``); None when the reply names no
    readable list. Read like :func:`grade_relevance_batch`'s reply."""
    messages = ctx.messages("refine_strips", trusted=("strips",), question=question, title=title, strips=strips)
    reply = await structured_call(model, NeededStrips, messages, ctx, config=config)
    return await read_off_loop(len(reply.raw), _numbers_chosen, reply, "needed", n_strips)


def _numbers_chosen(reply: StructuredReply, field: str, n: int) -> list[bool] | None:
    """Which of 1..n the reply's list ``field`` names (numbers outside 1..n ignored; a reply of bare numbers,
    "1, 3", "[2]", "[]", is read too); None when it names no readable list."""
    if reply.parsed is not None:
        numbers = set(getattr(reply.parsed, field))
    elif (reply.raw or "").strip() and re.fullmatch(r"\s*+\[?[\s,;0-9]*+\]?\s*+", reply.raw):
        numbers = {int(x) for x in re.findall(r"[0-9]+", reply.raw)}
    else:
        return None
    return [i in numbers for i in range(1, n + 1)]


async def grade_grounded(
    model: BaseChatModel, documents: str, answer: str, ctx: GradingContext, *, config: RunnableConfig | None = None
) -> Verdict:
    """Is every claim of ``answer`` supported by ``documents``? (prompt ``grade_grounded``)

    ``documents`` is the context as :func:`rags_expert.citations.format_context` frames it (already
    neutralised); ``answer`` is neutralised here.
    """
    messages = ctx.messages("grade_grounded", trusted=("documents",), documents=documents, answer=answer)
    reply = await structured_call(model, GroundednessGrade, messages, ctx, config=config)
    return await read_off_loop(
        len(reply.raw), _verdict, reply, "grounded", "unsupported", ctx.settings.default_grounded
    )


async def grade_useful(
    model: BaseChatModel, question: str, answer: str, ctx: GradingContext, *, config: RunnableConfig | None = None
) -> Verdict:
    """Does ``answer`` resolve ``question``? (prompt ``grade_useful``)"""
    reply = await structured_call(
        model, UsefulnessGrade, ctx.messages("grade_useful", question=question, answer=answer), ctx, config=config
    )
    return await read_off_loop(len(reply.raw), _verdict, reply, "useful", "missing", ctx.settings.default_useful)


YES_NO_ALTERNATIVES = 10
"""Top alternatives of the first token read for "yes" and "no" (any case, with or without a leading space)."""
YES_NO_MIN_MASS = 0.05
"""Below this total probability of "yes" and "no" among them, the token is something else ("The", "Based"): the
written word decides."""


async def yes_probability(
    model: BaseChatModel, messages: Sequence[BaseMessage], ctx: GradingContext, *, config: RunnableConfig | None = None
) -> YesProbability:
    """The probability that the model answers ``messages`` (which end in a yes/no question) with "yes": one request
    for one token with the log-probabilities of its top alternatives (llama.cpp's server, vLLM, OpenAI), so a
    model's doubt is a number rather than a coin toss; its prompt prefix is the caller's to keep stable (the
    server's prompt cache then reads only what is new). Raises only LLMCallError."""
    config = {**(config or {}), "tags": [*(config or {}).get("tags", []), TAG_NOSTREAM, "rags_expert:grading"]}
    runnable = bind_output_cap(model, model.bind(logprobs=True, top_logprobs=YES_NO_ALTERNATIVES), 1)
    reply = await call_model(runnable, list(messages), policy=ctx.retry, timeout=ctx.settings.timeout, config=config)
    raw = message_text(reply)
    shares = _yes_no_mass(getattr(reply, "response_metadata", None) or {})
    if shares is not None and sum(shares) >= YES_NO_MIN_MASS:
        return YesProbability(shares[0] / sum(shares), "logprobs", raw)
    said = parse_yes_no(raw)
    return YesProbability(0.5 if said is None else float(said), "text", raw)


def _yes_no_mass(metadata: dict[str, Any]) -> tuple[float, float] | None:
    """The probabilities of "yes" and "no" among the first token's alternatives in a reply's ``logprobs``
    (OpenAI's shape: ``{"content": [{"top_logprobs": [{"token", "logprob"}, ...]}]}``), or None without them."""
    content = (metadata.get("logprobs") or {}).get("content") or []
    if not content or not isinstance(content[0], dict):
        return None
    yes = no = 0.0
    for alternative in content[0].get("top_logprobs") or []:
        word = str(alternative.get("token", "")).strip().lower()
        if word in ("yes", "no"):
            share = math.exp(float(alternative.get("logprob", -math.inf)))
            yes, no = (yes + share, no) if word == "yes" else (yes, no + share)
    return yes, no


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
    query = await read_off_loop(len(reply.raw), _text_field, reply, "query")
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
    loose = await read_off_loop(len(reply.raw), parse_score, reply.raw)
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
    text = await read_off_loop(len(reply.raw), _text_field, reply, "question")
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
    text = await read_off_loop(len(reply.raw), _text_field, reply, "lesson")
    return text if len(text) >= 12 else ""
