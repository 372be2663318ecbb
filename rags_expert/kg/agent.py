"""The KG-query agent as an :class:`~rags_expert.agentflow.AgentFlow`, so hosts load it like RagsExpert.

```yaml
- name: gene-kg
  class_path: rags_expert.kg.agent:KGQueryExpert
  settings:
    kg: {schema_file: schema_config.yaml, schema_name: gene_kg, load_sample: true}
```

``async_init()`` loads the schema, starts (or connects to) the graph database, optionally loads the
sample graph, and builds the reflexion agent; ``get_compiled_graph()`` serves its graph (input:
``{"messages": [("user", question)]}``; every run answers the last user message of the thread and appends
one answer message whose ``response_metadata`` holds the query and rows; the final state also holds this
question's ``attempts`` and ``log``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Self

from langchain_core.language_models import BaseChatModel
from langgraph.graph import StateGraph

from rags_expert.agentflow import AgentFlow
from rags_expert.kg.backends import GraphBackend, backend_from_settings
from rags_expert.kg.biocypher.loader import load_sample_graph
from rags_expert.kg.biocypher.schema import KGSchema, load_schema
from rags_expert.kg.cypher_agent import KGQueryReflexionAgent
from rags_expert.lessons import LessonMemory
from rags_expert.llm.chat import build_chat_model
from rags_expert.settings import AgentSettings, KGExpertSettings, coerce_settings


class KGQueryExpert(AgentFlow):
    """Answers questions over a BioCypher knowledge graph with self-revised, read-only Cypher."""

    name = "kg-query-expert"
    role = "Knowledge-graph query expert"
    nickname = "Cypher"
    description = (
        "Writes Cypher for a BioCypher-style knowledge graph, runs it read-only, scores the result and revises "
        "the query until it is good."
    )
    icon = "kg_agent"
    categories = ("kg", "cypher", "biocypher")
    tag = "kg"

    def __init__(
        self,
        settings: AgentSettings | dict[str, Any] | None = None,
        *,
        chat_model: BaseChatModel | None = None,
        backend: GraphBackend | None = None,
        schema: KGSchema | dict[str, Any] | str | Path | None = None,
        lesson_memory: LessonMemory | None = None,
    ) -> None:
        super().__init__(coerce_settings(settings, KGExpertSettings))
        self.settings: KGExpertSettings
        self.chat_model = chat_model
        self.backend = backend
        self.schema = schema
        self.lesson_memory = lesson_memory
        self.agent: KGQueryReflexionAgent | None = None
        self.kg_schema: KGSchema | None = None

    async def async_init(self) -> Self:
        """Load the schema, start the database (and the sample graph), connect the checkpointer
        (``checkpointer.url``), build the agent and its graph."""
        schema, _ = await asyncio.gather(self.open(), self.open_checkpointer())
        await asyncio.to_thread(self._init_sync, schema)
        return self

    async def open(self) -> KGSchema:
        """Load the schema, start (or connect to) the database and load the sample graph, once."""
        if self.kg_schema is not None:
            return self.kg_schema
        kg = self.settings.kg
        source = self.schema if self.schema is not None else kg.schema_file
        if source is None:
            raise ValueError(
                "KGQueryExpert needs a schema: pass schema=... or set kg.schema_file (RAGS_EXPERT_KG__SCHEMA_FILE)"
            )
        schema = await asyncio.to_thread(load_schema, source, kg.schema_name)
        if self.backend is None:
            self.backend = backend_from_settings(kg, graph=schema.name or None)
        await self.backend.start()
        if kg.load_sample:
            await load_sample_graph(self.backend, schema)
        self.kg_schema = schema
        return schema

    def rebound(
        self,
        chat_model: BaseChatModel,
        settings: KGExpertSettings | None = None,
        lesson_memory: LessonMemory | None = None,
    ) -> KGQueryExpert:
        """An initialised copy of this opened agent with another chat model (and settings, lessons).

        The database, the schema and the lesson memory are shared, and nothing blocks: a host that gets
        a model per turn (Fred v2) opens one agent and rebinds it every turn.
        """
        if self.kg_schema is None:
            raise RuntimeError("KGQueryExpert.rebound: call 'await agent.open()' first")
        clone = KGQueryExpert(
            settings or self.settings,
            chat_model=chat_model,
            backend=self.backend,
            schema=self.kg_schema,
            lesson_memory=lesson_memory or self.lesson_memory,
        )
        clone.kg_schema = self.kg_schema
        clone._default_checkpointer = self._default_checkpointer  # one set of connections, not one per turn
        clone._init_sync(self.kg_schema)
        return clone

    def _init_sync(self, schema: KGSchema) -> None:
        settings = self.settings
        if self.chat_model is None:
            self.chat_model = build_chat_model(settings.llm, client_timeout=settings.grading.timeout)
        if settings.lessons.enabled and self.lesson_memory is None:
            self.lesson_memory = LessonMemory.from_settings(settings)
        assert self.backend is not None
        self.agent = KGQueryReflexionAgent(
            self.chat_model, self.backend, schema, settings=settings, lesson_memory=self.lesson_memory
        )
        self._graph = self.build_graph()
        self._compiled.clear()

    def build_graph(self) -> StateGraph:
        assert self.agent is not None, "call async_init() first"
        return self.agent.build_graph()

    def recursion_limit(self) -> int:
        return self.agent.recursion_limit() if self.agent else super().recursion_limit()

    async def execute(self, question: str):
        """Shortcut to :meth:`KGQueryReflexionAgent.execute`."""
        assert self.agent is not None, "call async_init() first"
        return await self.agent.execute(question)

    async def aclose(self) -> None:
        """Stop the embedded database (or disconnect); close the checkpointer's connections."""
        try:
            if self.backend is not None:
                await self.backend.close()
        finally:
            await super().aclose()
