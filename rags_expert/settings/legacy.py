"""Old setting names still read: the flat ``retrieval.*`` keys of releases before the split by concern.

Until 0.x the ``retrieval`` section held the store, embedding, ingestion and knowledge-flow settings
too (``retrieval.url``, ``retrieval.embedding_provider``, ``retrieval.kf_token`` ...). A host's YAML, a
dict or an environment variable such as ``RAGS_EXPERT_RETRIEVAL__KF_BASE_URL`` may still use those
names: :func:`move_legacy_keys` moves each to its new place with a ``DeprecationWarning`` naming
old → new. When both the old and the new name are given, the new one wins.

``evidence.focus_sentences`` (the small profile's sentences per chunk) became ``refinement.max_strips`` when
knowledge refinement became a setting of its own (0, "whole chunks", is ``refinement.method: off``).
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from pydantic import BaseModel

_SECTION_PREFIXES = {"embedding_": "embeddings", "kf_": "knowledge_flow"}
_PLAIN = {
    "store": ("data_dir", "url", "api_key", "engine", "collection", "timeout", "local_wal"),
    "ingestion": ("chunk_size", "chunk_overlap", "upsert_batch_size"),
}
_PREFIXED = {
    "embeddings": ("provider", "model", "base_url", "api_key", "dimensions", "batch_size", "threads"),
    "knowledge_flow": (
        "base_url",
        "api",
        "token",
        "timeout",
        "max_retries",
        "retry_base_delay",
        "search_policy",
        "uid_overfetch_factor",
        "uid_overfetch_max",
    ),
}


def _legacy_map() -> dict[str, tuple[str, str]]:
    """``{old retrieval key: (new section, new key)}``."""
    out = {key: (section, key) for section, keys in _PLAIN.items() for key in keys}
    for prefix, section in _SECTION_PREFIXES.items():
        out.update({prefix + key: (section, key) for key in _PREFIXED[section]})
    return out


LEGACY_RETRIEVAL_KEYS: dict[str, tuple[str, str]] = _legacy_map()
"""Every old ``retrieval.<key>`` and its new ``<section>.<key>``."""


def _as_dict(value: Any) -> dict[str, Any]:
    """A section given as a dict or a model, as a (new) dict."""
    if isinstance(value, BaseModel):
        return value.model_dump(exclude_unset=True)
    return dict(value or {})


def move_legacy_keys(data: dict[str, Any], sections: set[str]) -> dict[str, Any]:
    """Move the old keys under ``data["retrieval"]`` to their new sections (those in ``sections``; keys of
    other sections are dropped), warning once per key. Returns a new dict; ``data`` is not changed."""
    retrieval = data.get("retrieval")
    if not isinstance(retrieval, dict) or not set(retrieval) & set(LEGACY_RETRIEVAL_KEYS):
        return data
    data, retrieval = dict(data), dict(retrieval)
    for old in [k for k in retrieval if k in LEGACY_RETRIEVAL_KEYS]:
        section, new = LEGACY_RETRIEVAL_KEYS[old]
        value = retrieval.pop(old)
        if section not in sections:
            continue
        warnings.warn(f"setting retrieval.{old} is deprecated: use {section}.{new}", DeprecationWarning, stacklevel=2)
        target = _as_dict(data.get(section))
        target.setdefault(new, value)
        data[section] = target
    data["retrieval"] = retrieval
    return data


def legacy_env_retrieval(prefix: str = "RAGS_EXPERT_RETRIEVAL__") -> dict[str, str]:
    """The old ``RAGS_EXPERT_RETRIEVAL__<KEY>`` variables (for an agent without a ``retrieval`` section,
    which pydantic-settings therefore does not read)."""
    out = {}
    for name, value in os.environ.items():
        if name.upper().startswith(prefix):
            key = name[len(prefix) :].lower()
            if key in LEGACY_RETRIEVAL_KEYS:
                out[key] = value
    return out


def move_focus_sentences(data: dict[str, Any]) -> dict[str, Any]:
    """Move the old ``evidence.focus_sentences`` to ``refinement.max_strips`` (0: ``refinement.method`` off),
    with a ``DeprecationWarning``. Returns a new dict when something moved; ``data`` is not changed."""
    evidence = data.get("evidence")
    if isinstance(evidence, BaseModel) or not isinstance(evidence, dict) or "focus_sentences" not in evidence:
        return data
    evidence = dict(evidence)
    value = evidence.pop("focus_sentences")
    warnings.warn(
        "setting evidence.focus_sentences is deprecated: use refinement.max_strips", DeprecationWarning, stacklevel=2
    )
    refinement = _as_dict(data.get("refinement"))
    if str(value).strip() == "0":
        refinement.setdefault("method", "off")
    else:
        refinement.setdefault("max_strips", value)
    return {**data, "evidence": evidence, "refinement": refinement}
