"""Knowledge-base settings for tests: an embedded store on a temporary data directory, on either engine."""

from __future__ import annotations

from pathlib import Path

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
