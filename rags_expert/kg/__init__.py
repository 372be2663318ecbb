"""KG-query reflexion agent: writes Cypher for a BioCypher knowledge graph, runs it read-only, reflects, revises.

The graph database clients come with the ``kg`` extra (``pip install 'rags-expert[kg]'``);
they are imported only when a backend starts.

The exports are imported on first use (:mod:`rags_expert.lazy`).
"""

from typing import TYPE_CHECKING

from rags_expert.lazy import lazy_exports

if TYPE_CHECKING:
    from rags_expert.kg.agent import KGQueryReflexionAgent, KGQueryResult
    from rags_expert.kg.backends import (
        BackendUnavailable,
        FalkorDBBackend,
        GraphBackend,
        GraphQueryError,
        Neo4jBackend,
        QueryResult,
        backend_from_settings,
    )
    from rags_expert.kg.flow import KGQueryExpert
    from rags_expert.kg.reflexion import ReflexionAgent, ReflexionState
    from rags_expert.kg.safety import is_read_only, write_clause_reason
    from rags_expert.kg.schema import KGSchema, SchemaError, load_schema

_EXPORTS = {
    "BackendUnavailable": "rags_expert.kg.backends",
    "FalkorDBBackend": "rags_expert.kg.backends",
    "GraphBackend": "rags_expert.kg.backends",
    "GraphQueryError": "rags_expert.kg.backends",
    "KGQueryExpert": "rags_expert.kg.flow",
    "KGQueryReflexionAgent": "rags_expert.kg.agent",
    "KGQueryResult": "rags_expert.kg.agent",
    "KGSchema": "rags_expert.kg.schema",
    "Neo4jBackend": "rags_expert.kg.backends",
    "QueryResult": "rags_expert.kg.backends",
    "ReflexionAgent": "rags_expert.kg.reflexion",
    "ReflexionState": "rags_expert.kg.reflexion",
    "SchemaError": "rags_expert.kg.schema",
    "backend_from_settings": "rags_expert.kg.backends",
    "is_read_only": "rags_expert.kg.safety",
    "load_schema": "rags_expert.kg.schema",
    "write_clause_reason": "rags_expert.kg.safety",
}
__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
__all__ = [
    "BackendUnavailable",
    "FalkorDBBackend",
    "GraphBackend",
    "GraphQueryError",
    "KGQueryExpert",
    "KGQueryReflexionAgent",
    "KGQueryResult",
    "KGSchema",
    "Neo4jBackend",
    "QueryResult",
    "ReflexionAgent",
    "ReflexionState",
    "SchemaError",
    "backend_from_settings",
    "is_read_only",
    "load_schema",
    "write_clause_reason",
]
