"""Mermaid diagrams of the agents' graphs, drawn from the compiled graphs themselves.

Each agent is built the way a host builds it (``async_init`` then ``get_compiled_graph``) but
without any external service: a scripted chat model that is never called, an empty in-memory
retriever, and, for the KG agent, a graph database stand-in that refuses every query. The
structure of a compiled graph does not depend on those parts, so the picture is exactly the
code's. ``docs/graphs.md`` is this module's output::

    python -m rags_expert.diagrams > docs/graphs.md

and ``tests/test_docs.py`` fails when the committed page and the code disagree.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from rags_expert.agentflow import AgentFlow
from rags_expert.rag import RagsExpert
from rags_expert.testing import ScriptedChatModel

REGENERATE = "python -m rags_expert.diagrams > docs/graphs.md"

#: Settings for the offline builds: explicit, so no environment variable changes the picture.
_OFFLINE_SETTINGS: dict[str, Any] = {"lessons": {"enabled": False}}

#: The smallest BioCypher schema the KG agent accepts (the graph's shape does not depend on it).
_TINY_SCHEMA: dict[str, Any] = {"gene": {"represented_as": "node"}}


class _EmptyRetriever(BaseRetriever):
    """A retriever that finds nothing (the diagram never runs it)."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return []


class _NoDatabase:
    """A graph-database stand-in: starts and closes, refuses every query (the diagram runs none)."""

    name = "none"

    async def start(self) -> None:
        """Nothing to start."""

    async def run_read(self, query: str, *, timeout: float, max_rows: int) -> Any:
        """Refuse: diagrams never query a database."""
        raise RuntimeError("the diagram stand-in has no database")

    async def execute_write(self, query: str, params: Mapping[str, Any] | None = None) -> None:
        """Refuse: diagrams never write."""
        raise RuntimeError("the diagram stand-in has no database")

    async def close(self) -> None:
        """Nothing to close."""


def _unused_model() -> ScriptedChatModel:
    """A chat model that fails loudly if anything calls it."""
    return ScriptedChatModel(responses=[])


async def build_rags_expert() -> AgentFlow:
    """RagsExpert, initialised offline."""
    agent = RagsExpert(_OFFLINE_SETTINGS, chat_model=_unused_model(), retriever=_EmptyRetriever())
    return await agent.async_init()


async def build_kg_query_expert() -> AgentFlow:
    """KGQueryExpert, initialised offline (no database is started)."""
    from rags_expert.kg.agent import KGQueryExpert

    agent = KGQueryExpert(
        _OFFLINE_SETTINGS,
        chat_model=_unused_model(),
        backend=_NoDatabase(),
        schema=_TINY_SCHEMA,  # type: ignore[arg-type]
    )
    return await agent.async_init()


@dataclass(frozen=True)
class GraphDoc:
    """One graph of the diagrams page: its heading, a sentence about it, and how to build its agent."""

    title: str
    summary: str
    build: Callable[[], Awaitable[AgentFlow]]


GRAPHS: tuple[GraphDoc, ...] = (
    GraphDoc(
        "RagsExpert (`rags_expert.rag:RagsExpert`)",
        "Corrective RAG: retrieve, grade the chunks, rephrase or answer, grade the answer, reflect, finalize. "
        "Dotted edges are conditional (chosen by the routers in `rags_expert.rag.graph`).",
        build_rags_expert,
    ),
    GraphDoc(
        "KGQueryExpert (`rags_expert.kg.agent:KGQueryExpert`)",
        "The KG-query reflexion loop: prepare the question, draft a Cypher query, execute it read-only, "
        "score and revise until an exit rule holds, finalize (`rags_expert.kg.reflexion.ReflexionAgent`).",
        build_kg_query_expert,
    ),
)


async def mermaid_of(build: Callable[[], Awaitable[AgentFlow]]) -> str:
    """The Mermaid text of the agent's compiled graph (as a host gets it, without a checkpointer)."""
    agent = await build()
    return agent.get_compiled_graph(checkpointer=False).get_graph().draw_mermaid().strip()


async def render_page() -> str:
    """The whole ``docs/graphs.md`` page."""
    parts = [
        "# Agent graphs",
        "",
        '!!! note "Generated page, do not edit"',
        f"    Regenerate with `{REGENERATE}`.",
        "",
        "Every diagram below is drawn by LangGraph from the compiled graph a host gets "
        "(`get_compiled_graph().get_graph().draw_mermaid()`), so it cannot drift from the code: "
        "`tests/test_docs.py` fails when this page and the code disagree. Solid edges are fixed; "
        "dotted edges are conditional.",
    ]
    for graph in GRAPHS:
        parts += ["", f"## {graph.title}", "", graph.summary, "", "```mermaid", await mermaid_of(graph.build), "```"]
    return "\n".join(parts) + "\n"


def main() -> None:
    """Print the diagrams page (redirect it to ``docs/graphs.md``)."""
    print(asyncio.run(render_page()), end="")


if __name__ == "__main__":
    main()
