"""One settings model per agent, composed of the sections by concern.

* :class:`AgentSettings`: what every agent reads (chat model, grading, lesson memory, the local model,
  the vector store and embeddings the lesson memory lives in, the conversation checkpointer, prompts,
  follow-up condensing).
* :class:`RagsExpertSettings`: the corrective-RAG agent (adds retrieval, ingestion, knowledge-flow and
  its loop bounds); it is also a :class:`KnowledgeBaseSettings`, what the knowledge-base code takes.
* :class:`KGExpertSettings`: the KG-query agent (adds the ``kg`` section).

Both read ``RAGS_EXPERT_*`` environment variables (nested sections use ``__``). One settings block or
environment may serve both agents: each ignores the other agent's sections (``kg`` for the RAG agent;
``retrieval``, ``ingestion``, ``knowledge_flow`` and the RAG loop bounds for the KG agent). Any other
unknown key fails validation: in a section (``llm.modle``), at the top level, or as the section of a
``RAGS_EXPERT_<SECTION>__<KEY>`` variable (:func:`env_sections`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Self, TypeVar, overload

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from rags_expert.secrets import url_secrets
from rags_expert.settings.authorization import AuthorizationSettings
from rags_expert.settings.evaluation import EvaluationSettings
from rags_expert.settings.evidence import EvidenceSettings, RefinementSettings
from rags_expert.settings.kg import KGSettings
from rags_expert.settings.knowledge import (
    EmbeddingSettings,
    IngestionSettings,
    KnowledgeFlowSettings,
    RetrievalSettings,
    StoreSettings,
)
from rags_expert.settings.mcp import McpSettings
from rags_expert.settings.multihop import MultihopSettings
from rags_expert.settings.rerank import RerankSettings
from rags_expert.settings.sections import (
    BudgetSettings,
    CheckpointerSettings,
    FallbackSettings,
    GradingSettings,
    LessonSettings,
    LLMSettings,
    LocalModelSettings,
)

ENV_PREFIX = "RAGS_EXPERT_"
"""The prefix of every setting's environment variable."""

URL_FIELDS = ("url", "base_url", "neo4j_uri")
"""Fields whose value is a URL that may carry ``user:password@`` credentials."""


class VectorStoreSettings(BaseModel):
    """The Qdrant store and the embedding model (the knowledge base and the lesson memory use them)."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    store: StoreSettings = Field(default_factory=StoreSettings)
    embeddings: EmbeddingSettings = Field(default_factory=EmbeddingSettings)


class KnowledgeBaseSettings(VectorStoreSettings):
    """Everything the knowledge-base code reads: store, embeddings, the query, ingestion, knowledge-flow.

    :class:`RagsExpertSettings` is one; scripts and tests may build one alone (no environment read).
    """

    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    ingestion: IngestionSettings = Field(default_factory=IngestionSettings)
    knowledge_flow: KnowledgeFlowSettings = Field(default_factory=KnowledgeFlowSettings)


class AgentSettings(BaseSettings, VectorStoreSettings):
    """The sections and fields every agent reads; the base of the per-agent settings models."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        extra="forbid",
        hide_input_in_errors=True,  # a misspelt key may hold a secret: errors name it, never echo its value
        validate_default=True,
    )

    FOREIGN_KEYS: ClassVar[frozenset[str]] = frozenset()
    """Keys of the other agent's settings, accepted and ignored (one block may configure both agents)."""

    llm: LLMSettings = Field(default_factory=LLMSettings)
    grading: GradingSettings = Field(default_factory=GradingSettings)
    lessons: LessonSettings = Field(default_factory=LessonSettings)
    local: LocalModelSettings = Field(default_factory=LocalModelSettings)
    checkpointer: CheckpointerSettings = Field(default_factory=CheckpointerSettings)
    condense_followups: bool = Field(
        True, description="Rewrite a follow-up into a standalone question from the thread's history."
    )
    history_messages: int = Field(
        8, ge=0, le=100, description="Earlier messages of the thread shown to the condense step."
    )
    max_question_chars: int = Field(
        8000,
        ge=1,
        le=10_000_000,
        description="Longest question accepted, in characters; a longer one ends in an honest failure (reason "
        "question_too_long; exit 2 from the CLI) before any model or embedding call. 8,000 characters (about 2,000 "
        "tokens) hold a question with a pasted error message or code excerpt and leave most of a small model's "
        "context to the retrieved chunks.",
    )
    prompts: dict[str, str] = Field(
        default_factory=dict,
        description="Prompt overrides by key (the file name under rags_expert/prompts/ without .txt).",
    )
    prompt_dir: Path | None = Field(None, description="A directory of <key>.txt files overriding the packaged prompts.")

    @model_validator(mode="before")
    @classmethod
    def _own_sections(cls, data: Any) -> Any:
        """Drop the other agent's keys; keep an unknown section of the environment (``RAGS_EXPERT_LMM__MODEL``)
        so that it fails as an unknown key."""
        if not isinstance(data, dict):
            return data
        unknown = env_sections() - set(cls.model_fields) - cls.FOREIGN_KEYS
        data = {**{section: {} for section in unknown}, **data}
        return {k: v for k, v in data.items() if k not in cls.FOREIGN_KEYS}

    def updated(self, values: Mapping[str, Any]) -> Self:
        """A copy with the settings at the dotted ``values`` paths (``"retrieval.top_k"``, ``"prompts"``)
        replaced, validated like any settings (``ValidationError`` if not); ``self`` when there is nothing to
        replace."""
        if not values:
            return self
        data = self.model_dump()
        for path, value in values.items():
            *sections, leaf = path.split(".")
            target = data
            for name in sections:
                target = target.setdefault(name, {})
            target[leaf] = value
        return type(self).model_validate(data)

    def sections(self) -> list[BaseModel]:
        """The settings sections (``llm``, ``store``, ...) of this agent."""
        return [v for v in (getattr(self, name) for name in type(self).model_fields) if isinstance(v, BaseModel)]

    def secrets(self) -> list[str]:
        """Secret values that must never appear in logs, events or exceptions: every ``SecretStr`` of every
        section (keys, tokens, passwords), ``OPENAI_API_KEY``, and every form of the credentials inside
        configured URLs."""
        out = [
            value.get_secret_value()
            for section in self.sections()
            for value in _field_values(section)
            if isinstance(value, SecretStr)
        ]
        env_key = os.environ.get("OPENAI_API_KEY")
        if env_key:
            out.append(env_key)
        for url in self.credential_urls():
            out.extend(url_secrets(url))
        return list(dict.fromkeys(s for s in out if s))

    def credential_urls(self) -> list[str]:
        """Every configured URL that may carry ``user:password@`` credentials (``OPENAI_BASE_URL`` too)."""
        urls = [
            _plain(getattr(section, name))
            for section in self.sections()
            for name in URL_FIELDS
            if name in type(section).model_fields
        ]
        return [u for u in [*urls, os.environ.get("OPENAI_BASE_URL")] if isinstance(u, str) and u]


def env_sections(prefix: str = ENV_PREFIX) -> set[str]:
    """The first path part (lower case) of every ``RAGS_EXPERT_<SECTION>__<KEY>`` environment variable.

    pydantic-settings reads only the variables of known fields, so a misspelt section would be ignored.
    Only names with ``__`` count: they are setting paths, while plain ``RAGS_EXPERT_<NAME>`` variables
    (``RAGS_EXPERT_DATA_DIR``, the test suite's ``RAGS_EXPERT_SHARED_DATA``) are not all settings.
    """
    out = set()
    for name in os.environ:
        rest = name.upper().removeprefix(prefix.upper())
        if rest != name.upper() and "__" in rest:
            out.add(rest.split("__", 1)[0].lower())
    return out


def _plain(value: Any) -> Any:
    """A secret URL's text (``checkpointer.url``), any other value as it is."""
    return value.get_secret_value() if isinstance(value, SecretStr) else value


def _field_values(section: BaseModel) -> list[Any]:
    """The values of a section's fields."""
    return [getattr(section, name) for name in type(section).model_fields]


class RagsExpertSettings(AgentSettings, KnowledgeBaseSettings):
    """All settings of the RagsExpert (corrective-RAG) agent. See docs/settings.md for the reference."""

    FOREIGN_KEYS: ClassVar[frozenset[str]] = frozenset({"kg"})

    max_rephrases: int = Field(2, ge=0, le=10, description="Times the query may be rephrased for one question (R).")
    max_generations: int = Field(3, ge=1, le=10, description="Answers that may be generated for one question (G).")
    speculative_draft: bool = Field(
        True,
        description="On the first retrieval, write an answer over the retrieved chunks while they are graded; "
        "keep it when every chunk it cites is graded relevant (one round trip saved), else discard it and "
        "answer from the relevant chunks. Costs one answer call's tokens when the draft is discarded.",
    )
    max_context_chunks: int = Field(
        12,
        ge=1,
        le=200,
        description="Relevant chunks kept (accumulated over retrieval rounds) for generation: the latest "
        "retrieval's, best ranked first, then as many earlier ones as fit, the most recent kept.",
    )
    require_citations: bool = Field(
        True,
        description="Reject an answer that cites no chunk as [n] (without a grading call) and regenerate; an "
        "uncited answer cannot be checked against its sources. With evidence.attribution the supported "
        "sentences of an uncited answer get their citations first.",
    )
    evidence: EvidenceSettings = Field(default_factory=EvidenceSettings)
    refinement: RefinementSettings = Field(default_factory=RefinementSettings)
    budget: BudgetSettings = Field(default_factory=BudgetSettings)
    fallback: FallbackSettings = Field(default_factory=FallbackSettings)
    rerank: RerankSettings = Field(default_factory=RerankSettings)
    multihop: MultihopSettings = Field(default_factory=MultihopSettings)
    authorization: AuthorizationSettings = Field(default_factory=AuthorizationSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    evaluation: EvaluationSettings = Field(default_factory=EvaluationSettings)

    def llm_call_bound(self, with_history: bool = True, fallback: bool | None = None) -> int:
        """Maximum LLM requests for one question (not counting transport retries).

        ``C + (K+P)*(R+1+F) + R + (3+L)*G + S + (H-1)*(1+K'+P')`` where F is 1 with a fallback source (``fallback``; None: whether
        ``fallback.collection`` is set), where C is 1 when a follow-up is condensed, K is
        ``retrieval.top_k`` (k; k+1 with ``grading.batch``), R ``max_rephrases``, G ``max_generations``,
        L is 1 when the lesson memory is on, S is 1 with ``speculative_draft`` and P is k with the
        ``llm`` refinement method (0 otherwise): each of the R+1
        retrievals brings at most k chunks, each graded once (in one batch call, or per chunk when the
        batch reply cannot be read); each answer costs one generation plus two concurrent checks
        (grounded, useful), plus one reflection when it is rejected and lessons are enabled; a kept
        speculative draft is the first generation, a discarded one one more call. The fallback source is
        searched at most once, and its chunks graded like the others (no speculative draft there). The
        ``llm`` refinement method refines each relevant chunk once, in one call, and every relevant chunk was
        retrieved. Each of the ``H-1`` hops after the first (``multihop.max_hops``) costs one call for its
        follow-up query and the grading (and ``llm`` refinement) of its ``K'`` chunks (``multihop.top_k``).
        """
        f = int(self.fallback.collection is not None if fallback is None else fallback)
        c = 1 if (with_history and self.condense_followups) else 0
        k, r, g = self.retrieval.top_k, self.max_rephrases, self.max_generations
        per_answer = 3 + (1 if self.lessons.enabled else 0)
        grading = k + 1 if self.grading.batch else k  # a batch call whose reply cannot be read, then k calls
        draft = 1 if self.speculative_draft else 0  # a discarded speculative draft
        refine = k if self.refines_by_llm() else 0
        return c + (grading + refine) * (r + 1 + f) + r + per_answer * g + draft + self.hop_calls()

    def hop_top_k(self) -> int:
        """Chunks a follow-up search (a hop after the first) keeps at most."""
        return self.multihop.top_k or self.retrieval.top_k

    def hop_calls(self) -> int:
        """The most LLM requests of the hops after the first: per hop, its follow-up query and the grading
        (``K'``, plus an unreadable batch call) and ``llm`` refinement of its chunks."""
        k = self.hop_top_k()
        per_hop = 1 + k + (1 if self.grading.batch else 0) + (k if self.refines_by_llm() else 0)
        return (self.multihop.max_hops - 1) * per_hop

    def refines_by_llm(self) -> bool:
        """Whether knowledge refinement asks the chat model (``refinement.method: llm``; no profile chooses it)."""
        return self.refinement.method == "llm"

    def max_node_calls(self) -> int:
        """The most LLM requests one node makes: grade_documents' relevance grades (``retrieval.top_k``, or
        ``multihop.top_k`` when larger, plus the batch call whose reply could not be read), the speculative draft
        beside them and the next hop's query after them, the two answer
        checks, or the ``llm`` refinement of the relevant chunks not refined yet (at most two retrievals'
        worth and the hops' chunks: a kept speculative draft skips refinement until its answer is rejected)."""
        k, hops = self.retrieval.top_k, (self.multihop.max_hops - 1) * self.hop_top_k()
        grading = max(k, self.hop_top_k()) + (1 if self.grading.batch else 0) + (1 if self.speculative_draft else 0)
        grading += 1 if self.multihop.max_hops > 1 else 0  # the next hop's query, planned after the grades
        refine = min(self.max_context_chunks, 2 * k + hops) if self.refines_by_llm() else 0
        return max(grading, 2, refine)

    def budgeted_call_bound(self, with_history: bool = True, fallback: bool | None = None) -> int:
        """Maximum LLM requests for one question with ``budget.max_calls``: a node starts only while fewer
        than ``max_calls`` calls were made, and its calls are not split, so
        ``min(llm_call_bound, max_calls - 1 + max_node_calls)``. Without a call budget, the LLM-call bound."""
        bound = self.llm_call_bound(with_history, fallback)
        if self.budget.max_calls is None:
            return bound
        return min(bound, self.budget.max_calls - 1 + self.max_node_calls())


class KGExpertSettings(AgentSettings):
    """All settings of the KG-query reflexion agent (``KGQueryExpert``, ``rags-expert kg``)."""

    FOREIGN_KEYS: ClassVar[frozenset[str]] = frozenset(
        set(RagsExpertSettings.model_fields) - set(AgentSettings.model_fields)
    )

    kg: KGSettings = Field(default_factory=KGSettings)


S = TypeVar("S", bound=AgentSettings)


@overload
def coerce_settings(settings: AgentSettings | dict[str, Any] | None) -> RagsExpertSettings: ...
@overload
def coerce_settings(settings: AgentSettings | dict[str, Any] | None, cls: type[S]) -> S: ...
def coerce_settings(
    settings: AgentSettings | dict[str, Any] | None, cls: type[AgentSettings] = RagsExpertSettings
) -> AgentSettings:
    """Accept a settings object, a plain dict (validated) or None (defaults + environment) as ``cls``.

    Another agent's settings object is accepted too: its shared sections (llm, grading, lessons, store,
    embeddings, local, prompts ...) carry over; the rest come from the environment and defaults.
    """
    if settings is None:
        return cls()
    if isinstance(settings, cls):
        return settings
    if isinstance(settings, AgentSettings):
        shared = set(cls.model_fields) & set(type(settings).model_fields)
        return cls(**{name: getattr(settings, name) for name in shared if name in settings.model_fields_set})
    if isinstance(settings, dict):
        return cls(**settings)
    raise TypeError(f"settings must be a {cls.__name__}, a dict or None, not {type(settings).__name__}")
