"""The tools of ``rags-expert mcp`` (:mod:`rags_expert.hosts.mcp.server`): what each returns, and :class:`Agents`,
which builds the agents once and runs one tool call on them.

Each tool returns a ``CallToolResult``: the text a reader (or a model) sees, and the same result as structured
content (the models below, the tools' output schemas). An honest failure of an agent is ``is_error`` with the
agent's honest message as its text; any other fault is a ``ToolError`` naming it in one line. Both texts and
every string of the structured content are redacted.

Without a chat model (no API key, no base URL) the server still starts: ``search`` needs none, and ``ask`` and
``kg_query`` answer ``is_error`` with :data:`NO_MODEL`, which says how to configure one.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field, ValidationError

from rags_expert.limits import QuestionTooLongError, check_question
from rags_expert.outcomes import FailureReason, Outcome, OutcomeName
from rags_expert.rag.authorization import AuthorizationError, build_authorizer
from rags_expert.rag.wrappers.guard import permitted_docs
from rags_expert.retrieval.options import SearchOptions
from rags_expert.secrets import redact_data
from rags_expert.settings import KGExpertSettings, RagsExpertSettings
from rags_expert.settings.environment import SecretBook

log = logging.getLogger(__name__)

NO_MODEL_REASON = FailureReason.NO_CHAT_MODEL.value
NO_MODEL = (
    "no chat model is configured, so {tool} cannot answer (search works without one): set llm.base_url and "
    "llm.model (RAGS_EXPERT_LLM__BASE_URL and RAGS_EXPERT_LLM__MODEL, or --base-url and --model) or an API key "
    "(RAGS_EXPERT_LLM__API_KEY or OPENAI_API_KEY), or start the server with 'rags-expert mcp --local'"
)
"""The text of ``ask`` and ``kg_query`` on a server started without a chat model."""


class Source(BaseModel):
    """One chunk the answer cites as ``[n]``."""

    n: int = Field(description="The citation number in the answer.")
    title: str | None = None
    source: str | None = Field(None, description="The document (file path or URI).")
    page: int | str | None = None
    content: str = Field(description="The chunk's text.")
    score: float | None = Field(None, description="The retrieval score.")
    uid: str | None = Field(None, description="The chunk's id, stable across runs.")


class Span(BaseModel):
    """The text of a cited chunk that supports one answer sentence (docs/citations.md)."""

    uid: str = Field(description="The chunk's id in the knowledge base (as in sources).")
    n: int = Field(description="The chunk's citation number in the answer.")
    start: int = Field(description="Where the quote starts in the chunk's text as stored.")
    end: int = Field(description="Where it ends: quote == chunk_text[start:end].")
    sha256: str = Field(description="SHA-256 of the chunk's text as stored.")
    quote: str
    source: str | None = None


class SentenceCitation(BaseModel):
    """One answer sentence and its span, or unsupported (no span of the sources supports it)."""

    sentence: str
    span: Span | None = None
    unsupported: bool = False


class AskResult(BaseModel):
    """What ``ask`` returns (also on a tool error, with ``outcome`` = failure)."""

    answer: str = Field(description="The checked answer with [n] citations, or the honest failure message.")
    outcome: OutcomeName
    reason: str | None = Field(None, description="Why the run failed (e.g. no_relevant_documents, not_grounded).")
    thread_id: str = Field(description="Pass it back to ask a follow-up in the same conversation.")
    sources: list[Source] = Field(default_factory=list)
    citations: list[SentenceCitation] = Field(
        default_factory=list, description="Per answer sentence, the span that supports it ('rags-expert verify')."
    )


class Hit(BaseModel):
    """One knowledge-base chunk found by ``search``."""

    rank: int
    content: str
    title: str | None = None
    source: str | None = None
    page: int | str | None = None
    score: float | None = None


class SearchResult(BaseModel):
    """What ``search`` returns: the hits, best first."""

    query: str
    hits: list[Hit]


class KGResult(BaseModel):
    """What ``kg_query`` returns (also on a tool error, with ``outcome`` = failure)."""

    answer: str = Field(description="The rows in words, or the honest failure message.")
    outcome: OutcomeName
    thread_id: str
    query: str | None = Field(None, description="The Cypher query whose rows are shown.")
    columns: list[str] = Field(default_factory=list)
    rows: list[dict[str, Any]] = Field(default_factory=list)
    row_count: int = 0
    truncated: bool = False
    score: float | None = None
    steps: int = 0
    reason: str | None = Field(None, description="Why the run ended (docs/kg.md).")
    exit_reason: str | None = Field(None, description="The same as reason (deprecated, removed in 0.3).")


class Agents:
    """The agents one server process serves: built once, closed when the server stops."""

    def __init__(
        self,
        settings: RagsExpertSettings,
        kg_settings: KGExpertSettings | None,
        book: SecretBook,
        ready: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """``ready``: awaited before the agents take their first question (the ``--local`` model server)."""
        self.settings = settings
        self.kg_settings = kg_settings
        self.book = book
        self.ready = ready
        self.rag: Any = None
        self.kg: Any = None
        self.retriever: Any = None
        self.has_model = True
        # search is checked like ask's chunks; MCP requests carry no user: the hook is asked about None
        self.authorizer = build_authorizer(settings.authorization)
        self._lock = asyncio.Lock()

    @property
    def tools(self) -> list[str]:
        """The tool names this configuration serves."""
        return ["ask", "search", *(["kg_query"] if self.kg_settings is not None else [])]

    async def open(self) -> None:
        """Build the RAG agent (and the KG agent, starting its database) unless already built; without a chat
        model, only the knowledge base's retriever (for ``search``)."""
        from rags_expert.kg.agent import KGQueryExpert
        from rags_expert.rag import RagsExpert
        from rags_expert.retrieval.factory import build_retriever

        async with self._lock:
            if self.retriever is not None:
                return
            model = await asyncio.to_thread(self._chat_model)
            if model is None:
                self.retriever = await asyncio.to_thread(build_retriever, self.settings)
                return
            waiting = self.ready() if self.ready is not None else asyncio.sleep(0)
            rag, _ = await asyncio.gather(RagsExpert(self.settings, chat_model=model).async_init(), waiting)
            if self.kg_settings is not None:
                self.kg = await KGQueryExpert(self.kg_settings).async_init()
            self.rag, self.retriever = rag, rag.retriever

    def _chat_model(self) -> Any:
        """The configured chat model, or None (``has_model`` False) when none is configured."""
        from rags_expert.llm.chat import build_chat_model

        try:
            return build_chat_model(self.settings.llm, client_timeout=self.settings.grading.timeout)
        except ValueError as exc:  # no API key and no base URL
            log.info("no chat model: %s", exc)  # redacted by the CLI's log filter
            self.has_model = False
            return None

    async def aclose(self) -> None:
        """Stop the KG agent's database (the RAG agent holds nothing to close)."""
        if self.kg is not None:
            await self.kg.aclose()
            self.kg = None

    # -- tools ---------------------------------------------------------------------------------

    async def ask(self, question: str, thread_id: str | None, library_tags: list[str] | None) -> CallToolResult:
        """Run the RAG graph on ``question`` in ``thread_id`` (a new thread when None)."""
        thread = thread_id or uuid.uuid4().hex
        if not self.has_model:
            text = NO_MODEL.format(tool="ask")
            return self._result(
                AskResult(answer=text, outcome=Outcome.FAILURE.value, reason=NO_MODEL_REASON, thread_id=thread),
                text,
                error=True,
            )
        configurable: dict[str, Any] = {"thread_id": thread}
        if library_tags is not None:
            configurable["library_tags"] = library_tags
        final = await self._final_message(self.rag, question, configurable)
        meta = final.response_metadata
        result = AskResult(
            answer=str(final.content).strip(),
            outcome=meta.get("outcome", Outcome.FAILURE.value),
            reason=meta.get("reason"),
            thread_id=thread,
            sources=[Source(**{k: s.get(k) for k in Source.model_fields if k in s}) for s in meta.get("sources", [])],
            citations=[SentenceCitation.model_validate(c) for c in meta.get("citations", [])],
        )
        return self._result(result, _answer_text(result), error=result.outcome != Outcome.SUCCESS)

    async def search(self, query: str, top_k: int | None, library_tags: list[str] | None) -> CallToolResult:
        """The knowledge base's hits for ``query`` (the RAG agent's own retriever)."""
        options = SearchOptions.of({"top_k": top_k or self.settings.retrieval.top_k, "library_tags": library_tags})
        try:  # the graphs' own length check (ask makes it in prepare)
            check_question(query.strip(), self.settings.max_question_chars)
        except QuestionTooLongError as exc:
            raise ToolError(str(exc).replace("the question", "the query", 1)) from None
        try:  # an empty tag list scopes nothing, as for ask
            docs = [] if options.scopes_nothing else await self.retriever.ainvoke(query, **options.kwargs())
            if self.authorizer is not None:
                docs = await permitted_docs(self.authorizer, None, docs)
        except AuthorizationError as exc:  # fail closed: no hits
            raise ToolError(f"AuthorizationError: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - a knowledge-base fault is the tool's error, redacted
            raise self._error(exc) from None
        hits = [
            Hit(
                rank=i,
                content=d.page_content,
                title=d.metadata.get("title"),
                source=d.metadata.get("source"),
                page=d.metadata.get("page"),
                score=d.metadata.get("score"),
            )
            for i, d in enumerate(docs, start=1)
        ]
        result = SearchResult(query=query, hits=hits)
        return self._result(result, _hits_text(result))

    async def kg_query(self, question: str, thread_id: str | None) -> CallToolResult:
        """Run the KG-query graph on ``question`` in ``thread_id`` (a new thread when None)."""
        thread = thread_id or uuid.uuid4().hex
        if not self.has_model:
            text = NO_MODEL.format(tool="kg_query")
            failed = KGResult(
                answer=text,
                outcome=Outcome.FAILURE.value,
                thread_id=thread,
                reason=NO_MODEL_REASON,
                exit_reason=NO_MODEL_REASON,
            )
            return self._result(failed, text, error=True)
        final = await self._final_message(self.kg, question, {"thread_id": thread})
        meta = final.response_metadata
        fields = {k: meta[k] for k in KGResult.model_fields if k in meta and meta[k] is not None}
        result = KGResult(**{**fields, "answer": str(final.content).strip(), "thread_id": thread})
        return self._result(result, result.answer, error=result.outcome != Outcome.SUCCESS)

    # -- helpers -------------------------------------------------------------------------------

    async def _final_message(self, agent: Any, question: str, configurable: dict[str, Any]) -> Any:
        """The last message of one run of ``agent``'s graph (faults outside the graph: a redacted ToolError)."""
        try:
            out = await agent.get_compiled_graph().ainvoke(
                {"messages": [("user", question)]}, {"configurable": configurable}
            )
        except Exception as exc:  # noqa: BLE001 - the graphs report model faults themselves; this is the rest
            raise self._error(exc) from None
        return out["messages"][-1]

    def _error(self, exc: BaseException) -> ToolError:
        """A tool error naming the exception in one redacted line."""
        return ToolError(self.book.redact(" ".join(f"{type(exc).__name__}: {exc}".split())))

    def _result(self, result: BaseModel, text: str, *, error: bool = False) -> CallToolResult:
        """The tool result: ``text`` for the reader, ``result`` as structured content, both redacted."""
        return CallToolResult(
            content=[TextContent(type="text", text=self.book.redact(text))],
            structured_content=redact_data(result.model_dump(mode="json"), self.book.redact),
            is_error=error,
        )


def _answer_text(result: AskResult) -> str:
    """The answer and its numbered sources, as ``rags-expert ask`` prints them."""
    lines = [result.answer]
    if result.sources:
        lines.append("")
        lines.append("Sources:")
    for s in result.sources:
        page = f", p. {s.page}" if s.page is not None else ""
        lines.append(f"[{s.n}] {s.title or s.source or ''}{page} ({s.source or ''})")
    return "\n".join(lines)


def _hits_text(result: SearchResult) -> str:
    """The hits as ``rags-expert search`` prints them."""
    if not result.hits:
        return "no hits"
    lines = []
    for h in result.hits:
        page = f" p.{h.page}" if h.page is not None else ""
        score = f"[{h.score:.4f}] " if h.score is not None else ""
        lines.append(f"{h.rank}. {score}{h.title} — {h.source}{page}\n   {' '.join(h.content.split())}")
    return "\n".join(lines)


def argument_error(tool: str, exc: ValidationError, redact: Callable[[str], str]) -> str:
    """One line naming each rejected argument of ``tool``, what it expects and what came (``redact``-ed before it
    is shortened, so no part of a secret shows)."""
    parts = []
    for error in exc.errors(include_url=False):
        name = ".".join(str(part) for part in error["loc"]) or "arguments"
        if error["type"] == "missing":
            parts.append(f"{name}: missing (required)")
            continue
        expected = error["msg"].removeprefix("Input should be ").split(", unable to")[0]
        given = error.get("input")
        shown = redact(repr(given))
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        parts.append(f"{name}: expected {expected}, got {type(given).__name__} {shown}")
    return " ".join(f"invalid arguments for {tool}: {'; '.join(parts)}".split())
