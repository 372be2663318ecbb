"""``RagsExpert`` and the KG-query agent as Fred v2 graph agents (``fred_sdk.GraphAgent``).

A Fred pod serves agents from a registry (``create_agent_app(registry={agent_id: agent}, config=...)``);
:func:`registry` gives ours. Each agent is a one-node Fred workflow whose node runs our compiled LangGraph
graph for the turn (:mod:`rags_expert.fred.turn`), built from what Fred gives the turn:

* the chat model Fred routed for the agent (``ctx.model``) is our ``chat_model``;
* the RAG agent searches through Fred's document-search port (:class:`~rags_expert.fred.search.FredDocumentSearch`),
  so the user's token, libraries and documents scope every search;
* the agent's Fred tuning fields (our prompts by key, a few settings) are applied to our settings
  (:mod:`rags_expert.fred.tuning`);
* the answer, its outcome and its sources (Fred ``VectorSearchHit``\\ s, ``[n]`` opening ``sources[n-1]``)
  become the turn's output; Fred keeps the conversation, which the next turn passes back as history.

What lasts between turns is built once per agent, on the first turn that needs it: the lesson memory (when
``lessons.enabled``) and, for the KG agent, the schema and the graph database (:meth:`KGQueryExpert.open`).
Needs the ``fred`` extra (Python 3.12+).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Mapping
from typing import Any, ClassVar, Self

from fred_core.store import VectorSearchHit
from fred_sdk import FieldSpec, GraphAgent, GraphExecutionOutput, GraphWorkflow, StepResult
from fred_sdk.contracts.context import ConversationalState, ConversationTurn
from pydantic import BaseModel, Field, PrivateAttr

from rags_expert.agentflow import AgentFlow
from rags_expert.fred.search import FredDocumentSearch
from rags_expert.fred.tuning import (
    KG_SETTINGS,
    RAG_SETTINGS,
    Tunable,
    apply_tuning,
    kg_prompt_keys,
    rag_prompt_keys,
    tunables,
)
from rags_expert.fred.turn import conversation, fault_text, run_graph
from rags_expert.hosts.progress import KG_PROGRESS, RAG_PROGRESS, Progress
from rags_expert.kg.agent import KGQueryExpert
from rags_expert.lessons import LessonMemory
from rags_expert.outcomes import REASON_KEY, AnswerKind, Outcome, not_found
from rags_expert.prompts import PromptStore
from rags_expert.rag.agent import RagsExpert
from rags_expert.rag.answer.final import error_class
from rags_expert.settings import AgentSettings, KGExpertSettings, RagsExpertSettings, coerce_settings

log = logging.getLogger(__name__)


class TurnInput(BaseModel):
    """What a Fred request carries to the agent: the user's message."""

    message: str


class TurnState(ConversationalState, BaseModel):
    """The Fred workflow's state: the question, our answer, its outcome and cited hits, and the history."""

    message: str = ""
    final_text: str = ""
    outcome: str = ""
    sources: list[VectorSearchHit] = Field(default_factory=list)
    history_uids: list[list[str]] = Field(default_factory=list)
    """The uids each answer of the history cited, in step with it (answer-time authorization reads them)."""


class Shared:
    """What an agent keeps between turns (lesson memory, the opened KG agent).

    Fred copies agent definitions (e.g. per tuning); every copy shares one ``Shared``, so a pod opens one
    lesson memory and one graph database per registered agent.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.items: dict[str, Any] = {}

    def __copy__(self) -> Shared:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Shared:
        return self


async def _unbound(state: BaseModel, ctx: Any) -> Any:
    raise RuntimeError("a rags-expert Fred agent's node is bound per instance (node_handlers)")


class OurFredAgent(GraphAgent):
    """What both Fred agents share: one ``answer`` node running our graph, the output, the history."""

    input_schema = TurnInput
    state_schema = TurnState
    workflow = GraphWorkflow(entry="answer", nodes={"answer": _unbound})
    progress: ClassVar[Progress]
    flow: ClassVar[type[AgentFlow]]
    settings_class: ClassVar[type[AgentSettings]]

    agent_settings: Any = None
    """Our settings for this agent (a settings object); Fred tuning values are applied on top per turn."""
    _shared: Shared = PrivateAttr(default_factory=Shared)

    @classmethod
    def create(cls, settings: AgentSettings | dict[str, Any] | None, agent_id: str) -> Self:
        """The agent for Fred: its host-facing AgentFlow's metadata, our settings, the tuning fields they give."""
        flow = cls.flow
        agent = cls(
            agent_id=agent_id,
            role=flow.role,
            description=flow.description,
            tags=flow.categories,
            agent_settings=coerce_settings(settings, cls.settings_class),
        )
        fields = tuple(FieldSpec(key=t.key, **t.spec) for t in agent.tunables())
        return agent.model_copy(update={"fields": fields})

    def node_handlers(self) -> Mapping[str, object]:
        """The workflow's node, bound to this agent (its settings and what it keeps between turns)."""
        return {"answer": self.answer}

    def tunables(self) -> list[Tunable]:
        """This agent's Fred fields (overridden per agent)."""
        raise NotImplementedError

    def fields_once(self) -> list[Tunable]:
        """:meth:`tunables`, worked out on the first turn and kept (they depend on the agent's settings only)."""
        items = self._shared.items
        if "tunables" not in items:
            items["tunables"] = self.tunables()
        return items["tunables"]

    async def turn_graph(self, ctx: Any, settings: Any) -> tuple[Any, FredDocumentSearch | None, dict[str, Any]]:
        """The compiled graph for this turn, the retriever whose hits it cites, and the run's context."""
        raise NotImplementedError

    def outcome(self, metadata: Mapping[str, Any]) -> str:
        """The outcome shown to the user, from the final message's metadata."""
        raise NotImplementedError

    async def answer(self, state: BaseModel, ctx: Any) -> Any:
        """Run our graph for the turn; every end (an answer, not found, a fault) is an honest answer."""
        turn = TurnState.model_validate(state)
        base = self.agent_settings
        sources: tuple[VectorSearchHit, ...] = ()
        try:
            if ctx.model is None:
                raise LookupError("no chat model is configured for this agent in Fred's models catalog")
            settings = apply_tuning(base, dict(ctx.tuning_values or {}), self.fields_once())
            graph, retriever, context = await self.turn_graph(ctx, settings)
            messages = conversation(turn.conversation_history, turn.message, turn.history_uids)
            final = await run_graph(graph, messages, ctx, self.progress, context)
            if final is None:
                raise RuntimeError("the run ended without an answer")
            text, meta = str(final.content), final.response_metadata
            outcome = self.outcome(meta)
            if retriever is not None:
                sources = retriever.cited_hits(meta.get("sources") or [])
        except Exception as exc:  # noqa: BLE001 - a Fred node that raises leaves the session stuck
            text, outcome = fault_text(exc, base.secrets()), f"failed ({type(exc).__name__})"
            log.warning("turn failed: %s", text)
        ctx.emit_assistant_delta(text)
        ctx.emit_status("outcome", outcome)
        update = {"final_text": text, "outcome": outcome, "sources": list(sources)}
        return StepResult(state_update=update).to_graph_node_result()

    def build_output(self, state: BaseModel) -> GraphExecutionOutput:
        """The answer and the hits it cites (``[n]`` opens ``sources[n-1]``)."""
        turn = TurnState.model_validate(state)
        return GraphExecutionOutput(content=turn.final_text, sources=tuple(turn.sources))

    def build_completed_state(self, state: BaseModel) -> BaseModel:
        """Append this turn to the conversation Fred carries into the next one."""
        turn = TurnState.model_validate(state)
        history = (
            *turn.conversation_history,
            ConversationTurn(user_message=turn.message, agent_response=turn.final_text),
        )
        cited = [*turn.history_uids, [hit.uid for hit in turn.sources]][-len(history) :]
        return turn.model_copy(update={"conversation_history": history, "history_uids": cited})

    async def lessons(self, settings: AgentSettings) -> LessonMemory | None:
        """The agent's lesson memory, opened once (in a worker thread) when lessons are enabled."""
        if not settings.lessons.enabled:
            return None

        shared = self._shared

        def open_once() -> LessonMemory:
            with shared.lock:
                if "lessons" not in shared.items:
                    shared.items["lessons"] = LessonMemory.from_settings(settings)
                return shared.items["lessons"]

        return await asyncio.to_thread(open_once)


class RagsExpertFredAgent(OurFredAgent):
    """Corrective RAG over Fred's document search, with Fred's model."""

    progress = RAG_PROGRESS
    flow = RagsExpert
    settings_class = RagsExpertSettings

    def tunables(self) -> list[Tunable]:
        return tunables(self.agent_settings, rag_prompt_keys(PromptStore()), RAG_SETTINGS)

    async def turn_graph(
        self, ctx: Any, settings: RagsExpertSettings
    ) -> tuple[Any, FredDocumentSearch, dict[str, Any]]:
        retriever = FredDocumentSearch(port=ctx.services.document_search, top_k=settings.retrieval.top_k)
        agent = RagsExpert(
            settings, chat_model=ctx.model, retriever=retriever, lesson_memory=await self.lessons(settings)
        )
        await agent.async_init()
        return agent.get_standalone_graph(), retriever, request_context(ctx)

    def outcome(self, metadata: Mapping[str, Any]) -> str:
        if metadata.get("outcome") == Outcome.SUCCESS:
            n = len(metadata.get("sources") or [])
            how = "quoted" if metadata.get("answer_kind") == AnswerKind.EXTRACTIVE else "answered"
            return f"{how} from {n} source(s)"
        reason = metadata.get(REASON_KEY) or Outcome.FAILURE.value
        if not_found(dict(metadata)):
            return "not found in the knowledge base"
        error = metadata.get("error")
        return f"failed: {reason}" + (f" ({error_class(error)})" if error else "")


class KGQueryFredAgent(OurFredAgent):
    """Read-only Cypher over our graph database (schema and database from our settings), with Fred's model."""

    progress = KG_PROGRESS
    flow = KGQueryExpert
    settings_class = KGExpertSettings

    def tunables(self) -> list[Tunable]:
        return tunables(self.agent_settings, kg_prompt_keys(PromptStore()), KG_SETTINGS)

    async def turn_graph(self, ctx: Any, settings: KGExpertSettings) -> tuple[Any, None, dict[str, Any]]:
        opened = await self.opened()
        expert = opened.rebound(ctx.model, settings, lesson_memory=await self.lessons(settings))
        return expert.get_standalone_graph(), None, {}

    async def opened(self) -> KGQueryExpert:
        """The agent with its schema loaded and its database started (once)."""
        items = self._shared.items
        if "kg" not in items:
            async with items.setdefault("kg_lock", asyncio.Lock()):
                if "kg" not in items:
                    expert = KGQueryExpert(self.agent_settings)
                    await expert.open()
                    items["kg"] = expert
        return items["kg"]

    def outcome(self, metadata: Mapping[str, Any]) -> str:
        rows = metadata.get("rows")
        if rows:
            return f"{len(rows)} row(s) from a read-only query (exit: {metadata.get(REASON_KEY)})"
        return f"no rows (exit: {metadata.get(REASON_KEY)})"


def request_context(ctx: Any) -> dict[str, Any]:
    """Our request options from Fred's turn: the user (scopes lessons, asked about by the authorization hook) and
    the session's libraries.

    Fred's search port narrows every search to the session's libraries and documents itself; the
    libraries are passed on so that the lesson scope (``lessons.scope_by``) sees them too.
    """
    binding = ctx.binding
    out: dict[str, Any] = {}
    # the runtime context holds the user Fred authenticated (the token's uid); the portable one only what the
    # request body named (None on Fred's /agents/execute)
    user = getattr(binding.runtime_context, "user_id", None) or getattr(binding.portable_context, "user_id", None)
    if user:
        out["user_id"] = user
    if libraries := getattr(binding.runtime_context, "selected_document_libraries_ids", None):
        out["library_tags"] = list(libraries)
    return out


def rags_expert_agent(
    settings: RagsExpertSettings | dict[str, Any] | None = None, agent_id: str = "rags-expert"
) -> RagsExpertFredAgent:
    """``RagsExpert`` as a Fred graph agent; ``settings`` as for ``RagsExpert`` (None: defaults + environment)."""
    return RagsExpertFredAgent.create(settings, agent_id)


def kg_query_agent(
    settings: KGExpertSettings | dict[str, Any] | None = None, agent_id: str = "kg-query-expert"
) -> KGQueryFredAgent:
    """The KG-query agent as a Fred graph agent; the settings name the schema and the database (``kg.*``)."""
    return KGQueryFredAgent.create(settings, agent_id)


def registry(
    rag: RagsExpertSettings | dict[str, Any] | None = None,
    kg: KGExpertSettings | dict[str, Any] | None = None,
) -> dict[str, OurFredAgent]:
    """A Fred pod registry entry set: ``RagsExpert``, and the KG agent when ``kg`` settings name a schema."""
    out: dict[str, OurFredAgent] = {}
    rag_agent = rags_expert_agent(rag)
    out[rag_agent.agent_id] = rag_agent
    if kg is not None:
        kg_agent = kg_query_agent(kg)
        out[kg_agent.agent_id] = kg_agent
    return out
