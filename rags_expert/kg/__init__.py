"""KG-query reflexion agent: writes Cypher for a BioCypher knowledge graph, runs it read-only, reflects, revises.

The graph database clients come with the ``kg`` extra (``pip install 'rags-expert[kg]'``);
they are imported only when a backend starts.
"""

from rags_expert.kg.agent import KGQueryExpert
from rags_expert.kg.backends import (
    BackendUnavailable,
    FalkorDBBackend,
    GraphBackend,
    GraphQueryError,
    Neo4jBackend,
    QueryResult,
    backend_from_settings,
)
from rags_expert.kg.biocypher.loader import load_sample_graph
from rags_expert.kg.biocypher.schema import KGSchema, SchemaError, load_schema
from rags_expert.kg.cypher_agent import KGQueryReflexionAgent, KGQueryResult
from rags_expert.kg.execution.safety import is_read_only, write_clause_reason
from rags_expert.kg.reflexion.base import ReflexionAgent, ReflexionState

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
    "load_sample_graph",
    "load_schema",
    "write_clause_reason",
]
