"""Fixtures for the knowledge-base tests: an embedded Qdrant store in tmp_path and small document folders.

The ``settings`` fixture (and so ``kb``) runs every test that uses it on both embedded engines:
Qdrant Edge and qdrant-client's local mode.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.knowledge_base import ENGINES, make_settings

from rags_expert.retrieval.qdrant import KnowledgeBase, close_client
from rags_expert.settings import KnowledgeBaseSettings


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
