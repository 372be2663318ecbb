"""ClaimChecker: a third AgentFlow assembled from rags-expert's shared parts.

The user states a claim; the agent retrieves chunks from the knowledge base, keeps the ones the shared
relevance grader accepts, and asks the shared groundedness grader whether those chunks support the claim.
Nothing here is new machinery: prompts, grading, model, retriever and host contract all come from the package.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal, Self

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, MessagesState, StateGraph

from rags_expert.agentflow import AgentFlow
from rags_expert.citations import format_context, source_dict
from rags_expert.llm.chat import build_chat_model, message_text
from rags_expert.llm.grading import GradingContext, grade_grounded, grade_relevance_each
from rags_expert.prompts import PromptStore
from rags_expert.retrieval.factory import build_retriever
from rags_expert.settings import coerce_settings


class ClaimState(MessagesState, total=False):
    """The conversation (LangGraph's ``messages``, appended to) plus this claim's working state."""

    claim: str
    documents: list[Document]
    evidence: list[Document]


class ClaimChecker(AgentFlow):
    """Checks a claim against the knowledge base: supported (with sources), not supported, or no evidence."""

    name = "claim-checker"
    role = "Fact checker"
    description = "Says whether the knowledge base supports a claim, citing the chunks that do."
    tag = "rag"

    def __init__(self, settings: Any = None, *, chat_model: Any = None, retriever: Any = None) -> None:
        super().__init__(coerce_settings(settings))
        self.chat_model, self.retriever = chat_model, retriever

    async def async_init(self) -> Self:
        """Validate prompts, build what the host did not pass and the graph (in a thread); open the checkpointer."""
        await asyncio.gather(asyncio.to_thread(self._init_sync), self.open_checkpointer())
        return self

    def _init_sync(self) -> None:
        s = self.settings
        self.ctx = GradingContext.from_settings(s, PromptStore(s.prompts, s.prompt_dir).validate())
        self.chat_model = self.chat_model or build_chat_model(s.llm, client_timeout=s.grading.timeout)
        self.retriever = self.retriever or build_retriever(s)
        self._graph = self.build_graph()

    async def retrieve(self, state: ClaimState, config: RunnableConfig) -> dict[str, Any]:
        """The claim is the last user message; fetch chunks for it."""
        claim = next(message_text(m) for m in reversed(state["messages"]) if isinstance(m, HumanMessage))
        docs = await self.retriever.ainvoke(claim, config)
        return {"claim": claim, "documents": docs[: self.settings.retrieval.top_k]}

    async def grade_evidence(self, state: ClaimState, config: RunnableConfig) -> dict[str, Any]:
        """Keep the chunks the shared relevance grader accepts (graded concurrently, ``grading.concurrency`` at once)."""
        docs, texts = state["documents"], [d.page_content for d in state["documents"]]
        verdicts = await grade_relevance_each(self.chat_model, state["claim"], texts, self.ctx, config=config)
        return {"evidence": [d for d, v in zip(docs, verdicts) if v]}

    def route(self, state: ClaimState) -> Literal["verdict", "no_evidence"]:
        """Only a claim with relevant chunks is worth a groundedness check."""
        return "verdict" if state["evidence"] else "no_evidence"

    async def verdict(self, state: ClaimState, config: RunnableConfig) -> dict[str, Any]:
        """Ask the shared groundedness grader whether the evidence supports the claim."""
        evidence = state["evidence"]
        grade = await grade_grounded(self.chat_model, format_context(evidence), state["claim"], self.ctx, config=config)
        text = "Supported by the knowledge base." if grade else f"Not supported: {grade.reason or 'no chunk says so'}."
        sources = [source_dict(d, n) for n, d in enumerate(evidence, start=1)]
        return {"messages": [AIMessage(text, response_metadata={"supported": grade.value, "sources": sources})]}

    async def no_evidence(self, state: ClaimState) -> dict[str, Any]:
        """Say so honestly when nothing relevant was found."""
        text = "The knowledge base holds nothing about this claim."
        return {"messages": [AIMessage(text, response_metadata={"supported": None, "sources": []})]}

    def build_graph(self) -> StateGraph:
        """retrieve → grade_evidence → verdict | no_evidence."""
        builder = StateGraph(ClaimState).add_sequence([self.retrieve, self.grade_evidence])  # nodes named after methods
        builder.add_edge(START, "retrieve")
        builder.add_conditional_edges("grade_evidence", self.route)  # to the node `route` names
        for outcome in (self.verdict, self.no_evidence):
            builder.add_node(outcome)
            builder.add_edge(outcome.__name__, END)
        return builder
