"""Fixtures for the knowledge-base tests: an embedded Qdrant store in tmp_path and small document folders.

The ``settings`` fixture (and so ``kb``) runs every test that uses it on both embedded engines:
Qdrant Edge and qdrant-client's local mode.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rags_expert.retrieval.qdrant import KnowledgeBase, close_client
from rags_expert.settings import KnowledgeBaseSettings


def make_settings(data_dir: Path, **kw) -> KnowledgeBaseSettings:
    """Knowledge-base settings on a local-mode data directory; wordllama keeps the tests fast.

    Keyword arguments use the flat names (``engine``, ``embedding_provider``, ``chunk_size``, ``fusion`` ...),
    each put in its section (``store``, ``embeddings``, ``ingestion``; the rest in ``retrieval``)."""
    base = {
        "data_dir": data_dir,
        "embedding_provider": "wordllama",
        "collection": "test",
        "chunk_size": 300,
        "chunk_overlap": 60,
        "upsert_batch_size": 8,
    }
    base.update(kw)
    sections: dict[str, dict] = {}
    for key, value in base.items():
        section, name = _section_of(key)
        sections.setdefault(section, {})[name] = value
    return KnowledgeBaseSettings(**sections)


_PREFIXES = {"embedding_": "embeddings", "kf_": "knowledge_flow"}


def _section_of(key: str) -> tuple[str, str]:
    """The section and name of a flat keyword (``embedding_provider`` is ``embeddings.provider``)."""
    for prefix, section in _PREFIXES.items():
        if key.startswith(prefix):
            return section, key[len(prefix) :]
    for section in ("store", "ingestion"):
        if key in KnowledgeBaseSettings.model_fields[section].annotation.model_fields:
            return section, key
    return "retrieval", key


ENGINES = ["edge", "local"]


@pytest.fixture(params=ENGINES)
def settings(tmp_path: Path, request):
    """Settings on a fresh data directory, once per embedded engine; the shared store is closed afterwards."""
    s = make_settings(tmp_path / "data", engine=request.param)
    yield s
    close_client(s.store)


@pytest.fixture
def kb(settings: KnowledgeBaseSettings) -> KnowledgeBase:
    """A knowledge base on the fresh data directory."""
    return KnowledgeBase(settings)


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    """A small folder of Markdown, text and HTML documents."""
    d = tmp_path / "docs"
    (d / "sub").mkdir(parents=True)
    (d / "qdrant.md").write_text(
        "# Qdrant\nQdrant is a vector database written in Rust. It supports hybrid search with sparse vectors.\n\n"
        "## Local mode\nThe Python client has an embedded local mode that keeps data in a directory. "
        "It is meant for tests and small collections.\n"
    )
    (d / "paris.txt").write_text("Paris is the capital of France. The Eiffel Tower stands on the Champ de Mars.")
    (d / "sub" / "cats.html").write_text(
        "<html><head><title>Cats</title><style>p{}</style></head><body><h1>Cats</h1>"
        "<p>Cats sleep for most of the day.</p><script>var x = 1;</script></body></html>"
    )
    return d
