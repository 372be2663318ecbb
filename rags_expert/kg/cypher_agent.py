"""Deprecated path: the Cypher agent lives in :mod:`rags_expert.kg.reflexion.cypher_agent`.

Kept so that the names earlier docs and hosts imported from ``rags_expert.kg.cypher_agent`` still import
from here; new code imports them from :mod:`rags_expert.kg` (or :mod:`rags_expert.kg.reflexion.replies`
for the reply schemas).
"""

from rags_expert.kg.execution.result import KGQueryResult, KGState
from rags_expert.kg.reflexion.cypher_agent import KGQueryReflexionAgent
from rags_expert.kg.reflexion.replies import (
    DraftQuery,
    RevisedQuery,
    SchemaSelection,
    extract_cypher,
    read_query_reply,
)

__all__ = [
    "DraftQuery",
    "KGQueryReflexionAgent",
    "KGQueryResult",
    "KGState",
    "RevisedQuery",
    "SchemaSelection",
    "extract_cypher",
    "read_query_reply",
]
