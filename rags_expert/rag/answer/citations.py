"""Deprecated path, removed in rags-expert 0.3: the chunk vocabulary is :mod:`rags_expert.citations`.

Kept because the docs of 0.1 named it (docs/changelog.md); new code imports :mod:`rags_expert.citations`.
"""

import warnings

from rags_expert.citations import (
    HOP_KEY,
    Citation,
    chunk_id,
    cited_numbers,
    cited_sources,
    format_context,
    hop_of,
    iter_citations,
    rewrite_citations,
    source_dict,
    without_code_blocks,
)

warnings.warn(
    "rags_expert.rag.answer.citations is deprecated and will be removed in rags-expert 0.3: import rags_expert.citations",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = [
    "HOP_KEY",
    "Citation",
    "chunk_id",
    "cited_numbers",
    "cited_sources",
    "format_context",
    "hop_of",
    "iter_citations",
    "rewrite_citations",
    "source_dict",
    "without_code_blocks",
]
